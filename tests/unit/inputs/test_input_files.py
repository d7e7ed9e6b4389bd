"""Corpus inputs stay inside their folder, are read by one line reader, and carry strict grades.

Links: a README.md linked to a file outside the folder used to be read, copied into
``evidence/<corpus>/inputs/`` and rendered on the page; now every file the format names is refused when it
is a symbolic link (or sits under one), with ``links outside the corpus`` when the link leaves the folder.
Reader: ``str.splitlines()`` split JSON strings holding U+2028, U+2029 or U+0085 into two lines; the one
reader splits on ``\\n`` only, so those lines load and line numbers are an editor's.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from sitegen.errors import CorpusError
from sitegen.inputs.corpus import CITATIONS_FILE, CONFIG_FILE, MAX_GRADE, json_lines, load_corpus, text_lines
from sitegen.publish.writer import CorpusResults, DerivedTables, write_corpus_evidence
from sitegen.rankers.external import read_trec_run
from tests.helpers import TINY_DOCS, TINY_QRELS, TINY_QUERIES, write_corpus

NAMED_FILES = ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "README.md", CONFIG_FILE, CITATIONS_FILE]


def _error(folder: Path) -> CorpusError:
    with pytest.raises(CorpusError) as info:
        load_corpus(folder)
    return info.value


def _corpus_with_every_file(folder: Path) -> Path:
    write_corpus(folder)
    (folder / CONFIG_FILE).write_text('{"packing": {"budgets": [20]}}\n', encoding="utf-8")
    (folder / CITATIONS_FILE).write_text(
        '{"query_id": "q1", "citations": [{"kind": "valid", "doc_id": "d1", "quote": "refund"}]}\n', encoding="utf-8"
    )
    (folder / "runs").mkdir()
    (folder / "runs" / "vendor.trec").write_text("q1 Q0 d1 1 2.0 vendor\n", encoding="utf-8")
    return folder


# --------------------------------------------------------------------------------------------- links


@pytest.mark.parametrize("name", [*NAMED_FILES, "runs/vendor.trec"])
def test_a_named_file_linked_outside_the_folder_is_refused(tmp_path: Path, name: str) -> None:
    folder = _corpus_with_every_file(tmp_path / "corpora" / "tiny")
    secret = tmp_path / "secret"
    secret.write_bytes((folder / name).read_bytes())  # a stand-in that would otherwise load
    (folder / name).unlink()
    (folder / name).symlink_to(secret)
    error = _error(folder)
    assert (error.path, error.problem) == (folder / name, "links outside the corpus")
    assert str(error) == f"{folder / name}: links outside the corpus"


def test_a_readme_linked_to_a_secret_is_neither_read_nor_copied_into_the_bundle(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "corpora" / "tiny", readme=None)
    secret = tmp_path / "home" / ".ssh" / "id_ed25519"
    secret.parent.mkdir(parents=True)
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n", encoding="utf-8")
    (folder / "README.md").symlink_to(secret)
    error = _error(folder)
    assert error.path == folder / "README.md" and error.problem == "links outside the corpus"
    assert "PRIVATE KEY" not in str(error)


@pytest.mark.parametrize("folder_name", ["qrels", "runs"])
def test_a_folder_of_inputs_linked_outside_is_refused(tmp_path: Path, folder_name: str) -> None:
    folder = _corpus_with_every_file(tmp_path / "corpora" / "tiny")
    outside = tmp_path / "elsewhere"
    (folder / folder_name).rename(outside)
    (folder / folder_name).symlink_to(outside, target_is_directory=True)
    error = _error(folder)
    assert error.problem == "links outside the corpus"
    assert error.path.is_relative_to(folder / folder_name)


def test_a_link_that_stays_inside_the_folder_is_refused_too(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "corpora" / "tiny")
    (folder / "README.md").rename(folder / "about.md")
    (folder / "README.md").symlink_to("about.md")
    error = _error(folder)
    assert error.path == folder / "README.md"
    assert error.problem.startswith("is a symbolic link; ")


def test_a_dangling_link_is_refused_not_taken_for_a_missing_optional_file(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "corpora" / "tiny", readme=None)
    (folder / "README.md").symlink_to(tmp_path / "gone.md")
    assert _error(folder).problem == "links outside the corpus"


def test_a_corpus_folder_reached_through_a_link_still_loads(tmp_path: Path) -> None:
    real = write_corpus(tmp_path / "real" / "tiny")
    (tmp_path / "corpora").mkdir()
    (tmp_path / "corpora" / "tiny").symlink_to(real, target_is_directory=True)
    assert load_corpus(tmp_path / "corpora" / "tiny").readme.startswith("# tiny")


# --------------------------------------------------------------------------------------------- bundle copies


def test_only_the_files_the_format_names_are_copied_into_the_bundle(tmp_path: Path) -> None:
    folder = _corpus_with_every_file(tmp_path / "corpora" / "tiny")
    (folder / "notes.txt").write_text("draft notes\n", encoding="utf-8")
    (folder / ".env").write_text("API_KEY=hunter2\n", encoding="utf-8")
    (folder / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n", encoding="utf-8")
    corpus = load_corpus(folder)
    assert corpus.input_files == tuple(sorted(NAMED_FILES))
    evidence = tmp_path / "evidence"
    write_corpus_evidence(tmp_path, CorpusResults(corpus, {}, {}, (), 10, DerivedTables({}, {}, {}, {}, {})))
    copied = sorted(p.relative_to(evidence / "tiny" / "inputs").as_posix() for p in evidence.rglob("inputs/**/*"))
    assert [p for p in copied if not (evidence / "tiny" / "inputs" / p).is_dir()] == sorted(NAMED_FILES)
    assert not any(b"hunter2" in p.read_bytes() for p in evidence.rglob("*") if p.is_file())


# --------------------------------------------------------------------------------------------- one reader


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"])
def test_a_json_string_holding_a_unicode_line_separator_loads(corpus_writer, separator: str) -> None:
    docs = [dict(d) for d in TINY_DOCS]
    docs[0]["text"] = f"first part{separator}second part"
    queries = [dict(q) for q in TINY_QUERIES]
    queries[1]["text"] = f"what is{separator}E4012"
    folder = corpus_writer(docs=docs, queries=queries)
    for name in ("corpus.jsonl", "queries.jsonl"):  # written raw, as ensure_ascii=False writers do
        path = folder / name
        path.write_text(path.read_text().encode().decode("unicode_escape"), encoding="utf-8")
        assert separator in path.read_text()
    corpus = load_corpus(folder)
    assert corpus.documents[0].text == f"first part{separator}second part"
    assert corpus.queries[1].text == f"what is{separator}E4012"


def test_line_numbers_count_newlines_only(tiny_corpus: Path) -> None:
    path = tiny_corpus / "corpus.jsonl"
    lines = path.read_text().splitlines()
    lines[0] = json.dumps({**TINY_DOCS[0], "text": "a\u2028b\u2029c\u0085d"}, ensure_ascii=False)
    lines[2] = lines[2][:-1]  # line 3 loses its closing brace
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    error = _error(tiny_corpus)
    assert (error.path, error.line) == (path, 3)
    assert error.problem.startswith("malformed JSON")


def test_crlf_line_endings_are_accepted(tiny_corpus: Path) -> None:
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", CITATIONS_FILE):
        path = tiny_corpus / name
        if name == CITATIONS_FILE:
            path.write_text('{"query_id": "q1", "citations": []}\n', encoding="utf-8")
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    corpus = load_corpus(tiny_corpus)
    assert len(corpus.documents) == 4 and corpus.qrels["q1"]["d1"] == 2


def test_a_byte_order_mark_on_line_one_is_skipped_in_every_line_based_input(tiny_corpus: Path) -> None:
    (tiny_corpus / CITATIONS_FILE).write_text('{"query_id": "q1", "citations": []}\n', encoding="utf-8")
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", CITATIONS_FILE):
        path = tiny_corpus / name
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    corpus = load_corpus(tiny_corpus)
    assert corpus.documents[0].doc_id == "d1" and "q1" in corpus.citations
    run = tiny_corpus / "run.trec"
    run.write_bytes(b"\xef\xbb\xbfq1 Q0 d1 1 2.0 tag\n")
    assert list(read_trec_run(run).hits) == ["q1"]  # not "\ufeffq1", an unknown query


def test_a_byte_order_mark_opening_sitegen_json_or_the_readme_is_skipped_too(tiny_corpus: Path) -> None:
    (tiny_corpus / CONFIG_FILE).write_bytes(b'\xef\xbb\xbf{"packing": {"budgets": [20]}}\n')
    readme = tiny_corpus / "README.md"
    readme.write_bytes(b"\xef\xbb\xbf" + readme.read_bytes())
    corpus = load_corpus(tiny_corpus)
    assert corpus.config["packing"] == {"budgets": [20]} and corpus.readme.startswith("# tiny")


def test_a_byte_order_mark_after_line_one_is_an_error_with_its_line(tiny_corpus: Path) -> None:
    path = tiny_corpus / "corpus.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[1] = b"\xef\xbb\xbf" + lines[1]
    path.write_bytes(b"\n".join(lines))
    error = _error(tiny_corpus)
    assert (error.path, error.line) == (path, 2) and "malformed JSON" in error.problem


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (b'{"_id": "d2", "text": "a\x00b"}', "NUL byte (byte 25 of the line)"),
        (b'{"_id": "d2", "text": "caf\xe9"}', "not valid UTF-8 (byte 27 of the line)"),
        (b'{"_id": "d2", "text": "x"', "malformed JSON: Expecting ',' delimiter (column 26)"),
        (b'["d2", "x"]', "expected a JSON object, got an array"),
        (b'{"_id": "d2", "text": "x", "n": NaN}', "unsupported JSON: NaN is not a JSON number"),
        (b'{"_id": "d2", "text": "x", "n": 1e999}', "unsupported JSON: 1e999 is out of range for a double"),
        (b'{"_id": "d2", "text": "x", "n": ' + b"9" * 5000 + b"}", "unsupported JSON: a number longer than 4300"),
        (b'{"_id": "d2", "text": "x", "n": ' + b"[" * 100000 + b"]" * 100000 + b"}", "malformed JSON: nested too"),
        (b'{"_id": "d2", "text": "\\ud800"}', "unsupported JSON: a \\uD800-\\uDFFF escape"),
    ],
)
def test_a_bad_jsonl_line_names_file_and_line(tiny_corpus: Path, bad: bytes, problem: str) -> None:
    path = tiny_corpus / "corpus.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[1] = bad
    path.write_bytes(b"\n".join(lines))
    error = _error(tiny_corpus)
    assert (error.path, error.line) == (path, 2)
    assert error.problem.startswith(problem)


def test_a_surrogate_pair_escape_is_one_character_and_loads(corpus_writer) -> None:
    docs = [dict(d) for d in TINY_DOCS]
    folder = corpus_writer(docs=docs)
    path = folder / "corpus.jsonl"
    path.write_text(path.read_text().replace("How to refund", "How to \\ud83d\\ude00 refund"), encoding="utf-8")
    assert "\U0001f600" in load_corpus(folder).documents[0].text


def test_the_reader_is_the_same_for_a_stream_and_a_file(tmp_path: Path) -> None:
    data = b'\xef\xbb\xbf{"a": "x\xe2\x80\xa8y"}\r\n\n{"a": 2}'
    path = tmp_path / "x.jsonl"
    path.write_bytes(data)
    from_file = list(json_lines(path))
    from_stream = list(json_lines(path, text_lines(path, io.BytesIO(data))))
    assert from_file == from_stream == [(1, {"a": "x\u2028y"}), (3, {"a": 2})]


# --------------------------------------------------------------------------------------------- grades


@pytest.mark.parametrize(
    ("grade", "problem"),
    [
        ("+1", "grade '+1' is not an integer (digits 0-9 only)"),
        ("1_0", "grade '1_0' is not an integer (digits 0-9 only)"),
        ("1.0", "grade '1.0' is not an integer (digits 0-9 only)"),
        ("\u0661", "grade '\u0661' is not an integer (digits 0-9 only)"),
        ("-1", "grade -1 is negative; grades are 0 (not relevant) or higher"),
        (str(MAX_GRADE + 1), f"grade {MAX_GRADE + 1} is out of range"),
        ("9" * 5000, "grade 999999999999... (5000 characters) is out of range"),
    ],
)
def test_qrels_grade_must_be_ascii_digits(corpus_writer, grade: str, problem: str) -> None:
    folder = corpus_writer()
    path = folder / "qrels" / "test.tsv"
    path.write_text(path.read_text() + f"q3\td4\t{grade}\n", encoding="utf-8")
    error = _error(folder)
    assert (error.path, error.line) == (path, len(TINY_QRELS) + 2)
    assert error.problem.startswith(problem)


def test_largest_and_zero_padded_grades_are_accepted(corpus_writer) -> None:
    folder = corpus_writer(qrels=[*TINY_QRELS, ("q3", "d4", MAX_GRADE)])
    path = folder / "qrels" / "test.tsv"
    path.write_text(path.read_text().replace("q2\td3\t1", "q2\td3\t007"), encoding="utf-8")
    corpus = load_corpus(folder)
    assert corpus.qrels["q3"]["d4"] == MAX_GRADE and corpus.qrels["q2"]["d3"] == 7
