"""`sitegen validate` and the build read a corpus's "reranks" through the rankers' parser (the corpus loader
never imports a ranker): a bad entry is still an error naming sitegen.json and its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitegen.cli import cli
from sitegen.errors import CorpusError
from sitegen.inputs.corpus import load_corpus
from sitegen.rankers.selection import rerank_entries
from tests.helpers import write_corpus


def _corpus_with(tmp_path: Path, reranks: object) -> Path:
    folder = tmp_path / "tiny"
    write_corpus(folder)
    text = json.dumps({"reranks": reranks}, indent=2)
    (folder / "sitegen.json").write_text(text, encoding="utf-8")
    return folder


def test_validate_names_the_file_and_line_of_a_bad_rerank(tmp_path: Path) -> None:
    folder = _corpus_with(tmp_path, [{"name": "re", "first_stage": "bm25", "scorer": {"kind": "psychic"}}])
    result = CliRunner().invoke(cli, ["validate", str(folder)])
    assert result.exit_code == 1
    assert f"{folder / 'sitegen.json'}:2:" in result.output
    assert "psychic" in result.output or "kind" in result.output


def test_a_good_rerank_validates_and_parses_into_its_scorer(tmp_path: Path) -> None:
    folder = _corpus_with(tmp_path, [{"name": "re", "first_stage": "bm25", "scorer": {"kind": "bi-encoder"}}])
    assert CliRunner().invoke(cli, ["validate", str(folder)]).exit_code == 0
    (entry,) = rerank_entries(load_corpus(folder))
    assert (entry.name, entry.first_stage, entry.candidates) == ("re", "bm25", 50)


def test_the_build_refuses_a_rerank_that_is_not_a_list(tmp_path: Path) -> None:
    folder = _corpus_with(tmp_path, {"name": "re"})
    with pytest.raises(CorpusError, match=r"sitegen\.json:2: .*must be a list"):
        rerank_entries(load_corpus(folder))
