"""A corpus's own RRF fusions, from ``sitegen.json``: ``"fusions": [{"name", "components", ...}]``.

The registry's fusions fuse built-in rankers only; a corpus may also fuse a ``--run`` file or a
``--retriever``'s run (external runs exist per corpus, so their fusions are configured per corpus)::

    "fusions": [{"name": "rrf-dense-mine", "components": ["dense", "mine"], "k": 60, "candidates": 20,
                 "weights": [1, 1]}]

``k`` (default 60), ``candidates`` (default 20) and ``weights`` (default 1 each) mean what they mean for
:func:`sitegen.rankers.fusion.reciprocal_rank_fusion`. Whether each component exists is checked by the
build, which knows the rankers and runs of the corpus.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["FusionConfig", "FusionSettingsError", "parse_fusions"]

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_KEYS = {"name", "components", "k", "candidates", "weights"}


class FusionSettingsError(ValueError):
    """A ``"fusions"`` entry that cannot be used; the message names the entry."""


@dataclass(frozen=True)
class FusionConfig:
    name: str
    components: tuple[str, ...]
    k: float = 60.0
    candidates: int = 20
    weights: tuple[float, ...] | None = None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def parse_fusions(raw: Any) -> tuple[FusionConfig, ...]:
    """Every entry of ``"fusions"``, checked for shape; raises :class:`FusionSettingsError`."""
    if not isinstance(raw, list):
        raise FusionSettingsError('"fusions" must be a list of {"name": NAME, "components": [NAME, ...]} objects')
    found: list[FusionConfig] = []
    for number, entry in enumerate(raw, start=1):
        where = f'"fusions" entry {number}'
        if not isinstance(entry, dict) or not {"name", "components"} <= set(entry) or set(entry) - _KEYS:
            raise FusionSettingsError(f"{where}: needs name and components, may have k, candidates, weights")
        name, components = entry["name"], entry["components"]
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise FusionSettingsError(f"{where}: name {name!r} must be lowercase letters, digits, '.', '_' or '-'")
        where = f'"fusions" entry {name}'
        if (
            not isinstance(components, list)
            or len(components) < 2
            or not all(isinstance(c, str) and c for c in components)
            or len(set(components)) != len(components)
        ):
            raise FusionSettingsError(f"{where}: components must be two or more different ranker or run names")
        if name in components:
            raise FusionSettingsError(f"{where}: a fusion cannot be its own component")
        k, candidates = entry.get("k", 60), entry.get("candidates", 20)
        if not _number(k) or k < 0:
            raise FusionSettingsError(f"{where}: k must be a non-negative number, got {k!r}")
        if type(candidates) is not int or candidates < 1:
            raise FusionSettingsError(f"{where}: candidates must be a positive integer, got {candidates!r}")
        weights = entry.get("weights")
        if weights is not None and (
            not isinstance(weights, list)
            or len(weights) != len(components)
            or not all(_number(w) and w >= 0 for w in weights)
        ):
            raise FusionSettingsError(f"{where}: weights must be {len(components)} non-negative numbers, one each")
        if any(f.name == name for f in found):
            raise FusionSettingsError(f"{where}: the name is given twice")
        found.append(
            FusionConfig(
                name,
                tuple(components),
                float(k),
                candidates,
                tuple(float(w) for w in weights) if weights is not None else None,
            )
        )
    return tuple(found)
