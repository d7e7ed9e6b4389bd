"""The one order the comparison reports list ids and metric names in."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["natural_key"]


def natural_key(text: str) -> tuple[tuple[Any, ...], str]:
    """Sort q2 before q10 and hit@5 before hit@10; the text itself breaks ties (q01 vs q1)."""
    parts = re.split(r"([0-9]+)", text)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text
