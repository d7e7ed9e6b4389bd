"""The PostgreSQL cost test (`sitegen bench-pg`): filler rows, its summaries, and one small end-to-end run."""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from sitegen.bench.filler import make_filler
from sitegen.bench.pg_cost import KIND, LABEL
from sitegen.bench.pg_report import hybrid_by_kind, percentile, rows_matched_by_kind
from sitegen.cli import cli
from sitegen.errors import SitegenError
from sitegen.inputs.corpus import Document, load_corpus, passage_text
from sitegen.rankers.tokenize import tokenize
from tests.helpers import TINY_DOCS, FakeEmbeddingModel, own_postgres_processes, write_corpus

RANKERS = ["pg-vector", "pg-tsvector", "rrf-pgvector-tsvector", "pg-hybrid-sql", "bm25", "dense", "rrf-dense-bm25"]


def _source(tiny_corpus: Path) -> tuple[tuple[Document, ...], np.ndarray]:
    documents = load_corpus(tiny_corpus).documents
    return documents, FakeEmbeddingModel().encode([passage_text(d) for d in documents])


# ----------------------------------------------------------------- filler rows


def test_filler_rows_are_the_same_for_the_same_seed_and_differ_for_another(tiny_corpus: Path) -> None:
    documents, vectors = _source(tiny_corpus)
    first, again = make_filler(documents, vectors, 2500, seed=7), make_filler(documents, vectors, 2500, seed=7)
    assert [d.doc_id for d in first.documents] == [d.doc_id for d in again.documents]
    assert [d.text for d in first.documents] == [d.text for d in again.documents]
    assert first.vectors.tobytes() == again.vectors.tobytes()
    other = make_filler(documents, vectors, 2500, seed=8)
    assert [d.doc_id for d in other.documents] == [d.doc_id for d in first.documents]
    assert [d.text for d in other.documents] != [d.text for d in first.documents]
    assert not np.array_equal(other.vectors, first.vectors)


def test_a_filler_row_does_not_depend_on_how_many_rows_are_made(tiny_corpus: Path) -> None:
    documents, vectors = _source(tiny_corpus)
    more, fewer = make_filler(documents, vectors, 1500), make_filler(documents, vectors, 1000)
    assert [d.text for d in more.documents[:1000]] == [d.text for d in fewer.documents]
    assert more.vectors[:1000].tobytes() == fewer.vectors.tobytes()


def test_filler_text_uses_only_the_corpus_words_and_vectors_are_unit_float32(tiny_corpus: Path) -> None:
    documents, vectors = _source(tiny_corpus)
    filler = make_filler(documents, vectors, 300)
    vocabulary = {t for d in documents for t in tokenize(passage_text(d))}
    lengths = {len(tokenize(passage_text(d))) for d in documents}
    assert len(filler.documents) == 300 and filler.vectors.shape == (300, vectors.shape[1])
    assert filler.vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(filler.vectors, axis=1), 1.0, atol=1e-5)
    used = set()
    for doc in filler.documents:
        tokens = tokenize(doc.text)
        assert doc.title == "" and len(tokens) in lengths
        used.update(tokens)
    assert used <= vocabulary
    assert len(used) > len(vocabulary) // 2  # drawn from across the corpus, not one passage


def test_filler_ids_never_collide_with_the_corpus_ids() -> None:
    documents = (
        Document("filler-000002", "", "refund a card payment"),
        Document("d1", "Payouts", "payouts arrive two days later"),
    )
    vectors = FakeEmbeddingModel().encode([passage_text(d) for d in documents])
    ids = [d.doc_id for d in make_filler(documents, vectors, 5).documents]
    assert ids == ["filler-000001", "filler-000003", "filler-000004", "filler-000005", "filler-000006"]


def test_filler_needs_a_passage_with_words() -> None:
    documents = (Document("d1", "", "!!! ..."),)
    with pytest.raises(SitegenError, match="no passage"):
        make_filler(documents, np.ones((1, 4), dtype=np.float32) / 2, 3)
    assert make_filler(documents, np.ones((1, 4), dtype=np.float32) / 2, 0).documents == ()


# ----------------------------------------------------------------- summaries


def test_percentile_interpolates_linearly_between_the_nearest_ranks() -> None:
    assert percentile([4, 1, 3, 2], 50) == 2.5
    assert percentile(list(range(101)), 95) == 95.0
    assert percentile([10, 20], 95) == pytest.approx(19.5)
    assert percentile([7], 95) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)


def test_rows_matched_are_summarised_per_kind_in_order_of_first_appearance() -> None:
    rows = rows_matched_by_kind(["b", "a", "b", "b", "a"], [10, 3, 30, 20, 5])
    assert rows == [
        {"kind": "b", "questions": 3, "median": 20.0, "p95": pytest.approx(29.0), "max": 30},
        {"kind": "a", "questions": 2, "median": 4.0, "p95": pytest.approx(4.9), "max": 5},
    ]
    with pytest.raises(ValueError):
        rows_matched_by_kind(["a"], [1, 2])


def test_hybrid_latency_per_kind_pairs_each_sample_with_its_question() -> None:
    # Two passes over questions (a, b, a): samples 0-2 are the first pass, 3-5 the second.
    rows = hybrid_by_kind(
        ["a", "b", "a"],
        [10, 500, 30],
        [4_000_000, 90_000_000, 8_000_000, 6_000_000, 110_000_000, 10_000_000],
        [1_000_000, 2_000_000, 1_000_000, 1_000_000, 2_000_000, 1_000_000],
    )
    assert rows == [
        {
            "kind": "a",
            "questions": 2,
            "rows_matched_median": 20.0,
            "postgres_p50_ms": 7.0,
            "in_process_p50_ms": 1.0,
            "p50_ratio": 7.0,
        },
        {
            "kind": "b",
            "questions": 1,
            "rows_matched_median": 500.0,
            "postgres_p50_ms": 100.0,
            "in_process_p50_ms": 2.0,
            "p50_ratio": 50.0,
        },
    ]


# ----------------------------------------------------------------- the command


@pytest.fixture(scope="module")
def postgres() -> None:
    pytest.importorskip("psycopg")
    from sitegen.postgres.server import PostgresServer, PostgresUnavailable

    try:
        with PostgresServer():
            pass
    except PostgresUnavailable as exc:
        pytest.skip(f"PostgreSQL cannot start here: {exc}")


@pytest.fixture
def fake_embeddings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sitegen.bench.pg_cost.EmbeddingModel", FakeEmbeddingModel)


def _our_postgres() -> tuple[list[int], list[Path]]:
    """Live postgres processes this process started, and private-server folders this process owns (the folder
    of the process's one initdb, which no server runs in, stays until the process exits)."""
    from sitegen.postgres.cluster import TEMPLATE_PREFIX

    folders = []
    for folder in Path(tempfile.gettempdir()).glob("sitegen-pg-*"):
        if folder.name.startswith(TEMPLATE_PREFIX):
            continue
        owner = folder / "sitegen-owner.pid"
        if owner.is_file() and owner.read_text().strip() == str(os.getpid()):
            folders.append(folder)
    return sorted(own_postgres_processes()), folders


def _bench(tmp_path: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["bench-pg", "--cache-dir", str(tmp_path / "cache"), "-q", *args])
    return result.exit_code, result.output


@pytest.mark.slow
@pytest.mark.postgres
def test_bench_pg_writes_the_timing_file_and_leaves_no_server(
    postgres: None, fake_embeddings: None, tiny_corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "results" / "pg.json"
    code, output = _bench(
        tmp_path, "--corpus", str(tiny_corpus), "--rows", "500", "--runs", "1", "--warmups", "1", "--out", str(out)
    )
    assert code == 0, output
    assert _our_postgres() == ([], [])
    result = json.loads(out.read_text())
    assert {"kind", "schema", "label", "measured_at", "command", "machine", "corpus", "rows", "corpus_rows"} <= set(
        result
    )
    assert (result["kind"], result["schema"], result["label"]) == (KIND, 1, LABEL)
    assert datetime.fromisoformat(result["measured_at"]).utcoffset().total_seconds() == 0
    assert result["command"].startswith("sitegen bench-pg") and "--rows 500" in result["command"]
    machine = result["machine"]
    assert isinstance(machine["cpu_model"], str) and machine["logical_cpus"] >= 1 and machine["memory_gb"] > 0
    assert all(isinstance(machine[k], str) for k in ("python", "numpy", "postgres", "pgvector"))
    assert (result["corpus"], result["rows"], result["corpus_rows"], result["filler_rows"]) == ("tiny", 500, 4, 496)
    assert isinstance(result["filler_seed"], int) and "synthetic" in result["filler_vectors"]
    assert (result["questions"], result["runs"], result["warmups"], result["depth"]) == (4, 1, 1, 20)
    build = result["build"]
    for key in ("copy_s", "hnsw_build_s", "gin_build_s", "analyze_s"):
        assert isinstance(build[key], float) and build[key] >= 0
    for key in ("table_bytes", "hnsw_bytes", "gin_bytes"):
        assert isinstance(build[key], int) and build[key] > 0
    assert (build["hnsw_m"], build["hnsw_ef_construction"], build["ef_search"]) == (16, 64, 1000)
    kinds = [(r["kind"], r["questions"]) for r in result["rows_matched"]]
    assert kinds == [("paraphrase", 2), ("exact-code", 1), ("unanswerable", 1)]
    for row in result["rows_matched"]:
        assert 0 <= row["median"] <= row["p95"] <= row["max"] <= 500
    assert [r["ranker"] for r in result["latency"]] == RANKERS
    for row in result["latency"]:
        assert row["where"] == ("postgres" if row["ranker"].startswith(("pg", "rrf-pg")) else "in-process")
        assert row["what"] and row["samples"] == 4 and 0 < row["p50_ms"] <= row["p95_ms"]
    alone = [(r["ranker"], r["where"], r["samples"]) for r in result["latency_in_process_alone"]]
    assert alone == [(name, "in-process", 4) for name in RANKERS[4:]]
    ratio = result["hybrid_ratio"]
    assert (ratio["in_process"], ratio["postgres"], ratio["target"]) == ("rrf-dense-bm25", "rrf-pgvector-tsvector", 5.0)
    p50 = {r["ranker"]: r["p50_ms"] for r in result["latency"]}
    # the stored ratio is the stored p50s' ratio rounded to 3 decimals: within 5e-4 of it whatever was measured
    assert ratio["p50_ratio"] == pytest.approx(p50["rrf-pgvector-tsvector"] / p50["rrf-dense-bm25"], rel=0, abs=5e-4)
    assert ratio["met"] is (ratio["p50_ratio"] >= 5.0)
    assert isinstance(ratio["p95_ratio"], float) and isinstance(ratio["sql_p50_ratio"], float)
    # ef_search (1000) covers all 500 rows, so the HNSW search is exact, and both fusions agree.
    assert result["hnsw_agreement"] == {"questions": 4, "same_top10": 4, "recall_at_10": 1.0, "ef_search": 1000}
    assert [row["recall_at_10"] for row in result["hnsw_agreement_by_ef_search"]] == [1.0, 1.0, 1.0]
    assert result["sql_equals_two_query_hybrid"] == 4
    assert [(r["kind"], r["questions"]) for r in result["hybrid_by_kind"]] == kinds
    assert "hybrid:" in output and "pg-hybrid-sql" in output


@pytest.mark.parametrize("problem", ["missing", "malformed", "too-few-rows"])
def test_bench_pg_reports_a_bad_corpus_in_one_line_and_keeps_the_old_file(
    problem: str, fake_embeddings: None, tiny_corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "pg.json"
    out.write_text("previous results\n")
    corpus, rows = tiny_corpus, "500"
    if problem == "missing":
        corpus = tmp_path / "nowhere"
    elif problem == "malformed":
        corpus = write_corpus(tmp_path / "bad", docs=TINY_DOCS)
        (corpus / "corpus.jsonl").write_text('{"_id": "d1", "text": "ok"}\n{"_id": \n')
    else:
        rows = "3"
    code, output = _bench(tmp_path, "--corpus", str(corpus), "--rows", rows, "--out", str(out))
    assert code != 0
    message = output.strip().splitlines()
    assert len(message) == 1 and message[0].startswith("error: bench-pg failed: ")
    expected = {"missing": "corpus folder does not exist", "malformed": "corpus.jsonl:2", "too-few-rows": "4 passages"}
    assert expected[problem] in message[0]
    assert out.read_text() == "previous results\n"
    assert _our_postgres() == ([], [])


def test_bench_pg_says_when_postgres_is_unreachable(fake_embeddings: None, tiny_corpus: Path, tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    out = tmp_path / "pg.json"
    out.write_text("previous results\n")
    dsn = f"host={tmp_path / 'no-server'} dbname=postgres connect_timeout=2"
    code, output = _bench(tmp_path, "--corpus", str(tiny_corpus), "--rows", "50", "--pg-dsn", dsn, "--out", str(out))
    assert code != 0
    assert "bench-pg failed: cannot connect to PostgreSQL" in output
    assert out.read_text() == "previous results\n"
