"""A corpus's ``sitegen.json`` ``"metrics"``: which measures at which cut-offs the report computes.

``{"metrics": {"cutoffs": [1, 3, 5, 10, 20, 100], "measures": ["hit", "recall", "precision", "mrr", "ndcg",
"map", "rprec"]}}``; either key may be left out for its default. The names are the measures of
:mod:`sitegen.scoring.metrics` (a test holds the two lists equal; this layer may not import that one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["DEFAULT_CUTOFFS", "MEASURE_NAMES", "MetricSettingsError", "parse_metric_settings"]

#: Every measure sitegen computes, in report order.
MEASURE_NAMES = ("hit", "recall", "precision", "mrr", "ndcg", "map", "rprec")
#: 100: the candidate pool a reranker sees (recall@100), and MAP and R-precision over the whole run.
DEFAULT_CUTOFFS = (1, 3, 5, 10, 20, 100)


class MetricSettingsError(ValueError):
    """A ``"metrics"`` setting that is not a list of cut-offs and known measures."""


def parse_metric_settings(raw: Any) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """(cut-offs ascending, measures in report order) from the setting; the defaults where left out."""
    if not isinstance(raw, Mapping) or set(raw) - {"cutoffs", "measures"}:
        raise MetricSettingsError('"metrics" must be {"cutoffs": [K, ...], "measures": [NAME, ...]}')
    cutoffs = raw.get("cutoffs", list(DEFAULT_CUTOFFS))
    measures = raw.get("measures", list(MEASURE_NAMES))
    if (
        not isinstance(cutoffs, list)
        or not cutoffs
        or not all(type(k) is int and k >= 1 for k in cutoffs)
        or len(set(cutoffs)) != len(cutoffs)
    ):
        raise MetricSettingsError('"metrics": "cutoffs" must be distinct whole numbers >= 1, e.g. [1, 5, 10, 100]')
    unknown = [m for m in measures if m not in MEASURE_NAMES] if isinstance(measures, list) else [measures]
    if unknown or not measures or len(set(measures)) != len(measures):
        raise MetricSettingsError(
            f'"metrics": "measures" must be distinct names among {", ".join(MEASURE_NAMES)}; '
            f"got {', '.join(map(str, unknown)) or 'a repeated or empty list'}"
        )
    return tuple(sorted(cutoffs)), tuple(m for m in MEASURE_NAMES if m in measures)
