"""What the tests share besides fixtures: hand-written corpora, a fake embedding model that needs no torch, the one
``build`` helper, and readers of built sites. Fixtures are in the ``conftest.py`` files."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import numpy as np

from sitegen.build import BuildOptions, BuildResult, build_site
from sitegen.publish.evidence import canonical_json
from sitegen.rankers.embeddings import EmbeddingConfig
from sitegen.rankers.tokenize import tokenize

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"

TINY_DOCS = [
    {"_id": "d1", "title": "Refunds", "text": "How to refund a card payment in full or in part."},
    {"_id": "d2", "title": "Payouts", "text": "Payouts arrive in the bank account two days later."},
    {"_id": "d3", "title": "E4012 Card expired", "text": "Error E4012 means the card has expired."},
    {"_id": "d4", "title": "E4013 Expiry month invalid", "text": "Error E4013: the expiry month is not 01-12."},
]
TINY_QUERIES = [
    {"_id": "q1", "text": "refund a payment", "kind": "paraphrase"},
    {"_id": "q2", "text": "what is E4012", "kind": "exact-code"},
    {"_id": "q3", "text": "when do payouts reach the bank", "kind": "paraphrase"},
    {"_id": "q4", "text": "weather tomorrow", "kind": "unanswerable", "answerable": False},
]
TINY_QRELS = [("q1", "d1", 2), ("q1", "d2", 1), ("q2", "d3", 1), ("q3", "d2", 1)]


def write_corpus(
    folder: Path,
    docs: Sequence[dict] = TINY_DOCS,
    queries: Sequence[dict] = TINY_QUERIES,
    qrels: Sequence[tuple[str, str, int]] = TINY_QRELS,
    readme: str | None = "# tiny\n\nA hand-written test corpus.\n",
) -> Path:
    """Write a corpus folder in sitegen's layout and return it."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    rows = "".join(f"{q}\t{d}\t{g}\n" for q, d, g in qrels)
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows, encoding="utf-8")
    if readme is not None:
        (folder / "README.md").write_text(readme, encoding="utf-8")
    return folder


class FakeEmbeddingModel:
    """Hashed bag-of-words vectors: deterministic, fast, and counts its calls."""

    batch_size = 8
    weights_sha256 = "f" * 64
    device = "cpu"

    def __init__(self, dim: int = 384, noise: float = 0.0, device: str = "cpu") -> None:
        self.device = device
        self.dim = dim
        self.noise = noise  # a stand-in for another CPU's rounding: every component moved by this much
        self.encoded: list[str] = []
        self.config = EmbeddingConfig(
            model="fake hashed bag of words",
            weights_sha256=self.weights_sha256,
            files_sha256=(),
            max_seq_length=None,
            pooling=("hashed-bag-of-words",),
            normalised=True,
            dimensions=dim,
            dtype="float32",
            texts_per_pass=self.batch_size,
        )

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.encoded.extend(texts)
        matrix = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                bucket = int.from_bytes(hashlib.sha256(token.encode()).digest()[:4], "little") % self.dim
                matrix[row, bucket] += 1.0
            norm = np.linalg.norm(matrix[row])
            if norm:
                matrix[row] /= norm
            else:  # a text without tokens still gets a unit vector, as the real model gives one
                matrix[row, 0] = 1.0
        if self.noise:
            matrix[matrix != 0] += np.float32(self.noise)
        return matrix


def build(
    corpora: Path,
    out: Path,
    *,
    cache: Path | None = None,
    model: Any = None,
    log: list[str] | None = None,
    **options: Any,
) -> BuildResult:
    """``build_site`` as the tests call it: the corpora folder into ``out``, with a fresh :class:`FakeEmbeddingModel`
    unless ``model`` is given (pass ``EmbeddingModel()`` for the packaged one), the cache beside ``out`` unless
    given, and the build's messages appended to ``log``. Every other keyword is a :class:`BuildOptions` field."""
    settings = BuildOptions(
        corpora_dir=corpora, out_dir=out, cache_dir=cache if cache is not None else out.parent / "cache", **options
    )
    return build_site(
        settings,
        log=log.append if log is not None else lambda _: None,
        model=model if model is not None else FakeEmbeddingModel(),
    )


def copy_site(site: Path, to: Path) -> Path:
    """A private copy of a built site (a shared one is read, never changed): free to tamper with or build into."""
    return Path(shutil.copytree(site, to, symlinks=True))


def tree_digest(root: Path) -> str:
    """One sha256 over every path and byte under ``root``: equal digests, unchanged tree."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        if path.is_file():
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def own_postgres_processes() -> set[int]:
    """PostgreSQL processes started by this test process (a private server is its child, its workers the
    server's): other users' servers on the same machine do not count."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name, _, rest = text.partition(" (")[2].rpartition(") ")
        pid = int(stat.parent.name)
        parents[pid], names[pid] = int(rest.split()[1]), name
    mine, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - mine
        mine |= frontier
    return {pid for pid in mine if names[pid].startswith("postgres")}


TREC_MEASURES = {
    "hit": "Success",
    "recall": "R",
    "precision": "P",
    "mrr": "RR",
    "ndcg": "nDCG",
    "map": "AP",
    "rprec": "Rprec",
}


def file_tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative path, with its bytes: two equal trees are byte-identical outputs."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def read_trec_run(path: Path) -> dict[str, list[tuple[str, float]]]:
    run: dict[str, list[tuple[str, float]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, doc_id, _, score, _ = line.split()
        run.setdefault(unquote(qid), []).append((unquote(doc_id), float(score)))
    return run


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc_id, grade = line.split("\t")
        qrels.setdefault(qid, {})[doc_id] = int(grade)
    return qrels


def assert_metrics_match_trec_eval(site: Path, corpus: str) -> int:
    """Score every .trec file of a built corpus with trec_eval (ir_measures -> pytrec_eval)
    and compare with metrics.json per query and overall; return the number of values compared."""
    import ir_measures

    base = site / "evidence" / corpus
    metrics = json.loads((base / "metrics.json").read_text())
    qrels = read_qrels(base / "inputs" / "qrels" / "test.tsv")
    compared = 0
    for ranker, scored in metrics.items():
        trec = read_trec_run(base / "runs" / f"{ranker}.trec")
        judged = {q: g for q, g in qrels.items() if any(v > 0 for v in g.values())}
        assert set(scored["per_query"]) == set(judged)
        for name in scored["overall"]:
            family, k = name.split("@")
            uncut = family in ("mrr", "map", "rprec")  # trec_eval cuts these with -M k: cut the run first
            depth = int(k) if uncut else None
            run = {q: {d: s for d, s in hits[:depth]} for q, hits in trec.items()}
            measure = ir_measures.parse_measure(TREC_MEASURES[family] if uncut else f"{TREC_MEASURES[family]}@{k}")
            theirs = {m.query_id: m.value for m in ir_measures.iter_calc([measure], judged, run)}
            for qid in judged:
                # trec_eval skips queries without hits; sitegen scores them 0, as trec_eval -c does.
                expected = theirs.get(qid, 0.0)
                assert abs(scored["per_query"][qid][name] - expected) <= 1e-9, (ranker, qid, name)
                compared += 1
            mean = sum(theirs.get(q, 0.0) for q in judged) / len(judged)
            assert abs(scored["overall"][name] - mean) <= 1e-9, (ranker, name)
    return compared


def evidence_failures(report: dict) -> dict[str, list[str]]:
    """The failed checks of an audit report, the pages check left out: a bundle changed after its build no
    longer matches the pages rendered from it (badge, verdict table, numbers), so that check fails as well;
    it is tested on its own in test_audit_closed_world.py."""
    return {c["name"]: c["mismatches"] for c in report["checks"] if c["status"] == "fail" and c["name"] != "pages"}


def rehash_manifest(site: Path) -> None:
    """Rewrite the manifest's ``files`` from what is on disk, keeping every other field: a consistent edit."""
    evidence = site / "evidence"
    manifest_path = evidence / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["files"] = {
        p.relative_to(site).as_posix(): {
            "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
            "bytes": p.stat().st_size,
        }
        for p in sorted(evidence.rglob("*"))
        if p.is_file() and p != manifest_path
    }
    manifest_path.write_bytes(canonical_json(manifest))
