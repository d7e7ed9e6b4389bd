"""Frozen question sets: FROZEN.json is deterministic, and a build refuses (or, allowed, flags) an edited corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitegen.audit import run_audit
from sitegen.builder import BuildOptions, build_site
from sitegen.cli import cli
from sitegen.errors import CorpusError
from sitegen.inputs.corpus import load_corpus
from sitegen.inputs.freeze import (
    FROZEN_FILE,
    compare_hashes,
    freeze_corpus,
    frozen_state,
    read_frozen,
)
from tests.helpers import REPO, TINY_QUERIES, FakeEmbeddingModel, file_tree, write_corpus

DATE = "2026-12-01"


def _build(corpora: Path, out: Path, **kwargs) -> None:
    options = BuildOptions(
        corpora_dir=corpora, out_dir=out, cache_dir=out.parent / "cache", rankers=("bm25",), **kwargs
    )
    build_site(options, model=FakeEmbeddingModel())


def _cli_build(corpora: Path, out: Path, *extra: str):
    args = ["build", "--corpora", str(corpora), "--out", str(out), "--ranker", "bm25", "--quiet"]
    return CliRunner().invoke(cli, [*args, "--cache-dir", str(out.parent / "cache"), *extra])


def _edit_a_question(corpus: Path) -> None:
    queries = [dict(q) for q in TINY_QUERIES]
    queries[0]["text"] = "refund a card payment"
    write_corpus(corpus, queries=queries)


def test_frozen_json_is_deterministic_given_the_date(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    result = CliRunner().invoke(cli, ["freeze", str(corpus), "--date", DATE])
    assert result.exit_code == 0, result.output
    assert result.output == (
        f"wrote {corpus / FROZEN_FILE}: 3 inputs frozen on {DATE} (corpus.jsonl, qrels/test.tsv, queries.jsonl)\n"
    )
    first = (corpus / FROZEN_FILE).read_bytes()
    freeze_corpus(corpus, DATE)
    assert (corpus / FROZEN_FILE).read_bytes() == first
    other = write_corpus(tmp_path / "elsewhere" / "tiny")  # same inputs in another folder: same bytes
    freeze_corpus(other, DATE)
    assert (other / FROZEN_FILE).read_bytes() == first
    data = json.loads(first)
    assert list(data) == ["date", "files", "format"] and data["date"] == DATE
    assert list(data["files"]) == ["corpus.jsonl", "qrels/test.tsv", "queries.jsonl"]  # README.md is prose
    assert first.endswith(b"}\n") and first.decode() == json.dumps(data, sort_keys=True, indent=2) + "\n"
    freeze_corpus(corpus, "2027-01-02")
    assert json.loads((corpus / FROZEN_FILE).read_text())["date"] == "2027-01-02"
    bad = CliRunner().invoke(cli, ["freeze", str(corpus), "--date", "2026-02-30"])
    assert bad.exit_code == 2 and "'2026-02-30' is not a calendar date" in bad.output


def test_freeze_covers_external_runs_and_sees_files_added_and_removed(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    (corpus / "runs").mkdir()
    (corpus / "runs" / "es.trec").write_text("q1 Q0 d1 1 1.0 es\n", encoding="utf-8")
    _, frozen = freeze_corpus(corpus, DATE)
    assert "runs/es.trec" in frozen.files
    state = frozen_state(load_corpus(corpus))
    assert state is not None and state.edited_files == []
    (corpus / "runs" / "es.trec").unlink()
    (corpus / "sitegen.json").write_text("{}", encoding="utf-8")
    (corpus / "README.md").write_text("# edited prose\n", encoding="utf-8")  # not frozen
    state = frozen_state(load_corpus(corpus))
    assert state is not None and (state.changed, state.added, state.removed) == (
        (),
        ("sitegen.json",),
        ("runs/es.trec",),
    )
    assert state.describe() == "sitegen.json added; runs/es.trec removed"
    assert compare_hashes({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"}) == (["b"], ["c"], [])


def test_a_malformed_frozen_json_is_a_one_line_error_naming_it(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    (corpus / FROZEN_FILE).write_text('{"date": "2026-12-01"}', encoding="utf-8")
    with pytest.raises(CorpusError, match=r"FROZEN\.json: expected"):
        read_frozen(corpus)
    result = _cli_build(corpus.parent, tmp_path / "site")
    assert result.exit_code == 1 and "FROZEN.json: expected" in result.output and "Traceback" not in result.output


def test_unchanged_frozen_corpus_builds_and_says_so(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    freeze_corpus(corpus, DATE)
    site = tmp_path / "site"
    _build(corpus.parent, site)
    summary = json.loads((site / "evidence" / "tiny" / "corpus.json").read_text())
    assert summary["frozen"] == {"date": DATE, "edited_files": []}
    # The record travels with the inputs, so the audit recomputes "frozen" instead of trusting it.
    assert (site / "evidence" / "tiny" / "inputs" / "FROZEN.json").read_bytes() == (corpus / "FROZEN.json").read_bytes()
    assert (
        summary["input_sha256"]["FROZEN.json"]
        == json.loads((site / "evidence" / "manifest.json").read_text())["files"]["evidence/tiny/inputs/FROZEN.json"][
            "sha256"
        ]
    )
    page = (site / "corpora" / "tiny" / "index.html").read_text()
    assert f"inputs frozen on {DATE}" in page and "edited after freezing" not in page
    assert run_audit(site, echo=lambda _: None)["verdict"] == "pass"


def test_unfrozen_corpus_has_no_frozen_entry_and_no_flag(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    site = tmp_path / "site"
    _build(corpus.parent, site)
    assert "frozen" not in json.loads((site / "evidence" / "tiny" / "corpus.json").read_text())
    assert "frozen on" not in (site / "corpora" / "tiny" / "index.html").read_text()


def test_editing_a_frozen_question_fails_the_build_naming_the_file_and_keeps_the_site(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    freeze_corpus(corpus, DATE)
    site = tmp_path / "site"
    _build(corpus.parent, site)
    before = file_tree(site)
    _edit_a_question(corpus)

    result = _cli_build(corpus.parent, site)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: build failed: ") and "queries.jsonl changed" in lines[0]
    assert f"tiny was frozen on {DATE}" in lines[0] and "--allow-edited" in lines[0]
    assert file_tree(site) == before
    assert not [p for p in site.parent.iterdir() if ".building-" in p.name]


def test_allow_edited_builds_and_flags_the_edited_files(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    freeze_corpus(corpus, DATE)
    _edit_a_question(corpus)
    site = tmp_path / "site"
    result = _cli_build(corpus.parent, site, "--allow-edited")
    assert result.exit_code == 0, result.output
    summary = json.loads((site / "evidence" / "tiny" / "corpus.json").read_text())
    assert summary["frozen"] == {"date": DATE, "edited_files": ["queries.jsonl"]}
    page = (site / "corpora" / "tiny" / "index.html").read_text()
    assert f"edited after freezing on {DATE}: queries.jsonl" in page
    assert run_audit(site, echo=lambda _: None)["verdict"] == "pass"
    # The warning names the files on stderr when not quiet.
    logged: list[str] = []
    build_site(
        BuildOptions(
            corpus.parent, tmp_path / "again", cache_dir=tmp_path / "cache", rankers=("bm25",), allow_edited=True
        ),
        log=logged.append,
    )
    assert f"warning: tiny: inputs edited after freezing on {DATE}: queries.jsonl changed (--allow-edited)" in logged


def test_the_committed_corpora_are_frozen_and_unchanged() -> None:
    for name in ("llm-reliability", "payments-support", "tenant-handbook"):
        state = frozen_state(load_corpus(REPO / "corpora" / name))
        assert state is not None and state.date == DATE and state.edited_files == [], name
