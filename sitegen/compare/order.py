"""The one order the comparison reports list ids and metric names in."""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = ["natural_key"]


_DIGITS = re.compile(r"([0-9]+)")


@functools.lru_cache(maxsize=1 << 16)  # the same question ids and ranker names are sorted run after run
def natural_key(text: str) -> tuple[tuple[Any, ...], str]:
    """Sort q2 before q10 and hit@5 before hit@10; the text itself breaks ties (q01 vs q1)."""
    parts = _DIGITS.split(text)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text
