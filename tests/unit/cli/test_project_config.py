"""sitegen.toml, ``sitegen init``, ``sitegen validate`` listing every problem, one error style, and counted nouns."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sitegen.cli.config import ConfigError, load_config
from sitegen.cli.init_command import example_corpus_files
from sitegen.wording import count
from tests.helpers import run_cli

# ------------------------------------------------------------------------------------------ wording


@pytest.mark.parametrize(
    ("n", "words", "expected"),
    [
        (1, ("question",), "1 question"),
        (0, ("question",), "0 questions"),
        (2, ("text",), "2 texts"),
        (1, ("corpus", "corpora"), "1 corpus"),
        (3, ("corpus", "corpora"), "3 corpora"),
    ],
)
def test_count_agrees_the_noun_with_the_number(n: int, words: tuple[str, ...], expected: str) -> None:
    assert count(n, *words) == expected


def test_init_refuses_to_overwrite_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "corpora" / "bike-workshop").mkdir(parents=True)
    (tmp_path / "corpora" / "bike-workshop" / "README.md").write_text("mine", encoding="utf-8")
    result = run_cli("init", str(tmp_path))
    assert result.exit_code == 1
    assert result.output.startswith("error: init refused: ") and "README.md already exists" in result.output
    assert not (tmp_path / "sitegen.toml").exists()
    assert (tmp_path / "corpora" / "bike-workshop" / "README.md").read_text() == "mine"


def test_example_corpus_has_six_to_ten_passages_and_an_unanswerable_question() -> None:
    files = example_corpus_files()
    passages = files["corpus.jsonl"].splitlines()
    questions = [json.loads(line) for line in files["queries.jsonl"].splitlines()]
    assert 6 <= len(passages) <= 10 and len(questions) >= 3
    assert any(q["answerable"] is False for q in questions)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('title = "x"\ncolour = "red"\n', r"sitegen\.toml:2: unknown key 'colour'"),
        ('title = "x"\n\nrankers = "bm25"\n', r"sitegen\.toml:3: rankers must be a list of ranker names"),
        ("title = 3\n", r"sitegen\.toml:1: title must be a nonempty string, got 3"),
        ('runs = ["nope"]\n', r"sitegen\.toml:1: runs: 'nope' is not NAME=CORPUS:PATH"),
        ('title = "x\n', r"sitegen\.toml:1: not valid TOML"),
        ("[report]\ntitle = 'x'\n", r"sitegen\.toml:1: unknown key 'report'"),
    ],
)
def test_a_bad_sitegen_toml_names_the_file_line_and_key(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "sitegen.toml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=expected):
        load_config(tmp_path / "sitegen.toml")


def test_build_refuses_a_bad_sitegen_toml_before_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sitegen.toml").write_text('titel = "x"\n', encoding="utf-8")
    result = run_cli("build", "--ranker", "bm25")
    assert result.exit_code == 1
    assert result.output.startswith("error: build failed: sitegen.toml:1: unknown key 'titel'")
    assert not (tmp_path / "site").exists()


# ----------------------------------------------------------------------------------- sitegen validate


def _broken_corpus(root: Path) -> Path:
    folder = root / "corpora" / "broken"
    (folder / "qrels").mkdir(parents=True)
    for name, text in example_corpus_files().items():
        (folder / name).write_text(text, encoding="utf-8")
    lines = (folder / "corpus.jsonl").read_text().splitlines()
    lines[1] = '{"_id": "x", '  # malformed
    lines[3] = lines[3].replace('"text"', '"body"')  # missing field
    lines.append(lines[0])  # duplicate id
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_validate_lists_every_problem_with_file_and_line_in_one_run(tmp_path: Path) -> None:
    folder = _broken_corpus(tmp_path)
    result = run_cli("validate", str(folder))
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
    corpus = folder / "corpus.jsonl"
    assert f"error: {corpus}:2: malformed JSON" in result.output
    assert f'error: {corpus}:4: missing required field "text"' in result.output
    assert f"error: {corpus}:9: duplicate _id" in result.output
    assert len(errors) >= 3 and all(re.match(r"error: \S+:\d+: ", line) for line in errors), errors


def test_validate_stops_at_the_limit_per_file_and_counts_the_rest(tmp_path: Path) -> None:
    folder = _broken_corpus(tmp_path)
    with (folder / "corpus.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("[]\n" * 30)
    result = run_cli("validate", str(folder))
    corpus_errors = [line for line in result.output.splitlines() if line.startswith(f"error: {folder}/corpus.jsonl")]
    assert len(corpus_errors) == 21
    assert corpus_errors[-1] == f"error: {folder}/corpus.jsonl: ... and 13 more problems"


def test_validate_on_a_folder_of_corpora_suggests_them(tmp_path: Path) -> None:
    assert run_cli("init", str(tmp_path)).exit_code == 0
    corpora = tmp_path / "corpora"
    result = run_cli("validate", str(corpora))
    assert result.exit_code == 1
    assert result.output == (
        f"error: {corpora}: this folder holds corpora, not a corpus: validate one of bike-workshop/ "
        f"(sitegen validate {corpora / 'bike-workshop'}), or pass --corpora {corpora}\n"
    )
    result = run_cli("validate", "--corpora", str(corpora))
    assert result.exit_code == 0 and "bike-workshop: ok (8 passages, 6 questions" in result.output


def test_validate_on_the_project_folder_suggests_the_corpora_two_levels_down(tmp_path: Path) -> None:
    assert run_cli("init", str(tmp_path)).exit_code == 0
    result = run_cli("validate", str(tmp_path))
    assert result.exit_code == 1
    assert result.output == (
        f"error: {tmp_path}: this folder holds corpora, not a corpus: validate one of corpora/bike-workshop/ "
        f"(sitegen validate {tmp_path / 'corpora' / 'bike-workshop'}), or pass --corpora {tmp_path / 'corpora'}\n"
    )


def test_the_build_stops_at_the_first_problem_in_the_same_style(tmp_path: Path) -> None:
    folder = _broken_corpus(tmp_path)
    result = run_cli("build", "--corpora", str(folder.parent), "--out", str(tmp_path / "out"), "--ranker", "bm25")
    assert result.exit_code == 1
    assert result.output == f"error: build failed: {folder / 'corpus.jsonl'}:2: malformed JSON: " + (
        "Expecting property name enclosed in double quotes (column 14)\n"
    )


# ----------------------------------------------------------------------------------- one error style


def test_every_command_prints_its_own_failures_as_lowercase_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "a" / "evidence").mkdir(parents=True)
    (tmp_path / "gate.json").write_text("not JSON", encoding="utf-8")
    failing = [
        ["build", "--corpora", str(tmp_path / "none"), "--out", str(tmp_path / "out"), "--ranker", "bm25"],
        ["validate", str(tmp_path / "none")],
        ["diff", str(tmp_path / "empty"), str(tmp_path / "empty")],
        ["import", "beir", str(tmp_path / "empty"), "--license", "", "--to", str(tmp_path / "to")],
        ["freeze", str(tmp_path / "empty")],
        ["gate", "check", str(tmp_path / "gate.json"), str(tmp_path / "a")],
        ["audit", str(tmp_path / "a"), "--reembed"],
        ["init", str(tmp_path / "a" / "evidence" / "x" / "y")],
    ]
    for args in failing:
        if args[0] == "init":  # a file where init must make a folder
            (tmp_path / "a" / "evidence" / "x").write_text("", encoding="utf-8")
        result = run_cli(*args)
        assert result.exit_code not in (0, 2), (args, result.output)
        lines = result.output.splitlines()
        assert any(line.startswith("error: ") for line in lines), (args, result.output)
        assert not any(line.startswith("Error") for line in lines), (args, result.output)
