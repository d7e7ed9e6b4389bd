"""PostgreSQL beyond one small corpus: the pg-* rankers on a server reached only through a connection string
(``--pg-dsn``; here a second private server, used as if it were remote), and the exact vector search above
pgvector's ef_search ceiling of 1000 passages, where HNSW is no longer sure to be exact or reproducible."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from sitegen import audit
from sitegen.postgres.index import EF_SEARCH_MAX
from sitegen.postgres.server import PostgresServer, PostgresUnavailable
from sitegen.verify.postgres import rerun_postgres
from tests.helpers import PG_RANKERS, build, evidence_failures, rehash_manifest, write_corpus

psycopg = pytest.importorskip("psycopg")
# Slow: two builds of 1,150 passages and a second server
pytestmark = [pytest.mark.postgres, pytest.mark.slow]

PASSAGES = EF_SEARCH_MAX + 150  # above the ceiling: the vector lists must be an exact scan
PG_RUNS = ("pg-vector", "pg-tsvector", "rrf-pgvector-tsvector", "pg-hybrid-sql")
FILTERED_PG_RUNS = ("pg-vector-filtered", "pg-tsvector-filtered", "rrf-pgvector-tsvector-filtered")


@pytest.fixture(scope="module")
def remote() -> Iterator[PostgresServer]:
    """A second server of its own (its own socket folder), which the builds reach only through its DSN."""
    with PostgresServer() as running:
        yield running


def _scale_corpus(folder: Path) -> Path:
    """Deterministic synthetic passages over a small vocabulary (so hashed vectors tie often), two tenants
    for the filtered rankers, and a few questions."""
    rng = np.random.default_rng(17)
    words = [f"w{i}" for i in range(500)]
    docs = [
        {
            "_id": f"p{i:05d}",
            "title": "",
            "text": " ".join(rng.choice(words, size=int(rng.integers(6, 20)))),
            "metadata": {"tenant_id": "acme" if i % 3 else "zeta"},
        }
        for i in range(PASSAGES)
    ]
    queries = [
        {
            "_id": f"q{n}",
            "text": " ".join(rng.choice(words, size=3)),
            **({"filter": {"tenant_id": "zeta"}} if n < 2 else {}),
        }
        for n in range(5)
    ]
    qrels = [(q["_id"], docs[7 * n]["_id"], 1) for n, q in enumerate(queries)]
    write_corpus(folder, docs, queries, qrels)
    (folder / "sitegen.json").write_text(
        json.dumps({"filters": {"tenant_id": {"field": "tenant_id", "op": "equals"}}}), encoding="utf-8"
    )
    return folder


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory: pytest.TempPathFactory, remote: PostgresServer) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("pg-scale")
    _scale_corpus(root / "corpora" / "scale")
    with psycopg.connect(remote.conninfo, autocommit=True) as conn:  # someone else's table on the "remote" server
        conn.execute("CREATE TABLE IF NOT EXISTS keep_me (id int)")
        conn.execute("INSERT INTO keep_me VALUES (1), (2)")
    for name in ("a", "b"):  # the PostgreSQL rankers only: the others do not depend on the server or the ceiling
        options = {"pg_dsn": remote.conninfo, "require_postgres": True, "rankers": PG_RANKERS}
        build(root / "corpora", root / name, cache=root / "cache", **options)
    return root / "a", root / "b"


def _runs(site: Path) -> Path:
    return site / "evidence" / "scale" / "runs"


def test_two_builds_above_the_ceiling_give_byte_identical_pg_runs(two_builds: tuple[Path, Path]) -> None:
    first, second = two_builds
    for ranker in PG_RUNS + FILTERED_PG_RUNS:
        for suffix in (".json", ".trec"):
            a, b = (_runs(site) / f"{ranker}{suffix}" for site in (first, second))
            assert a.read_bytes() == b.read_bytes(), f"{ranker}{suffix} differs between two builds"


def test_above_the_ceiling_the_runs_and_the_plans_say_the_vector_search_was_an_exact_scan(
    two_builds: tuple[Path, Path],
) -> None:
    site = two_builds[0]
    for ranker in ("pg-vector", "pg-hybrid-sql", "pg-vector-filtered"):
        search = json.loads((_runs(site) / f"{ranker}.json").read_text(encoding="utf-8"))["params"]["vector_search"]
        assert search["exact_scan"] is True and search["passages"] == PASSAGES
        assert f"{PASSAGES} passages > {EF_SEARCH_MAX}" in search["why"]
    postgres = json.loads((site / "evidence" / "scale" / "postgres.json").read_text(encoding="utf-8"))
    assert postgres["plans"]["vector_search"]["exact_scan"] is True
    assert {n["node_type"] for n in postgres["plans"]["scans"]["vector"]} == {"Seq Scan"}
    assert not any(
        n["index"] and n["index"].endswith("_hnsw") for ns in postgres["plans"]["scans"].values() for n in ns
    )
    assert "ran as an <strong>exact scan</strong>" in (site / "corpora" / "scale" / "index.html").read_text()


def test_the_exact_scan_holds_the_exact_cosine_ranking_and_the_audit_passes(two_builds: tuple[Path, Path]) -> None:
    site = two_builds[0]
    report = audit.run_audit(site, echo=lambda line: None)
    assert evidence_failures(report) == {}
    checks = {c["name"]: c["detail"] for c in report["checks"]}
    assert (
        f"{PASSAGES} passages > {EF_SEARCH_MAX} (pgvector's ef_search ceiling), so the run is an exact scan"
        in (checks["run:scale/pg-vector"])
    )
    assert "500 of 500 ranks hold the exact search's score" in checks["run:scale/pg-vector"]


def _forged_site(two_builds: tuple[Path, Path], tmp_path: Path, edit) -> dict[str, list[str]]:
    import shutil

    site = Path(shutil.copytree(two_builds[0], tmp_path / "site"))
    path = _runs(site) / "pg-vector.json"
    run = json.loads(path.read_text(encoding="utf-8"))
    edit(run, site)
    path.write_text(json.dumps(run, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    rehash_manifest(site)
    return evidence_failures(audit.run_audit(site, echo=lambda line: None))


def test_audit_fails_a_run_above_the_ceiling_that_claims_hnsw(two_builds: tuple[Path, Path], tmp_path: Path) -> None:
    def claim_hnsw(run: dict, site: Path) -> None:
        run["params"]["vector_search"] = {"exact_scan": False, "passages": PASSAGES, "ef_search": 1000, "why": ""}

    failures = _forged_site(two_builds, tmp_path, claim_hnsw)
    assert any(
        "params.vector_search.exact_scan is False" in line and "sitegen runs an exact scan" in line
        for line in failures["run:scale/pg-vector"]
    )


def test_audit_fails_an_exact_scan_missing_its_best_passage_even_with_true_cosines_in_order(
    two_builds: tuple[Path, Path], tmp_path: Path
) -> None:
    """Drop each question's first hit and append the next passage by true cosine: counts, order and scores
    all stay honest; only the recomputed exact ranking shows rank 1 is not the best passage."""

    def drop_the_best(run: dict, site: Path) -> None:
        folder = site / "evidence" / "scale" / "embeddings"
        ids = json.loads((folder / "index.json").read_text(encoding="utf-8"))
        passages, queries = np.load(folder / "passages.npy"), np.load(folder / "queries.npy")
        hits = run["queries"]["q3"]
        compact = isinstance(hits[0], list)  # [doc_id, score] rows, or {"doc_id", "rank", "score"} objects
        doc_id, score = (lambda h: h[0], lambda h: h[1]) if compact else (lambda h: h["doc_id"], lambda h: h["score"])
        cosines = passages.astype(np.float64) @ queries[ids["queries"].index("q3")].astype(np.float64)
        kept, floor = {doc_id(h) for h in hits}, score(hits[-1])
        row = max(
            (r for r, d in enumerate(ids["passages"]) if d not in kept and cosines[r] <= floor),
            key=lambda r: cosines[r],
        )
        last = [ids["passages"][row], float(cosines[row])]
        if compact:
            run["queries"]["q3"] = [*hits[1:], last]
        else:
            shifted = [{**h, "rank": h["rank"] - 1} for h in hits[1:]]
            run["queries"]["q3"] = [*shifted, {"doc_id": last[0], "rank": len(hits), "score": last[1]}]

    failures = _forged_site(two_builds, tmp_path, drop_the_best)
    assert any(
        line.startswith("evidence/scale/runs/pg-vector.json: query q3: rank 1: ")
        and "the exact cosine ranking's score there is" in line
        for line in failures["run:scale/pg-vector"]
    ), failures


def test_postgres_rerun_over_the_dsn_reproduces_the_exact_scan(two_builds: tuple[Path, Path], remote) -> None:
    results = {r.ranker: r for r in rerun_postgres(two_builds[0], remote.conninfo) if r.corpus == "scale"}
    assert set(PG_RUNS) <= set(results)
    assert all(r.ok and r.ids_differ == 0 and r.max_score_diff == 0.0 for r in results.values()), results


# ----------------------------------------------------------------- an external server through --pg-dsn


def test_builds_over_a_dsn_leave_the_remote_server_as_they_found_it(
    two_builds: tuple[Path, Path], remote: PostgresServer
) -> None:
    """The corpus lives in temporary tables of the build's own sessions: nothing of sitegen's is left, and
    nothing else is touched."""
    with psycopg.connect(remote.conninfo, autocommit=True) as conn:
        leftovers = conn.execute(
            "SELECT n.nspname, c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace "
            "WHERE c.relname LIKE 'corpus%%'"
        ).fetchall()
        assert leftovers == []
        assert conn.execute("SELECT count(*) FROM keep_me").fetchone()[0] == 2
    manifest = json.loads((two_builds[0] / "evidence" / "manifest.json").read_text(encoding="utf-8"))
    assert "host=" not in json.dumps(manifest) and str(remote.folder) not in json.dumps(manifest)


def test_a_server_without_the_vector_extension_is_refused_in_one_line_with_the_password_masked(
    remote: PostgresServer,
) -> None:
    with psycopg.connect(remote.conninfo, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS novector")
        conn.execute("CREATE DATABASE novector")
        conn.execute("DROP ROLE IF EXISTS plain")
        conn.execute("CREATE ROLE plain LOGIN")  # no superuser, no CREATE on the database
    dsn = psycopg.conninfo.make_conninfo(remote.conninfo, dbname="novector", user="plain", password="hunter2-secret")
    with pytest.raises(PostgresUnavailable) as raised:
        with PostgresServer(dsn):
            pass
    message = str(raised.value)
    assert message.startswith(f"pgvector is not usable on PostgreSQL at socket {remote.folder}/novector: ")
    assert "the database has no vector extension and creating it failed" in message
    assert "\n" not in message and "hunter2-secret" not in message


def test_an_unreachable_dsn_in_a_build_fails_it_when_postgres_is_required_with_the_password_masked(
    tmp_path: Path, remote: PostgresServer
) -> None:
    _scale_corpus(tmp_path / "corpora" / "scale")
    dsn = f"postgresql://sitegen:pa55-w0rd@{remote.folder}nowhere/x".replace("@/", "@%2F")
    with pytest.raises(PostgresUnavailable) as raised:
        build(tmp_path / "corpora", tmp_path / "site", pg_dsn=dsn, require_postgres=True, rankers=("pg-tsvector",))
    assert "cannot connect to PostgreSQL at socket " in str(raised.value) and "pa55-w0rd" not in str(raised.value)
    assert not (tmp_path / "site").exists()


@pytest.mark.parametrize(
    "dsn",
    ["postgresql://someone:s3cr3t-pw@db.example:5432/x", "host=db.example password=s3cr3t-pw user=someone"],
)
def test_messages_mask_the_password_of_either_form_of_connection_string(dsn: str) -> None:
    from sitegen.postgres.server import _masked

    assert _masked(f"server said: bad login for {dsn}", dsn) == f"server said: bad login for {dsn}".replace(
        "s3cr3t-pw", "***"
    )
    assert _masked("no password here", None) == "no password here"


def test_the_audit_holds_the_same_ef_search_ceiling_as_the_rankers() -> None:
    """The standalone audit cannot import sitegen; its copy of the ceiling that decides exact scan must match."""
    assert audit.PGVECTOR_EF_SEARCH_MAX == EF_SEARCH_MAX
