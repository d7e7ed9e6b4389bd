"""Rerun a bundle's PostgreSQL rankers against a live server (``sitegen audit --postgres``).

The standalone audit cannot run PostgreSQL's text-search parser, its english stemmer or
``ts_rank_cd``, so for ``pg-tsvector`` it checks only what needs none of them. This check loads
the bundle's own copy of each corpus (its chunks when chunked) and its stored vectors into a
server, reruns every run whose registered ranker uses PostgreSQL (with its components first, and
any fusion over those runs from the rerun lists), and compares with the stored runs: the same doc
ids in the same order for every question, and every score within :data:`SCORE_TOLERANCE`.

Nothing is embedded again: the vectors are the bundle's, so a difference is the server's, not the
model's. The bundle is opened through :func:`sitegen.publish.bundle.open_bundle`, which refuses it
when any file does not match its manifest.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from sitegen.embedding.vectors import CorpusEmbeddings
from sitegen.errors import BundleError
from sitegen.inputs.corpus import Corpus, Document, load_corpus
from sitegen.publish.bundle import Bundle, open_bundle
from sitegen.publish.layout import MANIFEST, corpus_file, run_ranker
from sitegen.publish.reader import CorpusReader
from sitegen.rankers import RANKERS, RankInputs, Run, make_rankers, needs_postgres

__all__ = ["SCORE_TOLERANCE", "PostgresRerun", "compare_run", "rerun_postgres"]

#: Largest allowed absolute difference between a stored score and the rerun's. On the same PostgreSQL
#: and pgvector builds the rerun gives the same bits (0.0): the vectors travel as the exact float32 text,
#: ts_rank_cd is deterministic and the SQL fusion is summed in double precision. The margin is for another
#: build or CPU: pgvector sums cosine distances in float32 (its SIMD code may round in another order), and
#: ts_rank_cd returns a float4, whose last bit is 2.4e-7 for scores in [2, 4) (the committed site's largest
#: is 3.4). A different doc id or order is never tolerated.
SCORE_TOLERANCE = 1e-6


@dataclass(frozen=True)
class PostgresRerun:
    """One rerun ranker on one corpus, against its stored run."""

    corpus: str
    ranker: str
    questions: int  # questions compared (those in either run)
    ids_differ: int  # questions whose doc ids or their order differ
    max_score_diff: float  # over hits with the same doc id at the same rank
    first_difference: str  # "" when none

    @property
    def ok(self) -> bool:
        return self.ids_differ == 0 and self.max_score_diff <= SCORE_TOLERANCE


def _stored_runs(bundle: Bundle, corpus: str) -> dict[str, dict[str, Any]]:
    """The corpus's run files the manifest lists, by ranker name."""
    reader = CorpusReader(bundle, corpus)
    runs = {}
    for rel in bundle.files:
        place = corpus_file(rel)
        ranker = run_ranker(place[1]) if place is not None and place[0] == corpus else None
        if ranker is not None:
            runs[ranker] = reader.run(ranker)
    return runs


def _corpus(bundle: Bundle, corpus: str) -> Corpus:
    """The bundle's copy of the inputs, as the rankers saw it: renamed to the corpus (the copy's folder is
    called ``inputs``) and, when chunked, its passages replaced by ``chunks.jsonl``, the chunks it was ranked as."""
    reader = CorpusReader(bundle, corpus)
    loaded = dataclasses.replace(load_corpus(bundle.path(reader.files.inputs)), name=corpus)
    if not bundle.has(reader.files.chunks):
        return loaded
    chunks = tuple(
        Document(obj["_id"], obj.get("title") or "", obj["text"], MappingProxyType(dict(obj.get("metadata") or {})))
        for obj in reader.passages()
    )
    return dataclasses.replace(loaded, documents=chunks)


def _embeddings(bundle: Bundle, corpus: str) -> CorpusEmbeddings:
    """The stored vectors, rows in ``index.json`` order (files already checked against the manifest)."""
    reader = CorpusReader(bundle, corpus)
    files = reader.files
    index = reader.json(files.vector_index)
    if not isinstance(index, dict) or not all(isinstance(index.get(k), list) for k in ("passages", "queries")):
        raise BundleError(bundle.path(files.vector_index), "expected 'passages' and 'queries' id lists")
    matrices = []
    for name, rel in (("passages", files.passage_vectors), ("queries", files.query_vectors)):
        matrix = np.load(io.BytesIO(bundle.require(rel).read_bytes()), allow_pickle=False)
        want = (len(index[name]), index.get("dimensions"))
        if matrix.dtype != np.dtype("<f4") or matrix.shape != want:
            raise BundleError(bundle.path(rel), f"holds {matrix.dtype} {matrix.shape}; expected float32 {want}")
        matrices.append(matrix)
    return CorpusEmbeddings(
        model=str(index.get("model")),
        weights_sha256=str(index.get("weights_sha256")),
        doc_ids=tuple(index["passages"]),
        doc_vectors=matrices[0],
        query_ids=tuple(index["queries"]),
        query_vectors=matrices[1],
        config_sha256=index.get("config_sha256"),
    )


def _first_difference(qid: str, old: list[tuple[str, float]], new: list[tuple[str, float]]) -> str:
    """The first rank where the doc ids differ or a score is beyond the tolerance; "" when none."""
    for rank, ((old_id, old_score), (new_id, new_score)) in enumerate(zip(old, new, strict=False), start=1):
        if old_id != new_id:
            return f"question {qid} rank {rank}: stored {old_id}, rerun {new_id}"
        if abs(old_score - new_score) > SCORE_TOLERANCE:
            return f"question {qid} rank {rank} doc {old_id}: stored score {old_score!r}, rerun {new_score!r}"
    if len(old) != len(new):
        return f"question {qid}: stored {len(old)} hits, rerun {len(new)}"
    return ""


def compare_run(corpus: str, ranker: str, stored: Mapping[str, Any], rerun: Run) -> PostgresRerun:
    """The stored run's hits against the rerun's, question by question (a question missing from one has no hits)."""
    questions = sorted(set(stored["queries"]) | set(rerun.hits))
    differ, worst, first = 0, 0.0, ""
    for qid in questions:
        old = [(h["doc_id"], float(h["score"])) for h in stored["queries"].get(qid, [])]
        new = [(h.doc_id, float(h.score)) for h in rerun.hits.get(qid, ())]
        differ += [d for d, _ in old] != [d for d, _ in new]
        same = [abs(a[1] - b[1]) for a, b in zip(old, new, strict=False) if a[0] == b[0]]
        worst = max([worst, *same])
        first = first or _first_difference(qid, old, new)
    return PostgresRerun(corpus, ranker, len(questions), differ, worst, first)


def rerun_postgres(
    site_dir: Path, dsn: str | None = None, progress: Callable[[str], None] | None = None
) -> list[PostgresRerun]:
    """Rerun every PostgreSQL run of the bundle at ``site_dir`` on a server (``dsn``, else a private one
    from ``pgserver``) and compare it with the stored run. Raises BundleError when the bundle does not
    match its manifest, PostgresUnavailable when no server can be used."""
    from sitegen.postgres.index import PgCorpusIndex
    from sitegen.postgres.server import PostgresServer

    bundle = open_bundle(Path(site_dir))
    corpora = bundle.manifest.get("corpora")
    if not isinstance(corpora, Sequence) or not all(isinstance(c, str) for c in corpora):
        raise BundleError(bundle.path(MANIFEST), "no 'corpora' list")
    plans = []
    for corpus in corpora:
        stored = _stored_runs(bundle, corpus)
        registered = [name for name in stored if name in RANKERS]
        checked = needs_postgres(make_rankers(registered))
        if checked and CorpusReader(bundle, corpus).summary().redacted:
            raise BundleError(
                bundle.path(CorpusReader(bundle, corpus).files.summary),
                f"{corpus} is published redacted: its texts are not in the bundle, so its PostgreSQL runs cannot "
                "be rerun from it (audit.py --inputs DIR checks them as far as the standalone audit can)",
            )
        if checked:
            rankers = make_rankers([name for name in registered if name in checked])
            plans.append((corpus, stored, rankers, checked))
    if not plans:
        return []
    results = []
    with PostgresServer(dsn) as server:
        if progress is not None:
            progress(f"postgres: {server.describe()}")
        for corpus, stored, rankers, checked in plans:
            source, embeddings = _corpus(bundle, corpus), _embeddings(bundle, corpus)
            depth = max(int(run.get("depth", 100)) for run in stored.values())
            with PgCorpusIndex.load(server.connect(), source, embeddings, owns_connection=True) as index:
                runs: dict[str, Run] = {}
                for ranker in rankers:
                    inputs = RankInputs(corpus=source, embeddings=embeddings, runs=runs, postgres=index)
                    runs[ranker.name] = ranker.rank(inputs, int(stored.get(ranker.name, {}).get("depth", depth)))
            results += [
                compare_run(corpus, r.name, stored[r.name], runs[r.name])
                for r in rankers
                if r.name in checked and r.name in stored
            ]
    return results
