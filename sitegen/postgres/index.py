"""PostgreSQL for the ``pg-*`` rankers, the SQL side: one corpus loaded into a server, its queries.

The server itself (a private one started from ``pgserver``, or one named by a connection string)
is :mod:`sitegen.postgres.server`; this module only needs a ``psycopg`` connection to it.

Index. :class:`PgCorpusIndex` loads one corpus into a temporary table (so it vanishes with its
connection and two builds sharing one external server never collide; names are derived from
the corpus name and always quoted with ``psycopg.sql.Identifier``)::

    id         text COLLATE "C" PRIMARY KEY    -- "C": id order is Python's string order
    title      text                            -- the passage title
    content    text                            -- the passage body
    metadata   jsonb
    embedding  vector(384)                     -- the build's normalised float32 vectors
    tsv        tsvector GENERATED ALWAYS AS (to_tsvector('english', title || ' ' || content)) STORED

with an HNSW index (``vector_cosine_ops``, m = 16, ef_construction = 64, built single-threaded, in
memory: :func:`hnsw_build_memory_mb` raises maintenance_work_mem for the build's transaction) and a
GIN index on ``tsv``. ``title || ' ' || content`` is :func:`sitegen.inputs.corpus.passage_text`
up to whitespace, which the text-search parser ignores. Every value (rows, vectors as pgvector
text ``'[x,y,...]'``, query text) travels as a bind parameter or through COPY; SQL text is
built only from this module's constants and quoted identifiers. NUL characters, which
PostgreSQL text cannot hold, are replaced by a space in titles, bodies and queries.

Queries run with ``enable_seqscan = off`` so each goes through the index its ranker is named
after even on small tables, where the planner would otherwise scan the table; keyword results
are the same either way, vector results are what the HNSW index returns (approximate; exact
whenever the corpus has at most ``ef_search`` passages, since the search then visits the whole
graph). pgvector assigns HNSW levels with the server's unseeded random generator, so on a
corpus larger than ``ef_search`` two builds may return different approximate neighbours.

The vector search rule (:func:`vector_search`): ``ef_search`` cannot go above pgvector's ceiling
of 1000, so on a table of more than 1000 passages no HNSW search is sure to visit them all. There
the vector lists run as an exact scan instead: index scans off in that transaction
(``enable_indexscan = off``, sequential scans allowed), every distance computed, ordered by
(distance, id). Exact and the same bytes on every build. Keyword-only queries keep
``enable_seqscan = off`` and their GIN index; in the one-statement hybrid the planner may scan the
table for the keyword list too, which matches the same rows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sitegen.errors import SitegenError
from sitegen.inputs.corpus import Corpus
from sitegen.postgres.cluster import PostgresUnavailable, one_line
from sitegen.postgres.server import _import_psycopg

if TYPE_CHECKING:
    import psycopg

    from sitegen.embedding.vectors import CorpusEmbeddings

__all__ = [
    "DEFAULT_HYBRID",
    "EF_SEARCH",
    "EF_SEARCH_MAX",
    "HNSW_EF_CONSTRUCTION",
    "HNSW_M",
    "TEXT_SEARCH_CONFIG",
    "HybridRow",
    "HybridSettings",
    "LoadedTable",
    "PgCorpusIndex",
    "ScanNode",
    "VectorSearch",
    "format_vector",
    "hnsw_build_memory_mb",
    "vector_search",
]

TEXT_SEARCH_CONFIG = "english"
# pgvector's defaults, written out so the evidence names them.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
# Size of the HNSW search's candidate list. Before pgvector 0.8 an HNSW scan returns at most
# ef_search rows, so a query for n rows raises it to n (pgvector's ceiling is 1000).
EF_SEARCH = 100
EF_SEARCH_MAX = 1000
# pgvector builds the HNSW graph in maintenance_work_mem and, once the graph outgrows it, goes on
# inserting row by row into the on-disk index, many times slower (hours at a million rows). The
# graph holds each vector (4 bytes a dimension) and, per layer, 2m neighbours with their distances;
# this per-row allowance covers both with room to spare.
HNSW_BUILD_FLOOR_MB = 256
_HNSW_ROW_OVERHEAD_BYTES = 128


def hnsw_build_memory_mb(rows: int, dimensions: int, m: int = HNSW_M) -> int:
    """The maintenance_work_mem (MB) that keeps an HNSW build of ``rows`` vectors in memory: at least
    the server's usual 256 MB."""
    per_row = 4 * dimensions + 8 + 2 * m * 16 * 2 + _HNSW_ROW_OVERHEAD_BYTES
    return max(HNSW_BUILD_FLOOR_MB, -(-rows * per_row // (1 << 20)))


@dataclass(frozen=True)
class VectorSearch:
    """How a vector list is searched: through the HNSW index with ``ef_search`` candidates, or by an
    exact scan of every row (``exact``; ``ef_search`` is then unused)."""

    exact: bool
    ef_search: int
    rows: int

    def params(self) -> dict[str, Any]:
        """The evidence's account of which search ran and why."""
        if self.exact:
            return {
                "exact_scan": True,
                "passages": self.rows,
                "why": f"{self.rows} passages > {EF_SEARCH_MAX}, pgvector's ef_search ceiling: no HNSW search is "
                "sure to visit them all, so index scans are off (enable_indexscan = off) and every distance is "
                "computed, ordered by (distance, id): exact, the same on every build",
            }
        complete = self.ef_search >= self.rows
        return {
            "exact_scan": False,
            "passages": self.rows,
            "ef_search": self.ef_search,
            "why": f"{self.rows} passages <= {EF_SEARCH_MAX}, pgvector's ef_search ceiling: the HNSW index serves it"
            + (", and ef_search covers every passage, so the search visits them all" if complete else ""),
        }


def vector_search(rows: int, n: int, ef_search: int) -> VectorSearch:
    """The rule: an exact scan when the table holds more rows than ``ef_search`` can ever reach
    (pgvector's ceiling, :data:`EF_SEARCH_MAX`), else HNSW with ``ef_search`` raised to the n rows
    asked for, at most the ceiling."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    return VectorSearch(exact=rows > EF_SEARCH_MAX, ef_search=min(max(ef_search, n), EF_SEARCH_MAX), rows=rows)


@dataclass(frozen=True)
class HybridSettings:
    """The fusion :meth:`PgCorpusIndex.hybrid_top` computes in one statement: RRF's ``k``, the candidates taken
    from each list, the (vector, keyword) weights, and the HNSW search width of the vector list."""

    k: float = 60.0
    candidates: int = 20
    weights: Sequence[float] = (1.0, 1.0)
    ef_search: int = EF_SEARCH


#: RRF with k = 60, 20 candidates a list, equal weights and the default search width.
DEFAULT_HYBRID = HybridSettings()


@dataclass(frozen=True)
class LoadedTable:
    """What :meth:`PgCorpusIndex.load` built: the temporary table's name, the vectors' dimension, the rows, the
    HNSW settings, and the seconds the load took, in all and per step (copy, hnsw, gin, analyze)."""

    name: str
    dim: int
    rows: int
    m: int
    ef_construction: int
    load_seconds: float = 0.0
    step_seconds: Mapping[str, float] | None = None


@dataclass(frozen=True)
class HybridRow:
    """One row of the SQL fusion: id, fused score, 1-based rank in each candidate list (None: absent)."""

    doc_id: str
    score: float
    vector_rank: int | None
    keyword_rank: int | None


@dataclass(frozen=True)
class ScanNode:
    """A scan node of an EXPLAIN plan: its type and the table and index it read."""

    node_type: str
    relation: str | None
    index: str | None


def format_vector(vector: np.ndarray) -> str:
    """pgvector's text form ``[x,y,...]``: each float32 as the shortest decimal that reads back
    as the same double, so the server's ``strtof`` recovers the exact float32."""
    values = np.asarray(vector, dtype=np.float32)
    if values.ndim != 1:
        raise ValueError(f"expected one vector, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("vector has a NaN or infinite component")
    return "[" + ",".join(repr(v) for v in values.tolist()) + "]"


def _clean(text: str) -> str:
    return text.replace("\x00", " ")


# plainto_tsquery ANDs its lexemes; the text form writes the operator as " & " between quoted
# lexemes. A lexeme can contain "&" (a URL such as a.com/x?a=1&b=2 stays one lexeme) but never a
# space, so replacing " & " by " | " turns exactly the operators into OR. The whole chain is
# immutable, so the planner folds it into one tsquery constant and the GIN index serves it.
_OR_QUERY = "replace(plainto_tsquery('english', %(text)s)::text, ' & ', ' | ')::tsquery"

_VECTOR_SQL = """
SELECT id, distance FROM (
    SELECT id, embedding <=> %(vector)s::vector AS distance
    FROM {table}
    WHERE {where}
    ORDER BY {vector_order}
    LIMIT %(ef_search)s
) AS nearest
ORDER BY distance, id
LIMIT %(n)s
"""

_KEYWORD_SQL = f"""
SELECT id, ts_rank_cd(tsv, {_OR_QUERY}) AS score
FROM {{table}}
WHERE tsv @@ {_OR_QUERY} AND {{where}}
ORDER BY score DESC, id
LIMIT %(n)s
"""

# The inner ORDER BY of a vector list: the distance alone, the form pgvector's HNSW index serves
# (its candidates are then ordered by (distance, id) outside), or (distance, id) for the exact
# scan, so a tie at the LIMIT keeps the smaller id.
_HNSW_ORDER = "embedding <=> %(vector)s::vector"
_EXACT_ORDER = "embedding <=> %(vector)s::vector, id"

_MATCH_COUNT_SQL = f"SELECT count(*) FROM {{table}} WHERE tsv @@ {_OR_QUERY} AND {{where}}"

# Reciprocal Rank Fusion in one statement. The vector term is added first and both in double
# precision, as sitegen.rankers.fusion sums 1/(k + r) over the lists in their configured order,
# so scores agree to the last bit. Ties: items of the vector list by vector rank, then items
# found only by the keyword list by keyword rank: the order of first appearance that Python's
# stable sort keeps.
_HYBRID_SQL = f"""
WITH vector_list AS (
    SELECT id, row_number() OVER (ORDER BY distance, id) AS r
    FROM (
        SELECT id, embedding <=> %(vector)s::vector AS distance
        FROM {{table}}
        WHERE {{where}}
        ORDER BY {{vector_order}}
        LIMIT %(ef_search)s
    ) AS nearest
    ORDER BY distance, id
    LIMIT %(candidates)s
), keyword_list AS (
    SELECT id, row_number() OVER (ORDER BY score DESC, id) AS r
    FROM (
        SELECT id, ts_rank_cd(tsv, {_OR_QUERY}) AS score
        FROM {{table}}
        WHERE tsv @@ {_OR_QUERY} AND {{where}}
    ) AS matches
    ORDER BY score DESC, id
    LIMIT %(candidates)s
)
SELECT coalesce(v.id, k.id) AS id,
       coalesce(%(w_vector)s::float8 / (%(k)s::float8 + v.r), 0::float8)
           + coalesce(%(w_keyword)s::float8 / (%(k)s::float8 + k.r), 0::float8) AS score,
       v.r AS vector_rank,
       k.r AS keyword_rank
FROM vector_list AS v FULL OUTER JOIN keyword_list AS k ON v.id = k.id
ORDER BY score DESC, vector_rank NULLS LAST, keyword_rank
LIMIT %(n)s
"""


def _where(conditions: Sequence[Any]) -> tuple[Any, dict[str, Any]]:
    """A metadata filter as SQL over the ``metadata`` jsonb column; field names and values are bind
    parameters, never spliced into the statement. Dates compare as dates."""
    from psycopg import sql

    if not conditions:
        return sql.SQL("TRUE"), {}
    parts, values = [], {}
    for n, condition in enumerate(conditions):
        field, value = f"filter_field_{n}", f"filter_value_{n}"
        values[field], values[value] = condition.field, condition.value
        if condition.op == "equals":
            parts.append(sql.SQL("metadata ->> {} = {}").format(sql.Placeholder(field), sql.Placeholder(value)))
        elif condition.op == "one-of":
            parts.append(sql.SQL("metadata ->> {} = ANY({})").format(sql.Placeholder(field), sql.Placeholder(value)))
        elif condition.op == "on-or-after":
            values[value] = condition.value.isoformat()
            parts.append(
                sql.SQL("(metadata ->> {})::date >= {}::date").format(sql.Placeholder(field), sql.Placeholder(value))
            )
        else:
            raise ValueError(f"unknown filter op {condition.op!r}")
    return sql.SQL("({})").format(sql.SQL(" AND ").join(parts)), values


def _table_name(corpus_name: str) -> str:
    """``corpus_<slug>_<10 hex of sha256(name)>``: readable, unique per name, under 63 bytes."""
    slug = re.sub(r"[^a-z0-9]+", "_", corpus_name.lower()).strip("_")[:30]
    digest = hashlib.sha256(corpus_name.encode("utf-8")).hexdigest()[:10]
    return f"corpus_{slug}_{digest}" if slug else f"corpus_{digest}"


def _scan_nodes(plan: dict[str, Any]) -> list[ScanNode]:
    nodes = []
    if plan.get("Node Type", "").endswith("Scan") and ("Relation Name" in plan or "Index Name" in plan):
        nodes.append(ScanNode(plan["Node Type"], plan.get("Relation Name"), plan.get("Index Name")))
    for child in plan.get("Plans", ()):
        nodes.extend(_scan_nodes(child))
    return nodes


class PgCorpusIndex:
    """One corpus in a temporary table with HNSW and GIN indexes, and the three queries on it.

    Build with :meth:`load`; :meth:`close` drops the table (and closes the connection if the
    index owns it). Query methods raise :class:`PostgresUnavailable` if the server fails.
    """

    def __init__(
        self, conn: psycopg.Connection, corpus_name: str, loaded: LoadedTable, *, owns_connection: bool = False
    ) -> None:
        from psycopg import sql

        table = loaded.name
        self.conn = conn
        self.corpus_name = corpus_name
        self.table = table
        self.hnsw_index = f"{table}_hnsw"
        self.gin_index = f"{table}_tsv_gin"
        self.dim = loaded.dim
        self.rows = loaded.rows
        self.m = loaded.m
        self.ef_construction = loaded.ef_construction
        self.owns_connection = owns_connection
        self.load_seconds = loaded.load_seconds
        # Seconds of each load step (copy, hnsw, gin, analyze), for the cost test.
        self.step_seconds = dict(loaded.step_seconds or {})
        self._table_sql = sql.Identifier("pg_temp", table)

    @classmethod
    def load(
        cls,
        conn: psycopg.Connection,
        corpus: Corpus,
        embeddings: CorpusEmbeddings,
        *,
        m: int = HNSW_M,
        ef_construction: int = HNSW_EF_CONSTRUCTION,
        owns_connection: bool = False,
    ) -> PgCorpusIndex:
        """Create the table, COPY the passages and their vectors in, build both indexes, ANALYZE."""
        psycopg = _import_psycopg()
        from psycopg import sql
        from psycopg.types.json import Jsonb

        clock = time.perf_counter()
        steps: dict[str, float] = {}
        row_of = {doc_id: row for row, doc_id in enumerate(embeddings.doc_ids)}
        missing = [d.doc_id for d in corpus.documents if d.doc_id not in row_of]
        if missing:
            raise SitegenError(f"{corpus.name}: no embedding for passage {missing[0]!r}")
        bad = [d.doc_id for d in corpus.documents if "\x00" in d.doc_id]
        if bad:
            raise PostgresUnavailable(
                f"{corpus.name}: passage id {bad[0]!r} has a NUL character PostgreSQL cannot store"
            )
        dim = int(embeddings.doc_vectors.shape[1])
        name = _table_name(corpus.name)
        table = sql.Identifier("pg_temp", name)

        def lap(step: str, since: float) -> float:
            now = time.perf_counter()
            steps[step] = now - since
            return now

        try:
            with conn.transaction():
                conn.execute("SET LOCAL max_parallel_maintenance_workers = 0")
                build_mb = hnsw_build_memory_mb(len(corpus.documents), dim, m)
                conn.execute(sql.SQL("SET LOCAL maintenance_work_mem = {}").format(sql.Literal(f"{build_mb}MB")))
                conn.execute("SET LOCAL client_min_messages = warning")
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table))
                conn.execute(
                    sql.SQL(
                        # STORAGE MAIN keeps the vector and the lexemes in the row that a scan reads (a
                        # long passage's text moves to TOAST first): a quarter of the hybrid query's time on
                        # Cranfield's 1,400 passages.
                        'CREATE TEMPORARY TABLE {} (id text COLLATE "C" PRIMARY KEY, title text NOT NULL, '
                        "content text NOT NULL, metadata jsonb NOT NULL, embedding vector({}) STORAGE MAIN NOT NULL, "
                        "tsv tsvector STORAGE MAIN GENERATED ALWAYS AS "
                        "(to_tsvector({}::regconfig, title || ' ' || content)) STORED)"
                    ).format(sql.Identifier(name), sql.Literal(dim), sql.Literal(TEXT_SEARCH_CONFIG))
                )
                mark = time.perf_counter()
                copy_sql = sql.SQL("COPY {} (id, title, content, metadata, embedding) FROM STDIN").format(table)
                with conn.cursor() as cur, cur.copy(copy_sql) as copy:
                    for doc in corpus.documents:
                        copy.write_row(
                            (
                                doc.doc_id,
                                _clean(doc.title),
                                _clean(doc.text),
                                Jsonb(dict(doc.metadata)),
                                format_vector(embeddings.doc_vectors[row_of[doc.doc_id]]),
                            )
                        )
                mark = lap("copy", mark)
                conn.execute(
                    sql.SQL(
                        "CREATE INDEX {} ON {} USING hnsw (embedding vector_cosine_ops) "
                        "WITH (m = {}, ef_construction = {})"
                    ).format(sql.Identifier(f"{name}_hnsw"), table, sql.Literal(m), sql.Literal(ef_construction))
                )
                mark = lap("hnsw", mark)
                conn.execute(
                    sql.SQL("CREATE INDEX {} ON {} USING gin (tsv)").format(sql.Identifier(f"{name}_tsv_gin"), table)
                )
                mark = lap("gin", mark)
                conn.execute(sql.SQL("ANALYZE {}").format(table))
                lap("analyze", mark)
        except psycopg.Error as exc:
            raise PostgresUnavailable(f"{corpus.name}: loading into PostgreSQL failed: {one_line(exc)}") from None
        loaded = LoadedTable(name, dim, len(corpus.documents), m, ef_construction, time.perf_counter() - clock, steps)
        return cls(conn, corpus.name, loaded, owns_connection=owns_connection)

    def __enter__(self) -> PgCorpusIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Drop the table (a temporary table also goes with its connection)."""
        from psycopg import sql

        if not self.conn.closed:
            with contextlib.suppress(Exception):
                self.conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self._table_sql))
            if self.owns_connection:
                self.conn.close()

    def sizes(self) -> dict[str, int]:
        """Bytes on disk: the table (``pg_table_size``: heap and TOAST), each index, and all indexes together."""
        psycopg = _import_psycopg()
        names = {"hnsw_bytes": self.hnsw_index, "gin_bytes": self.gin_index, "primary_key_bytes": f"{self.table}_pkey"}
        try:
            rows = self.conn.execute(
                "SELECT c.relname, pg_relation_size(c.oid), pg_table_size(c.oid), pg_indexes_size(c.oid) "
                "FROM pg_class AS c WHERE c.relnamespace = pg_my_temp_schema() AND c.relname = ANY(%s)",
                ([self.table, *names.values()],),
            ).fetchall()
        except psycopg.Error as exc:
            raise PostgresUnavailable(f"{self.corpus_name}: PostgreSQL query failed: {one_line(exc)}") from None
        found = {relname: (relation, table, indexes) for relname, relation, table, indexes in rows}
        if self.table not in found:
            raise PostgresUnavailable(f"{self.corpus_name}: the table {self.table} is not loaded")
        sizes = {"table_bytes": int(found[self.table][1]), "indexes_bytes": int(found[self.table][2])}
        sizes.update({key: int(found[name][0]) for key, name in names.items() if name in found})
        return sizes

    def index_params(self) -> dict[str, Any]:
        return {
            "hnsw": {"opclass": "vector_cosine_ops", "m": self.m, "ef_construction": self.ef_construction},
            "gin": "tsv",
            "dimensions": self.dim,
            "rows": self.rows,
        }

    # -- queries

    def vector_search(self, n: int, ef_search: int = EF_SEARCH) -> VectorSearch:
        """How a query for n rows searches this table's vectors (:func:`vector_search`)."""
        return vector_search(self.rows, n, ef_search)

    @contextlib.contextmanager
    def _session(self, search: VectorSearch) -> Iterator[Any]:
        psycopg = _import_psycopg()
        try:
            with self.conn.transaction(), self.conn.cursor() as cur:
                if search.exact:  # no HNSW: a sequential scan for the vectors (GIN bitmap scans stay allowed)
                    cur.execute("SET LOCAL enable_indexscan = off")
                else:
                    cur.execute("SET LOCAL enable_seqscan = off")
                cur.execute("SET LOCAL jit = off")
                cur.execute("SET LOCAL client_min_messages = warning")  # empty tsquery NOTICEs
                cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(search.ef_search),))
                yield cur
        except psycopg.Error as exc:
            raise PostgresUnavailable(f"{self.corpus_name}: PostgreSQL query failed: {one_line(exc)}") from None

    def _query(
        self, template: str, params: dict[str, Any], search: VectorSearch, conditions: Sequence[Any] = ()
    ) -> list[tuple[Any, ...]]:
        from psycopg import sql

        where, values = _where(conditions)
        order = sql.SQL(_EXACT_ORDER if search.exact else _HNSW_ORDER)
        query = sql.SQL(template).format(table=self._table_sql, where=where, vector_order=order)
        params = params | values
        with self._session(search) as cur:
            cur.execute(query, params, prepare=False)
            return cur.fetchall()

    def _keyword_search(self, n: int) -> VectorSearch:
        """The session of a query without a vector list: index scans on, so the GIN index serves it."""
        return dataclasses.replace(self.vector_search(n), exact=False)

    @staticmethod
    def _limit(search: VectorSearch, n: int) -> int:
        """The inner LIMIT of a vector list: the HNSW candidates, or the n rows an exact scan needs."""
        return n if search.exact else search.ef_search

    def match_count(self, text: str, conditions: Sequence[Any] = ()) -> int:
        """How many passages match at least one lexeme of the query: the rows pg-tsvector ranks."""
        rows = self._query(_MATCH_COUNT_SQL, {"text": _clean(text)}, self._keyword_search(1), conditions)
        return int(rows[0][0])

    def vector_top(
        self,
        vector: np.ndarray,
        n: int,
        ef_search: int = EF_SEARCH,
        conditions: Sequence[Any] = (),
        search: VectorSearch | None = None,
    ) -> list[tuple[str, float]]:
        """(id, cosine distance) of the n nearest passages, distance ascending, ties by id, searched as
        ``search`` says (default: :meth:`vector_search`'s rule; HNSW with ``ef_search`` raised to n, at
        most 1000, or an exact scan). ``conditions`` (sitegen.inputs.filters) become a WHERE clause;
        pgvector 0.6 applies it to the ``ef_search`` rows the index returns."""
        search = search or self.vector_search(n, ef_search)
        params = {"vector": format_vector(vector), "ef_search": self._limit(search, n), "n": n}
        rows = self._query(_VECTOR_SQL, params, search, conditions)
        return [(doc_id, float(distance)) for doc_id, distance in rows]

    def keyword_top(self, text: str, n: int, conditions: Sequence[Any] = ()) -> list[tuple[str, float]]:
        """(id, ts_rank_cd) of the n best passages matching any query lexeme, score descending, ties by id."""
        rows = self._query(_KEYWORD_SQL, {"text": _clean(text), "n": n}, self._keyword_search(n), conditions)
        return [(doc_id, float(score)) for doc_id, score in rows]

    def _hybrid_params(
        self, vector: np.ndarray, text: str, n: int, fusion: HybridSettings, limit: int
    ) -> dict[str, Any]:
        return {
            "vector": format_vector(vector),
            "text": _clean(text),
            "ef_search": limit,
            "candidates": fusion.candidates,
            "k": float(fusion.k),
            "w_vector": float(fusion.weights[0]),
            "w_keyword": float(fusion.weights[1]),
            "n": n,
        }

    def hybrid_top(
        self,
        vector: np.ndarray,
        text: str,
        n: int,
        fusion: HybridSettings = DEFAULT_HYBRID,
        conditions: Sequence[Any] = (),
    ) -> list[HybridRow]:
        """RRF of the vector and keyword candidate lists, computed by the server in one statement."""
        k, candidates, weights = fusion.k, fusion.candidates, fusion.weights
        if len(weights) != 2 or any(w <= 0 for w in weights):
            raise ValueError(f"need two positive weights (vector, keyword), got {list(weights)}")
        if candidates < 1 or k < 0:
            raise ValueError(f"candidates must be at least 1 and k non-negative, got {candidates} and {k}")
        search = self.vector_search(max(n, candidates), fusion.ef_search)
        limit = self._limit(search, max(n, candidates))
        rows = self._query(_HYBRID_SQL, self._hybrid_params(vector, text, n, fusion, limit), search, conditions)
        return [HybridRow(doc_id, float(score), r1, r2) for doc_id, score, r1, r2 in rows]

    def explain_plans(
        self, vector: np.ndarray, text: str, n: int = 10, ef_search: int = EF_SEARCH_MAX
    ) -> dict[str, list[ScanNode]]:
        """The scan nodes of ``EXPLAIN (ANALYZE, FORMAT JSON)`` for the vector, keyword and hybrid
        queries, run with the rankers' settings (the same search rule), so a reader sees which index
        each used, or that the vectors were scanned exactly."""
        search = self.vector_search(max(n, 20), ef_search)
        limit = self._limit(search, max(n, 20))
        queries = {
            "vector": (_VECTOR_SQL, {"vector": format_vector(vector), "ef_search": limit, "n": n}),
            "keyword": (_KEYWORD_SQL, {"text": _clean(text), "n": n}),
            "hybrid": (_HYBRID_SQL, self._hybrid_params(vector, text, n, DEFAULT_HYBRID, limit)),
        }
        plans = {}
        for name, (template, params) in queries.items():
            rows = self._query("EXPLAIN (ANALYZE, FORMAT JSON) " + template, params, search)
            document = rows[0][0]
            if isinstance(document, str):
                document = json.loads(document)
            plans[name] = _scan_nodes(document[0]["Plan"])
        return plans
