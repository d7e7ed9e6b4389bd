"""The unjudged pool of a built site: every passage some ranker put in its top ``depth`` for a question that no
qrels line judges, with the rankers and ranks that surfaced it, ready for assessors (``sitegen pool``).

The pool reads a bundle that passed its manifest, so what it lists is what the report was scored on. Rows are
ordered by corpus, by question in queries.jsonl order, then by the best rank that surfaced the passage, then by
passage id: the same site gives the same bytes.

TSV columns: ``corpus``, ``query_id``, ``doc_id``, ``rankers`` (``ranker:rank`` pairs, comma-separated, in the
corpus's ranker order), ``best_rank``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sitegen.publish.bundle import open_bundle
from sitegen.publish.reader import CorpusReader

__all__ = ["PoolRow", "pool_tsv", "unjudged_pool"]


@dataclass(frozen=True)
class PoolRow:
    corpus: str
    query_id: str
    doc_id: str
    #: (ranker, rank) for every ranker whose top ``depth`` holds the passage, in the corpus's ranker order.
    surfaced: tuple[tuple[str, int], ...]

    @property
    def best_rank(self) -> int:
        return min(rank for _, rank in self.surfaced)


def unjudged_pool(site: Path, depth: int, corpora: Sequence[str] = ()) -> list[PoolRow]:
    """The unjudged passages in every ranker's top ``depth`` for every question of the site's corpora (or of
    ``corpora``); a site that fails its manifest is refused (BundleError)."""
    if depth < 1:
        raise ValueError(f"depth must be 1 or more, got {depth}")
    bundle = open_bundle(site)
    names = [c for c in bundle.manifest.get("corpora") or [] if not corpora or c in corpora]
    rows: list[PoolRow] = []
    for name in names:
        reader = CorpusReader(bundle, name)
        summary = reader.summary()
        grades = reader.grades()
        runs = {r: reader.run(r)["queries"] for r in summary.rankers}
        for query in reader.queries():
            qid = query["_id"]
            judged = grades.get(qid, {})
            found: dict[str, list[tuple[str, int]]] = {}
            for ranker in summary.rankers:
                for hit in runs[ranker].get(qid, [])[:depth]:
                    if hit["doc_id"] not in judged:
                        found.setdefault(hit["doc_id"], []).append((ranker, hit["rank"]))
            pooled = [PoolRow(name, qid, doc, tuple(by)) for doc, by in found.items()]
            rows.extend(sorted(pooled, key=lambda row: (row.best_rank, row.doc_id)))
    return rows


def pool_tsv(rows: Sequence[PoolRow]) -> str:
    """The pool as TSV with a header line."""
    lines = ["corpus\tquery_id\tdoc_id\trankers\tbest_rank"]
    for row in rows:
        surfaced = ",".join(f"{ranker}:{rank}" for ranker, rank in row.surfaced)
        lines.append(f"{row.corpus}\t{row.query_id}\t{row.doc_id}\t{surfaced}\t{row.best_rank}")
    return "\n".join(lines) + "\n"
