"""Metadata filtering applied before ranking: which passages each question may see."""

from __future__ import annotations

import numpy as np

from sitegen.inputs.corpus import Corpus
from sitegen.inputs.filters import compile_filter, parse_vocabulary, passes

__all__ = ["FILTER_NOTE", "allowed_masks", "has_filters"]

FILTER_NOTE = (
    "restricted before ranking to the passages whose metadata satisfy the question's filter; "
    "collection statistics (BM25's idf and average length) stay those of the whole corpus"
)


def has_filters(corpus: Corpus) -> bool:
    return any(q.filter for q in corpus.queries)


def allowed_masks(corpus: Corpus) -> dict[str, np.ndarray | None]:
    """Per question, a boolean mask over ``corpus.documents`` (None: no filter, everything allowed)."""
    vocabulary = parse_vocabulary(corpus.config.get("filters", {}))
    masks: dict[str, np.ndarray | None] = {}
    for query in corpus.queries:
        if not query.filter:
            masks[query.query_id] = None
            continue
        conditions = compile_filter(query.filter, vocabulary)
        masks[query.query_id] = np.fromiter(
            (passes(d.metadata, conditions) for d in corpus.documents), dtype=bool, count=len(corpus.documents)
        )
    return masks
