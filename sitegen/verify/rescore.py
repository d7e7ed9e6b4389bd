"""Run a bundle's cross-encoder rerank stages again (``sitegen audit --rescore``).

The standalone audit checks that a cross-encoder's list is exactly its first stage's top N in the order of the
stored scores, but it cannot run the model. This check loads each cross-encoder the runs name (a local folder,
or a hub id from the local Hugging Face cache; nothing is downloaded), scores every stored (question, passage)
pair again from the bundle's own copy of the inputs, and compares: every score within
:data:`RESCORE_TOLERANCE`, and the same order. A local folder whose weights' sha256 differs from the one the run
recorded is a failure of its own.

A hook's scores cannot be rerun: the hook is the publisher's code, not in the bundle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sitegen.errors import BundleError
from sitegen.inputs.corpus import passage_text
from sitegen.publish.bundle import open_bundle
from sitegen.publish.layout import MANIFEST
from sitegen.publish.reader import CorpusReader
from sitegen.rankers.rerank import CrossEncoderScorer, local_weights_sha256, rerank_order
from sitegen.verify.postgres import _corpus, _stored_runs

__all__ = ["RESCORE_TOLERANCE", "Rescore", "rescore_bundle"]

#: Largest allowed absolute difference between a stored cross-encoder score and the rerun's: the model's float32
#: output, rounded differently by another CPU's kernels (about 1e-7 on the same build), is far inside it.
RESCORE_TOLERANCE = 1e-5
_METHOD = CrossEncoderScorer.verifier


@dataclass(frozen=True)
class Rescore:
    """One cross-encoder rerank run on one corpus, scored again."""

    corpus: str
    ranker: str
    model: str
    pairs: int
    max_score_diff: float
    order_differs: int  # questions whose order under the rerun scores differs from the stored order
    first_difference: str  # "" when none
    weights_match: bool = True

    @property
    def ok(self) -> bool:
        return self.weights_match and self.order_differs == 0 and self.max_score_diff <= RESCORE_TOLERANCE


def rescore_run(corpus: str, ranker: str, run: Mapping[str, Any], texts: Mapping[str, str], queries: Any) -> Rescore:
    """Score every stored hit of ``run`` again with the cross-encoder its params name."""
    params = run["params"]
    scorer = CrossEncoderScorer(str(params.get("model")), max_length=params.get("max_length"))
    recorded = params.get("model_sha256")
    folder = Path(scorer.model)
    weights_match = recorded is None or not folder.is_dir() or local_weights_sha256(folder) == recorded
    worst, differ, first, pairs = 0.0, 0, "", 0
    for qid, hits in sorted(run["queries"].items()):
        ids = [h["doc_id"] for h in hits]
        again = scorer.predict(queries[qid], [texts[d] for d in ids])
        pairs += len(ids)
        for rank, (hit, score) in enumerate(zip(hits, again, strict=True), start=1):
            gap = abs(float(hit["score"]) - score)
            worst = max(worst, gap)
            if gap > RESCORE_TOLERANCE and not first:
                first = (
                    f"question {qid} rank {rank} doc {hit['doc_id']}: stored score {hit['score']!r}, rerun {score!r}"
                )
        order = [ids[i] for i in rerank_order(ids, again)]
        if order != ids:
            differ += 1
            first = first or f"question {qid}: the rerun scores order the hits {order[:5]}..., stored {ids[:5]}..."
    return Rescore(corpus, ranker, scorer.model, pairs, worst, differ, first, weights_match)


def rescore_bundle(site_dir: Path) -> list[Rescore]:
    """Every cross-encoder rerank run of the bundle at ``site_dir``, scored again. Raises BundleError when the
    bundle does not match its manifest or a corpus with such a run is published without its texts."""
    bundle = open_bundle(Path(site_dir))
    corpora = bundle.manifest.get("corpora")
    if not isinstance(corpora, list) or not all(isinstance(c, str) for c in corpora):
        raise BundleError(bundle.path(MANIFEST), "no 'corpora' list")
    results = []
    for corpus in corpora:
        runs = {r: run for r, run in _stored_runs(bundle, corpus).items() if run["params"].get("method") == _METHOD}
        if not runs:
            continue
        reader = CorpusReader(bundle, corpus)
        if reader.summary().redacted:
            raise BundleError(
                bundle.path(reader.files.summary),
                f"{corpus} is published redacted: its texts are not in the bundle, so its cross-encoder runs "
                "cannot be scored again from it",
            )
        source = _corpus(bundle, corpus)
        texts = {d.doc_id: passage_text(d) for d in source.documents}
        queries = {q.query_id: q.text for q in source.queries}
        results += [rescore_run(corpus, name, run, texts, queries) for name, run in sorted(runs.items())]
    return results
