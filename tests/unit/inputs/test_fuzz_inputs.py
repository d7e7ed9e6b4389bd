"""Fuzzing the input parsers: every mutated input ends in success or a located SitegenError.

Each example starts from small valid files (the tiny corpus of ``conftest.py``, a TREC run, BEIR, TREC and
SMART collections) and applies one to three mutations: bytes flipped, inserted (NUL, a byte-order mark,
U+2028, U+0085, a stray quote or bracket, a 5,000-digit number) or cut, lines duplicated or dropped, the file
emptied, a JSON value replaced by another type (number, list, null, nested object, NaN, a lone surrogate
escape, deep nesting) or a column replaced by a malformed grade (``+1``, ``1_0``, an Arabic-Indic digit, a
huge integer). The parser must then return, or raise a SitegenError whose message names one of the input files and, for
problems that sit on a line, a line that exists. Any other exception (KeyError, TypeError, ValueError,
UnicodeDecodeError, ...) fails the test with the input that caused it.

Runs are deterministic (``derandomize=True``, no example database) and bounded (``max_examples``), so the
file takes seconds.
"""

from __future__ import annotations

import gzip
import json
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitegen.errors import CorpusError, SitegenError
from sitegen.inputs.corpus import load_corpus
from sitegen.inputs.importers import ImportOptions, import_beir, import_smart, import_trec
from sitegen.rankers.external import read_trec_run
from tests.helpers import TINY_DOCS, TINY_QRELS, TINY_QUERIES, examples, write_corpus

# Slow: hundreds of mutated inputs per parser
pytestmark = pytest.mark.slow

FUZZ = settings(
    max_examples=examples(100),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Problems that sit on one line: their errors must say which.
LINE_PROBLEMS = ("malformed JSON", "unsupported JSON", "not valid UTF-8", "NUL byte", "expected a JSON object")

INSERTS = [
    b"\x00",
    b"\xef\xbb\xbf",
    "\u2028".encode(),
    "\u2029".encode(),
    "\x85".encode(),
    b"\r",
    b"\n",
    b"\r\n",
    b"\t",
    b" ",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",  # an encoded surrogate: not UTF-8
    b'"',
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\\",
    b"\\ud800",
    b"-",
    b"+",
    b"_",
    b"9" * 5000,
    b"1e999",
    b"NaN",
    b"<",
    b"</DOC>",
    b"<DOC>",
    b"<top>",
    b"\n.I 1\n",
    b"\n.W\n",
]

# JSON texts put where a value was: wrong types, nesting, values Python's json accepts but cannot write back.
WEIRD_JSON = [
    "123",
    "-1",
    "1.5",
    "[]",
    '[1, "a"]',
    "null",
    "true",
    "{}",
    '{"a": {"b": [1, {"c": null}]}}',
    '""',
    '" "',
    '"\\u2028"',
    '"\\ud800"',
    '"x\\u0000y"',
    "9" * 5000,
    "1e999",
    "NaN",
    "-Infinity",
    "[" * 3000 + "]" * 3000,
]

# The importers share the reader with load_corpus: a few of each kind of wrong type is enough there.
WEIRD_JSON_FOR_IMPORTS = [
    "123",
    "[]",
    "null",
    "true",
    '{"a": {"b": [1]}}',
    '"\\ud800"',
    "9" * 5000,
    "NaN",
    WEIRD_JSON[-1],
]

# Tokens put where a column was: grades Python's int() takes but a grade must not be, ids, nothing.
WEIRD_COLUMNS = ["+1", "1_0", "-1", "0", "", " ", "\u0661", "1.0", "9" * 5000, "-" + "9" * 5000, "x", "\u2028", "q1"]
WEIRD_COLUMNS_FOR_IMPORTS = ["+1", "1_0", "", "\u0661", "9" * 5000, "-" + "9" * 5000, "\u2028"]


# --------------------------------------------------------------------------------------------- mutations


def _json_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    paths = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            paths += _json_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            paths += _json_paths(item, (*path, index))
    return paths


_HOLE = "@@fuzz-hole@@"


def _with_weird_value(line: str, data: st.DataObject) -> str:
    """One value of a JSON line (the whole line included) replaced by a weird JSON text."""
    try:
        value = json.loads(line)
    except ValueError:
        return line
    return _replaced(value, data.draw(st.sampled_from(_json_paths(value))), data.draw(st.sampled_from(WEIRD_JSON)))


def _replaced(value: Any, path: tuple[Any, ...], weird: str) -> str:
    """``value`` as one line of JSON with the node at ``path`` replaced by the JSON text ``weird``."""
    if not path:
        return weird
    value = json.loads(json.dumps(value))  # a copy
    _get(value, path[:-1])[path[-1]] = _HOLE
    return json.dumps(value, ensure_ascii=False).replace(json.dumps(_HOLE), weird, 1)


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _with_weird_column(line: str, data: st.DataObject) -> str:
    separator = "\t" if "\t" in line else " "
    columns = line.split(separator)
    index = data.draw(st.integers(0, len(columns)))
    token = data.draw(st.sampled_from(WEIRD_COLUMNS))
    if index == len(columns):
        columns.append(token)
    else:
        columns[index] = token
    return separator.join(columns)


def _mutate(content: bytes, data: st.DataObject) -> bytes:
    """One mutation of a file's bytes."""
    kind = data.draw(
        st.sampled_from(["flip", "insert", "cut", "truncate", "empty", "json", "column", "duplicate", "drop"])
    )
    if kind == "empty" or not content:
        return b"" if kind == "empty" else data.draw(st.sampled_from(INSERTS))
    if kind == "flip":
        at = data.draw(st.integers(0, len(content) - 1))
        return content[:at] + bytes([content[at] ^ (1 << data.draw(st.integers(0, 7)))]) + content[at + 1 :]
    if kind == "insert":
        at = data.draw(st.integers(0, len(content)))
        return content[:at] + data.draw(st.sampled_from(INSERTS)) + content[at:]
    if kind == "cut":
        start = data.draw(st.integers(0, len(content) - 1))
        return content[:start] + content[start + data.draw(st.integers(1, 40)) :]
    if kind == "truncate":
        return content[: data.draw(st.integers(0, len(content) - 1))]
    lines = content.split(b"\n")
    index = data.draw(st.integers(0, len(lines) - 1))
    if kind == "duplicate":
        lines.insert(index, lines[index])
    elif kind == "drop":
        del lines[index]
    else:
        try:
            text = lines[index].decode("utf-8")
        except UnicodeDecodeError:
            return content
        text = _with_weird_value(text, data) if kind == "json" else _with_weird_column(text, data)
        lines[index] = text.encode("utf-8", "surrogatepass")
    return b"\n".join(lines)


def _mutate_files(files: list[Path], data: st.DataObject) -> None:
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(files))
        path.write_bytes(_mutate(path.read_bytes(), data))


# --------------------------------------------------------------------------------------------- the check


def _lines_in(path: Path) -> int:
    try:
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
    except Exception:  # a damaged gzip file: its decompressed length is unknown, any line will do
        return 10**9
    return data.count(b"\n") + 1


def _ends_cleanly(call: Callable[[], object], inputs: list[Path]) -> None:
    """``call`` returns, or raises a SitegenError naming one of ``inputs`` (and a real line where it has one)."""
    try:
        call()
    except SitegenError as exc:
        message = str(exc)
        assert isinstance(exc, CorpusError), message
        named = [p for p in inputs if exc.path == p]
        assert named, f"error names {exc.path}, not one of the inputs: {message}"
        if exc.line is not None:
            assert 1 <= exc.line <= _lines_in(exc.path), message
        elif any(exc.problem.startswith(p) for p in LINE_PROBLEMS):
            assert exc.path.is_dir() or exc.path.name == "sitegen.json", f"no line: {message}"


# --------------------------------------------------------------------------------------------- corpus


RICH_DOCS = [
    {**TINY_DOCS[0], "metadata": {"tenant": "acme", "published": "2024-01-31"}},
    *TINY_DOCS[1:],
]
RICH_QUERIES = [
    {**TINY_QUERIES[0], "filter": {"tenant": "acme"}, "spans": [{"doc_id": "d1", "start": 0, "end": 6, "grade": 2}]},
    {**TINY_QUERIES[1], "filter": {"after": "2023-12-01"}},
    *TINY_QUERIES[2:],
]
RICH_CONFIG = {
    "filters": {"tenant": {"field": "tenant", "op": "equals"}, "after": {"field": "published", "op": "on-or-after"}},
    "chunking": {
        "default": {"method": "paragraph", "size": 20, "overlap": 0},
        "sweep": {"methods": ["fixed"], "sizes": [5, 10], "overlaps": [0, 0.2]},
    },
    "packing": {"budgets": [20, 200]},
    "ablation": [{"ranker": "bm25", "adds": "BM25"}],
}
RICH_CITATIONS = [{"query_id": "q1", "citations": [{"kind": "valid", "doc_id": "d1", "quote": "refund"}]}]


def _rich_corpus(folder: Path) -> list[Path]:
    write_corpus(folder, docs=RICH_DOCS, queries=RICH_QUERIES, qrels=TINY_QRELS)
    (folder / "sitegen.json").write_text(json.dumps(RICH_CONFIG) + "\n", encoding="utf-8")
    (folder / "citations.jsonl").write_text("".join(json.dumps(c) + "\n" for c in RICH_CITATIONS), encoding="utf-8")
    names = ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "README.md", "sitegen.json", "citations.jsonl"]
    return [folder / n for n in names]


def test_rich_corpus_is_valid_before_mutation() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        corpus = load_corpus(_rich_corpus(Path(tmp) / "rich")[0].parent)
        assert corpus.citations and corpus.config["chunking"] and corpus.queries[0].spans


@FUZZ
@given(st.data())
def test_mutated_corpus_folder_loads_or_fails_with_file_and_line(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        files = _rich_corpus(Path(tmp) / "rich")
        _mutate_files(files, data)
        _ends_cleanly(lambda: load_corpus(files[0].parent), [*files, files[0].parent])


def _every_wrong_type(files: list[Path], first: int = 2, weirds: list[str] = WEIRD_JSON) -> list[tuple[Path, bytes]]:
    """Each JSON file with one value (any depth, the whole line too) replaced by each weird value; the ``first``
    lines of a file only, as the others repeat their shape."""
    cases = []
    for path in files:
        lines = path.read_text(encoding="utf-8").split("\n")
        for index, line in enumerate(lines[:first]):
            if not line:
                continue
            value = json.loads(line)
            for json_path in _json_paths(value):
                for weird in weirds:
                    changed = [*lines[:index], _replaced(value, json_path, weird), *lines[index + 1 :]]
                    cases.append((path, "\n".join(changed).encode("utf-8")))
    return cases


def _every_weird_column(
    path: Path, lines: range, keep: Callable[[str], bool] = bool, tokens: list[str] = WEIRD_COLUMNS
) -> list[tuple[Path, bytes]]:
    """The file with one column of one of ``lines`` (0-based; those ``keep`` accepts) replaced by each weird
    token, or one weird column added."""
    original = path.read_text(encoding="utf-8").split("\n")
    cases = []
    for index in lines:
        if index >= len(original) or not keep(original[index]):
            continue
        separator = "\t" if "\t" in original[index] else " "
        columns = original[index].split(separator)
        for column in range(len(columns) + 1):
            for token in tokens:
                changed = [*columns[:column], token, *columns[column + 1 :]]
                lines_out = [*original[:index], separator.join(changed), *original[index + 1 :]]
                cases.append((path, "\n".join(lines_out).encode("utf-8")))
    return cases


def _each_case(cases: list[tuple[Path, bytes]], check: Callable[[int], None]) -> None:
    """Write each case's bytes over its file, run ``check(case number)``, put the file back."""
    for number, (path, content) in enumerate(cases):
        original = path.read_bytes()
        path.write_bytes(content)
        try:
            check(number)
        finally:
            path.write_bytes(original)


def test_every_wrong_json_type_in_a_corpus_folder_fails_with_file_and_line() -> None:
    """Exhaustive where random draws are thin: every value of every JSON input, each wrong type in turn."""
    with tempfile.TemporaryDirectory() as tmp:
        files = _rich_corpus(Path(tmp) / "rich")
        cases = _every_wrong_type([p for p in files if p.suffix in (".json", ".jsonl")])
        assert len(cases) > 1000
        _each_case(cases, lambda _: _ends_cleanly(lambda: load_corpus(files[0].parent), [*files, files[0].parent]))


# --------------------------------------------------------------------------------------------- TREC runs

RUN = "".join(
    f"{q} Q0 {d} {r} {s} fuzz\n"
    for q, d, r, s in [("q1", "d1", 1, 2.5), ("q1", "d2", 2, 1.0), ("q2", "d3", 1, 0.5), ("q3", "d2", 1, -1e-3)]
)


@FUZZ
@given(st.data())
def test_mutated_trec_run_reads_or_fails_with_file_and_line(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "system.trec"
        path.write_text(RUN, encoding="utf-8")
        _mutate_files([path], data)
        _ends_cleanly(lambda: read_trec_run(path), [path])


# --------------------------------------------------------------------------------------------- importers

LICENSE = "test licence"
BEIR_QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\nq2\td3\t1\nq3\td2\t-1\n"
TREC_SGML = (
    "<DOC>\n<DOCNO> d1 </DOCNO>\n<HEADLINE>Refunds</HEADLINE>\n<TEXT>\nHow to refund &amp; pay.\n</TEXT>\n</DOC>\n"
    "<DOC>\n<DOCNO>d2</DOCNO>\n<TEXT>Payouts arrive.</TEXT>\n</DOC>\n<DOC><DOCNO>d3</DOCNO>Error E4012</DOC>\n"
)
TREC_TOPICS_SGML = (
    "<top>\n<num> Number: 001\n<title> refund a payment\n<desc> Description:\nHow to refund.\n</top>\n"
    "<top>\n<num> Number: 002\n<title> what is E4012\n</top>\n"
)
TREC_QRELS = "1 0 d1 2\n1 0 d2 0\n2 0 d3 1\n2 0 d2 -1\n"
SMART_DOCS = ".I 1\n.T\nRefunds\n.A\nAnn\n.W\nHow to refund a payment.\n.I 2\n.T\nPayouts\n.W\nPayouts arrive.\n"
SMART_QUERIES = ".I 001\n.W\nrefund a payment\n.I 003\n.W\nwhen do payouts arrive\n"
SMART_QRELS = "1 1 1\n1 2 -1\n2 2 2\n"


def _files(root: Path, contents: dict[str, str]) -> list[Path]:
    paths = []
    for name, text in contents.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


@FUZZ
@given(st.data())
def test_mutated_beir_folder_imports_or_fails_with_file_and_line(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        files = _files(
            src,
            {
                "corpus.jsonl": "".join(json.dumps(d) + "\n" for d in RICH_DOCS),
                "queries.jsonl": "".join(json.dumps(q) + "\n" for q in TINY_QUERIES),
                "qrels/test.tsv": BEIR_QRELS,
            },
        )
        _mutate_files(files, data)
        _ends_cleanly(lambda: import_beir(src, ImportOptions("fuzz", LICENSE, to=Path(tmp) / "out")), [*files, src])


def test_every_wrong_json_type_in_beir_and_trec_jsonl_fails_with_file_and_line() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        src = root / "src"
        files = _files(
            src,
            {
                "corpus.jsonl": "".join(json.dumps(d) + "\n" for d in RICH_DOCS),
                "queries.jsonl": "".join(json.dumps(q) + "\n" for q in TINY_QUERIES),
                "qrels/test.tsv": BEIR_QRELS,
            },
        )
        topics = _files(root, {"topics": "1\trefund a payment\n", "qrels": "1 Q0 d1 1\n"})

        import_beir(src, ImportOptions("seed", LICENSE, to=root / "seed"))
        import_trec(files[0], *topics, ImportOptions("seed", LICENSE, to=root / "seed-trec"))

        def check(number: int) -> None:
            to = root / f"out{number}"
            _ends_cleanly(partial(import_beir, src, ImportOptions("fuzz", LICENSE, to=to)), [*files, src])
            if files[0].read_bytes() != documents:  # the TREC importer's JSONL documents: same reader, same rules
                call = partial(import_trec, files[0], *topics, ImportOptions("fuzz", LICENSE, to=to / "trec"))
                _ends_cleanly(call, [files[0], *topics])

        documents = files[0].read_bytes()
        _each_case(_every_wrong_type(files[:2], first=1, weirds=WEIRD_JSON_FOR_IMPORTS), check)


def test_every_malformed_column_in_qrels_runs_topics_and_smart_ids_fails_with_file_and_line() -> None:
    """Grades such as ``+1``, ``1_0`` or a 5,000-digit number, ids made of nothing, U+2028, an extra column:
    in every column of the first lines of each line-based input."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        corpus = _rich_corpus(root / "rich")
        qrels = corpus[2]
        _each_case(
            _every_weird_column(qrels, range(3)),
            lambda _: _ends_cleanly(lambda: load_corpus(qrels.parent.parent), [*corpus, qrels.parent.parent]),
        )
        run = _files(root, {"system.trec": RUN})[0]
        _each_case(_every_weird_column(run, range(2)), lambda _: _ends_cleanly(lambda: read_trec_run(run), [run]))

        src = root / "beir"
        beir = _files(
            src,
            {
                "corpus.jsonl": "".join(json.dumps(d) + "\n" for d in RICH_DOCS),
                "queries.jsonl": "".join(json.dumps(q) + "\n" for q in TINY_QUERIES),
                "qrels/test.tsv": BEIR_QRELS,
            },
        )
        trec = _files(
            root / "trec",
            {
                "docs": "".join(json.dumps(d) + "\n" for d in RICH_DOCS),
                "topics": "1\trefund a payment\n2\twhat is E4012\n",
                "qrels": TREC_QRELS,
            },
        )
        smart = _files(root / "smart", {"docs": SMART_DOCS, "queries": SMART_QUERIES, "qrels": SMART_QRELS})
        beir_import = partial(import_beir, src)
        trec_import = partial(import_trec, *trec)
        smart_import = partial(import_smart, *smart, invert_grades=True, query_ids="ordinal")
        for seed in (beir_import, trec_import, smart_import):  # each starts from an input that imports
            seed(options=ImportOptions("fuzz", LICENSE, to=root / "seed", overwrite=True))

        def columns(path: Path, lines: range, keep: Callable[[str], bool] = bool) -> list[tuple[Path, bytes]]:
            return _every_weird_column(path, lines, keep, WEIRD_COLUMNS_FOR_IMPORTS)

        _each_case(
            columns(beir[2], range(1, 2)),
            lambda n: _ends_cleanly(
                partial(beir_import, options=ImportOptions("fuzz", LICENSE, to=root / f"b{n}")), [*beir, src]
            ),
        )
        _each_case(
            columns(trec[1], range(1)) + columns(trec[2], range(1)),
            lambda n: _ends_cleanly(
                partial(trec_import, options=ImportOptions("fuzz", LICENSE, to=root / f"t{n}")), trec
            ),
        )
        smart_ids = range(len(SMART_DOCS.split("\n")))
        cases = [
            *columns(smart[0], smart_ids, keep=lambda line: line.startswith(".I")),
            *columns(smart[1], smart_ids, keep=lambda line: line.startswith(".I")),
            *columns(smart[2], range(1)),
        ]
        _each_case(
            cases,
            lambda n: _ends_cleanly(
                partial(smart_import, options=ImportOptions("fuzz", LICENSE, to=root / f"s{n}")), smart
            ),
        )


@FUZZ
@given(st.data())
def test_mutated_trec_collection_imports_or_fails_with_file_and_line(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sgml = data.draw(st.booleans())
        files = _files(
            root,
            {
                "docs": TREC_SGML if sgml else "".join(json.dumps(d) + "\n" for d in RICH_DOCS),
                "topics": TREC_TOPICS_SGML if sgml else "1\trefund a payment\n2\twhat is E4012\n",
                "qrels": TREC_QRELS if sgml else TREC_QRELS.replace(" 0 d", " Q0 d"),
            },
        )
        if data.draw(st.booleans()):  # a gzip stream, damaged or not, goes through the same reader
            files[0].write_bytes(gzip.compress(files[0].read_bytes(), mtime=0))
        _mutate_files(files, data)
        _ends_cleanly(lambda: import_trec(*files, ImportOptions("fuzz", LICENSE, to=root / "out")), files)


@FUZZ
@given(st.data())
def test_mutated_smart_collection_imports_or_fails_with_file_and_line(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = _files(root, {"docs": SMART_DOCS, "queries": SMART_QUERIES, "qrels": SMART_QRELS})
        _mutate_files(files, data)
        invert = data.draw(st.booleans())
        _ends_cleanly(
            lambda: import_smart(*files, ImportOptions("fuzz", LICENSE, to=root / "out"), invert, query_ids="ordinal"),
            files,
        )
