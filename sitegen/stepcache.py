"""A content-addressed cache for slow, pure build steps: the experiments.

A step's result is stored under the sha256 of the step's name, its inputs as JSON, every
source file of sitegen and the version of numpy, so a cached result is what
a fresh computation would return, byte for byte. A warm build then redoes only what its
inputs changed. The build's audit re-derives every evidence file from the runs, cached or not.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["StepCache", "code_sha256"]

_PACKAGE = Path(__file__).resolve().parent
_LIBRARIES = ("numpy",)  # what the experiments compute with


@cache
def code_sha256() -> str:
    """sha256 over sitegen's own source files and the numeric library's version."""
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for name in _LIBRARIES:
        try:
            digest.update(f"{name}={metadata.version(name)}\0".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name}=absent\0".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class StepCache:
    """Results of pure steps under ``folder`` (``None``: compute every time).

    ``counts`` tallies, per step family (the name before any ``:``), how many results were
    computed and how many reused, so a build can say what it redid.
    """

    folder: Path | None
    counts: dict[str, dict[str, int]] = field(default_factory=dict, compare=False)

    def _tally(self, step: str, outcome: str) -> None:
        family = self.counts.setdefault(step.split(":", 1)[0], {"computed": 0, "reused": 0})
        family[outcome] += 1

    def key(self, step: str, inputs: Any) -> str:
        text = json.dumps([step, inputs, code_sha256()], ensure_ascii=True, separators=(",", ":"), default=list)
        return hashlib.sha256(text.encode()).hexdigest()

    def bytes(self, step: str, inputs: Any, compute: Callable[[], bytes]) -> bytes:
        """``compute()``, or the bytes it returned before for the same step and inputs."""
        if self.folder is None:
            self._tally(step, "computed")
            return compute()
        path = self.folder / f"{self.key(step, inputs)}.bin"
        if path.is_file():
            self._tally(step, "reused")
            return path.read_bytes()
        self._tally(step, "computed")
        value = compute()
        self.folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_bytes(value)
        os.replace(partial, path)
        return value

    def json(self, step: str, inputs: Any, compute: Callable[[], Any]) -> Any:
        """Like :meth:`bytes` for a JSON-able result; floats survive the round trip exactly."""
        stored = self.bytes(step, inputs, lambda: json.dumps(compute(), ensure_ascii=False, allow_nan=False).encode())
        return json.loads(stored)
