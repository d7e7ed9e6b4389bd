"""A build of a frozen corpus: unchanged it builds and says so, edited it is refused naming the file and keeping the
site, or allowed (--allow-edited) and flagged; a malformed FROZEN.json is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitegen.audit import run_audit
from sitegen.errors import CorpusError
from sitegen.inputs.freeze import (
    FROZEN_FILE,
    freeze_corpus,
    read_frozen,
)
from tests.helpers import FROZEN_ON, TINY_QUERIES, build, cli_build, file_tree, write_corpus


def _edit_a_question(corpus: Path) -> None:
    queries = [dict(q) for q in TINY_QUERIES]
    queries[0]["text"] = "refund a card payment"
    write_corpus(corpus, queries=queries)


def test_a_malformed_frozen_json_is_a_one_line_error_naming_it(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    (corpus / FROZEN_FILE).write_text('{"date": "2026-12-01"}', encoding="utf-8")
    with pytest.raises(CorpusError, match=r"FROZEN\.json: expected"):
        read_frozen(corpus)
    result = cli_build(corpus.parent, tmp_path / "site")
    assert result.exit_code == 1 and "FROZEN.json: expected" in result.output and "Traceback" not in result.output


def test_unchanged_frozen_corpus_builds_and_says_so(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    freeze_corpus(corpus, FROZEN_ON)
    site = tmp_path / "site"
    build(corpus.parent, site, rankers=("bm25",))
    summary = json.loads((site / "evidence" / "tiny" / "corpus.json").read_text())
    assert summary["frozen"] == {"date": FROZEN_ON, "edited_files": []}
    # The record travels with the inputs, so the audit recomputes "frozen" instead of trusting it.
    assert (site / "evidence" / "tiny" / "inputs" / "FROZEN.json").read_bytes() == (corpus / "FROZEN.json").read_bytes()
    listed = json.loads((site / "evidence" / "manifest.json").read_text())["files"]
    assert summary["input_sha256"]["FROZEN.json"] == listed["evidence/tiny/inputs/FROZEN.json"]["sha256"]
    page = (site / "corpora" / "tiny" / "index.html").read_text()
    assert f"inputs frozen on {FROZEN_ON}" in page and "edited after freezing" not in page
    assert run_audit(site, echo=lambda _: None)["verdict"] == "pass"


def test_unfrozen_corpus_has_no_frozen_entry_and_no_flag(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    site = tmp_path / "site"
    build(corpus.parent, site, rankers=("bm25",))
    assert "frozen" not in json.loads((site / "evidence" / "tiny" / "corpus.json").read_text())
    assert "frozen on" not in (site / "corpora" / "tiny" / "index.html").read_text()


def test_editing_a_frozen_question_fails_the_build_naming_the_file_and_keeps_the_site(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    freeze_corpus(corpus, FROZEN_ON)
    site = tmp_path / "site"
    build(corpus.parent, site, rankers=("bm25",))
    before = file_tree(site)
    _edit_a_question(corpus)

    result = cli_build(corpus.parent, site)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: build failed: ") and "queries.jsonl changed" in lines[0]
    assert f"tiny was frozen on {FROZEN_ON}" in lines[0] and "--allow-edited" in lines[0]
    assert file_tree(site) == before
    assert not [p for p in site.parent.iterdir() if ".building-" in p.name]


def test_allow_edited_builds_and_flags_the_edited_files(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    freeze_corpus(corpus, FROZEN_ON)
    _edit_a_question(corpus)
    site = tmp_path / "site"
    result = cli_build(corpus.parent, site, "--allow-edited")
    assert result.exit_code == 0, result.output
    summary = json.loads((site / "evidence" / "tiny" / "corpus.json").read_text())
    assert summary["frozen"] == {"date": FROZEN_ON, "edited_files": ["queries.jsonl"]}
    page = (site / "corpora" / "tiny" / "index.html").read_text()
    assert f"edited after freezing on {FROZEN_ON}: queries.jsonl" in page
    assert run_audit(site, echo=lambda _: None)["verdict"] == "pass"
    # The warning names the files on stderr when not quiet.
    logged: list[str] = []
    build(corpus.parent, tmp_path / "again", log=logged, rankers=("bm25",), allow_edited=True)
    assert (
        f"warning: tiny: inputs edited after freezing on {FROZEN_ON}: queries.jsonl changed (--allow-edited)" in logged
    )
