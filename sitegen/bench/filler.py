"""Filler rows for the PostgreSQL cost test: passages made to look like a corpus's at no embedding cost.

Filler rows come in blocks of 1,000, block b drawn from ``numpy.random.default_rng([seed, b])``, so a row is the
same whatever the total: each picks 3 of the corpus's passages (with replacement), takes as many words as the
first has, each drawn uniformly from the three passages' tokens together (so the vocabulary and roughly the word
frequencies are the corpus's), and has no title. A filler row's vector is synthetic: the picked passages' real
embeddings mixed with Dirichlet(1, 1, 1) weights and normalised, plus Gaussian noise of norm about
``FILLER_NOISE``, normalised again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sitegen.errors import SitegenError
from sitegen.inputs.corpus import Document, passage_text
from sitegen.rankers.tokenize import tokenize

__all__ = ["FILLER_SEED", "FILLER_TEXT", "FILLER_VECTORS", "FillerRows", "make_filler"]

FILLER_SEED = 20261129
FILLER_PREFIX = "filler-"
FILLER_SOURCES = 3
FILLER_NOISE = 0.75
_FILLER_BLOCK = 1000

FILLER_TEXT = (
    f"filler row i: {FILLER_SOURCES} passages of the corpus picked with replacement by "
    f"numpy.random.default_rng([seed, i // {_FILLER_BLOCK}]); as many words as the first has, each drawn uniformly "
    "from the picked passages' tokens (sitegen.rankers.tokenize.tokenize of title and text); no title, no metadata"
)
FILLER_VECTORS = (
    "synthetic, not embedded by the model (50,000 texts would take about 15 minutes here): the picked passages' "
    f"real embeddings mixed with Dirichlet(1, ..., 1) weights and normalised, plus Gaussian noise of norm about "
    f"{FILLER_NOISE} (N(0, 1) per component times {FILLER_NOISE}/sqrt(dimensions)), normalised again, float32. "
    "The corpus's passages and questions keep their real embeddings."
)


@dataclass(frozen=True)
class FillerRows:
    """Filler passages, their synthetic vectors (float32, one row per passage, unit length) and
    how many distinct words they were drawn from."""

    documents: tuple[Document, ...]
    vectors: np.ndarray
    vocabulary: int = 0


def _filler_ids(n: int, taken: set[str]) -> list[str]:
    """``filler-000001``, ``filler-000002``, ...; a number whose id the corpus already uses is skipped."""
    ids: list[str] = []
    number = 0
    while len(ids) < n:
        number += 1
        doc_id = f"{FILLER_PREFIX}{number:06d}"
        if doc_id not in taken:
            ids.append(doc_id)
    return ids


def make_filler(documents: Sequence[Document], doc_vectors: np.ndarray, n: int, seed: int = FILLER_SEED) -> FillerRows:
    """``n`` deterministic filler passages built from ``documents``' words and vectors (module docstring)."""
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    dim = int(doc_vectors.shape[1])
    if n == 0:
        return FillerRows((), np.zeros((0, dim), dtype=np.float32))
    token_lists = [tokenize(passage_text(d)) for d in documents]
    lengths = np.array([len(tokens) for tokens in token_lists], dtype=np.int64)
    sources = np.flatnonzero(lengths)
    if not sources.size:
        raise SitegenError("cannot make filler rows: no passage of the corpus has a word")
    vocabulary: dict[str, int] = {}
    flat = np.fromiter(
        (vocabulary.setdefault(t, len(vocabulary)) for tokens in token_lists for t in tokens),
        dtype=np.int64,
        count=int(lengths.sum()),
    )
    words = np.array(list(vocabulary), dtype=object)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    vectors = np.asarray(doc_vectors, dtype=np.float64)
    ids = _filler_ids(n, {d.doc_id for d in documents})
    texts: list[str] = []
    blocks: list[np.ndarray] = []
    for block in range(-(-n // _FILLER_BLOCK)):
        rng = np.random.default_rng([seed, block])
        picked = sources[rng.integers(0, sources.size, size=(_FILLER_BLOCK, FILLER_SOURCES))]
        weights = rng.dirichlet(np.ones(FILLER_SOURCES), size=_FILLER_BLOCK)
        row_lengths = lengths[picked[:, 0]]
        pool = lengths[picked]
        ends = np.cumsum(pool, axis=1)
        row = np.repeat(np.arange(_FILLER_BLOCK), row_lengths)
        position = np.minimum((rng.random(row.size) * ends[row, -1]).astype(np.int64), ends[row, -1] - 1)
        which = (position[:, None] >= ends[row]).sum(axis=1)
        offset = position - (ends[row, which] - pool[row, which])
        drawn = words[flat[starts[picked[row, which]] + offset]].tolist()
        bounds = np.concatenate([[0], np.cumsum(row_lengths)]).tolist()
        texts.extend(" ".join(drawn[bounds[i] : bounds[i + 1]]) for i in range(_FILLER_BLOCK))
        mix = np.zeros((_FILLER_BLOCK, dim))
        for j in range(FILLER_SOURCES):
            mix += weights[:, j, None] * vectors[picked[:, j]]
        mix /= np.maximum(np.sqrt((mix * mix).sum(axis=1, keepdims=True)), 1e-12)
        mix += rng.standard_normal((_FILLER_BLOCK, dim)) * (FILLER_NOISE / np.sqrt(dim))
        mix /= np.sqrt((mix * mix).sum(axis=1, keepdims=True))
        blocks.append(mix.astype(np.float32))
    filler = tuple(Document(doc_id=doc_id, title="", text=text) for doc_id, text in zip(ids, texts, strict=False))
    return FillerRows(filler, np.ascontiguousarray(np.concatenate(blocks)[:n]), len(vocabulary))
