"""Importers: BEIR, TREC and SMART collections into sitegen corpus folders, on small hand-written inputs."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from sitegen.errors import CorpusError, CorpusProblems
from sitegen.inputs.corpus import load_corpus
from sitegen.inputs.importers import ImportOptions, ImportResult, import_beir, import_smart, import_trec
from tests.helpers import REPO

CRANFIELD = REPO / "corpora" / "cranfield"  # the BEIR files of ../shared/collections/cranfield, byte for byte
LICENSE = "CC-BY-4.0 (stated by the test)"


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _gz(path: Path) -> Path:
    target = path.with_name(path.name + ".gz")
    target.write_bytes(gzip.compress(path.read_bytes(), mtime=0))
    return target


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _error(call, *args, **kwargs) -> CorpusError:
    with pytest.raises(CorpusError) as info:
        call(*args, **kwargs)
    return info.value


def _no_leftovers(to: Path) -> None:
    assert not to.exists() or list(to.iterdir()) == []


# --------------------------------------------------------------------------------------------- BEIR


def _beir(
    root: Path, qrels: str | None = None, docs: list[dict] | None = None, queries: list[dict] | None = None
) -> Path:
    docs = docs or [
        {
            "_id": "d1",
            "title": "Wing  flutter",
            "text": "Flutter of a\nwing   at high speed.",
            "metadata": {"year": 1962},
        },
        {"_id": " d2 ", "title": "Heat transfer", "text": "Heat transfer in\tslabs.", "metadata": {}},
        {"_id": "d3", "text": "Boundary layers on flat plates."},
        {"_id": "d4", "title": "Shock waves", "text": ""},
    ]
    queries = queries or [
        {"_id": "q1", "text": "wing  flutter", "metadata": {}},
        {"_id": "q2", "text": "heat in slabs"},
        {"_id": "q3", "text": "judged, nothing relevant"},
        {"_id": "q4", "text": "a train-split query"},
    ]
    if qrels is None:
        qrels = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td3\t0\nq2\td2\t1\nq3\td4\t0\n"
    _write(root / "corpus.jsonl", "".join(json.dumps(d) + "\n" for d in docs))
    _write(root / "queries.jsonl", "".join(json.dumps(q) + "\n" for q in queries))
    _write(root / "qrels" / "test.tsv", qrels)
    return root


def test_beir_round_trip(tmp_path: Path) -> None:
    src = _beir(tmp_path / "src")
    to = tmp_path / "corpora"
    result = import_beir(src, ImportOptions("tiny", LICENSE, to=to, command="sitegen import beir src --name tiny"))
    assert result == ImportResult(
        name="tiny", folder=to / "tiny", documents=4, queries=2, judged_pairs=3, dropped_queries=2, dropped_qrels=1
    )
    corpus = load_corpus(to / "tiny")
    assert [(d.doc_id, d.title, d.text) for d in corpus.documents] == [
        ("d1", "Wing flutter", "Flutter of a wing at high speed."),
        ("d2", "Heat transfer", "Heat transfer in slabs."),
        ("d3", "", "Boundary layers on flat plates."),
        ("d4", "Shock waves", ""),
    ]
    assert dict(corpus.documents[0].metadata) == {"year": 1962}
    assert [(q.query_id, q.text, q.answerable) for q in corpus.queries] == [
        ("q1", "wing flutter", True),
        ("q2", "heat in slabs", True),
    ]
    assert {q: dict(d) for q, d in corpus.qrels.items()} == {"q1": {"d1": 2, "d3": 0}, "q2": {"d2": 1}}
    assert json.loads((to / "tiny" / "queries.jsonl").read_text().splitlines()[0]) == {
        "_id": "q1",
        "text": "wing flutter",
    }
    readme = (to / "tiny" / "README.md").read_text()
    assert "sitegen import beir src --name tiny" in readme
    assert LICENSE in readme
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        assert f"`{name}`" in readme and _sha(src / name) in readme
    assert "queries dropped: 2 (1 judged with no relevant document, 1 never judged)" in readme
    assert [p.name for p in to.iterdir()] == ["tiny"]


def test_beir_reconstructs_the_command_and_reads_other_splits(tmp_path: Path) -> None:
    src = _beir(tmp_path / "src")
    _write(src / "qrels" / "dev.tsv", "query-id\tcorpus-id\tscore\nq4\td3\t1\n")
    result = import_beir(src, ImportOptions("dev-only", "MIT, per the source's README", to=tmp_path / "c"), split="dev")
    assert (result.queries, result.judged_pairs, result.dropped_queries) == (1, 1, 3)
    readme = (result.folder / "README.md").read_text()
    # tmp_path lies outside the current folder: each path is shown by its name alone.
    assert (
        "sitegen import beir src --name dev-only --split dev --to c --license 'MIT, per the source'\"'\"'s README'"
    ) in readme
    assert _sha(src / "qrels" / "dev.tsv") in readme


def test_beir_keep_unanswerable_keeps_judged_queries_only(tmp_path: Path) -> None:
    result = import_beir(
        _beir(tmp_path / "src"), ImportOptions("tiny", LICENSE, to=tmp_path / "c", keep_unanswerable=True)
    )
    assert (result.queries, result.dropped_queries, result.judged_pairs, result.dropped_qrels) == (3, 1, 4, 0)
    corpus = load_corpus(result.folder)
    assert [(q.query_id, q.answerable) for q in corpus.queries] == [("q1", True), ("q2", True), ("q3", False)]


def test_beir_unknown_ids_fail_with_line_unless_skipped(tmp_path: Path) -> None:
    qrels = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\tnope\t1\nq9\td2\t1\nq2\td2\t1\n"
    src = _beir(tmp_path / "src", qrels=qrels)
    error = _error(import_beir, src, ImportOptions("tiny", LICENSE, to=tmp_path / "c"))
    assert (error.path, error.line) == (src / "qrels" / "test.tsv", 3)
    assert 'unknown document id "nope"' in error.problem
    _no_leftovers(tmp_path / "c")
    result = import_beir(src, ImportOptions("tiny", LICENSE, to=tmp_path / "c", skip_unknown=True))
    assert (result.judged_pairs, result.dropped_qrels, result.queries) == (2, 2, 2)
    readme = (result.folder / "README.md").read_text()
    assert "qrels rows dropped: 2" in readme and "skip_unknown" in readme


@pytest.mark.parametrize(
    ("qrels", "line", "problem"),
    [
        ("query-id\tcorpus-id\tscore\nq1\td1\n", 2, "expected 3 tab-separated columns, found 2"),
        ("query-id\tcorpus-id\tscore\nq1\td1\t1\n\nq2\td2\thigh\n", 4, "grade 'high' is not an integer"),
        ("q1\td1\t1\n", 1, "header"),
        (
            "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n",
            3,
            "judged twice with different grades (first on line 2)",
        ),
    ],
)
def test_beir_malformed_qrels(tmp_path: Path, qrels: str, line: int, problem: str) -> None:
    src = _beir(tmp_path / "src", qrels=qrels)
    error = _error(import_beir, src, ImportOptions("tiny", LICENSE, to=tmp_path / "c"))
    assert (error.path, error.line) == (src / "qrels" / "test.tsv", line)
    assert problem in error.problem


def test_beir_exact_repeats_are_dropped_and_counted(tmp_path: Path) -> None:
    src = _beir(tmp_path / "src", qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq1\td1\t1\n")
    result = import_beir(src, ImportOptions("tiny", LICENSE, to=tmp_path / "c"))
    assert (result.judged_pairs, result.dropped_qrels) == (2, 1)
    assert "1 repeat an earlier row exactly" in (result.folder / "README.md").read_text()


def test_beir_duplicate_document_id(tmp_path: Path) -> None:
    docs = [{"_id": "d1", "text": "a"}, {"_id": "d2", "text": "b"}, {"_id": "d1 ", "text": "c"}]
    src = _beir(tmp_path / "src", docs=docs, qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    error = _error(import_beir, src, ImportOptions("tiny", LICENSE, to=tmp_path / "c"))
    assert (error.path, error.line) == (src / "corpus.jsonl", 3)
    assert 'duplicate document id "d1" (first seen on line 1)' in error.problem


def test_real_cranfield_beir_folder(tmp_path: Path) -> None:
    result = import_beir(CRANFIELD, ImportOptions("cranfield", "research use", to=tmp_path))
    assert (result.documents, result.queries, result.judged_pairs) == (1400, 225, 1612)
    assert (result.dropped_queries, result.dropped_qrels) == (0, 0)
    corpus = load_corpus(result.folder)
    assert len(corpus.documents) == 1400 and len(corpus.queries) == 225
    assert sum(len(judged) for judged in corpus.qrels.values()) == 1612
    # The real files are already in sitegen's layout with collapsed whitespace: the import is byte for byte.
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        assert (result.folder / name).read_bytes() == (CRANFIELD / name).read_bytes()


# --------------------------------------------------------------------------------------------- TREC

SGML_DOCS = """\
<DOC>
<DOCNO> LA010189-0001 </DOCNO>
<DATE>January 1, 1989</DATE>
<HEADLINE>
<P>Wing   flutter &amp; its cure</P>
</HEADLINE>
<TEXT>
<P>Flutter of a wing</P>
<P>at high   speed.</P>
</TEXT>
</DOC>
<DOC><DOCNO>FT911-2</DOCNO><TITLE>Heat transfer</TITLE><TEXT>Heat in slabs.</TEXT></DOC>

<DOC>
<DOCNO>FT911-3</DOCNO>
<BYLINE>A. Writer</BYLINE>
Boundary layers <I>on</I> flat plates.
</DOC>
"""

SGML_TOPICS = """\
<top>
<num> Number: 051
<title> Topic: wing flutter

<desc> Description:
Documents about   flutter of wings.

<narr> Narrative:
A relevant document discusses flutter.
</top>

<top>
<num> Number: 52 </num>
<title> heat in slabs </title>
<desc> Description: How does heat move through slabs? </desc>
</top>
<top>
<num> Number: 53
<title> never judged
</top>
"""

TREC_QRELS = "51 0 LA010189-0001 2\n51 0 FT911-3 0\n052 0 FT911-2 1\n52 0 FT911-3 -2\n"


def _trec(root: Path) -> tuple[Path, Path, Path]:
    return (
        _write(root / "docs.sgml", SGML_DOCS),
        _write(root / "topics.txt", SGML_TOPICS),
        _write(root / "qrels.txt", TREC_QRELS),
    )


def test_trec_sgml_round_trip(tmp_path: Path) -> None:
    docs, topics, qrels = _trec(tmp_path / "src")
    result = import_trec(docs, topics, qrels, ImportOptions("robust-mini", LICENSE, to=tmp_path / "c", command="CMD"))
    assert result == ImportResult(
        name="robust-mini",
        folder=tmp_path / "c" / "robust-mini",
        documents=3,
        queries=2,
        judged_pairs=3,
        dropped_queries=1,
        dropped_qrels=1,
    )
    corpus = load_corpus(result.folder)
    assert [(d.doc_id, d.title, d.text) for d in corpus.documents] == [
        ("LA010189-0001", "Wing flutter & its cure", "Flutter of a wing at high speed."),
        ("FT911-2", "Heat transfer", "Heat in slabs."),
        ("FT911-3", "", "A. Writer Boundary layers on flat plates."),
    ]
    assert [(q.query_id, q.text) for q in corpus.queries] == [("51", "wing flutter"), ("52", "heat in slabs")]
    assert {q: dict(d) for q, d in corpus.qrels.items()} == {
        "51": {"LA010189-0001": 2, "FT911-3": 0},
        "52": {"FT911-2": 1},
    }
    readme = result.folder.joinpath("README.md").read_text()
    assert "CMD" in readme and LICENSE in readme
    assert all(f"`{p.name}`" in readme and _sha(p) in readme for p in (docs, topics, qrels))
    assert "1 have a negative grade" in readme


@pytest.mark.parametrize(
    ("field", "texts"),
    [
        ("desc", ["Documents about flutter of wings.", "How does heat move through slabs?"]),
        (
            "title+desc",
            ["wing flutter Documents about flutter of wings.", "heat in slabs How does heat move through slabs?"],
        ),
    ],
)
def test_trec_topic_field(tmp_path: Path, field: str, texts: list[str]) -> None:
    docs, topics, qrels = _trec(tmp_path / "src")
    # topic 53 has no <desc>; with field "desc" its text would be empty, so leave it out of this file.
    _write(topics, SGML_TOPICS.split("<top>\n<num> Number: 53")[0])
    result = import_trec(docs, topics, qrels, ImportOptions("t", LICENSE, to=tmp_path / "c"), topic_field=field)
    assert [q.text for q in load_corpus(result.folder).queries] == texts


def test_trec_topic_without_chosen_field_is_refused(tmp_path: Path) -> None:
    docs, topics, qrels = _trec(tmp_path / "src")
    error = _error(import_trec, docs, topics, qrels, ImportOptions("t", LICENSE, to=tmp_path / "c"), topic_field="desc")
    assert (error.path, error.line) == (topics, 17)
    assert "topic 53 has no <desc> text" in error.problem


def test_trec_jsonl_docs_tsv_topics_and_gzip(tmp_path: Path) -> None:
    src = tmp_path / "src"
    docs = _write(
        src / "docs.jsonl",
        json.dumps({"docno": "a", "title": "Alpha", "contents": "first  doc"})
        + "\n\n"
        + json.dumps({"id": "b", "body": "second doc"})
        + "\n"
        + json.dumps({"_id": "c", "text": "third", "metadata": {"lang": "en"}})
        + "\n",
    )
    topics = _write(src / "topics.tsv", "1\tfirst query\n2\tsecond\tquery with a tab\n3\tunjudged\n")
    qrels = _write(src / "qrels.txt", "1 0 a 1\n1 0 b 0\n2 Q0 b 3\n2 Q0 c 1\n")
    gz = [_gz(p) for p in (docs, topics, qrels)]
    result = import_trec(*gz, ImportOptions("jsonl", "", to=tmp_path / "c"))
    assert (result.documents, result.queries, result.judged_pairs, result.dropped_queries) == (3, 2, 4, 1)
    corpus = load_corpus(result.folder)
    assert [(d.doc_id, d.title, d.text, dict(d.metadata)) for d in corpus.documents] == [
        ("a", "Alpha", "first doc", {}),
        ("b", "", "second doc", {}),
        ("c", "", "third", {"lang": "en"}),
    ]
    assert [q.text for q in corpus.queries] == ["first query", "second query with a tab"]
    assert corpus.relevant("2") == {"b": 3, "c": 1}
    readme = result.folder.joinpath("README.md").read_text()
    assert "license: not stated" in readme
    assert all(f"`{p.name}`" in readme and _sha(p) in readme for p in gz)
    assert "docs.jsonl.gz" in readme and "--license ''" in readme


@pytest.mark.parametrize(
    ("qrels", "line", "problem"),
    [
        ("51 0 LA010189-0001 2\n\n52 FT911-2 1\n", 3, "expected 4 columns (qid iter docid grade), found 3"),
        ("51 0 LA010189-0001 2\n52 0 FT911-2 yes\n", 2, "grade 'yes' is not an integer"),
        ("51 0 LA010189-0001 2\n51 0 la010189-0001 1\n", 2, 'unknown document id "la010189-0001"'),
        ("51 0 LA010189-0001 2\n99 0 FT911-2 1\n", 2, 'unknown query id "99"'),
    ],
)
def test_trec_malformed_qrels(tmp_path: Path, qrels: str, line: int, problem: str) -> None:
    docs, topics, path = _trec(tmp_path / "src")
    _write(path, qrels)
    error = _error(import_trec, docs, topics, path, ImportOptions("t", LICENSE, to=tmp_path / "c"))
    assert (error.path, error.line) == (path, line)
    assert problem in error.problem
    _no_leftovers(tmp_path / "c")


@pytest.mark.parametrize(
    ("docs", "line", "problem"),
    [
        (
            "<DOC>\n<DOCNO>a</DOCNO>\n<TEXT>x</TEXT>\n\n<DOC>\n<DOCNO>b</DOCNO>\n</DOC>\n",
            1,
            "not closed before the next",
        ),
        ("<DOC><DOCNO>a</DOCNO></DOC>\n<DOC>\n<DOCNO>b</DOCNO>\n<TEXT>x</TEXT>\n", 2, "<DOC> is not closed"),
        ("<DOC>\n<DOCNO>a</DOCNO>\n\n<TEXT>\nbody\n</DOC>\n", 4, "<TEXT> is not closed"),
        ("<DOC>\n<TEXT>x</TEXT>\n</DOC>\n", 1, "document has no <DOCNO>"),
        ("<DOC><DOCNO>a</DOCNO></DOC>\nstray text\n", 2, "text outside a <DOC> element"),
        ("<DOC><DOCNO>a</DOCNO></DOC>\n<DOC><DOCNO> a </DOCNO></DOC>\n", 2, 'duplicate document id "a"'),
        ("\n  \n", None, "empty documents file"),
    ],
)
def test_trec_malformed_sgml_documents(tmp_path: Path, docs: str, line: int | None, problem: str) -> None:
    _, topics, qrels = _trec(tmp_path / "src")
    path = _write(tmp_path / "src" / "bad.sgml", docs)
    error = _error(import_trec, path, topics, qrels, ImportOptions("t", LICENSE, to=tmp_path / "c"))
    assert (error.path, error.line) == (path, line)
    assert problem in error.problem


def test_trec_unclosed_topic(tmp_path: Path) -> None:
    docs, topics, qrels = _trec(tmp_path / "src")
    _write(topics, SGML_TOPICS.replace("</top>\n\n<top>", "\n\n<top>", 1))
    error = _error(import_trec, docs, topics, qrels, ImportOptions("t", LICENSE, to=tmp_path / "c"))
    assert (error.path, error.line) == (topics, 1)
    assert "<TOP> is not closed before the next <TOP> on line 12" in error.problem


# --------------------------------------------------------------------------------------------- SMART

SMART_DOCS = """\
.I 1
.T
experimental investigation of the
aerodynamics of a wing .
.A
brenckman,m.
.B
j. ae. scs. 25, 1958, 324.
.W
experimental investigation of the aerodynamics of a
wing in a slipstream .
.I 2
.T
simple shear flow past a flat plate .
.A
ting-yili
.A
second author
.W
one-dimensional transient heat
conduction into a double-layer slab .
.I 3
.T
boundary layers
.W
.I 0004
.T
the last document
.X
1 5 1
.W
text of the last   document .
"""

SMART_QUERIES = """\
.I 001
.W
what similarity laws must be obeyed
when constructing aeroelastic models .
.I 002
.W
what are the structural problems .
.I 004
.W
heat conduction in slabs .
.I 008
.W
a query nobody judged .
"""

# Cranfield-style: ordinal query numbers, 1 = most relevant ... 4 = least, -1 = "no relevance".
SMART_QRELS = "1 1 1\n1 2 4\n2 2 2\n2 3 -1\n3 2 3\n3 4 1\n"


def _smart(root: Path, qrels: str = SMART_QRELS) -> tuple[Path, Path, Path]:
    return (
        _write(root / "cran.all", SMART_DOCS),
        _write(root / "cran.qry", SMART_QUERIES),
        _write(root / "cranqrel", qrels),
    )


def test_smart_round_trip_with_ordinals_and_inverted_grades(tmp_path: Path) -> None:
    docs, queries, qrels = _smart(tmp_path / "src")
    result = import_smart(
        docs, queries, qrels, ImportOptions("cran-mini", LICENSE, to=tmp_path / "c"), True, query_ids="ordinal"
    )
    assert result == ImportResult(
        name="cran-mini",
        folder=tmp_path / "c" / "cran-mini",
        documents=4,
        queries=3,
        judged_pairs=5,
        dropped_queries=1,
        dropped_qrels=1,
    )
    corpus = load_corpus(result.folder)
    assert [(d.doc_id, d.title, d.text) for d in corpus.documents] == [
        (
            "1",
            "experimental investigation of the aerodynamics of a wing .",
            "experimental investigation of the aerodynamics of a wing in a slipstream .",
        ),
        (
            "2",
            "simple shear flow past a flat plate .",
            "one-dimensional transient heat conduction into a double-layer slab .",
        ),
        ("3", "boundary layers", ""),
        ("4", "the last document", "text of the last document ."),
    ]
    assert dict(corpus.documents[0].metadata) == {
        "author": "brenckman,m.",
        "bibliographic": "j. ae. scs. 25, 1958, 324.",
    }
    assert dict(corpus.documents[1].metadata) == {"author": "ting-yili; second author"}
    assert dict(corpus.documents[2].metadata) == {}
    assert [(q.query_id, q.text) for q in corpus.queries] == [
        ("1", "what similarity laws must be obeyed when constructing aeroelastic models ."),
        ("2", "what are the structural problems ."),
        ("3", "heat conduction in slabs ."),
    ]
    # max positive grade 4: 1->4, 2->3, 3->2, 4->1; the -1 row is dropped.
    assert {q: dict(d) for q, d in corpus.qrels.items()} == {
        "1": {"1": 4, "2": 1},
        "2": {"2": 3},
        "3": {"2": 2, "4": 4},
    }
    readme = result.folder.joinpath("README.md").read_text()
    assert "1->4, 2->3, 3->2, 4->1" in readme
    assert "--query-ids ordinal --invert-grades" in readme
    assert all(_sha(p) in readme for p in (docs, queries, qrels))


def test_smart_invert_grades_uses_the_largest_positive_grade(tmp_path: Path) -> None:
    docs, queries, qrels = _smart(tmp_path / "src", qrels="1 1 1\n1 2 2\n1 3 3\n1 4 0\n2 1 -1\n2 2 2\n")
    result = import_smart(docs, queries, qrels, ImportOptions("inv", LICENSE, to=tmp_path / "c"), invert_grades=True)
    assert (result.judged_pairs, result.dropped_qrels, result.queries, result.dropped_queries) == (4, 2, 2, 2)
    assert {q: dict(d) for q, d in load_corpus(result.folder).qrels.items()} == {
        "1": {"1": 3, "2": 2, "3": 1},
        "2": {"2": 2},
    }


def test_smart_query_judged_only_no_relevance_is_dropped_or_kept_unanswerable(tmp_path: Path) -> None:
    docs, queries, qrels = _smart(tmp_path / "src", qrels="1 1 1\n2 3 -1\n")
    result = import_smart(docs, queries, qrels, ImportOptions("a", LICENSE, to=tmp_path / "c"), invert_grades=True)
    assert (result.queries, result.dropped_queries, result.judged_pairs, result.dropped_qrels) == (1, 3, 1, 1)
    readme = (result.folder / "README.md").read_text()
    assert "queries dropped: 3 (1 judged with no relevant document, 2 never judged)" in readme
    assert "1 have a grade <= 0 (inverted grades)" in readme
    result = import_smart(
        docs, queries, qrels, ImportOptions("b", LICENSE, to=tmp_path / "c", keep_unanswerable=True), True
    )
    assert (result.queries, result.dropped_queries, result.judged_pairs) == (2, 2, 1)
    corpus = load_corpus(result.folder)
    assert [(q.query_id, q.answerable) for q in corpus.queries] == [("1", True), ("2", False)]
    assert {q: dict(d) for q, d in corpus.qrels.items()} == {"1": {"1": 1}}


def test_smart_dropped_row_never_conflicts_with_a_kept_one(tmp_path: Path) -> None:
    docs, queries, qrels = _smart(tmp_path / "src", qrels="1 1 1\n1 1 -1\n1 2 2\n1 2 3\n")
    error = _error(import_smart, docs, queries, qrels, ImportOptions("s", LICENSE, to=tmp_path / "c"), True)
    assert (error.path, error.line) == (qrels, 4)
    _write(qrels, "1 1 1\n1 1 -1\n1 2 2\n")
    result = import_smart(docs, queries, qrels, ImportOptions("s", LICENSE, to=tmp_path / "c"), True)
    assert {q: dict(d) for q, d in load_corpus(result.folder).qrels.items()} == {"1": {"1": 2, "2": 1}}


def test_smart_without_inversion_keeps_grades_and_drops_negative_ones(tmp_path: Path) -> None:
    docs, queries, qrels = _smart(tmp_path / "src", qrels="1 1 1\n1 2 4\n2 3 -1\n2 2\n")
    result = import_smart(docs, queries, qrels, ImportOptions("plain", LICENSE, to=tmp_path / "c"))
    qrels_map = {q: dict(d) for q, d in load_corpus(result.folder).qrels.items()}
    assert qrels_map == {"1": {"1": 1, "2": 4}, "2": {"2": 1}}  # a missing grade means 1
    assert result.dropped_qrels == 1


def test_smart_query_ids_default_to_the_dot_i_number(tmp_path: Path) -> None:
    docs, queries, qrels = _smart(tmp_path / "src", qrels="1 1 1\n4 2 1\n8 3 2\n")
    result = import_smart(docs, queries, qrels, ImportOptions("numbers", LICENSE, to=tmp_path / "c"))
    corpus = load_corpus(result.folder)
    assert [q.query_id for q in corpus.queries] == ["1", "4", "8"]
    assert result.dropped_queries == 1  # .I 002 is not judged


def test_smart_ordinal_qrels_with_number_ids_fail_with_a_hint(tmp_path: Path) -> None:
    docs, queries, qrels = _smart(tmp_path / "src")
    error = _error(import_smart, docs, queries, qrels, ImportOptions("n", LICENSE, to=tmp_path / "c"), True)
    assert (error.path, error.line) == (qrels, 5)
    assert 'unknown query id "3"' in error.problem and "--query-ids ordinal" in error.problem


def test_smart_trec_style_qrels_are_detected(tmp_path: Path) -> None:
    docs, queries, qrels = _smart(tmp_path / "src", qrels="1 0 1 1\n1 0 3 0\n2 0 2 2\n")
    result = import_smart(docs, queries, qrels, ImportOptions("med", LICENSE, to=tmp_path / "c"))
    assert {q: dict(d) for q, d in load_corpus(result.folder).qrels.items()} == {"1": {"1": 1, "3": 0}, "2": {"2": 2}}


@pytest.mark.parametrize(
    ("qrels", "line", "problem"),
    [
        ("1 1 1\n1 2 1 0\n", 2, "expected 2 or 3 columns"),
        ("1 0 1 1\n1 2 1\n", 2, "expected 4 columns"),
        ("1 1 1\n1\n", 2, "expected 2 or 3 columns"),
        ("1 1 1\n\n2 2 x\n", 3, "grade 'x' is not an integer"),
        ("1 2 3 4 5\n", 1, "found 5 columns"),
        ("1 1 1\n1 9 1\n", 2, 'unknown document id "9"'),
    ],
)
def test_smart_malformed_qrels(tmp_path: Path, qrels: str, line: int, problem: str) -> None:
    docs, queries, path = _smart(tmp_path / "src", qrels=qrels)
    error = _error(import_smart, docs, queries, path, ImportOptions("s", LICENSE, to=tmp_path / "c"))
    assert (error.path, error.line) == (path, line)
    assert problem in error.problem


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        (".T\na title\n.W\nsome text\n", 1, "every SMART record starts with .I <id>"),
        ("\n\nstray words\n.I 1\n.W\ntext\n", 3, "every SMART record starts with .I <id>"),
        (".I 1\n.W\ntext\n.I\n.W\nmore\n", 4, ".I line without an id"),
        (".I 1\n.W\ntext\n.I 01\n.W\nmore\n", 4, 'duplicate document id "1" (first seen on line 1)'),
        (".I 1\nloose text\n", 2, "text after .I before any field"),
        ("", None, "empty document file"),
    ],
)
def test_smart_malformed_documents(tmp_path: Path, text: str, line: int | None, problem: str) -> None:
    _, queries, qrels = _smart(tmp_path / "src")
    path = _write(tmp_path / "src" / "bad.all", text)
    error = _error(import_smart, path, queries, qrels, ImportOptions("s", LICENSE, to=tmp_path / "c"))
    assert (error.path, error.line) == (path, line)
    assert problem in error.problem


def test_smart_query_without_text(tmp_path: Path) -> None:
    docs, queries, qrels = _smart(tmp_path / "src")
    _write(queries, SMART_QUERIES.replace(".W\nwhat are the structural problems .\n", ""))
    error = _error(import_smart, docs, queries, qrels, ImportOptions("s", LICENSE, to=tmp_path / "c"))
    assert (error.path, error.line) == (queries, 5)
    assert "query .I 2 has no .W text" in error.problem


# --------------------------------------------------------------------------------------------- shared rules


@pytest.mark.parametrize(
    ("importer", "which", "line"),
    [
        ("beir", "corpus.jsonl", 2),
        ("beir", "queries.jsonl", 3),
        ("beir", "qrels/test.tsv", 4),
        ("trec", "docs", 9),
        ("trec", "topics", 6),
        ("trec", "qrels", 2),
        ("trec-gz", "docs", 9),
        ("smart", "docs", 14),
        ("smart", "queries", 3),
        ("smart", "qrels", 1),
    ],
)
def test_non_utf8_byte_is_reported_with_its_line(tmp_path: Path, importer: str, which: str, line: int) -> None:
    src = tmp_path / "src"
    if importer == "beir":
        _beir(src)
        path = src / which
        files: tuple[Path, ...] = ()
    elif importer.startswith("trec"):
        docs, topics, qrels = _trec(src)
        files = (docs, topics, qrels)
        path = {"docs": docs, "topics": topics, "qrels": qrels}[which]
    else:
        docs, queries, qrels = _smart(src)
        files = (docs, queries, qrels)
        path = {"docs": docs, "queries": queries, "qrels": qrels}[which]
    lines = path.read_bytes().split(b"\n")
    lines[line - 1] = lines[line - 1][:3] + b"\xe9" + lines[line - 1][3:]
    path.write_bytes(b"\n".join(lines))
    if importer == "trec-gz":
        files = tuple(_gz(p) for p in files)
        path = files[0]
    to = tmp_path / "c"
    if importer == "beir":
        error = _error(import_beir, src, ImportOptions("x", LICENSE, to=to))
    elif importer.startswith("trec"):
        error = _error(import_trec, *files, ImportOptions("x", LICENSE, to=to))
    else:
        error = _error(import_smart, *files, ImportOptions("x", LICENSE, to=to), True, query_ids="ordinal")
    assert (error.path, error.line) == (path, line)
    assert "not valid UTF-8 (byte 4 of the line)" in error.problem
    _no_leftovers(to)


def test_existing_target_is_refused_unless_overwrite(tmp_path: Path) -> None:
    src = _beir(tmp_path / "src")
    to = tmp_path / "c"
    _write(to / "tiny" / "keep.txt", "someone's work")
    error = _error(import_beir, src, ImportOptions("tiny", LICENSE, to=to))
    assert error.path == to / "tiny" and "already exists" in error.problem
    assert (to / "tiny" / "keep.txt").read_text() == "someone's work"
    result = import_beir(src, ImportOptions("tiny", LICENSE, to=to, overwrite=True))
    assert sorted(p.name for p in result.folder.iterdir()) == ["README.md", "corpus.jsonl", "qrels", "queries.jsonl"]
    assert [p.name for p in to.iterdir()] == ["tiny"]
    assert "--overwrite" in (result.folder / "README.md").read_text()


def test_failing_import_leaves_nothing_behind(tmp_path: Path) -> None:
    src = _beir(tmp_path / "src", qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\tmissing\t1\n")
    to = tmp_path / "new" / "corpora"
    _error(import_beir, src, ImportOptions("tiny", LICENSE, to=to))
    assert not to.exists()
    _write(to / "other" / "corpus.jsonl", "")
    _error(import_beir, src, ImportOptions("tiny", LICENSE, to=to))
    assert [p.name for p in to.iterdir()] == ["other"]


def test_failing_overwrite_keeps_the_old_folder(tmp_path: Path) -> None:
    good = import_beir(_beir(tmp_path / "good"), ImportOptions("tiny", LICENSE, to=tmp_path / "c"))
    before = (good.folder / "corpus.jsonl").read_bytes()
    bad = _beir(tmp_path / "bad", qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n")
    _error(import_beir, bad, ImportOptions("tiny", LICENSE, to=tmp_path / "c", overwrite=True))
    assert (good.folder / "corpus.jsonl").read_bytes() == before
    assert [p.name for p in (tmp_path / "c").iterdir()] == ["tiny"]


def test_no_relevant_judgement_at_all_is_refused(tmp_path: Path) -> None:
    src = _beir(tmp_path / "src", qrels="query-id\tcorpus-id\tscore\nq1\td1\t0\n")
    error = _error(import_beir, src, ImportOptions("tiny", LICENSE, to=tmp_path / "c"))
    assert error.path == src / "qrels" / "test.tsv" and "no query has a relevant document" in error.problem
    _no_leftovers(tmp_path / "c")


@pytest.mark.parametrize("name", ["", "../escape", "a/b", ".hidden", "spaces in name"])
def test_bad_corpus_names_are_refused(tmp_path: Path, name: str) -> None:
    error = _error(import_beir, _beir(tmp_path / "src"), ImportOptions(name, LICENSE, to=tmp_path / "c"))
    assert "corpus name" in error.problem
    assert not (tmp_path / "c").exists()


def test_imports_are_deterministic(tmp_path: Path) -> None:
    docs, topics, qrels = _trec(tmp_path / "src")
    first = import_trec(docs, topics, qrels, ImportOptions("a", LICENSE, to=tmp_path / "one", command="CMD"))
    second = import_trec(docs, topics, qrels, ImportOptions("a", LICENSE, to=tmp_path / "two", command="CMD"))
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "README.md"):
        assert (first.folder / name).read_bytes() == (second.folder / name).read_bytes()


# ------------------------------------------------------------------------------------ provenance, reader, grades


def test_readme_never_publishes_a_source_path_given_as_absolute(tmp_path: Path) -> None:
    docs, topics, qrels = _trec(tmp_path / "home" / "alice" / "private")
    to = tmp_path / "workspace" / "corpora"
    result = import_trec(docs, topics, qrels, ImportOptions("mini", LICENSE, to=to))
    readme = (result.folder / "README.md").read_text()
    assert str(tmp_path) not in readme and "alice" not in readme and "workspace" not in readme
    assert "sitegen import trec docs.sgml topics.txt qrels.txt --name mini --topic-field title --to corpora " in readme


def test_readme_shows_paths_inside_the_current_folder_relative_to_it(tmp_path: Path, monkeypatch) -> None:
    src = _beir(tmp_path / "data" / "beir")
    monkeypatch.chdir(tmp_path)
    result = import_beir(src, ImportOptions("tiny", LICENSE, to=Path("corpora")))  # absolute source, relative target
    readme = (result.folder / "README.md").read_text()
    assert "sitegen import beir data/beir --name tiny --split test --to corpora " in readme
    assert str(tmp_path) not in readme


def test_readme_keeps_a_relative_source_path_as_given_so_the_command_reruns(tmp_path: Path, monkeypatch) -> None:
    _beir(tmp_path / "shared" / "collections" / "tiny")
    (tmp_path / "repo").mkdir()
    monkeypatch.chdir(tmp_path / "repo")
    result = import_beir(Path("../shared/collections/tiny"), ImportOptions("tiny", LICENSE, to=Path("corpora")))
    readme = (result.folder / "README.md").read_text()
    assert "sitegen import beir ../shared/collections/tiny --name tiny --split test --to corpora " in readme
    # the first paragraph, which the corpus page shows above the collapsed README, names the source
    first = readme.split("\n\n")[1]
    assert first.startswith("Imported from `../shared/collections/tiny` (BEIR) by `sitegen import beir`")
    assert str(tmp_path) not in readme


def test_beir_quotes_and_hashes_the_source_readme(tmp_path: Path) -> None:
    src = _beir(tmp_path / "src")
    _write(src / "README.md", "# Tiny\n\nCollected by hand.\n\n## Licence\nFree for research.\n")
    result = import_beir(src, ImportOptions("tiny", LICENSE, to=tmp_path / "c"))
    readme = (result.folder / "README.md").read_text()
    assert f"| `README.md` | {(src / 'README.md').stat().st_size} | `{_sha(src / 'README.md')}` |" in readme
    quoted = readme.split("## The source's README\n")[1]
    assert "> ### Tiny\n>\n> Collected by hand.\n>\n> #### Licence\n> Free for research.\n" in quoted
    assert load_corpus(result.folder).readme == readme


def test_beir_without_a_readme_lists_only_its_data_files(tmp_path: Path) -> None:
    result = import_beir(_beir(tmp_path / "src"), ImportOptions("tiny", LICENSE, to=tmp_path / "c"))
    readme = (result.folder / "README.md").read_text()
    assert "`README.md`" not in readme and "## The source's README" not in readme


def test_importers_read_jsonl_with_the_corpus_reader(tmp_path: Path) -> None:
    """U+2028 inside a string is text, a BOM on line 1 is skipped, NUL is an error with its line."""
    src = _beir(tmp_path / "src")
    path = src / "corpus.jsonl"
    lines = path.read_text().split("\n")
    lines[2] = json.dumps({"_id": "d3", "text": "Boundary\u2028layers"}, ensure_ascii=False)
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode())
    result = import_beir(src, ImportOptions("tiny", LICENSE, to=tmp_path / "c"))
    assert load_corpus(result.folder).documents[2].doc_id == "d3"
    lines[3] = '{"_id": "d4", "text": "a\x00b"}'
    path.write_bytes("\n".join(lines).encode())
    error = _error(import_beir, src, ImportOptions("again", LICENSE, to=tmp_path / "c"))
    assert (error.path, error.line) == (path, 4) and error.problem.startswith("NUL byte")


@pytest.mark.parametrize("grade", ["+1", "1_0", "1.0", "\u0661", "9" * 5000, "-" + "9" * 5000])
def test_importer_grades_must_be_digits_with_an_optional_minus(tmp_path: Path, grade: str) -> None:
    docs, topics, _ = _trec(tmp_path / "src")
    qrels = _write(tmp_path / "src" / "qrels.txt", f"51 0 LA010189-0001 2\n52 0 FT911-2 {grade}\n")
    error = _error(import_trec, docs, topics, qrels, ImportOptions("x", LICENSE, to=tmp_path / "c"))
    assert (error.path, error.line) == (qrels, 2) and error.problem.startswith("grade ")
    _no_leftovers(tmp_path / "c")


def test_importer_negative_grades_are_still_dropped_and_counted(tmp_path: Path) -> None:
    docs, topics, _ = _trec(tmp_path / "src")
    qrels = _write(tmp_path / "src" / "qrels.txt", "51 0 LA010189-0001 2\n51 0 FT911-2 -1\n")
    result = import_trec(docs, topics, qrels, ImportOptions("x", LICENSE, to=tmp_path / "c"))
    assert (result.judged_pairs, result.dropped_qrels) == (1, 1)


def test_beir_header_check_still_catches_a_missing_header_with_an_odd_grade(tmp_path: Path) -> None:
    src = _beir(tmp_path / "src", qrels="q1\td1\t+1\nq2\td2\t1\n")
    error = _error(import_beir, src, ImportOptions("x", LICENSE, to=tmp_path / "c"))
    assert (error.line, error.problem) == (1, "first line must be a header such as 'query-id\\tcorpus-id\\tscore'")


# ------------------------------------------------------------------ every problem at once, none twice


def _truncated(path: Path, line: int, keep: int) -> None:
    """Cut line ``line`` (1-based) of a JSONL file after ``keep`` characters, as a copy cut short mid-write."""
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[line - 1] = lines[line - 1][:keep]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_an_import_lists_every_problem_in_its_inputs_not_only_the_first(tmp_path: Path) -> None:
    docs = [
        {"_id": "d1", "text": "a"},
        {"_id": "d2", "text": 7},
        {"_id": "d1", "text": "c"},
        {"_id": "d3", "text": "d"},
    ]
    qrels = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td3\thigh\nq2\tnope\t1\nq2\td3\t1\n"
    src = _beir(tmp_path / "src", docs=docs, qrels=qrels)
    error = _error(import_beir, src, ImportOptions("tiny", LICENSE, to=tmp_path / "c"))
    assert isinstance(error, CorpusProblems)
    found = [(p.path.name, p.line, p.problem) for p in error.problems]
    assert found == [
        ("corpus.jsonl", 2, 'field "text" must be a string, got a number'),
        ("corpus.jsonl", 3, 'duplicate document id "d1" (first seen on line 1)'),
        ("test.tsv", 3, "grade 'high' is not an integer (digits 0-9 only)"),
        (
            "test.tsv",
            4,
            'unknown document id "nope" (not in corpus.jsonl); rerun with --skip-unknown to drop and count such rows',
        ),
    ]
    # read as one error, it is the first with the count of the rest
    assert (error.path, error.line) == (src / "corpus.jsonl", 2) and error.problem.endswith("(and 3 more problems)")
    _no_leftovers(tmp_path / "c")


@pytest.mark.parametrize("keep", [40, 12])  # cut after the id, and inside it
def test_one_truncated_document_line_is_one_problem_however_many_rows_name_it(tmp_path: Path, keep: int) -> None:
    docs = [{"_id": f"d{n}", "text": f"passage number {n} about wing flutter and heat transfer"} for n in range(1, 4)]
    queries = [{"_id": f"q{n}", "text": f"question {n}"} for n in range(1, 9)]
    qrels = "query-id\tcorpus-id\tscore\n" + "".join(f"q{n}\td2\t1\nq{n}\td1\t1\n" for n in range(1, 9))
    src = _beir(tmp_path / "src", docs=docs, queries=queries, qrels=qrels)
    _truncated(src / "corpus.jsonl", 2, keep)  # d2, named by 8 qrels rows
    error = _error(import_beir, src, ImportOptions("tiny", LICENSE, to=tmp_path / "c"))
    assert isinstance(error, CorpusProblems)  # every problem was looked for, and only one was found
    assert [(p.path.name, p.line) for p in error.problems] == [("corpus.jsonl", 2)]
    assert "malformed JSON" in error.problem and "more problem" not in error.problem


def test_one_truncated_query_line_is_one_problem_in_the_validator_too(corpus_writer) -> None:
    from sitegen.inputs.corpus import validate_corpus

    folder = corpus_writer("cut")
    _truncated(folder / "queries.jsonl", 2, 20)  # q2, named by its qrels rows
    _truncated(folder / "corpus.jsonl", 2, 30)  # d2, named by two qrels rows
    corpus, problems = validate_corpus(folder)
    assert corpus is None
    assert [(p.path.name, p.line) for p in problems] == [("corpus.jsonl", 2), ("queries.jsonl", 2)]


def test_the_import_command_prints_every_problem_then_fails(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from sitegen.cli import cli

    qrels = "query-id\tcorpus-id\tscore\nq1\td1\tx\nq1\tnope\t1\nq2\td2\t1\n"
    src = _beir(tmp_path / "src", qrels=qrels)
    result = CliRunner().invoke(cli, ["import", "beir", str(src), "--license", LICENSE, "--to", str(tmp_path / "c")])
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("error: /")]
    assert len(errors) == 2 and errors[0].endswith("test.tsv:2: grade 'x' is not an integer (digits 0-9 only)")
    assert 'test.tsv:3: unknown document id "nope"' in errors[1] and "skip_unknown=True" not in result.output
    assert "import failed: 2 problems in the inputs, listed above" in result.output
