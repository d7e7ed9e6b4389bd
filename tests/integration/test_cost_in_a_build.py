"""Cost beside quality in a build: cost.json's sizes pass the audit (plain and stemmed postings, vectors, the
packaged model), a changed size fails it, and a corpus page shows the cost table and, given a timing file, the
quality-versus-cost plot with the machine named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitegen.audit import run_audit
from tests.helpers import build, copy_site, read_evidence, rehash_manifest, write_corpus

TIMINGS = {
    "kind": "sitegen-cost",
    "schema_version": 1,
    "machine": {"logical_cpus": 2, "cpu_model": "Test CPU 9000", "python": "3.11"},
    "run_at": "2026-12-02T12:00:00+00:00",
    "method": "per question: best of 3",
    "corpora": [
        {
            "corpus": "tiny",
            "passages": 4,
            "questions_timed": 3,
            "embedding": {"passages_s": 0.5, "question_p50_ms": 4.0, "question_p95_ms": 5.0},
            "embeddings": {
                "dense": {"passages_s": 0.5, "question_p50_ms": 4.0, "question_p95_ms": 5.0},
                "dense-mpnet": {"passages_s": 3.5, "question_p50_ms": 21.0, "question_p95_ms": 30.0},
            },
            "rankers": {
                name: {
                    "index_s": None,
                    "p50_ms": p50,
                    "p95_ms": p50 * 2,
                    "pipeline_p50_ms": p50,
                    "pipeline_p95_ms": p50 * 2,
                    "reads": [],
                    "embeds_questions": False,
                }
                for name, p50 in (("bm25", 0.1), ("dense", 4.5), ("rrf-dense-bm25", 4.7), ("rerank-dense", 4.9))
            },
        }
    ],
}


@pytest.fixture(scope="module")
def cost_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cost")
    write_corpus(root / "corpora" / "tiny")
    (root / "bench").mkdir()
    (root / "bench" / "results-cost.json").write_text(json.dumps(TIMINGS), encoding="utf-8")
    build(root / "corpora", root / "site", rankers=("bm25-stem", "rerank-dense"))
    return root / "site"


def test_cost_json_states_every_rankers_indexes_and_the_audit_agrees(cost_site: Path) -> None:
    cost = read_evidence(cost_site, "evidence/tiny/cost.json")
    assert set(cost["indexes"]) == {
        "postings:plain",
        "postings:stemmed",
        "vectors:sentence-transformers/all-MiniLM-L6-v2",
    }
    vectors = cost["indexes"]["vectors:sentence-transformers/all-MiniLM-L6-v2"]
    assert vectors == cost["passages"] * 384 * 4
    assert cost["rankers"]["rerank-dense"]["index_bytes"] == vectors + cost["indexes"]["postings:plain"]
    assert cost["models"]["sentence-transformers/all-MiniLM-L6-v2"]["parameters"] == 22_713_728
    checks = {c["name"]: c for c in run_audit(cost_site, echo=lambda _: None)["checks"]}
    assert checks["cost:tiny"]["status"] == "pass"


def test_a_changed_size_fails_the_audit(cost_site: Path, tmp_path: Path) -> None:
    site = copy_site(cost_site, tmp_path / "site")
    path = site / "evidence" / "tiny" / "cost.json"
    cost = json.loads(path.read_text(encoding="utf-8"))
    cost["indexes"]["postings:stemmed"] -= 8
    path.write_text(json.dumps(cost), encoding="utf-8")
    rehash_manifest(site)
    checks = {c["name"]: c for c in run_audit(site, echo=lambda _: None)["checks"]}
    assert checks["cost:tiny"]["status"] == "fail"
    assert any("indexes" in m for m in checks["cost:tiny"]["mismatches"])


def test_the_corpus_page_shows_the_cost_table_and_the_quality_cost_plot(cost_site: Path) -> None:
    page = (cost_site / "corpora" / "tiny" / "index.html").read_text(encoding="utf-8")
    assert 'id="cost"' in page and "Test CPU 9000" in page and "not evidence" in page
    assert 'data-ev="evidence/tiny/cost.json#/rankers/rerank-dense/index_bytes"' in page
    svg = cost_site / "corpora" / "tiny" / "quality-cost.svg"
    assert svg.is_file() and b"log scale" in svg.read_bytes()
    assert "Pareto frontier" in page and "bm25 0.10 ms" in page
    # each model's embedding time, as the timing file gives it
    assert "dense's model 0.5 s for the passages, 4.00 ms p50" in " ".join(page.split())
    assert "dense-mpnet's model 3.5 s for the passages, 21.00 ms p50" in " ".join(page.split())
