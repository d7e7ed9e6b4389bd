"""What the tests share besides fixtures: hand-written corpora, a fake embedding model that needs no torch, the one
``build`` helper, and readers of built sites. Fixtures are in the ``conftest.py`` files."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pickle
import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar
from urllib.parse import unquote

import numpy as np
import pytest
from click.testing import CliRunner, Result
from hypothesis import settings
from hypothesis import strategies as st

from sitegen.builder import BuildOptions, BuildResult, build_site
from sitegen.cli import cli
from sitegen.embedding.model import EmbeddingConfig
from sitegen.inputs.corpus import Corpus, Document, Query
from sitegen.publish.evidence import canonical_json, read_run
from sitegen.rankers import DEFAULT_RANKERS
from sitegen.rankers.tokenize import tokenize

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
#: The default rankers but the filtered variants, which run only where questions carry a metadata filter.
UNFILTERED_RANKERS = tuple(r for r in DEFAULT_RANKERS if not r.endswith("-filtered"))
#: Every PostgreSQL ranker, the filtered ones included.
PG_RANKERS = tuple(r for r in DEFAULT_RANKERS if r.startswith(("pg-", "rrf-pg")))
#: bm25, dense and their fusion: the rankers of a build that needs vectors but not PostgreSQL.
DENSE_RANKERS = ("bm25", "dense", "rrf-dense-bm25")
#: The date the shipped corpora were frozen on, and the one the freezing tests use.
FROZEN_ON = "2026-12-01"
#: The standalone audit, copied verbatim into every built site.
AUDIT_SOURCE = REPO / "sitegen" / "audit.py"

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


# A second corpus that exercises the tokeniser's corners: plural endings, stop words,
# Unicode letters, underscores, a passage without a title, a question without a kind,
# graded and judged-non-relevant qrels, a duplicate passage (exact ties in every ranker),
# a doc id with a space and a "%" (percent-encoded in .trec files).
RICH_DOCS = [
    {"_id": "a1", "title": "Batches and boxes", "text": "Policies for batches of boxes: the analysis class passes."},
    {"_id": "a2", "title": "", "text": "Café payouts über Zürich: ünïcode words, snake_case_ids like card_id_42."},
    {"_id": "a3", "title": "Fees", "text": "The fees for each payout are listed; fee tables update nightly."},
    {"_id": "a4", "title": "Status", "text": "Status of the bus and the gas buses; wishes, dishes and quizzes."},
    {"_id": "a0", "title": "Fees", "text": "The fees for each payout are listed; fee tables update nightly."},
    {"_id": "a5 100%", "title": "Payout schedule", "text": "Payouts run daily; a payout can be paused."},
]
RICH_QUERIES = [
    {"_id": "r1", "text": "policy for a batch of box", "kind": "stems"},
    {"_id": "r2", "text": "cafe ZÜRICH card_id"},
    {"_id": "r3", "text": "fee fee payouts", "kind": "stems"},
    {"_id": "r4", "text": "status of buses and wish", "kind": "stems"},
    {"_id": "r5", "text": "no passage answers this", "kind": "stems", "answerable": False},
]
RICH_CITATIONS = [
    {"kind": "valid", "doc_id": "a3", "quote": "fee tables update nightly"},
    {"kind": "invented-id", "doc_id": "a9", "quote": "fee tables"},
    {"kind": "invented-span", "doc_id": "a3", "quote": "fees are waived"},
]
RICH_QRELS = [("r1", "a1", 2), ("r1", "a4", 0), ("r2", "a2", 1), ("r3", "a3", 2), ("r3", "a5 100%", 1), ("r4", "a4", 1)]

# A question with no letter or digit: its tsquery is empty, so pg-tsvector must return nothing.
SYMBOLS_QUERY = {"_id": "q5", "text": "?! -- ...", "kind": "unanswerable", "answerable": False}

# A corpus whose questions carry metadata filters (a tenant, a date), and its sitegen.json.
TENANT_DOCS = [
    {
        "_id": f"{tenant}-{n}",
        "title": f"{tenant} policy {n}",
        "text": f"expense limit policy {tenant} {n} words",
        "metadata": {"tenant_id": tenant, "published_date": f"202{n}-06-01"},
    }
    for tenant in ("acme", "zeta")
    for n in (3, 4, 5)
]
TENANT_QUERIES = [
    {"_id": "t1", "text": "expense limit policy", "filter": {"tenant_id": "acme"}},
    {"_id": "t2", "text": "expense limit policy zeta", "filter": {"tenant_id": "zeta", "after": "2024-01-01"}},
]
TENANT_FILTERS = {
    "filters": {
        "tenant_id": {"field": "tenant_id", "op": "equals"},
        "after": {"field": "published_date", "op": "on-or-after"},
    }
}


# A timing file of `sitegen bench-pg`, as the Performance page reads it (with a title to escape).
PG_COST = {
    "kind": "sitegen-pg-cost",
    "schema": 1,
    "label": "Timings measured on one machine; absolute times vary between machines.",
    "measured_at": "2026-11-29T22:00:00+00:00",
    "command": "sitegen bench-pg <script>alert(1)</script>",
    "machine": {"cpu_model": "Test CPU", "logical_cpus": 2, "memory_gb": 23.5, "python": "3.11.7", "numpy": "2.4"},
    "corpus": "payments-support",
    "rows": 50000,
    "corpus_rows": 94,
    "filler_rows": 49906,
    "filler_seed": 7,
    "filler_vectors": "synthetic",
    "questions": 60,
    "runs": 3,
    "warmups": 2,
    "depth": 20,
    "build": {"copy_s": 4.5, "hnsw_build_s": 31.25, "gin_build_s": 2.5, "analyze_s": 0.25, "table_bytes": 2**27},
    "rows_matched": [{"kind": "paraphrase", "questions": 24, "median": 2210.0, "p95": 9000.0, "max": 12345}],
    "latency": [
        {"ranker": "rrf-pgvector-tsvector", "where": "postgres", "what": "two queries", "p50_ms": 13.5, "p95_ms": 30.0},
        {"ranker": "rrf-dense-bm25", "where": "in-process", "what": "both + fusion", "p50_ms": 1.5, "p95_ms": 2.0},
    ],
    "hybrid_ratio": {
        "in_process": "rrf-dense-bm25",
        "postgres": "rrf-pgvector-tsvector",
        "p50_ratio": 9.0,
        "p95_ratio": 15.0,
        "sql_p50_ratio": 7.5,
        "target": 5.0,
        "met": True,
    },
}


def examples(full: int) -> int:
    """A property test's example count for this run: ``full`` in the full run, the same share of it as the loaded
    Hypothesis profile has of Hypothesis's default 100 (a quarter in the quick run, see tests/conftest.py)."""
    return max(1, full * settings.default.max_examples // 100)


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


def run_cli(*args: str | Path) -> Result:
    """``sitegen ARGS`` in this process (click's CliRunner), its output and exit code captured."""
    return CliRunner().invoke(cli, [str(a) for a in args])


def cli_build(corpora: Path | None = None, out: Path | None = None, *args: str | Path) -> Result:
    """``sitegen build --ranker bm25 --quiet`` (the quickest build) in this process: with ``--corpora``, and with
    ``--out`` and a ``--cache-dir`` beside it, where given; then ``args``."""
    where: list[str | Path] = ["--corpora", corpora] if corpora is not None else []
    if out is not None:
        where += ["--out", out, "--cache-dir", out.parent / "cache"]
    return run_cli("build", "--ranker", "bm25", "--quiet", *where, *args)


def copy_site(site: Path, to: Path) -> Path:
    """A private copy of a folder: a shared build's site, corpora or cache is read, never changed, so a test
    that tampers with one, or builds into or from it, works on a copy."""
    return Path(shutil.copytree(site, to, symlinks=True))


def clean_env() -> dict[str, str]:
    """This process's environment without what points Python at this checkout or this virtualenv."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def run_python(python: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python *args`` (in ``cwd``) with :func:`clean_env`, its output captured as text."""
    command = [str(python), *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False, env=clean_env())


def tree_digest(root: Path) -> str:
    """One sha256 over every path and byte under ``root``: equal digests, unchanged tree."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        if path.is_file():
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def own_postgres_processes() -> set[int]:
    """Live PostgreSQL processes started by this test process (a private server is its child, the server's
    workers are the server's children): other users' servers on the same machine do not count, nor do zombies."""
    parents: dict[int, int] = {}
    running: set[int] = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name, _, rest = text.partition(" (")[2].rpartition(") ")
        state, parent = rest.split()[:2]
        pid = int(stat.parent.name)
        parents[pid] = int(parent)
        if name.startswith("postgres") and state != "Z":
            running.add(pid)
    mine, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - mine
        mine |= frontier
    return mine & running


@dataclass(frozen=True)
class SharedBuild:
    """A site built once for the session, with the inputs it was built from and what the build did."""

    root: Path
    result: BuildResult
    #: The texts the build's fake model embedded (its cache was empty).
    embedded: tuple[str, ...]
    #: This process's PostgreSQL processes right after the build returned.
    postgres_after: frozenset[int]
    #: sha256 of the corpora, the timings and the site, as built (see :func:`unchanged`).
    digest: tuple[str, ...]

    @property
    def corpora(self) -> Path:
        return self.root / "corpora"

    @property
    def site(self) -> Path:
        return self.root / "site"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    def watched(self) -> list[Path]:
        return [p for p in (self.corpora, self.root / "bench", self.site) if p.exists()]

    def current_digest(self) -> tuple[str, ...]:
        return tuple(tree_digest(p) for p in self.watched())


def shared_build(root: Path, **options: object) -> SharedBuild:
    """Build ``root/corpora`` into ``root/site`` with a fresh fake model and cache; ``options`` are BuildOptions."""
    model = FakeEmbeddingModel()
    result = build(root / "corpora", root / "site", cache=root / "cache", model=model, **options)
    postgres = frozenset(own_postgres_processes())
    made = SharedBuild(root, result, tuple(model.encoded), postgres, ())
    return SharedBuild(root, result, made.embedded, postgres, made.current_digest())


Made = TypeVar("Made")


def made_once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], Made]) -> Made:
    """``make(folder)`` once per test run, not once per pytest-xdist worker: the first worker to ask makes it in a
    folder every worker of the run sees and pickles the value; the others wait on a lock and read it. Without
    xdist, a folder of this session's own."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return make(factory.mktemp(name))
    folder = factory.getbasetemp().parent / f"made-once-{name}"  # the run's folder, above each worker's own
    with open(folder.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when the worker dies
        value_file = folder.with_suffix(".pickle")
        if value_file.is_file():
            return pickle.loads(value_file.read_bytes())
        if folder.exists():  # a worker that died part-way left it
            shutil.rmtree(folder)
        folder.mkdir()
        value = make(folder)
        value_file.write_bytes(pickle.dumps(value))
        return value


def unchanged(shared: SharedBuild) -> Iterator[Path]:
    """Yield the shared site, then fail the test if its site, corpora or timings are not as built."""
    yield shared.site
    now = shared.current_digest()
    changed = [p.name for p, a, b in zip(shared.watched(), shared.digest, now, strict=True) if a != b]
    assert not changed, f"the shared build's {', '.join(changed)} changed: a test must copy it first (copy_site)"


def drawn_hygiene_inputs(passages: list, questions: list, labels: list) -> tuple[list, list, dict[str, dict[str, int]]]:
    """Drawn word lists (hypothesis) as passages (id, title, text), questions (id, text) and the labels naming both."""
    docs = [(f"d{i}", " ".join(title), " ".join(text)) for i, (title, text) in enumerate(passages)]
    qs = [(f"q{i}", " ".join(words)) for i, words in enumerate(questions)]
    qrels: dict[str, dict[str, int]] = {}
    for q, d, g in labels:
        if q < len(qs) and d < len(docs):
            qrels.setdefault(qs[q][0], {})[docs[d][0]] = g
    return docs, qs, qrels


def make_corpus(docs: list, qs: list, qrels: dict) -> Corpus:
    """A corpus from (id, title, text) passages, (id, text) questions and qrels, in memory."""
    return Corpus(
        name="hand",
        root=Path("hand"),
        documents=tuple(Document(d, title, text) for d, title, text in docs),
        queries=tuple(Query(q, text, filter=MappingProxyType({})) for q, text in qs),
        qrels=MappingProxyType(qrels),
        readme="",
        input_files=(),
    )


#: Texts of a few words, with stop words, plurals, accents, underscores and empty ones: tokeniser corners.
TEXTS = st.lists(
    st.lists(st.sampled_from(["The", "cards", "card", "boxes", "is", "ÉTÉS", "a_b", "x1", "", "  ", "\n", "?"])).map(
        " ".join
    ),
    min_size=1,
    max_size=12,
)

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


def read_evidence(site: Path, rel: str) -> Any:
    """The evidence file at ``rel`` under a site; a run with each hit as {"doc_id", "rank", "score"} (sitegen's one
    run reader), whichever schema stored it."""
    if "/runs/" in rel and rel.endswith(".json"):
        return read_run(site / rel)
    return json.loads((site / rel).read_text(encoding="utf-8"))


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
