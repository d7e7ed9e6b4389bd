"""Chunking settings as ``sitegen.json`` declares them: parsed and checked before any corpus is read.

Kept apart from :mod:`sitegen.inputs.chunking` (which needs a loaded corpus) so that loading a
corpus can validate its settings without importing the chunker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ChunkConfig", "ChunkSetting", "ChunkingError", "parse_chunking"]


class ChunkingError(ValueError):
    """A chunking declaration that cannot be used."""


@dataclass(frozen=True)
class ChunkSetting:
    method: str
    size: int
    overlap: float = 0.0

    @property
    def label(self) -> str:
        return f"{self.method}-{self.size}w-{round(self.overlap * 100)}pct"

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, "size": self.size, "overlap": self.overlap, "label": self.label}


@dataclass(frozen=True)
class ChunkConfig:
    default: ChunkSetting
    sweep: tuple[ChunkSetting, ...]


def _setting(raw: Any, where: str) -> ChunkSetting:
    if not isinstance(raw, dict) or not set(raw) <= {"method", "size", "overlap"}:
        raise ChunkingError(f'{where} must be {{"method": "fixed"|"paragraph", "size": WORDS, "overlap": FRACTION}}')
    method, size, overlap = raw.get("method"), raw.get("size"), raw.get("overlap", 0)
    if method not in ("fixed", "paragraph"):
        raise ChunkingError(f'{where}: method must be "fixed" or "paragraph", got {method!r}')
    if type(size) is not int or size < 1:
        raise ChunkingError(f"{where}: size must be a positive number of words, got {size!r}")
    if not isinstance(overlap, int | float) or not 0 <= overlap < 1:
        raise ChunkingError(f"{where}: overlap must be a fraction in [0, 1), got {overlap!r}")
    return ChunkSetting(method, size, float(overlap))


_SWEEP_DEFAULTS = (("methods", ["fixed"]), ("sizes", [50, 100, 200, 400]), ("overlaps", [0, 0.2]))


def parse_chunking(raw: Any) -> ChunkConfig:
    """``{"default": SETTING, "sweep": {"methods": [...], "sizes": [...], "overlaps": [...]}}``."""
    if not isinstance(raw, dict) or "default" not in raw or not set(raw) <= {"default", "sweep"}:
        raise ChunkingError('"chunking" must be {"default": {...}, "sweep": {"methods", "sizes", "overlaps"}}')
    default = _setting(raw["default"], "chunking.default")
    sweep_raw = raw.get("sweep", {"methods": ["fixed"], "sizes": [50, 100, 200, 400], "overlaps": [0, 0.2]})
    if not isinstance(sweep_raw, dict) or not set(sweep_raw) <= {"methods", "sizes", "overlaps"}:
        raise ChunkingError('chunking.sweep must be {"methods": [...], "sizes": [...], "overlaps": [...]}')
    methods, sizes, overlaps = (sweep_raw.get(k, d) for k, d in _SWEEP_DEFAULTS)
    if not all(isinstance(v, list) for v in (methods, sizes, overlaps)):
        raise ChunkingError("chunking.sweep: methods, sizes and overlaps must each be a list")
    sweep = []
    for method in methods:
        for size in sizes:
            for overlap in overlaps:
                sweep.append(_setting({"method": method, "size": size, "overlap": overlap}, "chunking.sweep"))
    return ChunkConfig(default, tuple(dict.fromkeys(sweep)))
