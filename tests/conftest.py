"""Fixtures every test folder may use: a hand-written corpus, a corpus writer and the fake embedding model; and the
Hypothesis settings that keep property tests independent of the machine's speed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.helpers import FakeEmbeddingModel, write_corpus

# No deadline and no "too slow" health check: both measure wall-clock time, so a loaded machine would fail an
# example that passes on a quiet one. Derandomised with no example database: every run tries the same examples.
settings.register_profile(
    "sitegen",
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("sitegen")
# The quick run (``pytest -m "not slow"``, before a commit) tries a quarter of each property's examples; the full run
# (CI) tries them all. A test that sets its own count scales it by the same share (tests.helpers.examples).
settings.register_profile("sitegen-quick", parent=settings.get_profile("sitegen"), max_examples=25)


def pytest_configure(config: pytest.Config) -> None:
    if "not slow" in (config.getoption("markexpr") or ""):
        settings.load_profile("sitegen-quick")


#: The modules that take longest in the whole suite, longest first, as measured on 3 December 2026 (the embedding
#: and Cranfield reference modules are long only where the mpnet parts are installed). xdist hands whole modules to
#: its workers in collection order (``--no-loadscope-reorder``); a long module handed out last keeps one worker busy
#: after the other has finished, so these go first. Only the order changes.
LONGEST_FIRST = (
    "tests/integration/test_committed_site.py",
    "tests/integration/test_embedding_models.py",
    "tests/integration/test_browser.py",
    "tests/integration/test_audit_closed_world.py",
    "tests/integration/test_redacted.py",
    "tests/integration/test_audit.py",
    "tests/integration/test_rerank_in_a_build.py",
    "tests/integration/test_cranfield_reference.py",
    "tests/integration/test_consistent_lies.py",
    "tests/integration/test_retrievers.py",
    "tests/integration/test_changes_since_baseline.py",
    "tests/integration/test_diff_committed_site.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {module: n for n, module in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))  # stable: the rest keep theirs


@pytest.fixture(scope="session", autouse=True)
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The cache of every build that names none: this session's own, never the developer's ~/.cache/sitegen, so
    no row left there by another version can change a test's outcome."""
    folder = tmp_path_factory.mktemp("sitegen-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SITEGEN_CACHE", str(folder))
        yield folder


@pytest.fixture
def tiny_corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpora" / "tiny")


@pytest.fixture
def fake_model() -> FakeEmbeddingModel:
    return FakeEmbeddingModel()


@pytest.fixture
def corpus_writer(tmp_path: Path) -> Callable[..., Path]:
    def make(name: str = "bad", **kwargs) -> Path:
        return write_corpus(tmp_path / "corpora" / name, **kwargs)

    return make
