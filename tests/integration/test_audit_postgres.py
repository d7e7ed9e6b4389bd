"""The standalone audit's checks of PostgreSQL runs (pg-vector completeness, pg-tsvector's server-less
checks), and ``sitegen audit --postgres``, which reruns the pg-* rankers on a live server."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sitegen import audit
from sitegen.cli import cli
from sitegen.publish.evidence import read_run, write_run
from sitegen.verify.postgres import SCORE_TOLERANCE, rerun_postgres
from tests.helpers import copy_site, rehash_manifest

pytest.importorskip("psycopg")
# Slow: each test reruns PostgreSQL or audits a whole copy
pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def site(postgres_site: Path, tmp_path: Path) -> Path:
    """A private copy of the PostgreSQL build, free to tamper with."""
    return copy_site(postgres_site, tmp_path / "site")


def _run_path(site: Path, corpus: str, ranker: str) -> Path:
    return site / "evidence" / corpus / "runs" / f"{ranker}.json"


def _load(site: Path, corpus: str, ranker: str) -> dict:
    return read_run(_run_path(site, corpus, ranker))


def _forge(site: Path, corpus: str, ranker: str, run: dict) -> None:
    """Write a changed run back and rehash the manifest: a consistent edit only a recomputation catches."""
    write_run(_run_path(site, corpus, ranker), run)
    rehash_manifest(site)


def _checks(site: Path) -> dict[str, dict]:
    report = audit.run_audit(site, echo=lambda line: None)
    return {c["name"]: c for c in report["checks"]}


# ----------------------------------------------------------------- the standalone audit


def test_untampered_site_passes_and_says_what_the_pg_checks_cover(site: Path) -> None:
    lines: list[str] = []
    report = audit.run_audit(site, echo=lines.append)
    assert report["verdict"] == "pass", [line for line in lines if line.startswith("FAIL")]
    checks = {c["name"]: c for c in report["checks"]}
    assert "ef_search 1000 >= 4 passages, so the search is exhaustive" in checks["run:tiny/pg-vector"]["detail"]
    assert "passages passing its filter" in checks["run:tenant/pg-vector-filtered"]["detail"]
    tsvector = checks["run:tiny/pg-tsvector"]["detail"]
    assert "no hits for the 1 questions without letters or digits" in tsvector
    assert "ts_rank_cd scores need PostgreSQL: `sitegen audit --postgres` reruns them" in tsvector
    assert _load(site, "tiny", "pg-tsvector")["queries"]["q5"] == []


def test_pg_vector_with_a_hit_dropped_fails_completeness(site: Path) -> None:
    run = _load(site, "tiny", "pg-vector")
    assert len(run["queries"]["q1"]) == 4
    run["queries"]["q1"] = run["queries"]["q1"][:3]
    _forge(site, "tiny", "pg-vector", run)
    check = _checks(site)["run:tiny/pg-vector"]
    assert check["status"] == "fail"
    assert (
        "evidence/tiny/runs/pg-vector.json: query q1: 3 hits, expected 4 (depth 100, 4 passages; "
        "ef_search 1000 >= 4 rows, so the HNSW search visits every passage)"
    ) in check["mismatches"]


def test_filtered_pg_vector_with_a_hit_dropped_or_one_failing_the_filter_fails(site: Path) -> None:
    run = _load(site, "tenant", "pg-vector-filtered")
    assert [h["doc_id"].split("-")[0] for h in run["queries"]["t2"]] == ["zeta", "zeta"]
    run["queries"]["t2"] = run["queries"]["t2"][:1]
    # t1 keeps its count but its last hit becomes a zeta passage, with that passage's true cosine.
    unfiltered = _load(site, "tenant", "pg-vector")["queries"]["t1"]
    intruder = next(h for h in unfiltered if h["doc_id"].startswith("zeta"))
    last = run["queries"]["t1"][-1]
    run["queries"]["t1"][-1] = {**last, "doc_id": intruder["doc_id"], "score": min(intruder["score"], last["score"])}
    _forge(site, "tenant", "pg-vector-filtered", run)
    check = _checks(site)["run:tenant/pg-vector-filtered"]
    assert check["status"] == "fail"
    rel = "evidence/tenant/runs/pg-vector-filtered.json"
    assert (
        f"{rel}: query t2: 1 hits, expected 2 (depth 100, 2 passages pass its filter; "
        "ef_search 1000 >= 6 rows, so the HNSW search visits every passage)"
    ) in check["mismatches"]
    assert f"{rel}: query t1: rank 3: doc {intruder['doc_id']} fails the question's filter" in check["mismatches"]


def test_pg_vector_with_a_lowered_ef_search_fails_its_pin(site: Path) -> None:
    """An approximate HNSW search is not the shipped pg-vector: ef_search is pinned, so the audit never has to
    accept short, uncheckable hit lists under that name."""
    run = _load(site, "tiny", "pg-vector")
    run["params"]["ef_search"] = 2
    run["queries"]["q1"] = run["queries"]["q1"][:3]
    _forge(site, "tiny", "pg-vector", run)
    check = _checks(site)["run:tiny/pg-vector"]
    assert check["status"] == "fail"
    assert (
        "evidence/tiny/runs/pg-vector.json: ranker pg-vector: ef_search is 2, the shipped pg-vector has 1000"
        in check["mismatches"]
    )


def test_pg_tsvector_hit_for_a_question_without_letters_or_digits_fails(site: Path) -> None:
    run = _load(site, "tiny", "pg-tsvector")
    run["queries"]["q5"] = [{"doc_id": "d1", "rank": 1, "score": 0.1}]
    _forge(site, "tiny", "pg-tsvector", run)
    check = _checks(site)["run:tiny/pg-tsvector"]
    assert check["status"] == "fail"
    assert (
        "evidence/tiny/runs/pg-tsvector.json: query q5: 1 hits, expected 0: its text '?! -- ...' has no letters "
        "or digits, so its tsquery is empty and matches nothing"
    ) in check["mismatches"]


def test_filtered_pg_tsvector_hit_failing_the_filter_or_unknown_fails(site: Path) -> None:
    run = _load(site, "tenant", "pg-tsvector-filtered")
    hits = run["queries"]["t1"]
    assert all(h["doc_id"].startswith("acme") for h in hits)
    hits[-1] = {**hits[-1], "doc_id": "zeta-3"}
    run["queries"]["t2"].append({"doc_id": "zz-unknown", "rank": len(run["queries"]["t2"]) + 1, "score": 1e-9})
    _forge(site, "tenant", "pg-tsvector-filtered", run)
    check = _checks(site)["run:tenant/pg-tsvector-filtered"]
    assert check["status"] == "fail"
    rel = "evidence/tenant/runs/pg-tsvector-filtered.json"
    assert f"{rel}: query t1: rank {len(hits)}: doc zeta-3 fails the question's filter" in check["mismatches"]
    rank = len(run["queries"]["t2"])
    assert f"{rel}: query t2: rank {rank}: doc zz-unknown is not a passage of the corpus" in check["mismatches"]


# ----------------------------------------------------------------- sitegen audit --postgres


def test_postgres_rerun_passes_on_a_fresh_build(site: Path) -> None:
    results = rerun_postgres(site)
    by_name = {(r.corpus, r.ranker): r for r in results}
    assert {("tiny", "pg-tsvector"), ("tiny", "pg-vector"), ("tiny", "pg-hybrid-sql")} <= set(by_name)
    assert ("tiny", "rrf-pgvector-tsvector") in by_name  # a fusion of pg runs, fused again from the reruns
    assert ("tenant", "pg-vector-filtered") in by_name and ("tiny", "bm25") not in by_name
    for result in results:
        assert result.ok and result.ids_differ == 0 and result.max_score_diff == 0.0, result
    assert by_name[("tiny", "pg-vector")].questions == 5

    outcome = CliRunner().invoke(cli, ["audit", "--postgres", str(site)])
    assert outcome.exit_code == 0, outcome.output
    assert (
        "PASS postgres:tiny/pg-tsvector: 5 questions rerun, 0 with other ids or order, largest score difference "
        "0.0e+00 (tolerance 1e-06)"
    ) in outcome.output.splitlines()


def test_postgres_rerun_catches_a_consistent_forgery_the_standalone_audit_cannot_see(site: Path) -> None:
    run = _load(site, "tiny", "pg-tsvector")
    hits = run["queries"]["q3"]  # "when do payouts reach the bank": matches d2 only
    assert [h["doc_id"] for h in hits] == ["d2"]
    hits[0]["doc_id"] = "d4"  # a passage that matches no lexeme of the question, its score kept
    _forge(site, "tiny", "pg-tsvector", run)
    assert _checks(site)["run:tiny/pg-tsvector"]["status"] == "pass"  # nothing server-less can tell

    outcome = CliRunner().invoke(cli, ["audit", "--postgres", str(site)])
    assert outcome.exit_code == 1
    line = next(x for x in outcome.output.splitlines() if x.startswith("FAIL postgres:tiny/pg-tsvector:"))
    assert "5 questions rerun, 1 with other ids or order" in line
    assert line.endswith("; first: question q3 rank 1: stored d4, rerun d2")


def test_postgres_rerun_catches_a_score_moved_beyond_the_tolerance(site: Path) -> None:
    run = _load(site, "tiny", "pg-tsvector")
    run["queries"]["q3"][0]["score"] += 10 * SCORE_TOLERANCE
    _forge(site, "tiny", "pg-tsvector", run)
    result = next(r for r in rerun_postgres(site) if (r.corpus, r.ranker) == ("tiny", "pg-tsvector"))
    assert not result.ok and result.ids_differ == 0
    assert result.max_score_diff == pytest.approx(10 * SCORE_TOLERANCE, rel=1e-3)
    assert result.first_difference.startswith("question q3 rank 1 doc d2: stored score ")


def test_postgres_rerun_refuses_a_bundle_failing_its_manifest_and_reports_no_server_in_one_line(
    site: Path,
) -> None:
    path = _run_path(site, "tiny", "pg-tsvector")
    path.write_text(path.read_text(encoding="utf-8") + " ", encoding="utf-8")  # no rehash: inconsistent
    outcome = CliRunner().invoke(cli, ["audit", "--postgres", str(site)])
    assert outcome.exit_code == 1
    assert "error: cannot rerun PostgreSQL: the bundle failed its manifest check" in outcome.output

    rehash_manifest(site)
    outcome = CliRunner().invoke(
        cli, ["audit", "--postgres", "--pg-dsn", "postgresql://nobody@127.0.0.1:1/x", str(site)]
    )
    assert outcome.exit_code == 1
    error = [line for line in outcome.output.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and error[0].startswith("error: cannot rerun PostgreSQL: ")
