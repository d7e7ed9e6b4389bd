"""Question-set hygiene in a build: a planted leaked question in hygiene.json, on the corpus page and as a warning;
--strict-questions; the audit of a tampered hygiene.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitegen import audit
from sitegen.cli import cli
from sitegen.errors import SitegenError
from tests.helpers import (
    TINY_DOCS,
    TINY_QRELS,
    TINY_QUERIES,
    build,
    copy_site,
    evidence_failures,
    rehash_manifest,
)

LEAKED = {"_id": "q5", "text": "Error E4012 means the card", "kind": "exact-code"}


def _write(folder: Path, queries: list[dict]) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in TINY_DOCS), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    rows = "".join(f"{q}\t{d}\t{g}\n" for q, d, g in [*TINY_QRELS, ("q5", "d3", 1)])
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows, encoding="utf-8")
    return folder


@pytest.fixture
def leaky(tmp_path: Path) -> Path:
    return _write(tmp_path / "corpora" / "tiny", [*TINY_QUERIES, LEAKED])


@pytest.fixture(scope="module")
def leaky_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """bm25 over tiny with a leaked question planted, and the build's messages."""
    root = tmp_path_factory.mktemp("leaky")
    log: list[str] = []
    build(_write(root / "corpora" / "tiny", [*TINY_QUERIES, LEAKED]).parent, root / "site", log=log, rankers=("bm25",))
    return root / "site", log


def test_a_planted_leaked_question_is_flagged_in_hygiene_json_on_the_corpus_page_and_as_a_warning(
    leaky_build: tuple[Path, list[str]], tmp_path: Path
) -> None:
    built, log = leaky_build
    site = copy_site(built, tmp_path / "site")  # the audit writes audit.json
    hygiene = json.loads((site / "evidence" / "tiny" / "hygiene.json").read_text())
    assert hygiene["flags"]["leakage"] == [{"query_id": "q5", "doc_ids": ["d3"]}]
    assert "evidence/tiny/hygiene.json" in json.loads((site / "evidence" / "manifest.json").read_text())["files"]
    page = (site / "corpora" / "tiny" / "index.html").read_text()
    assert '<a href="#hygiene">Question-set hygiene</a>' in page
    section = page[page.index('id="hygiene"') :]
    assert '<span class="id">q5</span> (in d3)' in section
    assert 'data-ev="evidence/tiny/hygiene.json#/counts/leakage">1</span>' in section
    assert 'data-ev="evidence/tiny/hygiene.json#/rules/leakage/ngram_words">8</span>' in section
    assert any(line.startswith("warning: tiny: question text found verbatim") and "q5" in line for line in log)
    report = audit.run_audit(site, echo=lambda _: None)
    assert report["verdict"] == "pass", evidence_failures(report)
    assert any(c["name"] == "hygiene:tiny" for c in report["checks"])


def test_strict_questions_fails_the_build_naming_corpus_flag_and_question(tmp_path: Path, leaky: Path) -> None:
    with pytest.raises(
        SitegenError, match=r"tiny: question text found verbatim in a passage \(leakage\): questions q5"
    ):
        build(leaky.parent, tmp_path / "site", rankers=("bm25",), strict_questions=True)
    assert not (tmp_path / "site").exists()
    result = CliRunner().invoke(
        cli,
        [
            *("build", "--corpora", str(leaky.parent), "--out", str(tmp_path / "cli"), "--ranker", "bm25"),
            *("--quiet", "--cache-dir", str(tmp_path / "cache"), "--strict-questions"),
        ],
    )
    assert result.exit_code == 1 and "leakage" in result.output and "q5" in result.output


def test_the_audit_fails_a_tampered_hygiene_json(leaky_build: tuple[Path, list[str]], tmp_path: Path) -> None:
    site = copy_site(leaky_build[0], tmp_path / "site")
    path = site / "evidence" / "tiny" / "hygiene.json"
    data = json.loads(path.read_text())
    data["flags"]["leakage"] = []
    data["counts"]["leakage"] = 0
    path.write_text(json.dumps(data), encoding="utf-8")
    rehash_manifest(site)
    failures = evidence_failures(audit.run_audit(site, echo=lambda _: None))
    assert any("flags.leakage differ" in line for line in failures["hygiene:tiny"])
    assert any("counts" in line for line in failures["hygiene:tiny"])
