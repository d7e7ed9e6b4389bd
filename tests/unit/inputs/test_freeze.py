"""Frozen question sets: FROZEN.json is deterministic, covers runs, and sees files changed, added and removed."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sitegen.cli import cli
from sitegen.inputs.corpus import load_corpus
from sitegen.inputs.freeze import (
    FROZEN_FILE,
    compare_hashes,
    freeze_corpus,
    frozen_state,
)
from tests.helpers import FROZEN_ON, REPO, write_corpus


def test_frozen_json_is_deterministic_given_the_date(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    result = CliRunner().invoke(cli, ["freeze", str(corpus), "--date", FROZEN_ON])
    assert result.exit_code == 0, result.output
    assert result.output == (
        f"wrote {corpus / FROZEN_FILE}: 3 inputs frozen on {FROZEN_ON} (corpus.jsonl, qrels/test.tsv, queries.jsonl)\n"
    )
    first = (corpus / FROZEN_FILE).read_bytes()
    freeze_corpus(corpus, FROZEN_ON)
    assert (corpus / FROZEN_FILE).read_bytes() == first
    other = write_corpus(tmp_path / "elsewhere" / "tiny")  # same inputs in another folder: same bytes
    freeze_corpus(other, FROZEN_ON)
    assert (other / FROZEN_FILE).read_bytes() == first
    data = json.loads(first)
    assert list(data) == ["date", "files", "format"] and data["date"] == FROZEN_ON
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
    _, frozen = freeze_corpus(corpus, FROZEN_ON)
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


def test_the_committed_corpora_are_frozen_and_unchanged() -> None:
    for name in ("llm-reliability", "payments-support", "tenant-handbook"):
        state = frozen_state(load_corpus(REPO / "corpora" / name))
        assert state is not None and state.date == FROZEN_ON and state.edited_files == [], name
