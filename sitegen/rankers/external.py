"""Runs made elsewhere (Elasticsearch, Pyserini, a vendor's API), read from TREC run files.

An external run is scored, compared and tested like any other ranker, but its ranking
cannot be reproduced here: the report and the audit mark it "external: metrics
verified, ranking not reproducible here".

Order: trec_eval ignores the rank column and sorts by score, descending, breaking ties
by document id descending; sitegen reads external runs the same way, so its metrics
equal trec_eval's on the same file. Ids are taken as written. Hits naming documents the
corpus lacks are kept (they count as not relevant, as in trec_eval) and listed;
queries the corpus lacks are dropped and listed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sitegen.errors import CorpusError
from sitegen.rankers.base import Hit, RankInputs, Run

__all__ = ["EXTERNAL_METHOD", "ExternalRun", "ExternalRunRanker", "read_trec_run"]

EXTERNAL_METHOD = "external trec run"


@dataclass(frozen=True)
class ExternalRun:
    """A parsed TREC run: per query, (doc id, score) in trec_eval's order."""

    hits: dict[str, list[tuple[str, float]]]
    sha256: str


def read_trec_run(path: Path) -> ExternalRun:
    """Parse ``qid Q0 docid rank score tag`` lines; a malformed line is an error naming file and line."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusError(path, f"not valid UTF-8 (byte {exc.start})", data[: exc.start].count(b"\n") + 1) from None
    raw: dict[str, dict[str, float]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        columns = line.split()
        if len(columns) != 6:
            raise CorpusError(path, f"expected 6 columns (qid Q0 docid rank score tag), found {len(columns)}", number)
        qid, _, doc_id, _, score_text, _ = columns
        try:
            score = float(score_text)
        except ValueError:
            raise CorpusError(path, f"score {score_text!r} is not a number", number) from None
        if score != score or score in (float("inf"), float("-inf")):
            raise CorpusError(path, f"score {score_text!r} is not finite", number)
        if doc_id in raw.setdefault(qid, {}):
            raise CorpusError(path, f'query "{qid}" lists document "{doc_id}" twice', number)
        raw[qid][doc_id] = score
    if not raw:
        raise CorpusError(path, "run file is empty")
    # Two stable sorts: ids descending first, then scores descending, as trec_eval orders a run.
    ordered = {q: sorted(sorted(scores.items(), reverse=True), key=lambda item: -item[1]) for q, scores in raw.items()}
    return ExternalRun(hits=ordered, sha256=hashlib.sha256(data).hexdigest())


class ExternalRunRanker:
    """A TREC run file presented as a ranker."""

    requires: tuple[str, ...] = ()
    uses_embeddings = False
    uses_postgres = False

    def __init__(self, name: str, path: Path, input_copy: str) -> None:
        self.name = name
        self.path = path
        self.input_copy = input_copy

    def params(self) -> dict[str, Any]:
        return {
            "method": EXTERNAL_METHOD,
            "source": self.input_copy,
            "order": "score descending, ties by document id descending (trec_eval's order)",
            "note": "external: metrics verified, ranking not reproducible here",
        }

    def rank(self, inputs: RankInputs, depth: int) -> Run:
        external = read_trec_run(self.path)
        doc_ids = {d.doc_id for d in inputs.corpus.documents}
        query_ids = {q.query_id for q in inputs.corpus.queries}
        unknown_queries = sorted(set(external.hits) - query_ids)
        unknown_docs = sorted({d for hits in external.hits.values() for d, _ in hits} - doc_ids)
        hits = {
            q.query_id: tuple(
                Hit(doc_id=d, rank=r, score=s) for r, (d, s) in enumerate(external.hits.get(q.query_id, [])[:depth], 1)
            )
            for q in inputs.corpus.queries
        }
        params = self.params() | {
            "sha256": external.sha256,
            "unknown_queries": unknown_queries,
            "unknown_documents": unknown_docs,
            "queries_without_hits": sorted(q for q in query_ids if q not in external.hits),
        }
        return Run(ranker=self.name, params=params, hits=hits)
