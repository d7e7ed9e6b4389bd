"""The PostgreSQL backend and the pg-* rankers, against a real private server (one per module)."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from sitegen.embedding.vectors import CorpusEmbeddings
from sitegen.errors import SitegenError
from sitegen.inputs.corpus import Corpus, load_corpus, passage_text
from sitegen.postgres.index import PgCorpusIndex
from sitegen.postgres.server import PostgresServer, PostgresUnavailable
from sitegen.rankers.base import Contract, Family, Hit, RankInputs, Run
from sitegen.rankers.dense import DenseRanker
from sitegen.rankers.fusion import RRFRanker
from sitegen.rankers.pg import PgHybridRanker, PgTsvectorRanker, PgVectorRanker, same_top
from tests.helpers import REPO, FakeEmbeddingModel, write_corpus

psycopg = pytest.importorskip("psycopg")
# Slow: private servers started and stopped, some in child processes
pytestmark = [pytest.mark.postgres, pytest.mark.slow]
from psycopg import sql  # noqa: E402


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    with PostgresServer() as running:
        yield running


def _embeddings(corpus: Corpus) -> CorpusEmbeddings:
    model = FakeEmbeddingModel()
    return CorpusEmbeddings(
        model="fake",
        weights_sha256=model.weights_sha256,
        doc_ids=tuple(d.doc_id for d in corpus.documents),
        doc_vectors=model.encode([passage_text(d) for d in corpus.documents]),
        query_ids=tuple(q.query_id for q in corpus.queries),
        query_vectors=model.encode([q.text for q in corpus.queries]),
    )


def _unlabelled(queries: list[tuple[str, str]]) -> list[dict]:
    return [{"_id": qid, "text": text, "answerable": False} for qid, text in queries]


def _words(rng: np.random.Generator, vocabulary: list[str], low: int, high: int) -> str:
    return " ".join(rng.choice(vocabulary, size=int(rng.integers(low, high))))


# ----------------------------------------------------------------- hostile text


HOSTILE_DOCS = [
    {"_id": "plain", "title": "Refunds", "text": "How to refund a card payment in full or in part."},
    {
        "_id": "quotes",
        "title": 'O\'Reilly "quoted" notes',
        "text": "single ' and double \" quotes; a semicolon -- two dashes $1 %s {} {0} back\\slash zebrafish",
    },
    {"_id": "sql", "title": "", "text": "'); DROP TABLE x; -- marmalade"},
    {"_id": 'it\'s "odd"; --', "title": "Odd id", "text": "a passage whose id has quotes, walrus"},
    {"_id": "url", "title": "Callback", "text": "calls https://a.example/x?a=1&b=2 after each payout"},
    {"_id": "nul", "title": "Nul", "text": "a nul\x00byte inside quokka text"},
]
HOSTILE_QUERIES = [
    ("q-sql", "'); DROP TABLE x; -- marmalade"),
    ("q-quotes", 'O\'Reilly "zebrafish" \\ %s $1 {} ;'),
    ("q-odd-id", "walrus'; --"),
    ("q-url", "a.example/x?a=1&b=2"),
    ("q-nul", "quokka\x00"),
    ("q-stop", "the of and"),
]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, server: PostgresServer) -> Iterator[tuple]:
    name = 'it\'s; DROP TABLE "x"; --'
    folder = write_corpus(
        tmp_path_factory.mktemp("hostile") / name, HOSTILE_DOCS, _unlabelled(HOSTILE_QUERIES), qrels=[]
    )
    corpus = load_corpus(folder)
    embeddings = _embeddings(corpus)
    with PgCorpusIndex.load(server.connect(), corpus, embeddings, owns_connection=True) as index:
        yield corpus, embeddings, index


def test_pg_tsvector_finds_passages_through_quotes_backslashes_and_sql_lookalikes(hostile: tuple) -> None:
    corpus, embeddings, index = hostile
    inputs = RankInputs(corpus=corpus, embeddings=embeddings, postgres=index)
    run = PgTsvectorRanker().rank(inputs, depth=10)
    top = {qid: [h.doc_id for h in hits] for qid, hits in run.hits.items()}
    assert top["q-sql"][0] == "sql"
    assert top["q-quotes"][0] == "quotes"
    assert top["q-odd-id"][0] == 'it\'s "odd"; --'
    assert top["q-url"][0] == "url"  # the URL stays one lexeme; "&" inside it is not an operator
    assert top["q-nul"][0] == "nul"
    assert top["q-stop"] == []  # only stop words: an empty query matches nothing, without an error
    for ranker in (PgVectorRanker(), PgHybridRanker()):
        assert len(ranker.rank(inputs, depth=10).hits) == len(HOSTILE_QUERIES)
    count = index.conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier("pg_temp", index.table)))
    assert count.fetchone()[0] == len(HOSTILE_DOCS)
    stored = index.conn.execute(
        sql.SQL("SELECT content FROM {} WHERE id = %s").format(sql.Identifier("pg_temp", index.table)), ("sql",)
    )
    assert stored.fetchone()[0] == "'); DROP TABLE x; -- marmalade"
    assert index.conn.execute("SELECT to_regclass('x')").fetchone()[0] is None


def test_table_name_is_generated_from_the_corpus_name_not_spliced(hostile: tuple) -> None:
    corpus, _, index = hostile
    assert corpus.name == 'it\'s; DROP TABLE "x"; --'
    assert index.table.startswith("corpus_it_s_drop_table_x_")
    assert index.table.replace("_", "").isalnum()


def test_the_vectors_and_lexemes_the_rankers_read_stay_in_the_table_row(hostile: tuple) -> None:
    """STORAGE MAIN: a scan reads each row's vector and tsvector from the row itself, not from the TOAST table."""
    _, _, index = hostile
    query = "SELECT attname, attstorage FROM pg_attribute WHERE attrelid = %s::regclass AND attname IN (%s, %s)"
    rows = index.conn.execute(query, (f"pg_temp.{index.table}", "embedding", "tsv")).fetchall()
    assert sorted(rows) == [("embedding", "m"), ("tsv", "m")]


def test_pg_rankers_refuse_to_run_without_a_loaded_index(hostile: tuple) -> None:
    corpus, embeddings, _ = hostile
    for ranker in (PgVectorRanker(), PgTsvectorRanker(), PgHybridRanker()):
        with pytest.raises(SitegenError, match="needs the corpus loaded into PostgreSQL"):
            ranker.rank(RankInputs(corpus=corpus, embeddings=embeddings), depth=10)


def test_params_name_method_index_settings_and_tie_rule() -> None:
    vector, keyword, hybrid = PgVectorRanker().params(), PgTsvectorRanker().params(), PgHybridRanker().params()
    assert vector["method"] == "pgvector-hnsw"
    assert vector["index"] == {
        "type": "hnsw",
        "opclass": "vector_cosine_ops",
        "m": 16,
        "ef_construction": 64,
        "parallel_build_workers": 0,
    }
    assert vector["ef_search"] == 100
    assert keyword["method"] == "postgres-tsvector"
    assert keyword["note"] == "ts_rank_cd is not BM25: no idf"
    assert hybrid["method"] == "postgres-hybrid-sql"
    assert (hybrid["k"], hybrid["candidates_per_list"]) == (60.0, 20)
    assert hybrid["weights"] == {"pg-vector": 1.0, "pg-tsvector": 1.0}
    assert "first appearance" in hybrid["ties"]
    for params in (vector, keyword, hybrid):
        assert "ties" in params
        json.dumps(params)  # goes into the evidence as is


# ----------------------------------------------------------------- fusion parity


@pytest.fixture(scope="module")
def tied(tmp_path_factory: pytest.TempPathFactory, server: PostgresServer) -> Iterator[tuple]:
    """90 passages made of 9 distinct texts: every vector and every ts_rank_cd score is shared
    by about ten passages, so both candidate lists and the fused list are full of ties."""
    rng = np.random.default_rng(7)
    vocabulary = ["card", "refund", "payout", "bank", "dispute", "fee", "currency", "invoice"]
    texts = [_words(rng, vocabulary, 2, 6) for _ in range(9)]
    docs = [{"_id": f"d{i:03d}", "title": "", "text": texts[int(rng.integers(9))]} for i in range(90)]
    queries = [(f"q{i:02d}", _words(rng, vocabulary, 1, 4)) for i in range(30)]
    folder = write_corpus(tmp_path_factory.mktemp("tied") / "tied", docs, _unlabelled(queries), qrels=[])
    corpus = load_corpus(folder)
    embeddings = _embeddings(corpus)
    with PgCorpusIndex.load(server.connect(), corpus, embeddings, owns_connection=True) as index:
        yield RankInputs(corpus=corpus, embeddings=embeddings, postgres=index)


def test_pg_hybrid_sql_equals_python_rrf_in_ids_order_and_scores_under_ties(tied: RankInputs) -> None:
    runs = {r.name: r.rank(tied, depth=100) for r in (PgVectorRanker(), PgTsvectorRanker())}
    python = RRFRanker("rrf-pgvector-tsvector", ("pg-vector", "pg-tsvector")).rank(
        RankInputs(corpus=tied.corpus, runs=runs), depth=100
    )
    sql_run = PgHybridRanker().rank(tied, depth=100)
    tied_at = 0
    for query in tied.corpus.queries:
        ours, theirs = sql_run.hits[query.query_id], python.hits[query.query_id]
        assert [(h.doc_id, h.rank, h.components) for h in ours] == [(h.doc_id, h.rank, h.components) for h in theirs]
        for mine, reference in zip(ours, theirs, strict=True):
            # Both sum 1/(k + r) in double precision, vector term first: equal to the last bit.
            assert mine.score == reference.score
        scores = [h.score for h in ours]
        tied_at += sum(a == b for a, b in itertools.pairwise(scores))
    assert tied_at > 30, "the corpus must produce many fused-score ties for this test to mean anything"
    assert same_top(python, sql_run, n=5) == len(tied.corpus.queries)
    assert same_top(python, sql_run, n=40) == len(tied.corpus.queries)


def test_pg_hybrid_sql_component_ranks_come_from_the_first_twenty_of_each_list(tied: RankInputs) -> None:
    run = PgHybridRanker().rank(tied, depth=100)
    for hits in run.hits.values():
        assert len(hits) <= 40
        for hit in hits:
            ranks = dict(hit.components)
            assert set(ranks) == {"pg-vector", "pg-tsvector"}
            assert any(r is not None for r in ranks.values())
            assert all(r is None or 1 <= r <= 20 for r in ranks.values())


def test_pg_tsvector_orders_by_ts_rank_cd_then_id(tied: RankInputs) -> None:
    run = PgTsvectorRanker().rank(tied, depth=100)
    for hits in run.hits.values():
        keys = [(-h.score, h.doc_id) for h in hits]
        assert keys == sorted(keys)
        assert all(h.score > 0 for h in hits)


# ----------------------------------------------------------------- HNSW against exact cosine


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    rng = np.random.default_rng(11)
    vocabulary = [f"w{i}" for i in range(300)]
    docs = [{"_id": f"p{i:03d}", "title": "", "text": _words(rng, vocabulary, 8, 30)} for i in range(80)]
    queries = [(f"q{i:02d}", _words(rng, vocabulary, 2, 8)) for i in range(25)]
    return load_corpus(write_corpus(tmp_path_factory.mktemp("small") / "small", docs, _unlabelled(queries), qrels=[]))


def _vector_runs(server: PostgresServer, corpus: Corpus, embeddings: CorpusEmbeddings) -> tuple[Run, Run]:
    with PgCorpusIndex.load(server.connect(), corpus, embeddings, owns_connection=True) as index:
        inputs = RankInputs(corpus=corpus, embeddings=embeddings, postgres=index)
        pg_run = PgVectorRanker().rank(inputs, depth=100)
    return DenseRanker().rank(inputs, depth=100), pg_run


def test_pg_vector_returns_the_exact_cosine_top_ten_on_a_small_corpus(small: Corpus, server: PostgresServer) -> None:
    """Hashed bag-of-words vectors tie often (two passages sharing one query word and as many
    words score the same); numpy and pgvector round such ties differently, so tied passages
    may swap places. At every rank the exact cosine of pg-vector's passage equals dense's."""
    dense_run, pg_run = _vector_runs(server, small, _embeddings(small))
    for qid, hits in pg_run.hits.items():
        assert len(hits) == 80  # the corpus is smaller than ef_search: the scan sees every passage
        exact = {h.doc_id: h.score for h in dense_run.hits[qid]}
        assert all(abs(h.score - exact[h.doc_id]) <= 1e-6 for h in hits)
        for ours, theirs in zip(hits[:10], dense_run.hits[qid][:10], strict=True):
            assert abs(exact[ours.doc_id] - theirs.score) <= 1e-6, (qid, ours, theirs)


def test_pg_vector_equals_exact_cosine_order_when_no_two_scores_tie(small: Corpus, server: PostgresServer) -> None:
    rng = np.random.default_rng(5)

    def unit(rows: int) -> np.ndarray:
        vectors = rng.standard_normal((rows, 384)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    embeddings = CorpusEmbeddings(
        model="gaussian",
        weights_sha256="0" * 64,
        doc_ids=tuple(d.doc_id for d in small.documents),
        doc_vectors=unit(len(small.documents)),
        query_ids=tuple(q.query_id for q in small.queries),
        query_vectors=unit(len(small.queries)),
    )
    dense_run, pg_run = _vector_runs(server, small, embeddings)
    assert same_top(dense_run, pg_run, n=10) == len(small.queries)
    assert same_top(dense_run, pg_run, n=80) == len(small.queries)


# ----------------------------------------------------------------- plans


def _plans_at(tmp_path: Path, server: PostgresServer, rows: int) -> tuple[PgCorpusIndex, dict, dict]:
    """EXPLAIN plans, and the search the rule picks, on a corpus of ``rows`` passages."""
    rng = np.random.default_rng(3)
    vocabulary = [f"term{i}" for i in range(400)]
    docs = [{"_id": f"r{i:04d}", "title": "", "text": _words(rng, vocabulary, 5, 15)} for i in range(rows)]
    corpus = load_corpus(write_corpus(tmp_path / f"big{rows}", docs, _unlabelled([("q", "term1 term2")]), qrels=[]))
    embeddings = _embeddings(corpus)
    with PgCorpusIndex.load(server.connect(), corpus, embeddings, owns_connection=True) as index:
        plans = index.explain_plans(embeddings.query_vectors[0], "term1 term2")
        return index, plans, index.vector_search(10, 1000).params()


def test_explain_plans_show_the_hnsw_index_up_to_the_ef_search_ceiling_and_the_gin_index_for_keywords(
    tmp_path: Path, server: PostgresServer
) -> None:
    index, plans, search = _plans_at(tmp_path, server, 1000)
    assert search["exact_scan"] is False and search["ef_search"] == 1000
    assert ("Index Scan", index.table, index.hnsw_index) in [tuple(vars(n).values()) for n in plans["vector"]]
    assert any(n.node_type == "Bitmap Index Scan" and n.index == index.gin_index for n in plans["keyword"])
    assert {n.index for n in plans["hybrid"]} >= {index.hnsw_index, index.gin_index}
    assert not any(n.node_type == "Seq Scan" for nodes in plans.values() for n in nodes)


def test_above_the_ef_search_ceiling_the_vector_lists_are_an_exact_scan_and_the_plan_shows_it(
    tmp_path: Path, server: PostgresServer
) -> None:
    index, plans, search = _plans_at(tmp_path, server, 1001)
    assert search["exact_scan"] is True and search["passages"] == 1001 and "ef_search" not in search
    assert [tuple(vars(n).values()) for n in plans["vector"]] == [("Seq Scan", index.table, None)]
    assert index.hnsw_index not in {n.index for nodes in plans.values() for n in nodes}
    assert ("Seq Scan", index.table, None) in [tuple(vars(n).values()) for n in plans["hybrid"]]
    assert any(n.node_type == "Bitmap Index Scan" and n.index == index.gin_index for n in plans["keyword"])


# ----------------------------------------------------------------- external servers


def test_a_connection_string_reaches_an_existing_server_and_temporary_tables_do_not_collide(
    hostile: tuple, server: PostgresServer
) -> None:
    corpus, embeddings, private_index = hostile
    with PostgresServer(server.conninfo) as external:
        assert not external.private and external.folder is None
        assert external.versions()["pgvector"] == server.versions()["pgvector"]
        with PgCorpusIndex.load(external.connect(), corpus, embeddings, owns_connection=True) as index:
            assert index.table == private_index.table  # same name, another session's temporary schema
            inputs = RankInputs(corpus=corpus, embeddings=embeddings, postgres=index)
            assert PgTsvectorRanker().rank(inputs, depth=5).hits["q-sql"][0].doc_id == "sql"
    assert private_index.keyword_top("marmalade", 1) == [("sql", pytest.approx(0.1))]


def test_a_connection_string_that_points_nowhere_raises_postgres_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(PostgresUnavailable) as raised:
        with PostgresServer(f"postgresql://someone:s3cret@127.0.0.1:{port}/sitegen"):
            pass
    message = str(raised.value)
    assert message.startswith(f"cannot connect to PostgreSQL at 127.0.0.1:{port}/sitegen: ")
    assert "\n" not in message and "s3cret" not in message
    assert isinstance(raised.value, SitegenError)


# ----------------------------------------------------------------- no server left behind


def _descendants(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            child = int(stat.parent.name)
            found |= {child, *_descendants(child)}
    return found


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def _processes_naming(folder: Path) -> list[int]:
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if str(folder).encode() in cmdline.read_bytes():
                pids.append(int(cmdline.parent.name))
        except OSError:
            continue
    return pids


# How long a test waits for processes to go before it calls them survivors. A guard against a hang, not a
# measure: shutdown on a quiet machine takes milliseconds, and a loaded one must never fail a test.
HANG_GUARD = 120.0


def _wait_until_gone(pids: set[int], seconds: float = HANG_GUARD) -> set[int]:
    deadline = time.monotonic() + seconds
    while (left := {p for p in pids if _alive(p)}) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.mark.parametrize("raised", [None, RuntimeError, KeyboardInterrupt])
def test_no_postgres_process_or_folder_survives_the_context(raised: type[BaseException] | None) -> None:
    with pytest.raises(raised) if raised else contextlib.nullcontext():
        with PostgresServer() as running:
            folder, postmaster = running.folder, running.pid
            assert folder is not None and postmaster is not None and folder.is_dir()
            running.connect().execute("SELECT 1")
            pids = {postmaster, *_descendants(postmaster)}
            assert len(pids) > 2  # the postmaster, its helpers and our backend
            if raised:
                raise raised("inside the block")
    assert not _wait_until_gone(pids)
    assert not folder.exists()
    assert not _processes_naming(folder)


_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from sitegen.postgres.server import PostgresServer
    server = PostgresServer()
    with server:
        server.connect().execute("SELECT 1")
        print(server.folder, server.pid, flush=True)
        os.kill(os.getpid(), getattr(signal, sys.argv[1]))
        signal.pause()
    """
)


def _child_server(signal_name: str) -> tuple[subprocess.Popen[str], Path, int]:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, signal_name],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    line = child.stdout.readline()
    assert line, f"the child process could not start a server (exit status {child.wait(HANG_GUARD)})"
    folder, pid = line.split()
    return child, Path(folder), int(pid)


def test_sigterm_stops_the_server_and_removes_its_folder() -> None:
    child, folder, postmaster = _child_server("SIGTERM")
    assert child.wait(HANG_GUARD) == 128 + signal.SIGTERM
    assert not _wait_until_gone({postmaster})
    assert not folder.exists()


def test_a_killed_python_process_takes_its_server_down_and_the_next_start_sweeps_its_folder() -> None:
    child, folder, postmaster = _child_server("SIGKILL")
    assert child.wait(HANG_GUARD) == -signal.SIGKILL
    assert not _wait_until_gone({postmaster}), "the postmaster outlived its parent"
    assert folder.exists()  # nothing can run in a SIGKILLed process
    with PostgresServer():
        assert not folder.exists()


# ----------------------------------------------------------------- agreement counts


def _run(name: str, lists: dict[str, list[str]]) -> Run:
    hits = {q: tuple(Hit(d, r, 1.0 / r) for r, d in enumerate(ids, start=1)) for q, ids in lists.items()}
    return Run(ranker=name, contract=Contract(Family.FUSION, "reciprocal rank fusion"), params={}, hits=hits)


def test_agreement_counts_questions_with_identical_ordered_top_n() -> None:
    python = _run("py", {"a": ["1", "2", "3"], "b": ["1", "2"], "c": ["1"], "d": []})
    sql_run = _run("sql", {"a": ["1", "2", "4"], "b": ["2", "1"], "c": ["1"], "d": []})
    assert same_top(python, sql_run, n=2) == 3  # a, c and d (two empty lists agree)
    assert same_top(python, sql_run, n=1) == 3
    assert same_top(python, sql_run, n=3) == 2
    assert same_top(python, _run("pg", {"a": ["1", "2", "3"]}), n=10) == 2  # a, and d (empty in both)
    with pytest.raises(ValueError):
        same_top(python, sql_run, n=0)


def test_index_refuses_a_corpus_without_embeddings_for_every_passage(tmp_path: Path, server: PostgresServer) -> None:
    corpus = load_corpus(write_corpus(tmp_path / "tiny"))
    embeddings = _embeddings(corpus)
    partial = CorpusEmbeddings(
        model="fake",
        weights_sha256=embeddings.weights_sha256,
        doc_ids=embeddings.doc_ids[:-1],
        doc_vectors=embeddings.doc_vectors[:-1],
        query_ids=embeddings.query_ids,
        query_vectors=embeddings.query_vectors,
    )
    with server.connect() as conn, pytest.raises(SitegenError, match="no embedding for passage 'd4'"):
        PgCorpusIndex.load(conn, corpus, partial)


def test_private_servers_of_one_process_are_copies_of_one_initdb_and_share_no_data() -> None:
    """initdb runs once per process: every later private server starts from a copy of that cluster (the same
    system identifier), and what one server stores is not in the next."""
    import psycopg

    identifiers, found = [], []
    for _ in range(2):
        with PostgresServer() as server, psycopg.connect(server.conninfo, autocommit=True) as conn:
            identifiers.append(conn.execute("SELECT system_identifier FROM pg_control_system()").fetchone()[0])
            found.append(conn.execute("SELECT to_regclass('left_behind') IS NOT NULL").fetchone()[0])
            conn.execute("CREATE TABLE left_behind (x int)")
            assert Path(server.data_dir).stat().st_mode & 0o077 == 0  # PostgreSQL refuses a readable data folder
    assert identifiers[0] == identifiers[1] and found == [False, False]


def test_the_initdb_folder_is_removed_when_the_process_exits() -> None:
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="initdb-exit-"))  # not under pytest's root-only folder: the server user
    base.chmod(0o755)  # (as root) must reach its folder
    script = (
        "import tempfile; from pathlib import Path\n"
        "from sitegen.postgres.server import PostgresServer\n"
        "with PostgresServer(): pass\n"
        "print(*Path(tempfile.gettempdir()).glob('sitegen-pg-template-*'))\n"
    )
    try:
        env = {**os.environ, "TMPDIR": str(base)}
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=REPO)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().startswith(str(base))  # it was there while the process ran
        assert list(base.glob("sitegen-pg-*")) == []
    finally:
        shutil.rmtree(base, ignore_errors=True)
