"""The standalone audit script: stdlib and numpy only, its registries, its tokenisers and tie rule as sitegen's."""

from __future__ import annotations

import ast
import gzip
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitegen import audit
from sitegen.rankers.tokenize import STOP_WORDS, tokenize, tokenize_stemmed
from tests.helpers import AUDIT_SOURCE, examples


def test_near_ties_may_stand_in_either_order_but_no_more() -> None:
    hits = [{"doc_id": "a", "rank": 1, "score": 0.5}, {"doc_id": "b", "rank": 2, "score": 0.5}]
    check = audit.Check("x")
    assert audit._compare_ranked(check, "w", hits, {"a": 0.5, "b": 0.5 + 1e-9}, 10, lambda x, y: abs(x - y) <= 1e-6)
    assert check.mismatches == []
    audit._compare_ranked(check, "w", hits, {"a": 0.5, "b": 0.5 + 1e-3}, 10, lambda x, y: abs(x - y) <= 1e-6)
    assert check.mismatches[0] == "w: rank 1 is doc a, recomputed b"


def test_main_rejects_a_folder_without_evidence(tmp_path: Path) -> None:
    assert audit.main([str(tmp_path)]) == 2


def test_audit_imports_only_the_standard_library_and_numpy() -> None:
    tree = ast.parse(AUDIT_SOURCE.read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative import"
            modules.add(node.module.split(".")[0])
    assert modules - {"numpy"} <= set(sys.stdlib_module_names), modules
    assert "numpy" in modules and "sitegen" not in modules


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from([*"aeisuxzchy13_-. \nÉéüßİ", "ies", "sses", "ches", "The", "bus"])).map("".join))
def test_audit_tokenisers_agree_with_sitegen(text: str) -> None:
    assert audit.tokens(text) == tokenize(text)
    assert audit.tokens(text, frozenset(STOP_WORDS), stem=True) == tokenize_stemmed(text)


def test_check_registries_name_every_check_family() -> None:
    assert [p for p, _ in audit.CORPUS_CHECKS] == [
        "inputs",
        "presence",
        "referenced",
        "corpus",
        "choices",
        "embeddings",
        "report",
        "experiments",
        "packing",
        "postgres",
        "chunking",
        "filtering",
        "rerank",
        "cost",
        "ties",
        "changes",
        "hygiene",
    ]
    assert [p for p, _ in audit.RANKER_CHECKS] == ["run", "trec", "metrics"]


def test_a_jsonl_input_read_line_by_line_is_read_as_the_whole_text_is(tmp_path: Path) -> None:
    """Records are streamed from the file (a million passages are not held as text beside their records), with
    the whole-text reading's rules: newline-only splits, a carriage return and a byte-order mark dropped."""
    rows = b'\xef\xbb\xbf{"_id": "a"}\r\n{"_id": "b\\u2028c"}\n\n{"_id": "d"}'
    (tmp_path / "plain.jsonl").write_bytes(rows)
    (tmp_path / "packed.jsonl.gz").write_bytes(gzip.compress(rows, mtime=0))
    bundle = audit.Bundle(tmp_path)
    want = bundle.lines("plain.jsonl")
    assert list(bundle.each_line("plain.jsonl")) == want == ['{"_id": "a"}', '{"_id": "b\\u2028c"}', "", '{"_id": "d"}']
    assert list(bundle.each_line("packed.jsonl")) == want
    assert [n for n, _ in audit._json_records(bundle, "plain.jsonl")] == [1, 2, 4]
    (tmp_path / "bad.jsonl").write_bytes(b'{"_id": "a"}\n{"_id": "caf\xe9"}\n')
    with pytest.raises(audit.AuditError, match=r"^bad\.jsonl: line 2: not valid UTF-8 \(byte 12\)$"):
        list(bundle.each_line("bad.jsonl"))
