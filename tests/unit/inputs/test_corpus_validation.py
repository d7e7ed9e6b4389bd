"""Every validation error names the file, the line and the problem, and exits non-zero."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitegen.cli import cli
from sitegen.errors import CorpusError
from sitegen.inputs.corpus import load_corpus
from tests.helpers import TINY_DOCS, TINY_QRELS, TINY_QUERIES


def _error(folder: Path) -> CorpusError:
    with pytest.raises(CorpusError) as info:
        load_corpus(folder)
    return info.value


def test_valid_corpus_loads_in_file_order_with_optional_fields(tiny_corpus: Path) -> None:
    corpus = load_corpus(tiny_corpus)
    assert [d.doc_id for d in corpus.documents] == ["d1", "d2", "d3", "d4"]
    assert corpus.kinds == ("paraphrase", "exact-code", "unanswerable")
    assert corpus.queries[3].answerable is False
    assert corpus.relevant("q1") == {"d1": 2, "d2": 1}
    assert corpus.input_files == ("README.md", "corpus.jsonl", "qrels/test.tsv", "queries.jsonl")


def test_malformed_json_names_file_and_line(tiny_corpus: Path) -> None:
    path = tiny_corpus / "corpus.jsonl"
    lines = path.read_text().splitlines()
    lines[2] = '{"_id": "d3", "text": "unterminated'
    path.write_text("\n".join(lines) + "\n")
    error = _error(tiny_corpus)
    assert error.path == path and error.line == 3
    assert "malformed JSON" in str(error)


@pytest.mark.parametrize("field", ["_id", "text"])
def test_document_missing_required_field_is_reported(corpus_writer, field: str) -> None:
    docs = [dict(d) for d in TINY_DOCS]
    del docs[1][field]
    folder = corpus_writer(docs=docs)
    error = _error(folder)
    assert (error.path.name, error.line) == ("corpus.jsonl", 2)
    assert f'missing required field "{field}"' in error.problem


def test_query_missing_text_is_reported(corpus_writer) -> None:
    queries = [dict(q) for q in TINY_QUERIES]
    del queries[2]["text"]
    error = _error(corpus_writer(queries=queries))
    assert (error.path.name, error.line) == ("queries.jsonl", 3)


def test_duplicate_document_id_points_at_both_lines(corpus_writer) -> None:
    docs = [*TINY_DOCS, {"_id": "d2", "title": "again", "text": "dup"}]
    error = _error(corpus_writer(docs=docs))
    assert (error.path.name, error.line) == ("corpus.jsonl", 5)
    assert 'duplicate _id "d2" (first seen on line 2)' in error.problem


def test_duplicate_query_id_is_reported(corpus_writer) -> None:
    queries = [*TINY_QUERIES, {"_id": "q1", "text": "again"}]
    error = _error(corpus_writer(queries=queries))
    assert (error.path.name, error.line) == ("queries.jsonl", 5)


def test_qrels_naming_unknown_query_is_reported(corpus_writer) -> None:
    error = _error(corpus_writer(qrels=[*TINY_QRELS, ("q99", "d1", 1)]))
    assert (error.path.name, error.line) == ("test.tsv", 6)
    assert 'unknown query id "q99"' in error.problem


def test_qrels_naming_unknown_document_is_reported(corpus_writer) -> None:
    error = _error(corpus_writer(qrels=[("q1", "d1", 2), ("q1", "nope", 1), ("q2", "d3", 1), ("q3", "d2", 1)]))
    assert (error.path.name, error.line) == ("test.tsv", 3)
    assert 'unknown corpus id "nope"' in error.problem


def test_query_without_qrels_must_be_marked_unanswerable(corpus_writer) -> None:
    error = _error(corpus_writer(qrels=[q for q in TINY_QRELS if q[0] != "q3"]))
    assert (error.path.name, error.line) == ("queries.jsonl", 3)
    assert 'query "q3" has no relevant passage' in error.problem
    assert '"answerable": false' in error.problem


def test_query_with_only_zero_grades_counts_as_unjudged(corpus_writer) -> None:
    qrels = [q for q in TINY_QRELS if q[0] != "q3"] + [("q3", "d1", 0)]
    assert 'query "q3" has no relevant passage' in _error(corpus_writer(qrels=qrels)).problem


def test_unanswerable_query_with_a_relevant_passage_is_a_contradiction(corpus_writer) -> None:
    error = _error(corpus_writer(qrels=[*TINY_QRELS, ("q4", "d1", 1)]))
    assert (error.path.name, error.line) == ("queries.jsonl", 4)


def test_empty_corpus_is_reported(corpus_writer) -> None:
    folder = corpus_writer(qrels=[])
    (folder / "corpus.jsonl").write_text("\n")
    error = _error(folder)
    assert error.path.name == "corpus.jsonl" and "empty" in error.problem


def test_file_that_is_not_utf8_names_the_line(tiny_corpus: Path) -> None:
    path = tiny_corpus / "queries.jsonl"
    data = path.read_bytes().split(b"\n")
    data[1] = b'{"_id": "q2", "text": "caf\xe9 E4012"}'
    path.write_bytes(b"\n".join(data))
    error = _error(tiny_corpus)
    assert (error.path, error.line) == (path, 2)
    assert "not valid UTF-8" in error.problem


def test_qrels_with_wrong_header_column_count_or_grade(tiny_corpus: Path) -> None:
    path = tiny_corpus / "qrels" / "test.tsv"
    good = path.read_text()
    path.write_text(good.replace("query-id\tcorpus-id\tscore", "qid\tdocid\trel"))
    assert _error(tiny_corpus).line == 1
    path.write_text(good + "q1\td3\n")
    assert "expected 3 tab-separated columns" in _error(tiny_corpus).problem
    path.write_text(good + "q1\td3\thigh\n")
    assert "'high' is not an integer" in _error(tiny_corpus).problem
    path.write_text(good + "q1\td1\t1\n")
    assert "judged twice" in _error(tiny_corpus).problem


def test_missing_required_file_is_reported(tiny_corpus: Path) -> None:
    (tiny_corpus / "qrels" / "test.tsv").unlink()
    assert "required file is missing" in str(_error(tiny_corpus))


def test_wrongly_typed_optional_fields_are_reported(corpus_writer) -> None:
    queries = [dict(q) for q in TINY_QUERIES]
    queries[0]["answerable"] = "yes"
    assert "answerable" in _error(corpus_writer(name="a", queries=queries)).problem
    queries = [dict(q) for q in TINY_QUERIES]
    queries[0]["filter"] = ["tenant"]
    assert '"filter" must be a JSON object' in _error(corpus_writer(name="b", queries=queries)).problem
    docs = [dict(d) for d in TINY_DOCS]
    docs[0]["_id"] = 7
    assert '"_id" must be a string' in _error(corpus_writer(name="c", docs=docs)).problem


def test_validate_command_exits_non_zero_with_file_and_line(corpus_writer) -> None:
    folder = corpus_writer(qrels=[*TINY_QRELS, ("q99", "d1", 1)])
    result = CliRunner().invoke(cli, ["validate", str(folder)])
    assert result.exit_code == 1
    assert f"{folder / 'qrels' / 'test.tsv'}:6: unknown query id" in result.output


def test_validate_command_reports_a_good_corpus(tiny_corpus: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", str(tiny_corpus)])
    assert result.exit_code == 0, result.output
    assert "ok (4 passages, 4 questions" in result.output


def test_the_cranfield_collection_loads_with_its_empty_texts() -> None:
    from tests.helpers import REPO

    folder = REPO / "corpora" / "cranfield"
    corpus = load_corpus(folder)
    assert (len(corpus.documents), len(corpus.queries)) == (1400, 225)
    assert sum(1 for d in corpus.documents if not d.text) == 2
    assert json.loads((folder / "queries.jsonl").read_text().splitlines()[0])["_id"] == corpus.queries[0].query_id
