"""Runs made elsewhere (Elasticsearch, Pyserini, a vendor's API), read from TREC run files.

An external run is scored, compared and tested like any other ranker, but its ranking
cannot be reproduced here: the report and the audit mark it "external: metrics
verified, ranking not reproducible here".

Order: trec_eval ignores the rank column and sorts by score, descending, breaking ties
by document id descending; sitegen reads external runs the same way, so its metrics
equal trec_eval's on the same file. Ids are taken as written. Hits naming documents the
corpus lacks are kept (they count as not relevant, as in trec_eval), counted and listed;
queries the corpus lacks are dropped, counted and listed. A run whose ids mostly miss
(more than ``MAX_UNKNOWN_SHARE``) is refused: its numbers would measure the id mismatch.
"""

from __future__ import annotations

import hashlib
import io
import shutil
from collections.abc import Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sitegen.errors import CorpusError
from sitegen.hashing import sha256_file
from sitegen.inputs.corpus import text_lines
from sitegen.rankers.base import Basis, Contract, Family, Hit, RankInputs, Run

__all__ = [
    "EXTERNAL_METHOD",
    "MAX_UNKNOWN_SHARE",
    "ExternalRun",
    "ExternalRunRanker",
    "IdCheck",
    "check_ids",
    "parse_trec_run",
    "read_trec_run",
]

EXTERNAL_METHOD = "external trec run"
#: A run is refused when more than this share of its hits name documents the corpus lacks, or more
#: than this share of its queries are not the corpus's: ids that mostly miss mean the run numbers
#: things differently (ordinal against ``.I`` query numbers, documents against chunks), and scoring
#: it would publish near-zero metrics as if they had been measured. Up to it, a warning.
MAX_UNKNOWN_SHARE = 0.5
#: Unknown ids quoted in a warning or an error; the run's evidence lists every one.
EXAMPLES_SHOWN = 3


@dataclass(frozen=True)
class ExternalRun:
    """A parsed TREC run: per query, (doc id, score) in trec_eval's order."""

    hits: dict[str, list[tuple[str, float]]]
    sha256: str


def read_trec_run(path: Path) -> ExternalRun:
    """Parse ``qid Q0 docid rank score tag`` lines; a malformed line is an error naming file and line."""
    try:
        data = path.read_bytes()
    except OSError as exc:  # a folder, no permission: one line naming the file, not a traceback
        raise CorpusError(path, f"cannot read the file: {exc.strerror or exc}") from None
    return parse_trec_run(data, path)


def parse_trec_run(data: bytes, path: Path) -> ExternalRun:
    """:func:`read_trec_run` on bytes already read (or made: a retriever's run); ``path`` names them in errors."""
    raw: dict[str, dict[str, float]] = {}
    # The shared line reader: lines end at \n only, a BOM on line 1 is skipped, NUL and bad UTF-8 name the line.
    for number, line in text_lines(path, io.BytesIO(data)):
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


def _share(count: int, total: int) -> str:
    """``37 of 600 hits (6%)``'s percentage; never 0% or 100% unless it is exactly that."""
    percent = round(100 * count / total)
    if percent == 0 and count:
        return "<1%"
    return ">99%" if percent == 100 and count < total else f"{percent}%"


@dataclass(frozen=True)
class IdCheck:
    """How a run's ids meet one corpus's: what the console warnings, the evidence and the threshold read."""

    hits: int
    unknown_document_hits: int
    unknown_documents: tuple[str, ...]
    queries: int
    unknown_queries: tuple[str, ...]

    def _documents(self, where: str) -> str:
        examples = ", ".join(self.unknown_documents[:EXAMPLES_SHOWN])
        return (
            f"{self.unknown_document_hits} of {self.hits} hits "
            f"({_share(self.unknown_document_hits, self.hits)}) name documents not in {where}, e.g. {examples}"
        )

    def _queries(self, where: str) -> str:
        examples = ", ".join(self.unknown_queries[:EXAMPLES_SHOWN])
        unknown = len(self.unknown_queries)
        share = _share(unknown, self.queries)
        return f"{unknown} of {self.queries} queries ({share}) are not in {where}, e.g. {examples}"

    def warnings(self) -> list[str]:
        """What to tell the user about ids the corpus lacks, below the threshold."""
        notes = []
        if self.unknown_document_hits:
            notes.append(f"{self._documents('the corpus')}; they count as not relevant")
        if self.unknown_queries:
            notes.append(f"{self._queries('the corpus')}; their hits are left out")
        return notes

    def refusal(self, corpus: str) -> str | None:
        """Why the run cannot be scored against ``corpus``, or None when its ids mostly match."""
        if self.unknown_document_hits > MAX_UNKNOWN_SHARE * self.hits:
            return f"{self._documents(f'corpus {corpus}')}; do the ids match the corpus?"
        if len(self.unknown_queries) > MAX_UNKNOWN_SHARE * self.queries:
            return f"{self._queries(f'corpus {corpus}')}; do the ids match the corpus?"
        return None


def check_ids(run: ExternalRun, doc_ids: Set[str], query_ids: Set[str]) -> IdCheck:
    """Count the run's hits and queries that name ids the corpus lacks (over the whole file)."""
    all_hits = [d for hits in run.hits.values() for d, _ in hits]
    unknown_hits = [d for d in all_hits if d not in doc_ids]
    return IdCheck(
        hits=len(all_hits),
        unknown_document_hits=len(unknown_hits),
        unknown_documents=tuple(sorted(set(unknown_hits))),
        queries=len(run.hits),
        unknown_queries=tuple(sorted(set(run.hits) - query_ids)),
    )


class ExternalRunRanker:
    """A TREC run file presented as a ranker; the file is parsed once, when the build validates its inputs."""

    contract = Contract(Family.EXTERNAL, EXTERNAL_METHOD, basis=(Basis.EXTERNAL,))

    def __init__(self, name: str, path: Path, input_copy: str, run: ExternalRun) -> None:
        self.name = name
        self.path = path
        self.input_copy = input_copy
        self.run = run

    def write_input(self, target: Path) -> None:
        """Put the scored bytes into the bundle's inputs at ``target``: the file, checked unchanged."""
        shutil.copyfile(self.path, target)
        if sha256_file(target) != self.run.sha256:  # the bundle must hold the bytes that were scored
            raise CorpusError(self.path, "changed while the build ran; build again")

    def params(self) -> dict[str, Any]:
        return {
            "method": self.contract.verifier,
            "source": self.input_copy,
            "order": "score descending, ties by document id descending (trec_eval's order)",
            "note": "external: metrics verified, ranking not reproducible here",
        }

    def rank(self, inputs: RankInputs, depth: int) -> Run:
        external = self.run
        query_ids = {q.query_id for q in inputs.corpus.queries}
        ids = check_ids(external, {d.doc_id for d in inputs.corpus.documents}, query_ids)
        hits = {
            q.query_id: tuple(
                Hit(doc_id=d, rank=r, score=s) for r, (d, s) in enumerate(external.hits.get(q.query_id, [])[:depth], 1)
            )
            for q in inputs.corpus.queries
        }
        params = self.params() | {
            "sha256": external.sha256,
            "hits_in_file": ids.hits,
            "unknown_document_hits": ids.unknown_document_hits,
            "queries_in_file": ids.queries,
            "unknown_queries": list(ids.unknown_queries),
            "unknown_documents": list(ids.unknown_documents),
            "queries_without_hits": sorted(q for q in query_ids if q not in external.hits),
        }
        return Run(ranker=self.name, contract=self.contract, params=params, hits=hits)
