"""The bundle's layout (sitegen.publish.layout) and the typed reader every consumer shares (sitegen.publish.reader)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from sitegen.errors import BundleError
from sitegen.publish import layout
from sitegen.publish.bundle import Bundle
from sitegen.publish.layout import CorpusFiles, CorpusPages, corpus_file, run_ranker, vector_rows
from sitegen.publish.reader import CorpusReader, CorpusSummary, SiteFolder
from tests.helpers import REPO

SITEGEN = REPO / "sitegen"

SUMMARY = {
    "name": "c",
    "documents": 2,
    "queries": 2,
    "answerable_queries": 2,
    "judged_pairs": 2,
    "kinds": {"k": 2},
    "kind_order": ["k"],
    "rankers": ["bm25"],
    "metrics": ["hit@1"],
    "depth": 10,
    "inputs": ["inputs/corpus.jsonl", "inputs/qrels/test.tsv", "inputs/queries.jsonl"],
}


# ------------------------------------------------------------------------------------------------ layout


def test_a_corpus_file_is_a_site_path_under_its_evidence_folder() -> None:
    files = CorpusFiles("payments")
    assert files.folder == "evidence/payments"
    assert files.metrics == "evidence/payments/metrics.json"
    assert files.run("rrf-dense-bm25") == "evidence/payments/runs/rrf-dense-bm25.json"
    assert files.trec_run("bm25") == "evidence/payments/runs/bm25.trec"
    assert files.qrels_input == "evidence/payments/inputs/qrels/test.tsv"
    assert files.input("runs/vendor.trec") == "evidence/payments/inputs/runs/vendor.trec"
    assert files.vector_index == "evidence/payments/embeddings/index.json"
    assert files.sweep_vectors == "evidence/payments/embeddings/sweep-passages.npy"
    assert files.baseline_input("qrels/test.tsv") == "evidence/payments/baseline/inputs/qrels/test.tsv"
    assert files.baseline_record == "evidence/payments/baseline/baseline.json"
    assert layout.MANIFEST == "evidence/manifest.json"


def test_every_corpus_path_parses_back_to_its_corpus_and_name() -> None:
    files = CorpusFiles("c")
    paths = [getattr(files, name) for name, value in vars(CorpusFiles).items() if isinstance(value, property)]
    paths += [files.run("bm25"), files.trec_run("bm25"), files.input("qrels/test.tsv")]
    for path in paths:
        if path == files.folder:
            continue
        place = corpus_file(path)
        assert place is not None and place[0] == "c", path
        assert files.at(place[1]) == path


def test_paths_outside_a_corpus_folder_are_not_corpus_files() -> None:
    assert corpus_file(layout.MANIFEST) is None
    assert corpus_file("evidence/c") is None
    assert corpus_file("timings/results.json") is None
    assert corpus_file("corpora/c/index.html") is None


def test_only_a_json_file_directly_in_runs_names_a_ranker() -> None:
    assert run_ranker(layout.run_file("pg-vector")) == "pg-vector"
    assert run_ranker(layout.trec_run_file("bm25")) is None
    assert run_ranker("inputs/runs/vendor.json") is None
    assert run_ranker(layout.METRICS) is None


def test_a_matrix_of_vectors_names_the_index_file_and_key_of_its_row_ids() -> None:
    assert vector_rows("embeddings/passages.npy") == ("embeddings/index.json", "passages")
    assert vector_rows("embeddings/queries.npy") == ("embeddings/index.json", "queries")
    assert vector_rows("embeddings/sweep-passages.npy") == ("embeddings/sweep-index.json", "passages")
    assert vector_rows("embeddings/index.json") is None
    assert vector_rows("inputs/embeddings/passages.npy") is None


def test_the_vector_files_a_build_reuses_are_the_layouts_embedding_files() -> None:
    files = CorpusFiles("c")
    for index, matrices in layout.VECTOR_FILES.items():
        for key, matrix in matrices:
            assert vector_rows(matrix) == (index, key)
    assert {files.at(m) for pairs in layout.VECTOR_FILES.values() for _, m in pairs} == {
        files.passage_vectors,
        files.query_vectors,
        files.sweep_vectors,
    }


def test_a_page_path_of_an_unsafe_id_is_a_slug_with_a_hash() -> None:
    pages = CorpusPages("Payments Support")
    assert pages.dir.startswith("corpora/payments-support-") and len(pages.dir) == len("corpora/payments-support-") + 10
    assert CorpusPages("c").question("q/1") != CorpusPages("c").question("q-1")
    assert CorpusPages("c").ranks(1) == "corpora/c/ranks.html" and CorpusPages("c").ranks(2) == "corpora/c/ranks-2.html"
    assert layout.retriever_timing("mine") == "timings/retrievers-mine.json"


def _evidence_names() -> set[str]:
    """Every file and folder name the layout gives a bundle."""
    files = CorpusFiles("c")
    paths = [getattr(files, name) for name, value in vars(CorpusFiles).items() if isinstance(value, property)]
    names = {Path(p).name for p in paths if p != files.folder} - {"inputs", "runs", "baseline", "embeddings"}
    names |= {layout.MANIFEST_NAME, layout.AUDIT_REPORT, layout.PAGE_LISTING, layout.STYLESHEET, layout.NO_JEKYLL}
    names.add(layout.VERIFICATION)
    return names - {"corpus.jsonl", "queries.jsonl", "test.tsv", "README.md", "sitegen.json"}  # inputs own these


def _spelled_paths(path: Path, names: set[str], root: Path) -> list[str]:
    """String constants in ``path`` (docstrings and prose with spaces aside) that spell a bundle path."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in docstrings:
            continue
        text = node.value
        if " " in text:
            continue
        parts = [p for p in text.split("/") if p]
        folders = any(f"{folder}/" in text for folder in ("runs", "inputs", "baseline", "timings", "evidence"))
        if text == layout.EVIDENCE_DIR or folders or any(part in names for part in parts):
            found.append(f"{path.relative_to(root)}:{node.lineno}: {text!r}")
    return found


def test_no_module_but_the_layout_and_the_standalone_audit_spells_a_bundle_path() -> None:
    names = _evidence_names()
    assert {"metrics.json", "corpus.json", "chunks.jsonl", "index.json", "manifest.json", "pages.json"} <= names
    # The audit spells every name again on purpose (it imports nothing from sitegen); the corpus format owns the
    # names of supplied vectors, whose layout the bundle's embeddings/ folder copies so a bundle can be supplied.
    own = {SITEGEN / "publish" / "layout.py", SITEGEN / "audit.py", SITEGEN / "inputs" / "vectors.py"}
    modules = [path for path in sorted(SITEGEN.rglob("*.py")) if path not in own]
    found = [hit for path in modules for hit in _spelled_paths(path, names, SITEGEN.parent)]
    assert found == []


def test_the_path_scanner_finds_a_spelled_evidence_file(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        '"""Docstrings may name metrics.json."""\n'
        'A = base / "metrics.json"\n'
        'B = f"{folder}/runs/{ranker}.json"\n'
        'C = "a sentence naming metrics.json is prose"\n',
        encoding="utf-8",
    )
    found = _spelled_paths(module, _evidence_names(), tmp_path)
    assert [hit.split(":")[1] for hit in found] == ["2", "3"]


# ------------------------------------------------------------------------------------------------ reader


def _write(site: Path, rel: str, text: str) -> None:
    (site / rel).parent.mkdir(parents=True, exist_ok=True)
    (site / rel).write_text(text, encoding="utf-8")


def _site(tmp_path: Path, chunked: bool) -> Path:
    site, files = tmp_path / "site", CorpusFiles("c")
    _write(site, files.summary, json.dumps(SUMMARY))
    _write(site, files.passages_input, '{"_id": "d1", "text": "one"}\n{"_id": "d2", "text": "two"}\n')
    _write(site, files.queries_input, '{"_id": "q1", "text": "first"}\n{"_id": "q2", "text": "second"}\n')
    _write(site, files.qrels_input, "query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td2\t1\n")
    if chunked:
        _write(site, files.chunks, '{"_id": "d1#0", "text": "o"}\n{"_id": "d1#1", "text": "ne"}\n')
        _write(site, files.chunking, json.dumps({"qrels": {"q1": {"d1#1": 3}}}))
    return site


def test_a_chunked_corpus_is_read_as_its_chunks_and_labelled_by_the_chunk_qrels(tmp_path: Path) -> None:
    reader = CorpusReader(SiteFolder(_site(tmp_path, chunked=True)), "c")
    assert reader.grades() == {"q1": {"d1#1": 3}}
    assert [d["_id"] for d in reader.passages()] == ["d1#0", "d1#1"]


def test_any_other_corpus_is_read_as_its_inputs_and_labelled_by_test_tsv(tmp_path: Path) -> None:
    reader = CorpusReader(SiteFolder(_site(tmp_path, chunked=False)), "c")
    assert reader.grades() == {"q1": {"d1": 2}, "q2": {"d2": 1}}
    assert [d["_id"] for d in reader.passages()] == ["d1", "d2"]
    assert [q["_id"] for q in reader.queries()] == ["q1", "q2"]
    summary = reader.summary()
    assert reader.inputs(summary) == {
        name.removeprefix("inputs/"): tmp_path / "site" / "evidence" / "c" / name for name in SUMMARY["inputs"]
    }


def test_a_bad_qrels_line_is_an_error_naming_the_file_and_line(tmp_path: Path) -> None:
    site = _site(tmp_path, chunked=False)
    _write(site, CorpusFiles("c").qrels_input, "query-id\tcorpus-id\tscore\nq1\td1\ttwo\n")
    with pytest.raises(BundleError, match=r"test\.tsv:2: grade 'two' is not an integer"):
        CorpusReader(SiteFolder(site), "c").grades()


def test_chunk_qrels_that_are_not_integer_grades_are_refused(tmp_path: Path) -> None:
    site = _site(tmp_path, chunked=True)
    _write(site, CorpusFiles("c").chunking, json.dumps({"qrels": {"q1": {"d1#1": "high"}}}))
    with pytest.raises(BundleError, match=r"chunking\.json: qrels of query 'q1'"):
        CorpusReader(SiteFolder(site), "c").grades()


def test_the_summary_reads_fields_older_bundles_lack_as_absent_and_requires_the_rest() -> None:
    summary = CorpusSummary.from_json(SUMMARY)
    assert summary.rankers == ("bm25",) and summary.external_rankers == ()
    assert summary.frozen is None and summary.inputs_date is None and summary.embeddings is False
    with pytest.raises(KeyError, match="rankers"):
        CorpusSummary.from_json({k: v for k, v in SUMMARY.items() if k != "rankers"})


def test_every_json_document_read_passes_the_mark_with_its_site_path(tmp_path: Path) -> None:
    site = _site(tmp_path, chunked=True)
    seen: list[str] = []

    def mark(value: object, rel: str) -> object:
        seen.append(rel)
        return value

    reader = CorpusReader(SiteFolder(site), "c", mark)
    reader.summary()
    reader.grades()
    assert seen == ["evidence/c/corpus.json", "evidence/c/chunking.json"]


def test_a_missing_optional_file_reads_as_none_and_a_missing_required_one_is_an_error(tmp_path: Path) -> None:
    reader = CorpusReader(SiteFolder(_site(tmp_path, chunked=False)), "c")
    assert reader.optional(reader.files.ties) is None and reader.supplied_vectors() is None
    with pytest.raises(BundleError, match=r"metrics\.json: cannot read"):
        reader.json(reader.files.metrics)


def test_a_bundle_refuses_a_file_its_manifest_does_not_list(tmp_path: Path) -> None:
    site = _site(tmp_path, chunked=False)
    files = CorpusFiles("c")
    bundle = Bundle(site / layout.EVIDENCE_DIR, {}, {files.summary: "0" * 64})
    reader = CorpusReader(bundle, "c")
    assert reader.summary().name == "c"
    assert reader.grades() == {}  # the qrels copy is on disk but not listed: not evidence
    with pytest.raises(BundleError, match=r"does not list evidence/c/inputs/queries\.jsonl"):
        reader.queries()


def test_a_model_entrys_vectors_lie_in_a_folder_of_their_own_laid_out_as_dense_s() -> None:
    from sitegen.publish.layout import model_vector_files, vector_index_files, vector_rows

    assert model_vector_files(None) == ("embeddings/index.json", "embeddings/passages.npy", "embeddings/queries.npy")
    index, passages, queries = model_vector_files("dense-mpnet")
    assert (index, passages, queries) == (
        "embeddings/dense-mpnet/index.json",
        "embeddings/dense-mpnet/passages.npy",
        "embeddings/dense-mpnet/queries.npy",
    )
    assert vector_rows(passages) == (index, "passages") and vector_rows(queries) == (index, "queries")
    assert vector_index_files(index) == (("passages", passages), ("queries", queries))
    assert vector_index_files("embeddings/a/b/index.json") is None and vector_rows("embeddings/a/b/c.npy") is None
