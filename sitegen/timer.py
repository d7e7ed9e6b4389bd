"""Wall-clock seconds per build stage: what a build reports (``BuildResult.seconds``) and the benchmark records.
Timings describe one machine on one day, so no evidence file ever holds them."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

__all__ = ["BUILD_STAGES", "StageTimer"]

#: The build's stages, in the order they run and are reported.
BUILD_STAGES = ("load", "embed", "rank", "score", "experiments", "write", "audit", "render")


class StageTimer:
    """Seconds per stage, summed over every time a stage runs; every stage named up front is reported, 0.0 when
    it never ran, in the order given."""

    def __init__(self, stages: Sequence[str] = BUILD_STAGES) -> None:
        self._seconds = dict.fromkeys(stages, 0.0)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the block as part of stage ``name`` (a stage not named up front is added at the end)."""
        clock = time.perf_counter()
        try:
            yield
        finally:
            self._seconds[name] = self._seconds.get(name, 0.0) + time.perf_counter() - clock

    @property
    def seconds(self) -> dict[str, float]:
        """A copy: seconds by stage."""
        return dict(self._seconds)
