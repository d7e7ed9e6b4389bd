"""``sitegen build --reembed``: how far re-embedded vectors moved from the stored ones, and whether
any ranking or metric changed against the bundle the stored vectors came from (:mod:`sitegen.compare.diff`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from sitegen.embedding.vectors import CorpusEmbeddings, text_sha256
from sitegen.inputs.corpus import Corpus, passage_text
from sitegen.publish.bundle import has_manifest

__all__ = ["DriftTracker", "VectorDrift", "compare_with_source"]


@dataclass(frozen=True)
class VectorDrift:
    """How far re-embedded vectors moved from the stored ones (``--reembed``)."""

    source: str
    compared: int
    max_abs_diff: float
    worst: str
    #: From ``sitegen diff`` of the source bundle against the new one; None when there was no bundle.
    rankings_identical: bool | None = None
    metrics_identical: bool | None = None
    comparison: str = ""


class DriftTracker:
    """Accumulates the largest difference between re-embedded and stored vectors."""

    def __init__(self) -> None:
        self.compared = 0
        self.max_abs_diff = 0.0
        self.worst = ""

    def add(
        self, corpus: Corpus, embeddings: CorpusEmbeddings, stored: Mapping[str, np.ndarray], model: str | None = None
    ) -> None:
        """Compare one corpus's re-embedded vectors with the stored ones (of the same configuration); ``model``
        names the model entry in :attr:`worst` (None: ``dense``'s)."""
        where = corpus.name if model is None else f"{corpus.name} {model}"
        rows = [(f"passage {d.doc_id}", embeddings.passage_prefix + passage_text(d)) for d in corpus.documents]
        rows += [(f"question {q.query_id}", embeddings.query_prefix + q.text) for q in corpus.queries]
        fresh = np.concatenate([embeddings.doc_vectors, embeddings.query_vectors])
        for (label, text), vector in zip(rows, fresh, strict=True):
            old = stored.get(text_sha256(text))
            if old is None:
                continue
            self.compared += 1
            diff = float(np.max(np.abs(vector.astype(np.float64) - old.astype(np.float64))))
            if diff > self.max_abs_diff or not self.worst:
                self.max_abs_diff, self.worst = diff, f"{where} {label}"

    def result(self, source: Path) -> VectorDrift:
        return VectorDrift(str(source), self.compared, self.max_abs_diff, self.worst)


def compare_with_source(drift: VectorDrift, source: Path, staging: Path) -> VectorDrift:
    """After ``--reembed``: did any ranking or metric change against the bundle the old vectors came from
    (``source``, the build's ``vectors_source``), compared with the new bundle in ``staging``?"""
    if not has_manifest(source):
        return drift
    from sitegen.compare.diff import diff_bundles
    from sitegen.compare.diff_format import format_diff

    comparison = diff_bundles(source, staging)
    return replace(
        drift,
        rankings_identical=comparison.rankings_identical,
        metrics_identical=comparison.metrics_identical,
        comparison=format_diff(comparison).splitlines()[0],
    )
