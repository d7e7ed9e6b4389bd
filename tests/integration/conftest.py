"""Built sites shared by every test that only reads a build; the committed site's fresh build and its audit;
a Python that has numpy and nothing else.

A shared build is made once per test run (``made_once``: one pytest-xdist worker makes it, the others wait for it
and read it). Tests read it through a function-scoped fixture that checks, after the test, that nothing under it
changed: a test that tampers with a site, or builds into or from one, works on a copy (``copy_site``), so the next
reader sees the build as it was made. A test takes the markers of the shared builds it reads (``FIXTURE_MARKERS``).
"""

from __future__ import annotations

import json
import shutil
import venv
from collections.abc import Iterator
from pathlib import Path

import numpy
import pytest

from sitegen.builder import BuildResult
from sitegen.embedding.model import EmbeddingModel
from tests.helpers import (
    DENSE_RANKERS,
    PG_COST,
    PG_RANKERS,
    REPO,
    RICH_CITATIONS,
    RICH_DOCS,
    RICH_QRELS,
    RICH_QUERIES,
    SYMBOLS_QUERY,
    TENANT_DOCS,
    TENANT_FILTERS,
    TENANT_QUERIES,
    TINY_QUERIES,
    SharedBuild,
    build,
    made_once,
    run_python,
    shared_build,
    unchanged,
    write_corpus,
)
from tests.reference_vectors import EncodedSample, encode_sample


def _tiny_and_rich(root: Path) -> Path:
    """``tiny`` (with an ablation in its sitegen.json) and ``rich`` (the tokeniser's corners, ties, graded and
    judged-non-relevant labels, citations to check) under ``root/corpora``."""
    tiny = write_corpus(root / "corpora" / "tiny")
    ablation = [{"ranker": "bm25", "adds": "baseline"}, {"ranker": "rrf-dense-bm25", "adds": "dense"}]
    (tiny / "sitegen.json").write_text(json.dumps({"ablation": ablation}))
    rich = write_corpus(root / "corpora" / "rich", RICH_DOCS, RICH_QUERIES, RICH_QRELS)
    (rich / "citations.jsonl").write_text(json.dumps({"query_id": "r3", "citations": RICH_CITATIONS}) + "\n")
    return root / "corpora"


@pytest.fixture(scope="session")
def default_build(tmp_path_factory: pytest.TempPathFactory) -> SharedBuild:
    """Every default ranker (PostgreSQL included) over ``tiny`` and ``rich``, with a Performance page."""

    def make(root: Path) -> SharedBuild:
        _tiny_and_rich(root)
        (root / "bench").mkdir()
        shutil.copyfile(REPO / "bench" / "results.json", root / "bench" / "results.json")
        (root / "bench" / "results-pg.json").write_text(json.dumps(PG_COST), encoding="utf-8")
        return shared_build(root)

    return made_once(tmp_path_factory, "default-build", make)


@pytest.fixture
def default_site(default_build: SharedBuild) -> Iterator[Path]:
    """The default build's site, to read only."""
    yield from unchanged(default_build)


@pytest.fixture(scope="session")
def audit_build(tmp_path_factory: pytest.TempPathFactory) -> SharedBuild:
    """``tiny`` and ``rich`` with the rankers whose runs the tampering tests change (pg-vector: its scores are
    cosines of the same stored vectors as dense's): each tampered copy is audited whole, and fewer runs make
    a cheaper audit."""

    def make(root: Path) -> SharedBuild:
        _tiny_and_rich(root)
        return shared_build(
            root, rankers=("bm25", "bm25-stem", "dense", "rrf-dense-bm25", "rrf-dense-bm25-stem", "pg-vector")
        )

    return made_once(tmp_path_factory, "audit-build", make)


@pytest.fixture
def audit_site(audit_build: SharedBuild) -> Iterator[Path]:
    """The audit build's site, to read only."""
    yield from unchanged(audit_build)


@pytest.fixture(scope="session")
def dense_build(tmp_path_factory: pytest.TempPathFactory) -> SharedBuild:
    """bm25, dense and their fusion over ``tiny``: the smallest build with vectors, a fusion and its evidence."""

    def make(root: Path) -> SharedBuild:
        write_corpus(root / "corpora" / "tiny")
        return shared_build(root, rankers=DENSE_RANKERS)

    return made_once(tmp_path_factory, "dense-build", make)


@pytest.fixture
def dense_site(dense_build: SharedBuild) -> Iterator[Path]:
    """The dense build's site, to read only."""
    yield from unchanged(dense_build)


@pytest.fixture(scope="session")
def postgres_build(tmp_path_factory: pytest.TempPathFactory) -> SharedBuild:
    """bm25, bm25-filtered and every PostgreSQL ranker (filtered ones included), PostgreSQL required, over
    ``tiny`` (with a question of symbols only) and ``tenant`` (questions filtered by tenant and date)."""

    def make(root: Path) -> SharedBuild:
        write_corpus(root / "corpora" / "tiny", queries=[*TINY_QUERIES, SYMBOLS_QUERY])
        tenant = write_corpus(
            root / "corpora" / "tenant", TENANT_DOCS, TENANT_QUERIES, [("t1", "acme-5", 1), ("t2", "zeta-5", 1)]
        )
        (tenant / "sitegen.json").write_text(json.dumps(TENANT_FILTERS), encoding="utf-8")
        return shared_build(root, require_postgres=True, rankers=("bm25", "bm25-filtered", *PG_RANKERS))

    return made_once(tmp_path_factory, "postgres-build", make)


@pytest.fixture
def postgres_site(postgres_build: SharedBuild) -> Iterator[Path]:
    """The PostgreSQL build's site, to read only."""
    yield from unchanged(postgres_build)


@pytest.fixture(scope="session")
def committed_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[BuildResult, Path]:
    """A fresh build of the shipped corpora/ with the packaged model, reusing the committed site's vectors as
    frozen inputs (so nothing is embedded, and every byte must equal the committed site's), and its folder."""

    def make(root: Path) -> tuple[BuildResult, Path]:
        options = {"cache": root / "empty-cache", "vectors_from": REPO / "site"}
        return build(REPO / "corpora", root / "fresh", model=EmbeddingModel(), **options), root / "fresh"

    return made_once(tmp_path_factory, "committed-build", make)


@pytest.fixture(scope="session")
def numpy_only_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python of a fresh virtualenv that sees the standard library and numpy, nothing else: what a reader who
    downloads a site has. numpy is this environment's own, linked in, so no network is needed."""

    def make(root: Path) -> Path:
        venv.create(root / "venv", with_pip=False, symlinks=True)
        python = root / "venv" / "bin" / "python"
        shelf = root / "shelf"
        shelf.mkdir()
        installed = Path(numpy.__file__).resolve().parent.parent
        for name in ("numpy", "numpy.libs"):  # numpy.libs: the OpenBLAS of a manylinux wheel, where there is one
            if (installed / name).exists():
                (shelf / name).symlink_to(installed / name)
        where = run_python(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=root)
        (Path(where.stdout.strip()) / "numpy-only.pth").write_text(f"{shelf}\n", encoding="utf-8")
        assert run_python(python, "-c", "import numpy", cwd=root).returncode == 0
        sees_sitegen = run_python(python, "-c", "import sitegen", cwd=root).returncode == 0
        assert not sees_sitegen, "the fresh virtualenv must not see sitegen"
        return python

    return made_once(tmp_path_factory, "numpy-only", make)


def _sample_of(factory: pytest.TempPathFactory, ranker: str, folder: Path) -> EncodedSample:
    return made_once(factory, f"encoded-sample-{ranker}", lambda _root: encode_sample(ranker, folder))


@pytest.fixture(scope="session")
def minilm_sample(tmp_path_factory: pytest.TempPathFactory) -> EncodedSample:
    """A seeded sample of Cranfield encoded by sentence-transformers with the packaged all-MiniLM-L6-v2."""
    from sitegen.embedding.model import model_folder

    return _sample_of(tmp_path_factory, "dense", model_folder())


@pytest.fixture(scope="session")
def mpnet_sample(tmp_path_factory: pytest.TempPathFactory) -> EncodedSample:
    """A seeded sample of Cranfield encoded by sentence-transformers with the joined all-mpnet-base-v2 (skipped
    without its parts, sitegen[mpnet])."""
    from sitegen.embedding import mpnet

    folder = mpnet.mpnet_folder()
    if folder is None:
        pytest.skip("the all-mpnet-base-v2 parts (sitegen[mpnet]) are not installed")
    return _sample_of(tmp_path_factory, "dense-mpnet", folder)


@pytest.fixture
def ranked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every corpus bm25 ranks, in order: empty when a build fails before any ranker runs."""
    from sitegen.rankers.bm25 import BM25Ranker

    calls: list[str] = []
    real = BM25Ranker.rank

    def spy(self, inputs, depth):
        calls.append(inputs.corpus.name)
        return real(self, inputs, depth)

    monkeypatch.setattr(BM25Ranker, "rank", spy)
    return calls


#: Markers a test takes from the shared builds it reads, so that none is forgotten.
FIXTURE_MARKERS = {
    "default_build": ("postgres",),
    "audit_build": ("postgres",),
    "postgres_build": ("postgres", "slow"),
    "numpy_only_python": ("slow",),
    "committed_build": ("slow", "postgres"),
    "cross_encoder_site": ("slow",),
    "minilm_sample": ("slow",),  # sentence-transformers and torch: seconds of imports, then the encoding
    "mpnet_sample": ("slow",),  # torch and transformers: seconds of imports before the first pass
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, markers in FIXTURE_MARKERS.items():
            if fixture in getattr(item, "fixturenames", ()):
                for marker in markers:
                    item.add_marker(marker)
