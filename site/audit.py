"""Independent audit of a sitegen evidence bundle: ``python audit.py [SITE_DIR]``.

This file is copied verbatim into every built site as ``audit.py``. It needs only
Python 3.10+ and numpy, imports nothing from sitegen and shares no code with it:
tokenising, BM25, cosine ranking, Reciprocal Rank Fusion and every metric are
written again here from the documented definitions, then compared with the bundle.

What a pass proves:

- every file under ``evidence/`` is listed in ``evidence/manifest.json`` with the
  sha256 and size it has on disk; nothing listed is missing, nothing unlisted is there;
- every BM25 run is what BM25 over the bundle's own copy of the corpus and questions
  gives with the parameters the run states (doc ids, ranks, hit counts, scores);
- every dense run is the exact cosine ranking of its model's stored, unit-length embeddings (``embeddings/`` for
  dense, ``embeddings/<entry>/`` for dense-mpnet and any declared model entry), made by the model that entry names;
- every fusion run is RRF of the component runs stored beside it, component ranks included;
- every metric (per question, per kind, overall) follows from the runs and the qrels
  copy by trec_eval's definitions; the ``.trec`` files agree with the JSON runs
  (their ids percent-decoded: ``%`` and whitespace are encoded there);
  ``corpus.json`` counts agree with the inputs; ``qrels.trec`` is the qrels the inputs give
  (every judged pair, in the documented order) and ``trec_eval.json``'s commands and measure
  mapping are the ones the metric and ranker lists call for;
- every derived table the pages show (``report.json``: hit counts, best values, rank of
  the first relevant passage, rank-1 disagreements, wins and losses, sample questions)
  follows from the runs, the metrics and the qrels;
- every experiment (``experiments.json``: RRF sweeps, the held-out split, choices and their paired tests,
  paired randomisation tests by the fixed rule of method (exact lattice convolution, exact split-half
  enumeration, or Monte Carlo with at least 20 m / alpha rounds) and bootstrap intervals re-run from the pinned
  seed, identical rankers merged into one row, the minimum detectable effects, the rank groups and the
  headline, the ablation table, the unanswerable-question view) follows from the runs;
- the failure taxonomy (each question's class at k = 10, what each fusion lost and rescued) and the judged
  depth (judged@10, nDCG@10 and the condensed nDCG@10 per ranker) in ``report.json`` follow from the runs, the
  qrels and this file's own table of what each verifier's lists are made of;
- every pack (``packing.json``: whole passages in rank order within a character budget,
  skipped when too long, later ones still tried), every "answer reached the prompt"
  count and every citation verdict follows from the runs, the inputs and the fixture.
  A valid citation proves provenance (the quote is in a packed passage), not entailment.
- every question-set hygiene flag (``hygiene.json``: questions leaked verbatim into a passage, exact and
  near-duplicate questions, questions equal to a passage title, labelled passages with an unlabelled
  near-duplicate) is what the rules fixed in this file give on the bundled inputs, no more and no fewer.

- the publisher's choices are the ones allowed: every shipped ranker has its pinned parameters
  (``PINNED_PARAMS``), the paired tests use the pinned seed, rounds, level and minimum
  (``SIGNIFICANCE_SETTINGS``), the runs are exactly those the recorded build command and the inputs
  call for (``check_choices``), every input copy has the sha256 ``corpus.json`` records, and a frozen
  corpus's edited files are recomputed from its bundled FROZEN.json; rows the audit cannot recompute
  (external runs, PostgreSQL text search, fusions over them) never hold a best mark over verified ones.

With ``--corpora DIR`` (a trusted checkout's corpora folder) it also proves that every input copy is
that checkout's file, byte for byte: a corpus edited and frozen again passes everything else, not this.

What it does not prove: that the relevance labels are right, that the questions are
fair, that the embeddings are what the named model gives for these texts (that needs
the model: ``sitegen audit --reembed``), that PostgreSQL gives the stored text-search runs
(``sitegen audit --postgres``), that the parameters are good ones, or that any quote on a page
entails the claim beside it. It checks arithmetic and provenance, nothing more.

A redacted corpus (``"publish": "redacted"`` in its sitegen.json, or ``--redact NAME`` in the recorded command)
has no text in the bundle: ``referenced.json`` gives each withheld file's sha256, size and source, and
``referenced/`` the records standing in for its lines, each text by its sha256. This file then verifies all that
needs no text (the manifest, counts, qrels, metrics, derived tables, experiments, fusions, ties, the pages) and
says, in each check's line, what needs the collection: BM25 scores, packing and citations, hygiene, chunking,
and, when the vectors are withheld too, the dense scores. ``--inputs DIR`` brings the files back
(``DIR/<corpus>/corpus.jsonl``, ``DIR/<corpus>/embeddings/passages.npy``: a corpus folder's layout), checks each
against its recorded sha256, names every passage or question whose text differs, and reruns those checks on them.

Tolerances (also written to ``audit.json``):

- BM25 scores: relative 1e-9 (float64; only the order of summation may differ);
- dense scores: absolute 1e-6 (float32 dot products; BLAS libraries round differently);
- RRF scores: absolute 1e-12; RRF doc ids, ranks and component ranks: exact;
- metrics: absolute 1e-9; embedding row norms: 1 +- 1e-5.

BM25 and dense hits must be in order of their stored score, then doc id, exactly, and
their doc ids and ranks must match the recomputation exactly, except that two passages
whose recomputed scores are equal within the score tolerance may stand in either order:
a tie that float rounding can flip is evidence of nothing. Such ranks are counted.

Exit status 0 only when every check passes. Writes ``SITE_DIR/audit.json`` (sorted
keys, no timestamps, no absolute paths: identical bundles give identical bytes).
"""

from __future__ import annotations

import argparse
import bisect
import functools
import gc
import gzip
import hashlib
import html
import html.parser
import itertools
import json
import math
import os
import pickle
import posixpath
import re
import shlex
import signal
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

try:
    import numpy as np
except ModuleNotFoundError as _missing:
    # Run as a script by someone without numpy: one line saying how to get it, not a traceback.
    if _missing.name != "numpy" or __name__ != "__main__":
        raise
    print("audit.py needs numpy: python3 -m pip install numpy", file=sys.stderr)
    raise SystemExit(2) from None

__all__ = ["CORPUS_CHECKS", "RANKER_CHECKS", "TOLERANCES", "main", "run_audit"]

SCHEMA_VERSION = 1
# runs/<ranker>.json: compact hits [doc_id, score] or [doc_id, score, [rank per params.components]]; 2 (component
# ranks as an object) and 1 (hit objects) are read too
RUN_SCHEMA_VERSION = 3
TREC_DEPTH = 100
# dense's vectors, under evidence/<corpus>/; a model entry NAME's lie in VECTORS/NAME/, laid out the same way
VECTORS = "embeddings"
PACKING_SCHEMA_VERSION = 2  # packing.json: each pack as the run ranks it sends; 1 (ids sent and skipped) is read too
DENSE_BATCH = 64  # questions scored by one matrix product in the dense check (64 x 100,000 float32: 25 MB)
# A run's JSON or the records of a file held by reference larger than this is stored gzip-compressed as NAME.gz;
# at most this, it stays plain (sitegen's layout rule, written again here).
GZIP_ABOVE = 1 << 20
MAX_LISTED = 200  # mismatches kept per check in audit.json
MAX_PRINTED = 10  # mismatches printed under a FAIL line
# Checks with at least this many passages x questions of work split their questions between forked workers.
PARALLEL_FROM = 10**8
PARALLEL_PAGES_FROM = 1000  # sites with this many pages split the pages check's pages between them too
WORDS_PARALLEL_FROM = 200_000  # passages from which the tokenising for every check is split between workers
TOLERANCES = {
    "bm25_score_relative": 1e-9,
    "dense_score_absolute": 1e-6,
    "rrf_score_absolute": 1e-12,
    "metric_absolute": 1e-9,
    "embedding_norm_absolute": 1e-5,
}
_WORD = re.compile(r"[^\W_]+")


class AuditError(Exception):
    """Something a check needs is missing or unreadable; the message names the file."""


@dataclass
class Check:
    name: str
    mismatches: list[str] = field(default_factory=list)
    detail: str = ""
    #: What this check could not recompute, because the bundle withholds the texts or vectors it needs ("" when
    #: it recomputed everything); ``--inputs DIR`` reruns it on the files brought.
    needs: str = ""

    def fail(self, message: str) -> None:
        self.mismatches.append(message)


def _is_number(x: Any) -> bool:
    return type(x) in (int, float) and math.isfinite(x)


# ---------------------------------------------------------------- reading the bundle


class PassageTexts(Mapping[str, str]):
    """``Inputs.doc_text`` of a corpus that is not chunked: each passage's title and text joined as sitegen indexes
    them, made when asked for from ``Inputs.passages``, so a million passages' texts are held once, not twice. Ids
    keep their first row's place and their last row's text, as assigning them into a dict would."""

    def __init__(self, rows: list[tuple[str, str, str]], at: dict[str, int]) -> None:
        self._rows, self._at = rows, at

    def __getitem__(self, doc_id: str) -> str:
        _, title, text = self._rows[self._at[doc_id]]
        return f"{title}\n{text}" if title else text

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._at

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)


@dataclass
class Inputs:
    doc_text: Mapping[str, Any]  # passage id -> the text every ranker indexes, in file order (chunks if chunked)
    queries: dict[str, dict[str, Any]]  # query id -> {"text", "kind", "answerable", "filter", "spans"}
    qrels: dict[str, dict[str, int]]  # derived from the spans when the corpus is chunked
    judged_pairs: int
    problems: list[str]
    doc_meta: dict[str, dict[str, Any]] = field(default_factory=dict)
    filters: dict[str, tuple[str, str]] = field(default_factory=dict)  # filter key -> (metadata field, op)
    passages: list[tuple[str, str, str]] = field(default_factory=list)  # corpus.jsonl's (id, title, text), every row
    # False when the bundle withholds the texts and --inputs did not bring them: every text above is then None,
    # read from the records (ids, metadata, kinds, filters, spans), and a check needing a text says so
    texts: bool = True


@dataclass
class Embeddings:
    index: dict[str, Any]
    passages: np.ndarray
    queries: np.ndarray


class Bundle:
    """Cached access to one site's files; a load failure is cached and raised to every check needing it."""

    def __init__(self, site: Path, held: dict[str, Path] | None = None) -> None:
        self.site = site
        #: Files the bundle holds by reference, brought with --inputs and checked against their sha256: the
        #: site path a copy would have -> the file brought.
        self.held = dict(held or {})
        self._memo: dict[tuple[str, str], tuple[Any, AuditError | None]] = {}

    def file(self, rel: str) -> Path:
        """Where a site path's bytes are: the file brought for it with --inputs, else the site's own, plain or
        stored gzip-compressed as ``rel.gz`` (a large run, the records of a large file)."""
        if rel in self.held:
            return self.held[rel]
        path = self.site / rel
        compressed = self.site / f"{rel}.gz"
        return compressed if not path.is_file() and compressed.is_file() else path

    def has(self, rel: str) -> bool:
        return self.file(rel).is_file()

    def _cached(self, key: tuple[str, str], load: Callable[[], Any]) -> Any:
        if key not in self._memo:
            try:
                self._memo[key] = (load(), None)
            except AuditError as exc:
                self._memo[key] = (None, exc)
        value, error = self._memo[key]
        if error is not None:
            raise error
        return value

    def release(self) -> None:
        """Forget what only the evidence checks read (file texts, inputs, expanded runs, question scores, word
        ids, vectors): the parsed JSON the pages check points into stays, and anything else is read again if asked
        for."""
        for key in [k for k in self._memo if k[0] in ("text", "inputs", "run", "words", "embeddings", "scores")]:
            del self._memo[key]

    def text(self, rel: str) -> str:
        def load() -> str:
            if not self.has(rel):
                raise AuditError(f"{rel}: file is missing")
            path = self.file(rel)
            try:
                data = path.read_bytes()
                if path.name.endswith(".gz"):
                    data = gzip.decompress(data)
                return data.decode("utf-8")
            except (OSError, EOFError) as exc:
                raise AuditError(f"{path.relative_to(self.site).as_posix()}: not a readable gzip file: {exc}") from None
            except UnicodeDecodeError as exc:
                raise AuditError(f"{rel}: not valid UTF-8 (byte {exc.start})") from None

        return self._cached(("text", rel), load)

    def lines(self, rel: str) -> list[str]:
        """A text file's lines as sitegen reads them: split on newline only (a U+2028 inside a JSON
        string is not a line break), a carriage return before it dropped, a byte-order mark opening
        line 1 skipped; numbered from 1 like an editor's."""
        text = self.text(rel)
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if lines and lines[0].startswith("\ufeff"):
            lines[0] = lines[0][1:]
        return [line[:-1] if line.endswith("\r") else line for line in lines]

    def each_line(self, rel: str) -> Iterator[str]:
        """:meth:`lines`, one at a time, the file never held whole: a JSONL input of a million passages is read
        once into its records, not kept as text beside them (a text already read is split as it is)."""
        if ("text", rel) in self._memo:
            yield from self.lines(rel)
            return
        if not self.has(rel):
            raise AuditError(f"{rel}: file is missing")
        path = self.file(rel)
        try:
            with gzip.open(path, "rb") if path.name.endswith(".gz") else path.open("rb") as stream:
                for number, raw in enumerate(stream, start=1):
                    raw = raw.removesuffix(b"\n").removesuffix(b"\r")
                    if number == 1:
                        raw = raw.removeprefix(b"\xef\xbb\xbf")
                    try:
                        yield raw.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        raise AuditError(f"{rel}: line {number}: not valid UTF-8 (byte {exc.start})") from None
        except (OSError, EOFError) as exc:
            what = "not a readable gzip file" if path.name.endswith(".gz") else "cannot be read"
            raise AuditError(f"{rel}: {what}: {exc}") from None

    def json(self, rel: str, kind: type = dict) -> Any:
        def load() -> Any:
            try:
                value = json.loads(self.text(rel))
            except json.JSONDecodeError as exc:
                raise AuditError(f"{rel}: malformed JSON: {exc.msg} (line {exc.lineno})") from None
            if not isinstance(value, kind):
                raise AuditError(f"{rel}: expected a JSON {kind.__name__}")
            return value

        return self._cached(("json", rel), load)

    def corpora(self) -> list[str]:
        """Every corpus the site holds or shows: the manifest's list, then every folder under evidence/ and
        every corpus page folder under corpora/. A corpus whose pages stay after its evidence is removed is
        still audited, and fails."""
        names: list[str] = []
        try:
            listed = self.json("evidence/manifest.json")["corpora"]
            if isinstance(listed, list) and all(isinstance(n, str) and n and "/" not in n for n in listed):
                names = list(listed)
        except (AuditError, KeyError):
            pass
        found = {p.name for top in ("evidence", "corpora") for p in (self.site / top).glob("*") if p.is_dir()}
        return list(dict.fromkeys(names + sorted(found)))

    def pages_naming_runs(self, corpus: str) -> list[str]:
        """Rankers whose run file a page links to: a ranker the pages show must have an audited run."""
        return sorted(self._cached(("page-links", "runs"), self._linked_runs).get(corpus, set()))

    def _linked_runs(self) -> dict[str, set[str]]:
        """Every page read once: {corpus: rankers whose run file some page links to}."""
        pattern = re.compile(r'evidence/([^"/<>]+)/runs/([^"/<>]+?)\.json(?:\.gz)?"')
        linked: dict[str, set[str]] = {}
        for page in sorted(self.site.glob("**/*.html")):
            for corpus, ranker in pattern.findall(page.read_text(encoding="utf-8", errors="replace")):
                linked.setdefault(corpus, set()).add(ranker)
        return linked

    def rankers(self, corpus: str) -> list[str]:
        """Rankers named in corpus.json, then any other run file present, any ranker metrics.json scores,
        and any run a page links to: each gets every ranker check, so a missing run fails."""
        named: list[str] = []
        for rel in (f"evidence/{corpus}/corpus.json", f"evidence/{corpus}/metrics.json"):
            try:
                data = self.json(rel)
            except AuditError:
                continue
            keys = data.get("rankers", []) if rel.endswith("corpus.json") else list(data)
            named += [r for r in keys if isinstance(r, str)] if isinstance(keys, list) else []
        found = run_files(self.site, corpus)
        return list(dict.fromkeys(named + found + self.pages_naming_runs(corpus)))

    def run(self, corpus: str, ranker: str) -> dict[str, Any]:
        """A run file, its shape checked once and then served from memory."""
        return self._cached(("run", f"{corpus}/{ranker}"), lambda: self._load_run(corpus, ranker))

    def _load_run(self, corpus: str, ranker: str) -> dict[str, Any]:
        """The run with each hit as ``{"doc_id", "rank", "score", "components"?}``, whichever schema stored it:
        3 (``[doc_id, score]`` or ``[doc_id, score, [rank per params.components]]``, rank = position + 1), 2 (the
        component ranks as an object) or 1 (those objects)."""
        rel = f"evidence/{corpus}/runs/{ranker}.json"
        run = self.json(rel)
        if not isinstance(run.get("queries"), dict) or not isinstance(run.get("params"), dict):
            raise AuditError(f"{rel}: expected 'params' and 'queries' objects")
        version = run.get("schema_version")
        compact = version in (2, RUN_SCHEMA_VERSION)
        names = run["params"].get("components")
        if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
            names = None  # a schema-3 hit with component ranks is then refused below
        queries: dict[str, list[dict[str, Any]]] = {}
        for qid, hits in run["queries"].items():
            rows = []
            for position, hit in enumerate(hits if isinstance(hits, list) else [None]):
                if compact:  # a list [doc_id, score] or [doc_id, score, components]; anything else is refused
                    shaped, ranks = isinstance(hit, list) and len(hit) in (2, 3), None
                    if shaped and len(hit) == 3:  # component ranks: an object (2), a list in params order (3)
                        ranks = hit[2] if version == 2 else None
                        if version == RUN_SCHEMA_VERSION and isinstance(hit[2], list) and names is not None:
                            ranks = dict(zip(names, hit[2], strict=True)) if len(hit[2]) == len(names) else None
                        shaped = isinstance(ranks, dict)
                    row = {"doc_id": hit[0], "rank": position + 1, "score": hit[1]} if shaped else None
                    hit = {**row, "components": ranks} if row and ranks is not None else row
                ok = isinstance(hit, dict) and isinstance(hit.get("doc_id"), str) and type(hit.get("rank")) is int
                if not ok or not _is_number(hit.get("score")):
                    shape = "[doc_id, score, ranks?], a string doc_id" if compact else "a string doc_id, int rank"
                    raise AuditError(f"{rel}: query {qid}: each hit needs {shape}, finite score")
                rows.append(hit)
            queries[qid] = rows
        return {**run, "queries": queries}

    def inputs(self, corpus: str) -> Inputs:
        return self._cached(("inputs", corpus), lambda: _read_inputs(self, corpus))

    def embeddings(self, corpus: str, folder: str = VECTORS) -> Embeddings:
        """The vectors in ``evidence/<corpus>/<folder>/``: ``embeddings`` (dense's), or a model entry's own."""
        return self._cached(("embeddings", f"{corpus}/{folder}"), lambda: _read_embeddings(self, corpus, folder))

    def scores(self, corpus: str, ranker: str, names: Sequence[str]) -> list[dict[str, float]]:
        """Each named metric's value on every scored question (:func:`scored_questions`), from the run's
        ranking: computed once for every check that reads it, the names not yet held in one pass."""
        keys = [("scores", f"{corpus}/{ranker}/{name}") for name in names]
        missing = {key: name for key, name in zip(keys, names, strict=True) if key not in self._memo}
        if missing:
            inputs, queries = self.inputs(corpus), self.run(corpus, ranker)["queries"]
            questions = scored_questions(inputs)
            measures = [_measure(name) for name in missing.values()] if questions else []  # none scored: no error
            values: list[dict[str, float]] = [{} for _ in missing]
            for qid in questions:
                ranking = [h["doc_id"] for h in queries.get(qid, [])]
                for held, value in zip(values, metrics_of(measures, ranking, inputs.qrels[qid]), strict=True):
                    held[qid] = value
            for key, held in zip(missing, values, strict=True):
                self._memo[key] = (held, None)
        return [self._memo[key][0] for key in keys]

    def pointed(self, rel: str, pointer: str) -> Any:
        """The value a JSON pointer names in a JSON file (:func:`_pointed`), the object holding it looked up once
        for every value it holds: a page shows many numbers of one table row."""
        if not pointer.startswith("/"):
            return _pointed(self.json(rel), pointer)
        parent, _, last = pointer.rpartition("/")
        key = ("pointed", f"{rel}#{parent}")
        if key not in self._memo:
            self._memo[key] = (_pointed(self.json(rel), parent), None)
        return _pointed(self._memo[key][0], f"/{last}")

    def words(self, corpus: str) -> Words:
        """The words of every passage the rankers index (``Inputs.doc_text``), tokenised once for every check."""
        return self._cached(("words", corpus), lambda: words_in_workers(self.inputs(corpus).doc_text))


def run_files(site: Path, corpus: str) -> list[str]:
    """The rankers of the run files present, ``runs/<ranker>.json`` or, stored compressed, ``.json.gz``."""
    folder = site / "evidence" / corpus / "runs"
    names = [p.name.removesuffix(".gz") for p in folder.glob("*.json*") if p.is_file()]
    return sorted({n.removesuffix(".json") for n in names if n.endswith(".json")})


def _jsonl(bundle: Bundle, rel: str, text: str | None = "text") -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of a JSONL input, each with a string ``_id`` and ``text`` (records standing in for a file held
    by reference: ``text`` None, no text field)."""
    for number, obj in _json_records(bundle, rel):
        if not isinstance(obj.get("_id"), str) or (text is not None and not isinstance(obj.get(text), str)):
            raise AuditError(f"{rel}: line {number}: expected an object with string _id and {text or '_id'}")
        yield number, obj


def _json_records(bundle: Bundle, rel: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(bundle.each_line(rel), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AuditError(f"{rel}: line {number}: malformed JSON: {exc.msg}") from None
        if not isinstance(obj, dict):
            raise AuditError(f"{rel}: line {number}: expected a JSON object")
        yield number, obj


def _text_file(bundle: Bundle, corpus: str, name: str) -> tuple[str, str | None]:
    """Where to read a text input (``corpus.jsonl``) and its text field: the copy (or the file --inputs brought
    for it), else the records standing in for a file held by reference, which hold no text field (a redacted
    bundle's a ``text_sha256``, checked by check_referenced; a large file's none)."""
    copy, records = f"evidence/{corpus}/inputs/{name}", f"evidence/{corpus}/referenced/inputs/{name}"
    return (records, None) if not bundle.has(copy) and bundle.has(records) else (copy, "text")


def _read_inputs(bundle: Bundle, corpus: str) -> Inputs:
    base = f"evidence/{corpus}/inputs"
    problems: list[str] = []
    at: dict[str, int] = {}  # passage id -> its row in passages (the last row of a duplicated id)
    documents: dict[str, dict[str, Any]] = {}  # the records themselves, kept only to chunk them
    doc_meta: dict[str, dict[str, Any]] = {}
    passages: list[tuple[str, str, str]] = []
    corpus_rel, field_name = _text_file(bundle, corpus, "corpus.jsonl")
    queries_rel, query_field = _text_file(bundle, corpus, "queries.jsonl")
    texts = field_name == query_field == "text"
    config_rel = f"{base}/sitegen.json"
    config = bundle.json(config_rel) if (bundle.site / config_rel).is_file() else {}
    chunked = isinstance(config.get("chunking"), dict)  # the inputs say how to chunk, not chunking.json
    for number, obj in _jsonl(bundle, corpus_rel, field_name):
        title = obj.get("title") or ""
        if not isinstance(title, str):
            raise AuditError(f"{corpus_rel}: line {number}: title must be a string")
        doc_id = obj["_id"]
        if doc_id in at:
            problems.append(f"{corpus_rel}: line {number}: duplicate doc id {doc_id}")
        at[doc_id] = len(passages)
        doc_meta[doc_id] = dict(obj.get("metadata") or {})
        if chunked:
            documents[doc_id] = obj
        passages.append((doc_id, title if texts else None, obj["text"] if texts else None))  # records: no text
    doc_text: Mapping[str, Any] = PassageTexts(passages, at) if texts else dict.fromkeys(at)
    queries: dict[str, dict[str, Any]] = {}
    for number, obj in _jsonl(bundle, queries_rel, query_field):
        kind, answerable = obj.get("kind", "unlabelled"), obj.get("answerable", True)
        if not isinstance(kind, str) or not isinstance(answerable, bool):
            raise AuditError(f"{queries_rel}: line {number}: kind must be a string, answerable a boolean")
        if obj["_id"] in queries:
            problems.append(f"{queries_rel}: line {number}: duplicate query id {obj['_id']}")
        queries[obj["_id"]] = {
            "text": obj["text"] if texts else None,
            "kind": kind,
            "answerable": answerable,
            "filter": obj.get("filter") or {},
            "spans": obj.get("spans") or [],
        }
    rel = f"{base}/qrels/test.tsv"
    rows = [(n, line) for n, line in enumerate(bundle.lines(rel), start=1) if line.strip()]
    if not rows or [c.strip() for c in rows[0][1].split("\t")] != ["query-id", "corpus-id", "score"]:
        raise AuditError(f"{rel}: line 1: expected the header query-id<TAB>corpus-id<TAB>score")
    qrels: dict[str, dict[str, int]] = {}
    for number, line in rows[1:]:
        columns = [c.strip() for c in line.split("\t")]
        if len(columns) != 3 or not re.fullmatch(r"[0-9]+", columns[2]):
            raise AuditError(f"{rel}: line {number}: expected query-id<TAB>corpus-id<TAB>integer grade")
        qid, did, grade = columns[0], columns[1], int(columns[2])
        if qid not in queries or did not in doc_text:
            problems.append(f"{rel}: line {number}: query {qid} or doc {did} is not in the inputs")
        if grade < 0 or did in qrels.get(qid, {}):
            problems.append(f"{rel}: line {number}: query {qid} doc {did}: negative grade or judged twice")
        qrels.setdefault(qid, {})[did] = grade
    judged = len(rows) - 1
    if chunked:
        setting = chunk_setting(config["chunking"].get("default", {}))
        if texts:
            doc_text, doc_meta, qrels = _chunk_inputs(documents, queries, setting)
        else:  # the chunk boundaries, from the records of the withheld chunks.jsonl; checked with the texts
            doc_text, doc_meta, qrels = _withheld_chunks(bundle, corpus, queries)
        judged = sum(len(grades) for grades in qrels.values())
    for qid, query in queries.items():
        if query["answerable"] != any(g > 0 for g in qrels.get(qid, {}).values()):
            problems.append(f"{queries_rel}: query {qid}: answerable={query['answerable']} disagrees with qrels")
    filters = {k: (v["field"], v["op"]) for k, v in config.get("filters", {}).items()}
    return Inputs(doc_text, queries, qrels, judged, problems, doc_meta, filters, passages, texts)


def chunk_ranges(text: str, method: str, size: int, overlap: float) -> list[tuple[int, int]]:
    """Character ranges of a document's chunks: word windows ("fixed") or greedily packed whole
    paragraphs ("paragraph", a paragraph longer than ``size`` words cut into windows)."""
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    step = max(size - round(size * overlap), 1)

    def windows(ws: list[tuple[int, int]]) -> list[tuple[int, int]]:
        out, i = [], 0
        while ws:
            j = min(i + size, len(ws))
            out.append((ws[i][0], ws[j - 1][1]))
            if j == len(ws):
                break
            i += step
        return out

    if method == "fixed":
        return windows(words)
    ends = [m.end() for m in re.finditer(r"\n[ \t]*\n", text)]
    groups: dict[int, list[tuple[int, int]]] = {}
    for w in words:
        groups.setdefault(sum(1 for e in ends if e <= w[0]), []).append(w)
    out: list[tuple[int, int]] = []
    pending: list[tuple[int, int]] = []
    for paragraph in groups.values():
        if len(paragraph) > size:
            if pending:
                out.append((pending[0][0], pending[-1][1]))
                pending = []
            out += windows(paragraph)
        elif len(pending) + len(paragraph) > size:
            out.append((pending[0][0], pending[-1][1]))
            pending = list(paragraph)
        else:
            pending += paragraph
    if pending:
        out.append((pending[0][0], pending[-1][1]))
    return out


def chunk_setting(raw: dict[str, Any]) -> dict[str, Any]:
    """A chunking setting as sitegen.json declares it, with its default overlap and its label."""
    method, size, overlap = raw.get("method"), raw.get("size"), float(raw.get("overlap", 0))
    return {"method": method, "size": size, "overlap": overlap, "label": f"{method}-{size}w-{round(overlap * 100)}pct"}


def sweep_settings(chunking: dict[str, Any]) -> list[dict[str, Any]]:
    """The sweep grid sitegen.json declares (methods x sizes x overlaps, defaults filled in), repeats dropped."""
    grid = chunking.get("sweep") or {}
    settings = [
        chunk_setting({"method": m, "size": n, "overlap": o})
        for m in grid.get("methods", ["fixed"])
        for n in grid.get("sizes", [50, 100, 200, 400])
        for o in grid.get("overlaps", [0, 0.2])
    ]
    return [json.loads(k) for k in dict.fromkeys(json.dumps(x, sort_keys=True) for x in settings)]


def _chunk_inputs(documents: dict[str, dict], queries: dict[str, dict], setting: dict) -> tuple[dict, dict, dict]:
    """Passages, metadata and span-derived qrels of the chunked corpus (see :func:`_chunk_grades`)."""
    doc_text: dict[str, str] = {}
    doc_meta: dict[str, dict[str, Any]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for doc_id, obj in documents.items():
        title = obj.get("title") or ""
        for start, end in chunk_ranges(obj["text"], setting["method"], setting["size"], setting["overlap"]):
            cid = f"{doc_id}@{start}:{end}"
            piece = obj["text"][start:end]
            doc_text[cid] = f"{title}\n{piece}" if title else piece
            doc_meta[cid] = {**(obj.get("metadata") or {}), "doc_id": doc_id, "start": start, "end": end}
            for qid, grade in _chunk_grades(queries, doc_id, start, end).items():
                qrels.setdefault(qid, {})[cid] = grade
    return doc_text, doc_meta, qrels


def _chunk_grades(queries: dict[str, dict], doc_id: str, start: int, end: int) -> dict[str, int]:
    """Each question's grade for one chunk (characters start:end of document doc_id): the best grade of the
    spans it overlaps by at least half of the shorter of the two; questions grading it 0 are left out."""
    grades = {}
    for qid, query in queries.items():
        grade = 0
        for span in query["spans"]:
            shared = min(end, span["end"]) - max(start, span["start"])
            if span["doc_id"] == doc_id and shared > 0 and 2 * shared >= min(end - start, span["end"] - span["start"]):
                grade = max(grade, span["grade"])
        if grade:
            grades[qid] = grade
    return grades


def _withheld_chunks(bundle: Bundle, corpus: str, queries: dict[str, dict]) -> tuple[dict, dict, dict]:
    """A redacted chunked corpus without its texts: the chunks the records of its chunks.jsonl name (each with
    its document and character range in its metadata) and the grades the spans give them. Whether those are
    the chunks the texts give is the chunking check's, with --inputs."""
    rel = f"evidence/{corpus}/chunks.jsonl"  # copied when only the corpus was large enough to hold by reference
    rel = rel if bundle.has(rel) else f"evidence/{corpus}/referenced/chunks.jsonl"
    doc_text: dict[str, None] = {}
    doc_meta: dict[str, dict[str, Any]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for number, obj in _jsonl(bundle, rel, None):
        meta = obj.get("metadata") or {}
        if not isinstance(meta.get("doc_id"), str) or not all(type(meta.get(k)) is int for k in ("start", "end")):
            raise AuditError(f"{rel}: line {number}: metadata needs doc_id, start and end")
        doc_text[obj["_id"]], doc_meta[obj["_id"]] = None, dict(meta)
        for qid, grade in _chunk_grades(queries, meta["doc_id"], meta["start"], meta["end"]).items():
            qrels.setdefault(qid, {})[obj["_id"]] = grade
    return doc_text, doc_meta, qrels


def allowed(inputs: Inputs, qid: str, doc_id: str) -> bool:
    """Whether a passage meets the question's metadata filter (all conditions; dates compared as dates)."""
    meta = inputs.doc_meta.get(doc_id, {})
    for key, value in inputs.queries[qid]["filter"].items():
        field_name, op = inputs.filters.get(key, (key, "one-of" if isinstance(value, list) else "equals"))
        actual = meta.get(field_name)
        if actual is None:
            return False
        if op == "equals" and actual != value:
            return False
        if op == "one-of" and actual not in value:
            return False
        if op == "on-or-after" and date.fromisoformat(actual) < date.fromisoformat(value):
            return False
    return True


def _read_embeddings(bundle: Bundle, corpus: str, folder: str = "embeddings") -> Embeddings:
    base = f"evidence/{corpus}/{folder}"
    index = bundle.json(f"{base}/index.json")
    if not all(isinstance(index.get(k), list) for k in ("passages", "queries")):
        raise AuditError(f"{base}/index.json: expected 'passages' and 'queries' id lists")
    arrays = []
    for name in ("passages", "queries"):
        try:
            # mapped, not read: the forked workers that score by them share the one copy in the page cache
            matrix = np.load(bundle.file(f"{base}/{name}.npy"), mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise AuditError(f"{base}/{name}.npy: cannot load: {exc}") from None
        want = (len(index[name]), index.get("dimensions"))
        if matrix.dtype != np.float32 or matrix.shape != want:
            raise AuditError(f"{base}/{name}.npy: {matrix.dtype} {matrix.shape}, index.json says float32 {want}")
        arrays.append(matrix)
    return Embeddings(index, arrays[0], arrays[1])


# ---------------------------------------------------------------- the definitions, written again


def tokens(text: str, stop_words: frozenset[str] = frozenset(), stem: bool = False) -> list[str]:
    """Lowercased maximal runs of letters/digits, minus ``stop_words``, plurals stripped if ``stem``."""
    words: Iterable[str] = _WORD.findall(text.lower())
    if stop_words:
        words = itertools.filterfalse(stop_words.__contains__, words)
    return list(map(_singular, words) if stem else words)


@functools.lru_cache(maxsize=1 << 20)  # a corpus repeats its words; keeps stemming cheap
def _singular(token: str) -> str:
    if len(token) <= 3 or not token.isalpha():
        return token
    if token.endswith("ies") and len(token) > 4:
        return token[:-3] + "y"
    if token.endswith(("sses", "xes", "zes", "ches", "shes")):
        return token[:-2]
    if token.endswith(("ss", "us", "is")) or not token.endswith("s"):
        return token
    return token[:-1]


@dataclass(frozen=True)
class Words:
    """Texts' words (``tokens`` with no stop list and no stemming) as ids into ``vocab``, numbered by first
    appearance, in one flat array: text i is ``ids[starts[i]:starts[i + 1]]``. A corpus is tokenised once
    and its BM25 checks and hygiene check share it (100,000 passages: 4 bytes a word)."""

    vocab: list[str]
    ids: np.ndarray  # int32
    starts: np.ndarray  # int64, one more than the texts


def words_of(texts: Iterable[Iterable[str] | str]) -> Words:
    """``Words`` of raw texts (tokenised here) or of word lists already tokenised."""
    vocab: defaultdict[str, int] = defaultdict()
    vocab.default_factory = vocab.__len__  # a new word gets the next id, with no Python call per word
    counts: list[int] = []

    def counted() -> Iterator[list[str]]:
        for text in texts:
            words = _WORD.findall(text.lower()) if isinstance(text, str) else list(text)
            counts.append(len(words))
            yield words

    ids = np.fromiter(map(vocab.__getitem__, itertools.chain.from_iterable(counted())), dtype=np.int32)
    starts = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    return Words(list(vocab), ids, starts)


def words_in_workers(texts: Mapping[str, str]) -> Words:
    """:func:`words_of` the texts in order; a collection of at least ``WORDS_PARALLEL_FROM`` texts is tokenised a
    run of texts to each worker, and the runs joined with their words numbered again by first appearance in the
    whole stream: the ``Words`` one process makes."""
    keys, workers = list(texts), _workers()
    if len(keys) < WORDS_PARALLEL_FROM or workers < 2:
        return words_of(texts[k] for k in keys)
    size = -(-len(keys) // workers)
    runs = [[range(lo, min(lo + size, len(keys)))] for lo in range(0, len(keys), size)]
    return joined_words(in_parts(lambda run: words_of(texts[keys[i]] for i in run), runs))


def joined_words(runs: Sequence[Words]) -> Words:
    """The ``Words`` of consecutive runs of texts as one: a word's id is its first appearance in the runs read in
    order, as :func:`words_of` numbers the whole stream."""
    vocab: dict[str, int] = {}
    ids, starts, offset = [], [np.zeros(1, dtype=np.int64)], 0
    for run in runs:
        table = np.array([vocab.setdefault(w, len(vocab)) for w in run.vocab], dtype=np.int32)
        ids.append(table[run.ids])
        starts.append(run.starts[1:] + offset)
        offset += int(run.starts[-1])
    return Words(list(vocab), np.concatenate(ids), np.concatenate(starts))


def filtered_words(words: Words, stop_words: frozenset[str] = frozenset(), stem: bool = False) -> Words:
    """``words`` as ``tokens(text, stop_words, stem)`` gives them: the stop list and the stemmer are applied
    to each distinct word once, then to every text's ids by one array lookup."""
    if not stop_words and not stem:
        return words
    vocab: dict[str, int] = {}
    table = np.array(
        [-1 if w in stop_words else vocab.setdefault(_singular(w) if stem else w, len(vocab)) for w in words.vocab],
        dtype=np.int32,
    )
    mapped = table[words.ids]
    kept = mapped >= 0
    width = np.int32 if len(kept) < 2**31 else np.int64  # a million passages' words: 4 bytes each, not 8
    kept_before = np.zeros(len(kept) + 1, dtype=width)  # kept words before each position
    np.cumsum(kept, out=kept_before[1:])
    return Words(list(vocab), mapped[kept], kept_before[words.starts].astype(np.int64))


POSTINGS_BLOCK = 1 << 23  # words whose (term, passage) keys are sorted at once: 64 MB of int64


def _blocks(starts: np.ndarray) -> Iterator[tuple[int, int]]:
    """Runs ``lo:hi`` of consecutive items (passages, terms) holding about ``POSTINGS_BLOCK`` entries in all,
    item i's at ``starts[i]:starts[i + 1]``; one item at least, however many it holds."""
    items, lo = len(starts) - 1, 0
    while lo < items:
        hi = int(np.searchsorted(starts, starts[lo] + POSTINGS_BLOCK, side="right")) - 1
        hi = min(max(hi, lo + 1), items)
        yield lo, hi
        lo = hi


def _pair_blocks(words: Words) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The distinct (term, passage) pairs of ``words`` as sorted keys ``term * passages + passage``, with each
    pair's count, a block of about ``POSTINGS_BLOCK`` words (one passage at least) at a time: a pair never spans
    two blocks, and only one block's keys are in memory."""
    n = len(words.starts) - 1
    for doc, end in _blocks(words.starts):
        keys = words.ids[words.starts[doc] : words.starts[end]].astype(np.int64)
        keys *= n
        keys += np.repeat(np.arange(doc, end, dtype=np.int64), np.diff(words.starts[doc : end + 1]))
        keys.sort()
        first = np.empty(len(keys), dtype=bool)
        first[:1] = True
        np.not_equal(keys[1:], keys[:-1], out=first[1:])
        at = np.flatnonzero(first)
        yield keys[at], np.diff(at, append=len(keys))


def _postings(words: Words, terms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each term's passages in ascending order with its count in each: (passage, tf, starts), term t's at
    ``starts[t]:starts[t + 1]``. Each block of :func:`_pair_blocks` is placed after the earlier blocks' postings of
    the same term; the result is the one sorting every key at once would give, with one block's keys in memory
    instead of every word's twice."""
    n = len(words.starts) - 1
    blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (postings per term, passage, tf) of a block
    df = np.zeros(terms, dtype=np.int64)
    for pairs, counts in _pair_blocks(words):
        term, passage = np.divmod(pairs, n)
        per_term = np.bincount(term, minlength=terms)
        blocks.append((per_term, passage.astype(np.int32), counts.astype(np.int32)))
        df += per_term
    starts = np.zeros(terms + 1, dtype=np.int64)
    np.cumsum(df, out=starts[1:])
    passages, tf = np.empty(int(starts[-1]), dtype=np.int32), np.empty(int(starts[-1]), dtype=np.int32)
    filled = starts[:-1].copy()
    while blocks:
        per_term, passage, counts = blocks.pop(0)
        inside = np.zeros(terms + 1, dtype=np.int64)  # where each term's postings start inside the block
        np.cumsum(per_term, out=inside[1:])
        dest = np.repeat(filled - inside[:-1], per_term) + np.arange(len(passage))
        passages[dest], tf[dest] = passage, counts
        filled += per_term
    return passages, tf, starts


class BM25Postings:
    """Okapi BM25 over a tokenised collection, idf = ln(1 + (N - df + 0.5)/(df + 0.5)), query terms deduplicated.

    Each posting's term weight is computed once, elementwise with the formula's float64 operations in the
    formula's order, and a document's score adds its terms' weights in sorted term order from 0.0: every score
    is what the plain dictionary loop gives, bit for bit, whichever documents are scored. That is what lets
    :meth:`top` score only the documents that can reach the top (MaxScore): a document holding only terms of
    small weight scores at most their largest weights added up, and when that sum is below a score some
    ``depth`` documents are known to reach, it cannot stand in the top or tie with it."""

    def __init__(self, docs: Iterable[list[str]] | Words, k1: float, b: float) -> None:
        words = docs if isinstance(docs, Words) else words_of(docs)
        self.vocab = {w: i for i, w in enumerate(words.vocab)}
        self.n, lengths = len(words.starts) - 1, np.diff(words.starts)
        self.doc_of, tf, self.starts = _postings(words, len(self.vocab))
        del words, docs  # only the postings are kept
        avgdl = (int(lengths.sum()) / self.n) or 1.0
        self.weight = _posting_weights(self.doc_of, tf, self.starts, self.n, k1 * (1.0 - b + b * lengths / avgdl), k1)
        del tf
        self.df = np.diff(self.starts)
        self.largest = np.zeros(len(self.vocab))  # each term's largest weight
        used = np.flatnonzero(self.df)
        if used.size:
            self.largest[used] = np.maximum.reduceat(self.weight, self.starts[used])
        self._kth: dict[tuple[int, int], float] = {}

    def _terms(self, query: list[str]) -> list[int]:
        """The query's distinct known terms, in the order a score adds them (sorted words)."""
        return [t for t in (self.vocab.get(w) for w in sorted(set(query))) if t is not None]

    def _span(self, t: int) -> slice:
        return slice(int(self.starts[t]), int(self.starts[t + 1]))

    def scores(self, query: list[str]) -> np.ndarray:
        """Every document's score (0.0 where no term matches)."""
        scores = np.zeros(self.n)
        for t in self._terms(query):
            scores[self.doc_of[self._span(t)]] += self.weight[self._span(t)]
        return scores

    def top(self, query: list[str], depth: int, also: Sequence[int]) -> dict[int, float] | None:
        """{document: score} of the matching documents that can stand in the top ``depth`` (every document
        tying the depth-th best included) and of the matching ``also``: what :func:`top_scores` keeps of
        :meth:`scores`; None when no term can be set aside (score every document then)."""
        terms, k = self._terms(query), max(depth, 1)
        # Some k documents score at least their own weight for one term: the best k-th weight of any one list.
        floor = max((self._kth_weight(t, k) for t in terms if self.df[t] >= k), default=0.0)
        rarest = min((t for t in terms if self.df[t] >= k), key=lambda t: self.df[t], default=None)
        if rarest is not None:  # the rarest such list's k-th best exact score is usually higher still
            sample = self._exact(terms, self.doc_of[self._span(rarest)], ())
            floor = max(floor, float(np.partition(sample, len(sample) - k)[len(sample) - k]))
        set_aside, bound = set(), 0.0
        for t in sorted(terms, key=lambda t: self.largest[t]):
            if (bound + self.largest[t]) * (1.0 + 1e-9) >= floor:
                break
            bound += self.largest[t]
            set_aside.add(t)
        essential = [t for t in terms if t not in set_aside]
        if not set_aside or int(self.df[essential].sum()) > self.n // 8:
            return None  # scoring every document is as quick
        # Every document scoring floor or more holds an essential term: the k best are among these.
        held = np.zeros(self.n, dtype=bool)
        for t in essential:
            held[self.doc_of[self._span(t)]] = True
        held[np.asarray(also, dtype=np.int64)] = True
        docs = np.flatnonzero(held)
        scores = self._exact(terms, docs, essential)
        matching = scores > 0
        best = scores[matching]  # at least k: the k documents that set the floor
        cut = np.partition(best, len(best) - k)[len(best) - k]
        keep = matching & ((scores >= cut) | np.isin(docs, also))
        return dict(zip(docs[keep].tolist(), scores[keep].tolist(), strict=True))

    def _exact(self, terms: list[int], docs: np.ndarray, short: Sequence[int]) -> np.ndarray:
        """The scores of ``docs`` (ascending), each adding its terms' weights in ``terms`` order from 0.0, as
        :meth:`scores` does. A ``short`` term's list is mapped through the documents' positions; any other
        term's documents are looked up in its list."""
        scores = np.zeros(len(docs))
        place = None
        for t in terms:
            having, weight = self.doc_of[self._span(t)], self.weight[self._span(t)]
            if not len(having):
                continue
            if t in short:
                if place is None:
                    place = np.full(self.n, -1, dtype=np.int64)
                    place[docs] = np.arange(len(docs))
                at = place[having]
                hit = at >= 0
                scores[at[hit]] += weight[hit]
            else:
                at = np.minimum(np.searchsorted(having, docs), len(having) - 1)
                hit = having[at] == docs
                scores[hit] += weight[at[hit]]
        return scores

    def _kth_weight(self, t: int, k: int) -> float:
        if (t, k) not in self._kth:
            weights = self.weight[self._span(t)]
            self._kth[t, k] = float(np.partition(weights, len(weights) - k)[len(weights) - k])
        return self._kth[t, k]


def bm25_scores(docs: Iterable[list[str]] | Words, queries: dict[str, list[str]], k1: float, b: float) -> Iterator:
    """Yield (query id, float64 scores of the docs in ``docs`` order) for Okapi BM25 (:class:`BM25Postings`).

    ``docs`` (each passage's tokens, or their ``Words``) is read once, so a generator keeps no token list
    alive: 100,000 passages take seconds and a few hundred MB."""
    postings = BM25Postings(docs, k1, b)
    for qid, query in queries.items():
        yield qid, postings.scores(query)


def _posting_weights(
    doc_of: np.ndarray, tf: np.ndarray, starts: np.ndarray, n: int, norm: np.ndarray, k1: float
) -> np.ndarray:
    """Each posting's BM25 term weight, idf * tf * (k1 + 1) / (tf + norm): idf from ``math.log`` per term (numpy's
    log may round differently), the rest elementwise, a block of terms at a time to bound the temporaries."""
    df = np.diff(starts)
    idf = np.array([math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for d in df.tolist()])
    weight = np.empty(len(doc_of))
    for lo, hi in _blocks(starts):
        f, having = tf[starts[lo] : starts[hi]], doc_of[starts[lo] : starts[hi]]
        weight[starts[lo] : starts[hi]] = np.repeat(idf[lo:hi], df[lo:hi]) * f * (k1 + 1.0) / (f + norm[having])
    return weight


def top_scores(values: np.ndarray, ids: list[str], keep: np.ndarray, depth: int, also: list[int]) -> dict[str, float]:
    """{doc id: score} of the kept docs that can stand in the top ``depth`` (every doc tying the
    depth-th best score included), plus the kept docs at positions ``also``: all a ranking check
    reads, without a Python object per passage."""
    kept = np.flatnonzero(keep)
    if len(kept) > depth:
        at = len(kept) - max(depth, 1)
        kept = kept[values[kept] >= np.partition(values[kept], at)[at]]
    top = {ids[i]: float(values[i]) for i in kept.tolist()}
    top.update((ids[i], float(values[i])) for i in also if keep[i])
    return top


def exact_top_scores(
    emb: Embeddings, row: int, values: np.ndarray, keep: np.ndarray, depth: int, also: list[int]
) -> dict[str, float]:
    """{doc id: exact score} of the kept passages that can stand in the top ``depth``, plus those at ``also``.

    ``values`` are float32 BLAS dot products, whose last bits depend on the CPU: they only narrow the candidates
    to those within a margin of the depth-th best (each BLAS sum of ``d`` float32 products is within ``d`` units of
    float32 rounding of the exact one, so twice that loses none). The candidates are then scored as the runs
    store them (:func:`exact_dot`), so the ranking recomputed, and every count the detail states, is the same on
    every machine."""
    kept = np.flatnonzero(keep)
    if len(kept) > depth:
        at = len(kept) - max(depth, 1)
        margin = 2.0 * emb.passages.shape[1] * float(np.finfo(np.float32).eps)
        kept = kept[values[kept] >= np.partition(values[kept], at)[at] - margin]
    rows = sorted({*kept.tolist(), *(i for i in also if keep[i])})
    if not rows:
        return {}
    exact = exact_dot(emb.passages[rows], emb.queries[row])
    ids = emb.index["passages"]
    return {ids[i]: v for i, v in zip(rows, exact.tolist(), strict=True)}


def rrf(lists: dict[str, list[str]], k: float, candidates: int | None, weights: dict[str, float]) -> tuple:
    """Fused scores and component ranks, in order of first appearance (lists read in the given order)."""
    fused: dict[str, float] = {}
    ranks: dict[str, dict[str, int | None]] = {}
    for name, ids in lists.items():
        if weights[name] == 0:
            continue
        for rank, doc in enumerate(ids[:candidates] if candidates else ids, start=1):
            fused[doc] = fused.get(doc, 0.0) + weights[name] / (k + rank)
            ranks.setdefault(doc, dict.fromkeys(lists))[name] = rank
    return fused, ranks


MEASURES = ("hit", "recall", "precision", "mrr", "ndcg", "map", "rprec")
DEFAULT_CUTOFFS = (1, 3, 5, 10, 20, 100)
TIE_MEASURES = ("hit", "recall", "precision", "mrr", "ndcg")  # ties.json leaves MAP and R-precision out
# Reported whatever a corpus's "metrics" setting says: the pages' tables, plots and experiments read them.
REQUIRED_METRICS = ("hit@1", "hit@3", "hit@5", "hit@10", "recall@10", "precision@5", "mrr@10", "ndcg@10")


def _measure(name: str) -> tuple[str, int]:
    """A metric name's family and cut-off; an unknown name is refused."""
    family, _, cut = name.partition("@")
    if not cut.isdigit() or int(cut) < 1 or family not in MEASURES:
        raise AuditError(f"cannot verify metric {name!r}: unknown name")
    return family, int(cut)


def metric(name: str, ranking: list[str], grades: dict[str, int]) -> float:
    """hit/recall/precision/mrr/ndcg/map/rprec@k with trec_eval's definitions (map and Rprec with -M k);
    relevant means grade > 0."""
    return metrics_of([_measure(name)], ranking, grades)[0]


def metrics_of(measures: Sequence[tuple[str, int]], ranking: list[str], grades: dict[str, int]) -> list[float]:
    """:func:`metric` of each (family, k) of :func:`_measure`, in order: the relevant passages and their ranks
    are found once, and each value is the same float one name at a time gives."""
    relevant = {d for d, g in grades.items() if g > 0}
    depth = max((k for _, k in measures), default=0)
    ranks = [r for r, d in enumerate(ranking[:depth], start=1) if d in relevant]  # ascending
    ndcg = any(family == "ndcg" for family, _ in measures)
    ideal_gains = sorted((g for g in grades.values() if g > 0), reverse=True) if ndcg else []
    out = []
    for family, k in measures:
        found = ranks if k >= depth else ranks[: bisect.bisect_right(ranks, k)]  # the relevant ranks in the top k
        if family == "map":
            out.append(math.fsum((n + 1) / r for n, r in enumerate(found)) / len(relevant))
        elif family == "rprec":
            out.append(len([r for r in found if r <= len(relevant)]) / len(relevant))
        elif family == "hit":
            out.append(1.0 if found else 0.0)
        elif family == "recall":
            out.append(len(found) / len(relevant))
        elif family == "precision":
            out.append(len(found) / k)
        elif family == "mrr":
            out.append(1.0 / found[0] if found else 0.0)
        else:
            dcg = sum(grades[ranking[r - 1]] / math.log2(r + 1) for r in found)
            out.append(dcg / sum(g / math.log2(r + 1) for r, g in enumerate(ideal_gains[:k], start=1)))
    return out


def scored_questions(inputs: Inputs) -> list[str]:
    """The questions with a relevant passage, in queries.jsonl's order: the ones every metric is averaged over."""
    return [q for q in inputs.queries if any(g > 0 for g in inputs.qrels.get(q, {}).values())]


# ---------------------------------------------------------------- checks: one function each


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _needs(check: Check, what: str, withheld: str = "texts") -> str:
    """The detail of a check that cannot recompute ``what``: the bundle withholds the ``withheld`` it needs (a
    redacted corpus). The check passes on what it could verify, and --inputs DIR reruns it on the files brought."""
    check.needs = f"{what} (the {withheld} are withheld)"
    how = (
        "audit.py --inputs DIR recomputes them from the collection"
        if withheld == "texts"
        else "bring them with --inputs DIR (DIR/<corpus>/embeddings/), or let sitegen audit --inputs DIR re-embed"
    )
    return f"{what}: not recomputed, the bundle withholds the {withheld}; {how}"


def _vectors_withheld(bundle: Bundle, corpus: str, folder: str = "embeddings") -> bool:
    """The stored vectors (``folder``: dense's ``embeddings``, or a model entry's) are held by reference and were
    not brought with --inputs."""
    return not bundle.has(f"evidence/{corpus}/{folder}/passages.npy") and (
        f"{folder}/passages.npy" in referenced_files(bundle, corpus)
    )


def check_manifest(check: Check, bundle: Bundle) -> str:
    rel = "evidence/manifest.json"
    manifest = bundle.json(rel)
    listed = manifest.get("files")
    if not isinstance(listed, dict):
        raise AuditError(f"{rel}: expected a 'files' object")
    if manifest.get("schema_version") != SCHEMA_VERSION:
        check.fail(f"{rel}: schema_version {manifest.get('schema_version')!r}, this audit reads {SCHEMA_VERSION}")
    for path, entry in listed.items():
        parts = path.split("/")
        if parts[0] != "evidence" or ".." in parts or path == rel or not isinstance(entry, dict):
            check.fail(f"{rel}: entry {path!r} is not a file under evidence/ with sha256 and bytes")
        elif not (bundle.site / path).is_file():
            check.fail(f"{path}: listed in {rel} but missing")
        elif (size := (bundle.site / path).stat().st_size) != entry.get("bytes"):
            check.fail(f"{path}: {size} bytes, {rel} says {entry.get('bytes')}")
        elif (digest := _sha256(bundle.site / path)) != entry.get("sha256"):
            check.fail(f"{path}: sha256 {digest}, {rel} says {entry.get('sha256')}")
    for path in sorted(p.relative_to(bundle.site).as_posix() for p in bundle.site.glob("evidence/**/*") if p.is_file()):
        if path != rel and path not in listed:
            check.fail(f"{path}: file under evidence/ is not listed in {rel}")
    listed_corpora = manifest.get("corpora") if isinstance(manifest.get("corpora"), list) else []
    for corpus in bundle.corpora():
        if corpus not in listed_corpora:
            check.fail(f"evidence/{corpus}/: a corpus the site holds or shows that {rel}'s corpora list leaves out")
    if not bundle.corpora():
        check.fail(f"{rel}: the bundle holds no corpus, so there is nothing to audit")
    return f"{len(listed)} files match their sha256 and size; no file is missing or unlisted"


POSTGRES_VERIFIERS = ("pgvector-hnsw", "postgres-tsvector", "postgres-hybrid-sql")
# pgvector's ef_search ceiling: above this many passages sitegen's vector lists run as an exact scan.
PGVECTOR_EF_SEARCH_MAX = 1000
# What sitegen computes, fixed here rather than read from the files that report it.
RRF_SWEEP_METRICS = ("hit@1", "hit@5", "mrr@10")  # the RRF parameter sweeps and held-out selection
SELECTION_METRIC = "mrr@10"
CHUNKING_SWEEP_METRICS = ("recall@5", "recall@10", "ndcg@10", "mrr@10")


def required_files(bundle: Bundle, corpus: str) -> dict[str, str]:
    """Each evidence file this corpus must have, with why: decided by the inputs and the runs this
    audit's closed world admits, never by the bundle's own list of what it holds."""
    base = f"evidence/{corpus}"
    need = {
        f"{base}/{name}": "every corpus has it"
        for name in (
            "corpus.json",
            "metrics.json",
            "report.json",
            "experiments.json",
            "packing.json",
            "ties.json",
            "hygiene.json",
            "trec_eval.json",
            "qrels.trec",
            "cost.json",
        )
    }
    try:
        published = publication(bundle, corpus)
    except AuditError:
        published = Publication(False, True)  # the choices check reports an unreadable command
    withheld = "inputs/sitegen.json or the recorded command publishes it redacted: its texts are held by reference"
    try:
        held = referenced_files(bundle, corpus)
    except AuditError:
        held = {}
    for name in ("corpus.jsonl", "queries.jsonl"):
        if published.redacted:
            need[f"{base}/referenced/inputs/{name}"] = withheld
        elif f"inputs/{name}" in held:  # large (check_referenced holds it to --reference and --reference-above)
            need[f"{base}/referenced/inputs/{name}"] = f"referenced.json holds inputs/{name} by reference"
        else:
            need[f"{base}/inputs/{name}"] = "every corpus has it"
    if published.redacted:
        need[f"{base}/referenced.json"] = withheld
    try:
        inputs = bundle.inputs(corpus)
    except AuditError:
        return need
    if any(q["filter"] for q in inputs.queries.values()):
        need[f"{base}/filtering.json"] = "questions in inputs/queries.jsonl carry a metadata filter"
    config_rel = f"{base}/inputs/sitegen.json"
    config = bundle.json(config_rel) if (bundle.site / config_rel).is_file() else {}
    if isinstance(config.get("chunking"), dict):
        chunks = "referenced/chunks.jsonl" if published.redacted or "chunks.jsonl" in held else "chunks.jsonl"
        for name in ("chunking.json", chunks):
            need[f"{base}/{name}"] = "inputs/sitegen.json asks for chunking"
    copy_rel = f"{base}/baseline/baseline.json"
    if (bundle.site / base / "changes.json").is_file() or (bundle.site / copy_rel).is_file():
        why = "the corpus was built with --baseline (changes.json or baseline/ is in the bundle)"
        need[f"{base}/changes.json"] = need[copy_rel] = why
        try:
            kept = bundle.json(copy_rel)
        except AuditError:
            kept = {}
        for name in kept.get("inputs", []) if isinstance(kept.get("inputs"), list) else []:
            need[f"{base}/baseline/inputs/{name}"] = "baseline/baseline.json lists it among the baseline's inputs"
    for ranker in bundle.rankers(corpus):
        need[f"{base}/runs/{ranker}.json"] = "the bundle or its pages name this ranker"
        need[f"{base}/runs/{ranker}.trec"] = "every run has its TREC twin"
        try:
            family, verifier = expected_contract(bundle, corpus, ranker, bundle.run(corpus, ranker))
        except AuditError:
            continue
        if verifier == "bi-encoder rerank":
            need[f"{base}/rerank.json"] = f"{ranker} is a bi-encoder rerank, whose depths are swept"
        if family in ("dense", "postgres") or verifier == "bi-encoder rerank":
            folder = scoring_vectors(bundle, corpus, ranker, verifier)
            for name in ("index.json", "passages.npy", "queries.npy") if published.vectors else ("index.json",):
                if f"{folder}/{name}" not in held:  # a large matrix held: check_referenced holds it to the rule
                    need[f"{base}/{folder}/{name}"] = f"{ranker} ranks by the stored vectors"
        if verifier in POSTGRES_VERIFIERS:
            need[f"{base}/postgres.json"] = f"{ranker} ran in PostgreSQL"
    return need


def check_presence(check: Check, bundle: Bundle, corpus: str) -> str:
    need = required_files(bundle, corpus)
    for rel, why in need.items():
        if not (bundle.site / rel).is_file() and not _stored_compressed(bundle, rel):
            check.fail(f"{rel}: missing, and required: {why}")
    for ranker in run_files(bundle.site, corpus):
        _check_stored_form(check, bundle, f"evidence/{corpus}/runs/{ranker}.json")
    if not any(rel.endswith(".json") and "/runs/" in rel for rel in need):
        check.fail(f"evidence/{corpus}: no ranker run at all")
    return f"all {len(need)} files the inputs and runs call for are present"


def _stored_compressed(bundle: Bundle, rel: str) -> bool:
    """Whether ``rel`` may be, and is, stored as ``rel.gz``: a run's JSON or the records of a file held by
    reference."""
    compressible = ("/runs/" in rel and rel.endswith(".json")) or "/referenced/" in rel
    return compressible and (bundle.site / f"{rel}.gz").is_file()


def _check_stored_form(check: Check, bundle: Bundle, rel: str) -> None:
    """A compressible file is stored one way, by its size: plain up to GZIP_ABOVE bytes, gzip-compressed above."""
    plain, compressed = bundle.site / rel, bundle.site / f"{rel}.gz"
    if plain.is_file() and compressed.is_file():
        check.fail(f"{rel}: stored both plain and as {compressed.name}")
    elif plain.is_file() and plain.stat().st_size > GZIP_ABOVE:
        check.fail(f"{rel}: {plain.stat().st_size} bytes stored plain; above {GZIP_ABOVE} it is stored as .gz")
    elif compressed.is_file():
        size = len(bundle.text(rel).encode("utf-8"))
        if size <= GZIP_ABOVE:
            check.fail(f"{rel}.gz: {size} bytes compressed; at most {GZIP_ABOVE} a file is stored plain")


def check_inputs(check: Check, bundle: Bundle, corpus: str) -> str:
    inputs = bundle.inputs(corpus)
    for problem in inputs.problems:
        check.fail(problem)
    return f"{len(inputs.doc_text)} passages, {len(inputs.queries)} questions, {inputs.judged_pairs} judged pairs"


def configured_metrics(bundle: Bundle, corpus: str) -> list[str]:
    """The metrics the corpus's inputs/sitegen.json asks for ("metrics": {"cutoffs", "measures"}), else every
    measure at every default cut-off: what corpus.json and metrics.json must hold, whatever they say."""
    config_rel = f"evidence/{corpus}/inputs/sitegen.json"
    config = bundle.json(config_rel) if (bundle.site / config_rel).is_file() else {}
    raw = config.get("metrics") or {}
    cutoffs = raw.get("cutoffs", DEFAULT_CUTOFFS)
    measures = raw.get("measures", MEASURES)
    wanted = {f"{m}@{k}" for m in measures for k in cutoffs} | set(REQUIRED_METRICS)
    return [
        f"{m}@{k}"
        for m in MEASURES
        for k in range(1, max(int(n.split("@")[1]) for n in wanted) + 1)
        if f"{m}@{k}" in wanted
    ]


def check_summary(check: Check, bundle: Bundle, corpus: str) -> str:
    rel = f"evidence/{corpus}/corpus.json"
    summary, inputs = bundle.json(rel), bundle.inputs(corpus)
    metrics = bundle.json(f"evidence/{corpus}/metrics.json")
    qs = list(inputs.queries.values())
    kinds = list(dict.fromkeys(q["kind"] for q in qs))
    expected = {
        "name": corpus,
        "documents": len(inputs.doc_text),
        "queries": len(qs),
        "answerable_queries": sum(1 for q in qs if q["answerable"]),
        "judged_pairs": inputs.judged_pairs,
        "kinds": {k: sum(1 for q in qs if q["kind"] == k and q["answerable"]) for k in kinds},
        "kind_order": kinds,
        "embeddings": (bundle.site / "evidence" / corpus / "embeddings" / "index.json").is_file(),
        "publish": publication(bundle, corpus).as_dict(),
        "metrics": configured_metrics(bundle, corpus),
    }
    # A bundle written before the publication was recorded published everything: its absence reads as that.
    summary = {"publish": {"mode": "full", "vectors": True}, **summary}
    for key, want in expected.items():
        if summary.get(key) != want:
            check.fail(f"{rel}: {key} is {summary.get(key)!r}, the inputs give {want!r}")
    hashes = input_hashes(bundle, corpus)
    if summary.get("input_sha256") != hashes:
        check.fail(f"{rel}: input_sha256 is {summary.get('input_sha256')!r}, the input copies give {hashes!r}")
    if summary.get("question_set_sha256") != (question_set := question_set_sha256(hashes)):
        stated = summary.get("question_set_sha256")
        check.fail(f"{rel}: question_set_sha256 is {stated!r}, the inputs give {question_set}")
    if summary.get("frozen") != (frozen := frozen_summary(bundle, corpus)):
        stated = summary.get("frozen")
        check.fail(f"{rel}: frozen is {stated!r}, inputs/{FROZEN_FILE} and the input copies give {frozen!r}")
    present = run_files(bundle.site, corpus)
    for what, names in (("runs/*.json files", present), ("metrics.json rankers", sorted(metrics))):
        if sorted(summary.get("rankers", [])) != names:
            check.fail(f"{rel}: rankers {summary.get('rankers')!r} differ from the {what} {names!r}")
    for name in summary.get("inputs", []):
        if not (bundle.site / "evidence" / corpus / name).is_file():
            check.fail(f"{rel}: input {name} is listed but missing")
    _check_trec_contract(check, bundle, corpus, summary)
    return f"counts, kinds, rankers and inputs agree ({len(present)} runs); so do qrels.trec and trec_eval.json"


FROZEN_FILE = "FROZEN.json"
QUESTION_SET_FILES = ("qrels/test.tsv", "queries.jsonl")


def input_hashes(bundle: Bundle, corpus: str) -> dict[str, str]:
    """sha256 of every input, by its path in the corpus folder (``inputs/`` left off): each copy's, recomputed,
    and each input a redacted bundle holds by reference, as ``referenced.json`` records it (``--inputs`` and
    ``--corpora`` hold those to the files)."""
    base = bundle.site / "evidence" / corpus / "inputs"
    hashes = {p.relative_to(base).as_posix(): _sha256(p) for p in sorted(base.rglob("*")) if p.is_file()}
    for name, entry in referenced_files(bundle, corpus).items():
        if name.startswith("inputs/") and name[7:] not in hashes:
            hashes[name[7:]] = entry["sha256"]
    return dict(sorted(hashes.items()))


def referenced_files(bundle: Bundle, corpus: str) -> dict[str, dict[str, Any]]:
    """``referenced.json``'s files (none when the bundle copies every input), each entry's shape checked."""
    rel = f"evidence/{corpus}/referenced.json"
    if not (bundle.site / rel).is_file():
        return {}
    files = bundle.json(rel).get("files")
    if not isinstance(files, dict) or not all(
        isinstance(e, dict)
        and isinstance(e.get("sha256"), str)
        and re.fullmatch(r"[0-9a-f]{64}", e["sha256"])
        and type(e.get("bytes")) is int
        and isinstance(e.get("source"), str)
        and e["source"]
        for e in files.values()
    ):
        raise AuditError(f'{rel}: expected {{"files": {{name: {{"sha256", "bytes", "source", "records"?}}}}}}')
    return files


def question_set_sha256(hashes: dict[str, str]) -> str:
    """The question set's one hash: sha256 of ``sha256sum qrels/test.tsv queries.jsonl``'s output, so a
    reader can recompute it in a checkout with ``sha256sum qrels/test.tsv queries.jsonl | sha256sum``."""
    listing = "".join(f"{hashes.get(name, '-')}  {name}\n" for name in QUESTION_SET_FILES)
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()


def frozen_summary(bundle: Bundle, corpus: str) -> dict[str, Any] | None:
    """``corpus.json``'s ``frozen``, recomputed: the date of the bundled FROZEN.json and the files whose copy
    differs from its record, was added or was removed; None when the corpus was not frozen. The files a
    freeze covers are the inputs (README.md and FROZEN.json aside), the corpus folder's own runs (not those of
    --run or --retriever) and the vectors it supplied (their sha256 as embeddings/index.json records them)."""
    rel = f"evidence/{corpus}/inputs/{FROZEN_FILE}"
    if not (bundle.site / rel).is_file():
        return None
    record = bundle.json(rel)
    files = record.get("files")
    if not isinstance(files, dict) or not isinstance(record.get("date"), str):
        raise AuditError(f'{rel}: expected {{"date": DATE, "files": {{path: sha256}}, "format": ...}}')
    command = recorded_command(bundle)
    outside = {name for name, (where, _) in command.runs.items() if where == corpus} | set(command.retrievers)
    current = {
        name: digest
        for name, digest in input_hashes(bundle, corpus).items()
        if name not in ("README.md", FROZEN_FILE) and not (name.startswith("runs/") and name[5:-5] in outside)
    }
    index_rel = f"evidence/{corpus}/embeddings/index.json"
    supplied = bundle.json(index_rel).get("supplied") if (bundle.site / index_rel).is_file() else None
    if isinstance(supplied, dict) and isinstance(supplied.get("files_sha256"), dict):
        current.update(supplied["files_sha256"])
    edited = sorted(n for n in {*files, *current} if files.get(n) != current.get(n))
    return {"date": record["date"], "edited_files": edited}


_TREC_EVAL_MEASURES = {
    "hit": "success",
    "recall": "recall",
    "precision": "P",
    "mrr": "recip_rank",
    "ndcg": "ndcg_cut",
    "map": "map",
    "rprec": "Rprec",
}
_UNCUT = ("mrr", "map", "rprec")  # trec_eval measures without a cut-off of their own: -M k cuts them


def _trec_column(identifier: str) -> str:
    """An id as the TREC files write it: ``%`` and whitespace percent-encoded (UTF-8)."""
    return re.sub(r"[%\s]", lambda m: quote(m.group(), safe=""), identifier)


def _check_trec_contract(check: Check, bundle: Bundle, corpus: str, summary: dict[str, Any]) -> None:
    """qrels.trec must be the inputs' qrels (questions in file order, then passages in file order, grade 0
    kept), and trec_eval.json's commands, loop and mapping the ones corpus.json's metrics and rankers call
    for: one ``trec_eval -c -q -M k`` command per cut-off k, as recip_rank has no cut-off of its own."""
    base = f"evidence/{corpus}"
    inputs = bundle.inputs(corpus)
    order = {d: i for i, d in enumerate(inputs.doc_text)}
    want = [
        f"{_trec_column(q)} 0 {_trec_column(d)} {g}"
        for q in inputs.queries
        for d, g in sorted(inputs.qrels.get(q, {}).items(), key=lambda item: order.get(item[0], len(order)))
    ]
    text = bundle.text(f"{base}/qrels.trec")
    got = bundle.lines(f"{base}/qrels.trec")
    if got != want or (text and not text.endswith("\n")):
        at = next((i for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w), min(len(got), len(want)))
        seen, expected = (x[at] if at < len(x) else "nothing" for x in (got, want))
        check.fail(f"{base}/qrels.trec: line {at + 1} is {seen!r}, the inputs give {expected!r}")
    by_cutoff: dict[int, list[tuple[str, str, str]]] = {}
    for name in summary.get("metrics", []):
        family, _, cut = name.partition("@")
        if family not in _TREC_EVAL_MEASURES or not cut.isdigit():
            raise AuditError(f"{base}/corpus.json: cannot map metric {name!r} to a trec_eval measure")
        measure, k = _TREC_EVAL_MEASURES[family], int(cut)
        flag, line = (measure, measure) if family in _UNCUT else (f"{measure}.{k}", f"{measure}_{k}")
        by_cutoff.setdefault(k, []).append((name, flag, line))
    rankers = [r for r in summary.get("rankers", []) if isinstance(r, str)]

    def command(k: int, run_file: str) -> str:
        measures = " ".join(f"-m {flag}" for _, flag, _ in by_cutoff[k])
        return f"trec_eval -c -q -M {k} {measures} qrels.trec {run_file}"

    each_run = '"runs/$ranker.trec"'
    loop = "".join(f"  {command(k, each_run)}\n" for k in sorted(by_cutoff))
    expected = {
        "commands": {r: [command(k, shlex.quote(f"runs/{r}.trec")) for k in sorted(by_cutoff)] for r in rankers},
        "measures": {n: {"trec_eval": line, "max_docs": k} for k, rows in by_cutoff.items() for n, _, line in rows},
        "script": f"cd {base}\nfor ranker in {' '.join(shlex.quote(r) for r in rankers)}; do\n{loop}done\n",
    }
    contract = bundle.json(f"{base}/trec_eval.json")
    for key, value in expected.items():
        if contract.get(key) != value:
            check.fail(f"{base}/trec_eval.json: {key} is not what corpus.json's metrics and rankers call for")
    judged = [q for q in inputs.queries if inputs.qrels.get(q)]
    counts = {
        "file": ("qrels", "qrels.trec"),
        "pairs": ("qrels", len(want)),
        "in_qrels": ("questions", len(judged)),
        "averaged": ("questions", sum(1 for q in judged if any(g > 0 for g in inputs.qrels[q].values()))),
    }
    for key, (section, value) in counts.items():
        stored = (contract.get(section) or {}).get(key)
        if stored != value:
            check.fail(f"{base}/trec_eval.json: {section}.{key} is {stored!r}, the inputs give {value!r}")


def check_embeddings(check: Check, bundle: Bundle, corpus: str) -> str:
    """Every folder of vectors: dense's ``embeddings/`` and each model entry's ``embeddings/<name>/``, those the
    rankers call for and those the bundle holds."""
    if not (bundle.site / f"evidence/{corpus}/{VECTORS}").exists():
        return "no embeddings in this bundle"
    folders = [VECTORS] if (bundle.site / f"evidence/{corpus}/{VECTORS}/index.json").is_file() else []
    for ranker in bundle.rankers(corpus):
        if family_of(bundle, corpus, ranker, bundle.run(corpus, ranker)) == "dense":
            folders.append(vector_folder(bundle, corpus, ranker))
    for index in sorted((bundle.site / f"evidence/{corpus}/{VECTORS}").glob("*/index.json")):
        folders.append(f"{VECTORS}/{index.parent.name}")
    details = [_check_vector_folder(check, bundle, corpus, folder) for folder in dict.fromkeys(folders)]
    return "; ".join(details) or "no embeddings in this bundle"


def _check_vector_folder(check: Check, bundle: Bundle, corpus: str, folder: str) -> str:
    base = f"evidence/{corpus}/{folder}"
    if not (bundle.site / base / "index.json").is_file():
        check.fail(f"{base}/index.json: missing, and a dense ranker ranks by the vectors there")
        return f"{folder}: missing"
    if _vectors_withheld(bundle, corpus, folder):
        index, inputs = bundle.json(f"{base}/index.json"), bundle.inputs(corpus)
        for name, want in (("passages", inputs.doc_text), ("queries", inputs.queries)):
            if sorted(index.get(name) or []) != sorted(want):
                check.fail(f"{base}/index.json: {name} ids differ from the ids in the inputs")
        return _needs(check, "the vectors' shapes and norms", "vectors")
    emb, inputs = bundle.embeddings(corpus, folder), bundle.inputs(corpus)
    tol = TOLERANCES["embedding_norm_absolute"]
    for name, matrix, want in (("passages", emb.passages, inputs.doc_text), ("queries", emb.queries, inputs.queries)):
        ids = emb.index[name]
        if sorted(ids) != sorted(want) or len(set(ids)) != len(ids):
            check.fail(f"{base}/index.json: {name} ids differ from the ids in the inputs")
        norms = np.linalg.norm(matrix.astype(np.float64), axis=1)
        for row in np.flatnonzero(~(np.abs(norms - 1.0) <= tol)):
            check.fail(f"{base}/{name}.npy: row {row} (id {ids[row]}): norm {norms[row]!r}, expected 1 +- {tol}")
    supplied = emb.index.get("supplied")
    if isinstance(supplied, dict):  # brought by the corpus: named by index.json itself, not the manifest's model
        if not isinstance(emb.index.get("model"), str) or not emb.index["model"]:
            check.fail(f"{base}/index.json: supplied vectors name no model")
        if not emb.index.get("weights_sha256") and not supplied.get("provenance"):
            check.fail(f"{base}/index.json: supplied vectors give neither weights_sha256 nor provenance")
    elif folder == VECTORS:
        model = bundle.json("evidence/manifest.json").get("model") or {}
        for key, manifest_key in (("model", "name"), ("weights_sha256", "weights_sha256")):
            if emb.index.get(key) != model.get(manifest_key):
                found, said = emb.index.get(key), model.get(manifest_key)
                check.fail(f"{base}/index.json: {key} {found!r}, manifest says {said!r}")
    else:  # a model entry's own vectors: the model its entry names, and the manifest's record of the entry
        want = folder_models(bundle, corpus).get(folder)
        if want is None:
            check.fail(f"{base}/: no shipped ranker or declared model entry ranks by the vectors here")
        elif emb.index.get("model") != want:
            check.fail(f"{base}/index.json: model {emb.index.get('model')!r}, the model entry names {want!r}")
        recorded = (bundle.json("evidence/manifest.json").get("models") or {}).get(folder.rpartition("/")[2]) or {}
        for key, manifest_key in (("model", "name"), ("weights_sha256", "weights_sha256")):
            if emb.index.get(key) != recorded.get(manifest_key):
                found, said = emb.index.get(key), recorded.get(manifest_key)
                check.fail(f"{base}/index.json: {key} {found!r}, the manifest's models entry says {said!r}")
    n, d = emb.passages.shape
    source = f", supplied by the corpus ({emb.index.get('model')})" if isinstance(supplied, dict) else ""
    where = "" if folder == VECTORS else f"{folder}: "
    return f"{where}{n} passage and {len(emb.queries)} question vectors{source}, float32, {d} dimensions, unit length"


def _compare_ranked(check: Check, where: str, hits: list[dict], scores: dict[str, float], depth: int, tol: Any) -> int:
    """Hits against the ranking by recomputed score (descending, then doc id ascending).

    The stored hits must follow that rule exactly on their own stored scores. Against the
    recomputed scores, two passages whose scores ``tol(a, b)`` calls equal may stand in either
    order (float rounding can flip them). Returns the number of positions decided that way."""
    for rank, (a, b) in enumerate(itertools.pairwise(hits), start=1):
        if (-a["score"], a["doc_id"]) > (-b["score"], b["doc_id"]):
            check.fail(
                f"{where}: ranks {rank}, {rank + 1} ({a['doc_id']}, {b['doc_id']}) break the order score, doc id"
            )
    expected = sorted(scores, key=lambda d: (-scores[d], d))[:depth]
    if len(hits) != len(expected):
        check.fail(f"{where}: {len(hits)} hits, recomputed {len(expected)}")
    near_ties = 0
    for rank, (hit, want) in enumerate(zip(hits, expected, strict=False), start=1):
        doc, score = hit["doc_id"], scores.get(hit["doc_id"])
        if score is None:
            check.fail(f"{where}: rank {rank} is doc {doc}, which recomputes to no score; recomputed {want}")
        elif doc != want and not tol(score, scores[want]):
            check.fail(f"{where}: rank {rank} is doc {doc}, recomputed {want}")
        else:
            near_ties += doc != want
            if not tol(hit["score"], score):
                check.fail(f"{where}: rank {rank} doc {doc}: score {hit['score']!r}, recomputed {score!r}")
    return near_ties


def _workers() -> int:
    """How many processes a large check's questions are split between: the CPUs this process may use, four at
    most, on Linux only (a forked child there runs numpy safely; elsewhere the check runs in this process)."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return 1
    return max(1, min(4, len(os.sched_getaffinity(0))))


def _child_results(work: Callable[[Any], Any], part: Sequence[Any]) -> tuple[int, int]:
    """Fork a child that sends back ``[work(item) for item in part]`` pickled through a pipe: (pid, read end)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write)
        return pid, read
    os.close(read)
    status = 1
    try:
        gc.enable()
        with os.fdopen(write, "wb") as out:
            pickle.dump([work(item) for item in part], out, protocol=pickle.HIGHEST_PROTOCOL)
        status = 0
    finally:
        os._exit(status)  # no cleanup of the parent's state: the child only computed and wrote


def in_workers(work: Callable[[Any], Any], items: Sequence[Any], workers: int) -> list[Any]:
    """``[work(item) for item in items]``, the items split into ``workers`` runs of consecutive items
    (:func:`in_parts`)."""
    if workers <= 1 or len(items) < 2 * workers:
        return [work(item) for item in items]
    size = -(-len(items) // workers)
    return in_parts(work, [items[i : i + size] for i in range(0, len(items), size)])


def in_parts(work: Callable[[Any], Any], parts: Sequence[Sequence[Any]]) -> list[Any]:
    """``work`` of each part's items, the first part in this process and each other in a forked child, the
    results in the parts' order. They are the ones one process gives, so the report does not depend on the
    machine; a child that fails has its items computed again here, where an error is raised as it would be
    without workers."""
    if len(parts) < 2:
        return [work(item) for part in parts for item in part]
    gc.collect()
    gc.freeze()  # the children's collector then leaves the parent's objects, and their pages, alone
    try:
        children = [_child_results(work, part) for part in parts[1:]]
    finally:
        gc.unfreeze()
    try:
        results = [work(item) for item in parts[0]]
    except BaseException:  # the error is this process's to raise: no child is left running or unreaped
        for pid, read in children:
            os.close(read)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        raise
    for part, (pid, read) in zip(parts[1:], children, strict=True):
        with os.fdopen(read, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(pid, 0)
        ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        results += pickle.loads(data) if ok else [work(item) for item in part]
    return results


def _verify_bm25(check: Check, bundle: Bundle, corpus: str, run: dict[str, Any], rel: str) -> str:
    p = run["params"]
    k1, b, stem, stop = p.get("k1"), p.get("b"), p.get("stemmed"), p.get("stop_words", [])
    if not (_is_number(k1) and _is_number(b) and isinstance(stem, bool) and isinstance(stop, list)):
        raise AuditError(f"{rel}: params need numeric k1 and b, boolean stemmed, a stop_words list")
    inputs, stop_set = bundle.inputs(corpus), frozenset(stop)
    if not inputs.texts:
        return _needs(check, "the BM25 scores and order")
    queries = {q: tokens(inputs.queries[q]["text"], stop_set, stem) for q in run["queries"] if q in inputs.queries}
    rel_tol = TOLERANCES["bm25_score_relative"]

    def close(x: float, y: float) -> bool:
        return abs(x - y) <= rel_tol * max(abs(x), abs(y))

    ids = list(inputs.doc_text)
    position = {d: i for i, d in enumerate(ids)}
    postings = BM25Postings(filtered_words(bundle.words(corpus), stop_set, stem), k1, b)

    def verify(q: str) -> tuple[int, list[str]]:
        """One question's ranking recomputed: (ranks decided by near-ties, mismatches)."""
        hits, found_in = run["queries"][q], Check(check.name)
        also = [position[h["doc_id"]] for h in hits if h["doc_id"] in position]
        found = None if p.get("filtered") else postings.top(queries[q], run["depth"], also)
        if found is not None:
            scores = {ids[i]: score for i, score in found.items()}
        else:
            values = postings.scores(queries[q])
            keep = values > 0
            if p.get("filtered"):
                keep &= np.fromiter((allowed(inputs, q, d) for d in ids), dtype=bool, count=len(ids))
            scores = top_scores(values, ids, keep, run["depth"], also)
        return _compare_ranked(found_in, f"{rel}: query {q}", hits, scores, run["depth"], close), found_in.mismatches

    workers = _workers() if len(ids) * len(queries) >= PARALLEL_FROM else 1
    swaps = 0
    for near_ties, mismatches in in_workers(verify, list(queries), workers):
        swaps += near_ties
        check.mismatches += mismatches
    return f"k1={k1} b={b} stemmed={stem} stop words={len(stop)}; {swaps} ranks decided by near-ties"


def _verify_dense(check: Check, bundle: Bundle, corpus: str, run: dict[str, Any], rel: str) -> str:
    folder = vector_folder(bundle, corpus, str(run.get("ranker")))
    if _vectors_withheld(bundle, corpus, folder):
        return _needs(check, "the cosine scores and order", "vectors")
    emb = bundle.embeddings(corpus, folder)
    for key in ("model", "weights_sha256"):
        if run["params"].get(key) != emb.index.get(key):
            check.fail(f"{rel}: params {key} {run['params'].get(key)!r}, index.json says {emb.index.get(key)!r}")
    rows = {q: i for i, q in enumerate(emb.index["queries"])}
    tol = TOLERANCES["dense_score_absolute"]
    swaps, ids = 0, emb.index["passages"]
    position = {d: i for i, d in enumerate(ids)}
    present = [q for q in run["queries"] if q in rows]
    for qid in run["queries"]:
        if qid not in rows:
            check.fail(f"{rel}: query {qid}: no vector in {folder}/queries.npy")
    batch: dict[str, np.ndarray] = {}

    def verify(at: int) -> tuple[int, list[str]]:
        """The ``at``-th question with a vector, its ranking recomputed: (ranks decided by near-ties, mismatches)."""
        nonlocal batch
        qid, found_in = present[at], Check(check.name)
        if qid not in batch:  # float32 dot products, as documented, of DENSE_BATCH questions in one product
            ahead = present[at - at % DENSE_BATCH : at - at % DENSE_BATCH + DENSE_BATCH]
            batch = dict(zip(ahead, emb.queries[[rows[q] for q in ahead]] @ emb.passages.T, strict=True))
        keep = np.ones(len(ids), dtype=bool)
        if run["params"].get("filtered"):
            inputs = bundle.inputs(corpus)
            keep = np.fromiter((allowed(inputs, qid, d) for d in ids), dtype=bool, count=len(ids))
        hits = run["queries"][qid]
        also = [position[h["doc_id"]] for h in hits if h["doc_id"] in position]
        scores = exact_top_scores(emb, rows[qid], batch[qid], keep, run["depth"], also)
        near_ties = _compare_ranked(
            found_in, f"{rel}: query {qid}", hits, scores, run["depth"], lambda x, y: abs(x - y) <= tol
        )
        return near_ties, found_in.mismatches

    blocks = [range(lo, min(lo + DENSE_BATCH, len(present))) for lo in range(0, len(present), DENSE_BATCH)]
    workers = _workers() if len(ids) * len(present) >= PARALLEL_FROM else 1
    for block in in_workers(lambda block: [verify(at) for at in block], blocks, workers):
        for near_ties, mismatches in block:
            swaps += near_ties
            check.mismatches += mismatches
    return f"cosine over {len(emb.passages)} stored vectors in {folder}/; {swaps} ranks decided by near-ties"


def _verify_rrf(check: Check, bundle: Bundle, corpus: str, run: dict[str, Any], rel: str) -> str:
    p = run["params"]
    comps, k, cand, weights = p.get("components"), p.get("k"), p.get("candidates_per_list"), p.get("weights")
    shapes = isinstance(comps, list) and isinstance(weights, dict) and sorted(weights) == sorted(comps)
    if (
        not shapes
        or not _is_number(k)
        or not (cand is None or type(cand) is int)
        or not all(map(_is_number, weights.values()))
    ):
        raise AuditError(f"{rel}: params need components, numeric k, a weight per component, candidates_per_list")
    component_runs = {c: bundle.run(corpus, c) for c in comps}
    tol = TOLERANCES["rrf_score_absolute"]
    for qid, hits in run["queries"].items():
        lists = {c: [h["doc_id"] for h in component_runs[c]["queries"].get(qid, [])] for c in comps}
        fused, ranks = rrf(lists, k, cand, weights)
        expected = sorted(fused, key=lambda d: -fused[d])[: run["depth"]]  # stable: first appearance breaks ties
        where = f"{rel}: query {qid}"
        if len(hits) != len(expected):
            check.fail(f"{where}: {len(hits)} hits, recomputed {len(expected)}")
        for rank, (hit, want) in enumerate(zip(hits, expected, strict=False), start=1):
            if hit["doc_id"] != want:
                check.fail(f"{where}: rank {rank} is doc {hit['doc_id']}, recomputed {want}")
                continue
            if abs(hit["score"] - fused[want]) > tol:
                check.fail(f"{where}: rank {rank} doc {want}: score {hit['score']!r}, recomputed {fused[want]!r}")
            if hit.get("components") != ranks[want]:
                got, exp = (json.dumps(x, sort_keys=True) for x in (hit.get("components"), ranks[want]))
                check.fail(f"{where}: rank {rank} doc {want}: components {got}, recomputed {exp}")
    return f"RRF of {', '.join(comps)}, k={k}, {cand} candidates a list, weights {json.dumps(weights, sort_keys=True)}"


RERANK_TIE_RULE = "score descending, then document id ascending"
RERANK_ADDS = "+ rerank: the first stage's top candidates scored again"


def _rerank_candidates(bundle: Bundle, corpus: str, run: dict[str, Any], rel: str) -> tuple[str, dict[str, list]]:
    """(first stage, {question: the first stage's first N hits}) a rerank run must reorder, N its candidates
    capped at its depth."""
    p = run["params"]
    first, n = p.get("first_stage"), p.get("candidates")
    if not isinstance(first, str) or type(n) is not int or n < 1 or p.get("components") != [first]:
        raise AuditError(f"{rel}: params need first_stage (also its one component) and a positive candidates")
    if p.get("ties") != RERANK_TIE_RULE:
        raise AuditError(f"{rel}: params.ties is {p.get('ties')!r}, the rerank tie rule is {RERANK_TIE_RULE!r}")
    queries = bundle.run(corpus, first)["queries"]
    return first, {q: queries.get(q, [])[: min(n, run["depth"])] for q in run["queries"]}


def _check_rerank_list(check: Check, where: str, first: str, hits: list[dict], top: list[dict]) -> None:
    """The list is exactly the first stage's top N, each hit naming its first-stage rank, in stored-score order
    (higher first, then doc id ascending)."""
    if sorted(h["doc_id"] for h in hits) != sorted(h["doc_id"] for h in top):
        check.fail(f"{where}: its {len(hits)} hits are not exactly the first {len(top)} of {first}")
    ranks = {h["doc_id"]: h["rank"] for h in top}
    for rank, hit in enumerate(hits, start=1):
        if hit.get("components") != {first: ranks.get(hit["doc_id"])}:
            got, want = json.dumps(hit.get("components"), sort_keys=True), ranks.get(hit["doc_id"])
            check.fail(f"{where}: rank {rank} doc {hit['doc_id']}: components {got}, {first} ranks it {want}")
    for rank, (a, b) in enumerate(itertools.pairwise(hits), start=1):
        if (-a["score"], a["doc_id"]) > (-b["score"], b["doc_id"]):
            check.fail(
                f"{where}: ranks {rank}, {rank + 1} ({a['doc_id']}, {b['doc_id']}) break the order score, doc id"
            )


def rerank_embedding(bundle: Bundle, corpus: str, ranker: str) -> str:
    """The dense ranker whose vectors a bi-encoder rerank scores by, from this file's pins or the corpus's
    sitegen.json (never the run's own word); ``dense`` when neither names one."""
    if ranker in PINNED_PARAMS:
        return str(PINNED_PARAMS[ranker].get("embedding", "dense"))
    declared = declared_reranks(bundle, corpus).get(ranker)
    embedding = declared[1].get("embedding") if declared is not None else None
    return embedding if isinstance(embedding, str) else "dense"


def scoring_vectors(bundle: Bundle, corpus: str, ranker: str, verifier: str) -> str:
    """The vector folder a ranker's scores come from: a bi-encoder rerank's embedding's, any other ranker's own."""
    by = rerank_embedding(bundle, corpus, ranker) if verifier == "bi-encoder rerank" else ranker
    return vector_folder(bundle, corpus, by)


def rerank_vectors(bundle: Bundle, corpus: str, embedding: Any, rel: str) -> Embeddings:
    """The stored vectors of the dense ranker a bi-encoder rerank names: dense's, a shipped model entry's or a
    model entry the corpus declares."""
    known = {"dense", *SHIPPED_VECTORS, *declared_models(bundle, corpus)}
    if embedding not in known:
        raise AuditError(f"{rel}: embedding {embedding!r} names no vectors this audit knows: {sorted(known)}")
    return bundle.embeddings(corpus, vector_folder(bundle, corpus, embedding))


def _verify_bi_rerank(check: Check, bundle: Bundle, corpus: str, run: dict[str, Any], rel: str) -> str:
    first, tops = _rerank_candidates(bundle, corpus, run, rel)
    embedding = run["params"].get("embedding")
    if _vectors_withheld(
        bundle, corpus, vector_folder(bundle, corpus, embedding if isinstance(embedding, str) else "")
    ):
        for qid, hits in run["queries"].items():
            _check_rerank_list(check, f"{rel}: query {qid}", first, hits, tops[qid])
        return _needs(check, "the cosine scores of the rerank", "vectors")
    emb = rerank_vectors(bundle, corpus, run["params"].get("embedding"), rel)
    for key in ("model", "weights_sha256"):
        if run["params"].get(key) != emb.index.get(key):
            check.fail(f"{rel}: params {key} {run['params'].get(key)!r}, index.json says {emb.index.get(key)!r}")
    rows = {q: i for i, q in enumerate(emb.index["queries"])}
    position = {d: i for i, d in enumerate(emb.index["passages"])}
    tol, swaps = TOLERANCES["dense_score_absolute"], 0
    for qid, hits in run["queries"].items():
        where = f"{rel}: query {qid}"
        _check_rerank_list(check, where, first, hits, tops[qid])
        if qid not in rows:
            check.fail(f"{where}: no vector in embeddings/queries.npy")
            continue
        ids = [h["doc_id"] for h in tops[qid] if h["doc_id"] in position]
        values = exact_dot(emb.passages[[position[d] for d in ids]], emb.queries[rows[qid]]) if ids else []
        scores = {d: float(v) for d, v in zip(ids, values, strict=True)}
        swaps += _compare_ranked(check, where, hits, scores, len(tops[qid]), lambda x, y: abs(x - y) <= tol)
    n = run["params"]["candidates"]
    return f"cosine rerank of {first}'s top {n} from the stored vectors; {swaps} ranks decided by near-ties"


def _verify_stored_rerank(check: Check, bundle: Bundle, corpus: str, run: dict[str, Any], rel: str) -> str:
    """A cross-encoder's or a hook's rerank: its scores cannot be recomputed here (``sitegen audit --rescore``
    runs a cross-encoder again); the list must be the first stage's top N in the order of the stored scores."""
    first, tops = _rerank_candidates(bundle, corpus, run, rel)
    for qid, hits in run["queries"].items():
        _check_rerank_list(check, f"{rel}: query {qid}", first, hits, tops[qid])
    n = run["params"]["candidates"]
    return f"exactly {first}'s top {n}, ordered by the stored scores ({RERANK_TIE_RULE}); scores not recomputed"


# A run's params["method"] names the definition it is checked against.
def _verify_external(check: Check, bundle: Bundle, corpus: str, run: dict[str, Any], rel: str) -> str:
    """An external run cannot be recomputed; check it is its bundled TREC file, read in trec_eval's
    order (score descending, then doc id descending), cut to depth, and that its lists are honest."""
    source = f"evidence/{corpus}/{run['params'].get('source', '')}"
    lines = [line.split() for line in bundle.lines(source) if line.strip()]
    if any(len(cols) != 6 for cols in lines):
        raise AuditError(f"{source}: every line must have 6 columns")
    parsed: dict[str, dict[str, float]] = {}
    for cols in lines:
        parsed.setdefault(cols[0], {})[cols[2]] = float(cols[4])
    inputs = bundle.inputs(corpus)
    for qid in inputs.queries:
        items = sorted(parsed.get(qid, {}).items(), key=lambda item: item[0], reverse=True)
        want = [d for d, _ in sorted(items, key=lambda item: -item[1])][: run["depth"]]
        got = [h["doc_id"] for h in run["queries"].get(qid, [])]
        if got != want:
            check.fail(f"{rel}: query {qid}: hits {got[:5]}..., the bundled run file gives {want[:5]}...")
        for hit in run["queries"].get(qid, []):
            if parsed.get(qid, {}).get(hit["doc_id"]) != hit["score"]:
                check.fail(f"{rel}: query {qid}: doc {hit['doc_id']}: score {hit['score']} is not the file's")
    unknown_docs = sorted({d for scores in parsed.values() for d in scores} - set(inputs.doc_text))
    unknown_queries = sorted(set(parsed) - set(inputs.queries))
    if run["params"].get("unknown_documents") != unknown_docs:
        check.fail(f"{rel}: unknown_documents {run['params'].get('unknown_documents')}, the file names {unknown_docs}")
    if run["params"].get("unknown_queries") != unknown_queries:
        check.fail(f"{rel}: unknown_queries {run['params'].get('unknown_queries')}, the file names {unknown_queries}")
    counts = {  # the counts the corpus page shows beside those lists
        "hits_in_file": sum(len(scores) for scores in parsed.values()),
        "unknown_document_hits": sum(1 for scores in parsed.values() for d in scores if d not in inputs.doc_text),
        "queries_in_file": len(parsed),
    }
    for key, value in counts.items():
        if run["params"].get(key) != value:
            check.fail(f"{rel}: {key} {run['params'].get(key)}, the file gives {value}")
    return "external: metrics verified, ranking not reproducible here"


def _filtered_passages(check: Check, bundle: Bundle, corpus: str, run: dict[str, Any], rel: str) -> dict[str, int]:
    """For a filtered run, every hit must pass its question's filter; returns, per question, how many
    passages pass it (empty for an unfiltered run)."""
    if not run["params"].get("filtered"):
        return {}
    inputs = bundle.inputs(corpus)
    passing = {}
    for qid, hits in run["queries"].items():
        if qid not in inputs.queries:
            continue  # the run check names a query the inputs lack
        passing[qid] = sum(1 for d in inputs.doc_meta if allowed(inputs, qid, d))
        for rank, hit in enumerate(hits, start=1):
            if hit["doc_id"] in inputs.doc_meta and not allowed(inputs, qid, hit["doc_id"]):
                check.fail(f"{rel}: query {qid}: rank {rank}: doc {hit['doc_id']} fails the question's filter")
    return passing


def _verify_pgvector(check: Check, bundle: Bundle, corpus: str, run: dict[str, Any], rel: str) -> str:
    """HNSW is approximate: every stored score must be the true cosine of that passage (recomputed from the
    stored vectors), scores must not increase down the list, and the report counts the ranks where the
    approximate list holds the exact top score. Above pgvector's ef_search ceiling (1000 passages) sitegen
    runs an exact scan instead, and the run must say so. When the search is exhaustive (that exact scan, or
    ``ef_search`` at least the number of passages, where the HNSW search visits every passage), each question
    must get min(depth, passages) hits (filtered: min(depth, passages passing its filter)) and every rank
    must hold the exact cosine ranking's score at that rank; below that, neither can be checked."""
    if _vectors_withheld(bundle, corpus):
        return _needs(check, "the cosine scores", "vectors")
    emb = bundle.embeddings(corpus)
    rows = {q: i for i, q in enumerate(emb.index["queries"])}
    position = {d: i for i, d in enumerate(emb.index["passages"])}
    tol = TOLERANCES["dense_score_absolute"]
    passages, ef_search = len(emb.index["passages"]), run["params"].get("ef_search")
    filtered = bool(run["params"].get("filtered"))
    passing = _filtered_passages(check, bundle, corpus, run, rel)
    exact_scan = passages > PGVECTOR_EF_SEARCH_MAX
    declared = run["params"].get("vector_search")
    said = declared.get("exact_scan") if isinstance(declared, dict) else None
    if (exact_scan or declared is not None) and said is not exact_scan:
        check.fail(
            f"{rel}: params.vector_search.exact_scan is {said!r}; with {passages} passages "
            f"({'more' if exact_scan else 'no more'} than pgvector's ef_search ceiling {PGVECTOR_EF_SEARCH_MAX}) "
            f"sitegen runs {'an exact scan' if exact_scan else 'the HNSW index'}"
        )
    complete = exact_scan or (type(ef_search) is int and ef_search >= passages)
    how = (
        f"an exact scan of {passages} passages (more than pgvector's ef_search ceiling {PGVECTOR_EF_SEARCH_MAX})"
        if exact_scan
        else f"ef_search {ef_search} >= {passages} rows, so the HNSW search visits every passage"
    )
    exact_ranks = total = 0
    for qid, hits in run["queries"].items():
        if complete and (not filtered or qid in passing):
            pool = passing[qid] if filtered else passages
            want = min(run["depth"], pool)
            if len(hits) != want:
                among = f"{pool} passages pass its filter" if filtered else f"{pool} passages"
                check.fail(
                    f"{rel}: query {qid}: {len(hits)} hits, expected {want} (depth {run['depth']}, {among}; {how})"
                )
        if qid not in rows:
            check.fail(f"{rel}: query {qid}: no vector in embeddings/queries.npy")
            continue
        values = emb.passages.astype(np.float64) @ emb.queries[rows[qid]].astype(np.float64)
        best = np.sort(values)[::-1]
        if filtered and qid in passing:  # the exact search runs over the passages passing the filter
            keep = np.array([allowed(bundle.inputs(corpus), qid, d) for d in emb.index["passages"]], dtype=bool)
            best = np.sort(values[keep])[::-1]
        for rank, hit in enumerate(hits, start=1):
            if hit["doc_id"] not in position:
                check.fail(f"{rel}: query {qid}: rank {rank}: doc {hit['doc_id']} has no stored vector")
                continue
            true = float(values[position[hit["doc_id"]]])
            if abs(hit["score"] - true) > tol:
                check.fail(f"{rel}: query {qid}: doc {hit['doc_id']}: score {hit['score']!r}, its cosine is {true!r}")
            if rank > 1 and hit["score"] > hits[rank - 2]["score"] + tol:
                check.fail(f"{rel}: query {qid}: rank {rank} scores higher than rank {rank - 1}")
            exact = rank <= len(best) and abs(hit["score"] - float(best[rank - 1])) <= tol
            if complete and not exact:
                check.fail(
                    f"{rel}: query {qid}: rank {rank}: doc {hit['doc_id']} scores {true!r}, the exact cosine "
                    f"ranking's score there is {float(best[rank - 1]) if rank <= len(best) else None!r} ({how})"
                )
            exact_ranks += exact
            total += 1
    pool = "passages passing its filter" if filtered else "passages"
    if exact_scan:
        completeness = (
            f"{passages} passages > {PGVECTOR_EF_SEARCH_MAX} (pgvector's ef_search ceiling), so the run is an exact "
            f"scan: every question has min(depth, {pool}) hits and every rank the exact cosine ranking's score"
        )
    elif complete:
        completeness = (
            f"ef_search {ef_search} >= {passages} passages, so the search is exhaustive: every question has "
            f"min(depth, {pool}) hits and every rank the exact cosine ranking's score"
        )
    else:
        completeness = (
            f"ef_search {ef_search!r} < {passages} passages: the search is approximate, "
            "so the hit counts cannot be checked"
        )
    return (
        f"scores are true cosines; {exact_ranks} of {total} ranks hold the exact search's score "
        f"({'exact scan' if exact_scan else 'HNSW is approximate'}); {completeness}"
    )


# PostgreSQL's text-search parser makes no lexeme of ASCII punctuation, symbols or spaces; a non-ASCII
# character may be a letter to it (in the C locale every one is), so only an all-ASCII text counts.
_NO_LEXEME = re.compile(r"[\x00-\x7f]*")


def _verify_tsvector(check: Check, bundle: Bundle, corpus: str, run: dict[str, Any], rel: str) -> str:
    """ts_rank_cd and the english stemmer are PostgreSQL's and not reimplemented here. Checked without
    them: positive scores, (score descending, doc id ascending) order, at most depth hits, ids in the
    corpus, for a filtered run every hit passing its question's filter, and no hits for a question
    whose text has no letters or digits at all (ASCII only: an empty tsquery matches nothing)."""
    inputs = bundle.inputs(corpus)
    _filtered_passages(check, bundle, corpus, run, rel)
    empty = 0
    for qid, hits in run["queries"].items():
        if len(hits) > run["depth"]:
            check.fail(f"{rel}: query {qid}: {len(hits)} hits, more than the depth {run['depth']}")
        text = inputs.queries.get(qid, {}).get("text")
        if isinstance(text, str) and not _WORD.search(text) and _NO_LEXEME.fullmatch(text):
            empty += 1
            if hits:
                check.fail(
                    f"{rel}: query {qid}: {len(hits)} hits, expected 0: its text {text!r} has no letters or digits, "
                    "so its tsquery is empty and matches nothing"
                )
        for rank, hit in enumerate(hits, start=1):
            if hit["doc_id"] not in inputs.doc_text:
                check.fail(f"{rel}: query {qid}: rank {rank}: doc {hit['doc_id']} is not a passage of the corpus")
            if hit["score"] <= 0:
                check.fail(f"{rel}: query {qid}: rank {rank}: score {hit['score']!r} is not positive")
            if rank > 1:
                previous = hits[rank - 2]
                if (-previous["score"], previous["doc_id"]) >= (-hit["score"], hit["doc_id"]):
                    check.fail(f"{rel}: query {qid}: ranks {rank - 1} and {rank} are out of (score, id) order")
    filtered = "every hit passes its question's filter; " if run["params"].get("filtered") else ""
    empty_rule = (
        f"no hits for the {empty} questions without letters or digits"
        if inputs.texts
        else _needs(check, "which questions have no letters or digits (and so no hits)")
    )
    return (
        f"checked without PostgreSQL: positive scores, (score, id) order, at most {run['depth']} hits, ids in "
        f"the corpus; {filtered}{empty_rule}. Which passages match and their ts_rank_cd scores need PostgreSQL: "
        "`sitegen audit --postgres` reruns them"
    )


VERIFIERS: dict[str, Callable[[Check, Bundle, str, dict[str, Any], str], str]] = {
    "okapi-bm25": _verify_bm25,
    "exact cosine": _verify_dense,
    "reciprocal rank fusion": _verify_rrf,
    "external trec run": _verify_external,
    "pgvector-hnsw": _verify_pgvector,
    "postgres-tsvector": _verify_tsvector,
    "postgres-hybrid-sql": _verify_rrf,  # the one-statement fusion must equal RRF of the two stored pg runs
    "bi-encoder rerank": _verify_bi_rerank,
    "cross-encoder rerank": _verify_stored_rerank,
    "hook rerank": _verify_stored_rerank,
}

# The closed world. Each ranker sitegen ships, by name: its family and the verifier that checks it, whatever
# a bundle says about itself (a test holds this table equal to sitegen's registry). A ranker sitegen does not
# ship may join only in a family this file recomputes from the inputs alone; an external run only when the
# inputs carry its TREC file (inputs/runs/<name>.trec).
SHIPPED_RANKERS: dict[str, tuple[str, str]] = {
    "bm25": ("lexical", "okapi-bm25"),
    "bm25-stem": ("lexical", "okapi-bm25"),
    "dense": ("dense", "exact cosine"),
    "rrf-dense-bm25": ("fusion", "reciprocal rank fusion"),
    "rrf-dense-bm25-stem": ("fusion", "reciprocal rank fusion"),
    "dense-mpnet": ("dense", "exact cosine"),
    "rrf-mpnet-bm25": ("fusion", "reciprocal rank fusion"),
    "rrf-mpnet-bm25-stem": ("fusion", "reciprocal rank fusion"),
    "bm25-filtered": ("lexical", "okapi-bm25"),
    "dense-filtered": ("dense", "exact cosine"),
    "rrf-dense-bm25-filtered": ("fusion", "reciprocal rank fusion"),
    "pg-vector": ("postgres", "pgvector-hnsw"),
    "pg-tsvector": ("postgres", "postgres-tsvector"),
    "rrf-pgvector-tsvector": ("fusion", "reciprocal rank fusion"),
    "pg-hybrid-sql": ("postgres", "postgres-hybrid-sql"),
    "pg-vector-filtered": ("postgres", "pgvector-hnsw"),
    "pg-tsvector-filtered": ("postgres", "postgres-tsvector"),
    "rrf-pgvector-tsvector-filtered": ("fusion", "reciprocal rank fusion"),
    "pg-hybrid-sql-filtered": ("postgres", "postgres-hybrid-sql"),
    "rerank-dense": ("rerank", "bi-encoder rerank"),
    "rerank-mpnet": ("rerank", "bi-encoder rerank"),
}
RECOMPUTED_FAMILIES: dict[str, str] = {
    "lexical": "okapi-bm25",
    "dense": "exact cosine",
    "fusion": "reciprocal rank fusion",
}
EXTERNAL = ("external", "external trec run")
# Which shipped ranker claims to give which other's list, and over how many ranks (postgres.json's agreement).
REPRODUCTIONS: dict[str, tuple[str, int]] = {
    "pg-vector": ("dense", 10),
    "pg-hybrid-sql": ("rrf-pgvector-tsvector", 5),
    "pg-vector-filtered": ("dense-filtered", 10),
    "pg-hybrid-sql-filtered": ("rrf-pgvector-tsvector-filtered", 5),
}


# ---------------------------------------------------------------- the publisher's choices, pinned

# The model every shipped dense ranker embeds with, unless the corpus supplied its own vectors (then
# embeddings/index.json says so, and `audit.py --corpora` compares them with the trusted checkout). Its
# weights, and whether the stored vectors are what they give, only `sitegen audit --reembed` can tell.
PACKAGED_MODEL = {"model": "sentence-transformers/all-MiniLM-L6-v2"}
# The models sitegen packages, by the name a model entry gives them (sitegen.toml's [[models]], --model, a
# corpus's "models"); any other entry names its model itself (a hub id or a folder).
MPNET_MODEL = "sentence-transformers/all-mpnet-base-v2"
PACKAGED_PROVIDERS = {"minilm": PACKAGED_MODEL["model"], "mpnet": MPNET_MODEL}
# Each shipped ranker that ranks by a model entry's own vectors: its folder under evidence/<corpus>/ and the model.
# Every other shipped dense or pgvector ranker ranks by dense's vectors in embeddings/ (PACKAGED_MODEL), and a
# declared model entry NAME by those in embeddings/NAME/.
SHIPPED_VECTORS: dict[str, tuple[str, str]] = {"dense-mpnet": (f"{VECTORS}/dense-mpnet", MPNET_MODEL)}
# sha256 of bm25-stem's stop list as its run stores it: json.dumps(sorted list), UTF-8.
STOP_WORDS_SHA256 = "037fbab82f57a03b08902b5c9e6bb53350579965cfc88bd3a133bcfa5cc5e57b"
_BM25 = {"k1": 1.2, "b": 0.75}
_RRF = {"k": 60.0, "candidates_per_list": 20}
_HNSW = {"ef_search": 1000}
_HYBRID = {"k": 60.0, "candidates_per_list": 20}


def _fusion(*components: str, base: dict[str, Any] = _RRF) -> dict[str, Any]:
    return {**base, "components": list(components), "weights": dict.fromkeys(components, 1.0)}


# Each shipped ranker's defining parameters, whatever a bundle says: a run that claims a shipped name with
# other values fails, so nobody can tune bm25's k1 and b on the test questions and publish it as bm25, or
# trade the names of two runs. A tuned variant needs a name of its own (a fusion in inputs/sitegen.json, a
# --ranker plugin), and its page says where its settings came from. Every run has the recorded command's
# depth (100 unless it says --depth); a shipped run's method is its verifier's, which check_run holds it to.
PINNED_PARAMS: dict[str, dict[str, Any]] = {
    "bm25": {**_BM25, "stemmed": False, "stop_words": []},
    "bm25-stem": {**_BM25, "stemmed": True, "stop_words_sha256": STOP_WORDS_SHA256},
    "dense": {},
    "rrf-dense-bm25": _fusion("dense", "bm25"),
    "rrf-dense-bm25-stem": _fusion("dense", "bm25-stem"),
    "dense-mpnet": {},
    "rrf-mpnet-bm25": _fusion("dense-mpnet", "bm25"),
    "rrf-mpnet-bm25-stem": _fusion("dense-mpnet", "bm25-stem"),
    "bm25-filtered": {**_BM25, "stemmed": False, "stop_words": [], "filtered": True},
    "dense-filtered": {"filtered": True},
    "rrf-dense-bm25-filtered": {**_fusion("dense-filtered", "bm25-filtered"), "filtered": True},
    "pg-vector": dict(_HNSW),
    "pg-tsvector": {},
    "rrf-pgvector-tsvector": _fusion("pg-vector", "pg-tsvector"),
    "pg-hybrid-sql": _fusion("pg-vector", "pg-tsvector", base=_HYBRID),
    "pg-vector-filtered": {**_HNSW, "filtered": True},
    "pg-tsvector-filtered": {"filtered": True},
    "rrf-pgvector-tsvector-filtered": {**_fusion("pg-vector-filtered", "pg-tsvector-filtered"), "filtered": True},
    "pg-hybrid-sql-filtered": {**_fusion("pg-vector-filtered", "pg-tsvector-filtered", base=_HYBRID), "filtered": True},
    # the seed's pipeline end to end: the fused top 50 reranked by the packaged model's cosine
    "rerank-dense": {
        "first_stage": "rrf-dense-bm25",
        "candidates": 50,
        "components": ["rrf-dense-bm25"],
        "scorer": "bi-encoder",
        "embedding": "dense",
    },
    "rerank-mpnet": {
        "first_stage": "rrf-dense-bm25",
        "candidates": 50,
        "components": ["rrf-dense-bm25"],
        "scorer": "bi-encoder",
        "embedding": "dense-mpnet",
    },
}
# Rankers that need PostgreSQL, themselves or through a component: they may all be "not run" together
# (postgres.json says why), never some of them.
NEEDS_POSTGRES: tuple[str, ...] = ()
for _name, (_family, _) in SHIPPED_RANKERS.items():  # registry order: components come first
    if _family == "postgres" or set(PINNED_PARAMS[_name].get("components", ())) & set(NEEDS_POSTGRES):
        NEEDS_POSTGRES += (_name,)
# The paired tests' settings, fixed here: a bundle recording another seed, number of rounds, level or minimum
# is refused, so nobody can shop for the seed or the minimum that makes a difference significant. The held-out
# split and Tukey HSD use the same seed. Only the correction is a corpus's choice, in inputs/sitegen.json.
SIGNIFICANCE_SETTINGS: dict[str, Any] = {
    "seed": 20261129,
    "rounds": 10_000,
    "alpha": 0.05,
    "min_differing": 10,
    "metrics": ["hit@1", "hit@5", "mrr@10", "ndcg@10"],
    "power": 0.8,
    "min_interval_questions": 20,
}


@dataclass(frozen=True)
class BuildCommand:
    """What the manifest's recorded ``sitegen build`` command asks for, as far as it decides the rankers."""

    only: tuple[str, ...]
    rankers: tuple[str, ...]
    runs: dict[str, tuple[str, str]]  # --run NAME=CORPUS:PATH, by name
    retrievers: tuple[str, ...]
    depth: int
    redact: tuple[str, ...] = ()  # --redact NAME: published without its texts
    publish_vectors: bool = False  # --publish-vectors: a redacted corpus's vectors published all the same
    models: dict[str, str] = field(default_factory=dict)  # --model NAME=MODEL (or a JSON entry): name -> model
    reference: tuple[str, ...] = ()  # --reference NAME: its texts and vectors held by reference, whatever their size
    reference_above: int = 50_000_000  # --reference-above BYTES: a text input or vectors above it held by reference


_VALUED_OPTIONS = (
    "--corpora",
    "--only",
    "--ranker",
    "--depth",
    "--run",
    "--retriever",
    "--baseline",
    "--title",
    "--description",
    "--redact",
    "--model",
    "--reference",
    "--reference-above",
)
_FLAG_OPTIONS = ("--allow-edited", "--publish-vectors")


def recorded_command(bundle: Bundle) -> BuildCommand:
    """The manifest's ``command``, read as sitegen writes it (``shlex``-quoted words, each option followed by
    its value); an option this file does not know is an error, so no option can hide a choice."""
    text = bundle.json("evidence/manifest.json").get("command")
    words = shlex.split(text) if isinstance(text, str) else []
    if words[:2] != ["sitegen", "build"]:
        raise AuditError(f"evidence/manifest.json: command {text!r} is not a recorded `sitegen build`")
    values: dict[str, list[str]] = defaultdict(list)
    flags: set[str] = set()
    rest = words[2:]
    while rest:
        word = rest.pop(0)
        option, _, inline = word.partition("=")
        if option in _FLAG_OPTIONS and not inline:
            flags.add(option)
            continue
        if option not in _VALUED_OPTIONS or (not inline and not rest):
            raise AuditError(f"evidence/manifest.json: command {text!r}: {word!r} is not an option sitegen records")
        values[option].append(inline or rest.pop(0))
    runs = {}
    for spec in values["--run"]:
        name, _, target = spec.partition("=")
        corpus, _, path = target.partition(":")
        runs[name] = (corpus, path)
    retrievers = tuple(spec.partition("=")[0] for spec in values["--retriever"])
    depth = values["--depth"][-1] if values["--depth"] else str(TREC_DEPTH)
    if not depth.isdigit() or int(depth) < 1:
        raise AuditError(f"evidence/manifest.json: command {text!r}: --depth {depth} is not a positive integer")
    above = values["--reference-above"][-1] if values["--reference-above"] else str(BuildCommand.reference_above)
    if not above.isdigit():
        raise AuditError(f"evidence/manifest.json: command {text!r}: --reference-above {above} is not a byte count")
    return BuildCommand(
        tuple(values["--only"]),
        tuple(values["--ranker"]),
        runs,
        retrievers,
        int(depth),
        tuple(values["--redact"]),
        "--publish-vectors" in flags,
        dict(_model_entry(text, spec) for spec in values["--model"]),
        tuple(values["--reference"]),
        int(above),
    )


def _model_entry(text: str, spec: str) -> tuple[str, str]:
    """A recorded ``--model`` value, ``NAME=MODEL`` or a JSON object with name and model: (name, model)."""
    if spec.lstrip().startswith("{"):
        try:
            entry = json.loads(spec)
        except json.JSONDecodeError:
            entry = None
    else:
        name, sep, model = spec.partition("=")
        entry = {"name": name, "model": model} if sep else None
    if not (isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get("model"), str)):
        raise AuditError(f"evidence/manifest.json: command {text!r}: --model {spec!r} names no model entry")
    return entry["name"], entry["model"]


def declared_models(bundle: Bundle, corpus: str) -> dict[str, str]:
    """The model entries this corpus's dense rankers come from, beyond the shipped ones: the recorded command's
    --model and inputs/sitegen.json's "models", each name -> the model it names (a packaged one by its name)."""
    rel = f"evidence/{corpus}/inputs/sitegen.json"
    config = bundle.json(rel) if (bundle.site / rel).is_file() else {}
    entries = dict(recorded_command(bundle).models)
    for entry in config.get("models", []) if isinstance(config.get("models"), list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get("model"), str):
            entries[entry["name"]] = entry["model"]
    return {name: PACKAGED_PROVIDERS.get(model, model) for name, model in entries.items()}


def vector_folder(bundle: Bundle, corpus: str, ranker: str) -> str:
    """The folder (under evidence/<corpus>/) of the vectors a dense ranker ranks by, by this file's tables and
    the declared model entries: a shipped entry's own folder, ``embeddings/NAME`` for a declared entry NAME,
    else dense's ``embeddings``."""
    if ranker in SHIPPED_VECTORS:
        return SHIPPED_VECTORS[ranker][0]
    if ranker not in SHIPPED_RANKERS and ranker in declared_models(bundle, corpus):
        return f"{VECTORS}/{ranker}"
    return VECTORS


def folder_models(bundle: Bundle, corpus: str) -> dict[str, str]:
    """The model each model entry's vector folder must hold, by folder (shipped and declared entries)."""
    found = {folder: model for folder, model in SHIPPED_VECTORS.values()}
    for name, model in declared_models(bundle, corpus).items():
        if name not in SHIPPED_RANKERS:
            found[f"{VECTORS}/{name}"] = model
    return found


@dataclass(frozen=True)
class Publication:
    """What a corpus's bundle publishes, decided by its inputs and the recorded command, never by the bundle's
    own word: its texts unless its sitegen.json says ``"publish": "redacted"`` or the command names it with
    ``--redact``, and its vectors unless it is redacted without ``--publish-vectors``."""

    redacted: bool
    vectors: bool
    referenced: bool = False  # --reference NAME: every text input, chunk file and matrix of vectors held
    reference_above: int = BuildCommand.reference_above  # any of them larger than this held

    def held(self, size: int) -> bool:
        """Whether a text input, chunk file or matrix of vectors of ``size`` bytes is held by reference (a redacted
        corpus's texts and withheld vectors aside)."""
        return self.referenced or size > self.reference_above

    def as_dict(self) -> dict[str, Any]:
        """``corpus.json``'s ``publish``."""
        referenced = {"referenced": True} if self.referenced else {}
        return {"mode": "redacted" if self.redacted else "full", "vectors": self.vectors} | referenced


def publication(bundle: Bundle, corpus: str) -> Publication:
    rel = f"evidence/{corpus}/inputs/sitegen.json"
    config = bundle.json(rel) if (bundle.site / rel).is_file() else {}
    command = recorded_command(bundle)
    redacted = config.get("publish") == "redacted" or corpus in command.redact
    vectors = not redacted or command.publish_vectors
    return Publication(redacted, vectors, corpus in command.reference, command.reference_above)


def expected_rankers(bundle: Bundle, corpus: str) -> dict[str, str]:
    """Every run this corpus must have, with why: the rankers the recorded command asks for (every shipped
    ranker unless it names some with --ranker, each with what it fuses), less the filtered ones where no
    question has a filter and the PostgreSQL ones postgres.json says did not run, plus the corpus's own
    runs, --run files, --retriever runs and the fusions inputs/sitegen.json declares."""
    command, inputs = recorded_command(bundle), bundle.inputs(corpus)
    asked: list[str] = []

    reranks = declared_reranks(bundle, corpus)

    def place(name: str) -> None:
        if name in PINNED_PARAMS:
            components = PINNED_PARAMS[name].get("components", [])
        elif name in reranks:
            components = reranks[name][1]["components"]
        else:  # a ranker sitegen does not ship (a --ranker plugin): what its run fuses, checked by its verifier
            present = bundle.has(f"evidence/{corpus}/runs/{name}.json")
            components = (bundle.run(corpus, name)["params"].get("components") or []) if present else []
        for component in components:
            place(component)
        if name not in asked:
            asked.append(name)

    for name in command.rankers or SHIPPED_RANKERS:
        place(name)
    why = "the recorded command names it with --ranker" if command.rankers else "the recorded command runs every ranker"
    filters = any(q["filter"] for q in inputs.queries.values())
    dropped: set[str] = set()
    need: dict[str, str] = {}
    for name in asked:
        pinned = PINNED_PARAMS.get(name, {})
        if (pinned.get("filtered") and not filters) or set(pinned.get("components", [])) & dropped:
            dropped.add(name)
        else:
            need[name] = why
    for path in sorted((bundle.site / "evidence" / corpus / "inputs" / "runs").glob("*.trec")):
        need[path.stem] = f"inputs/runs/{path.name} is among the inputs"
    for name, (where, _) in command.runs.items():
        if where == corpus:
            need[name] = f"the recorded command scores it with --run {name}={where}:..."
    for name in command.retrievers:
        need[name] = f"the recorded command runs it with --retriever {name}=..."
    for name in declared_models(bundle, corpus):
        if name not in need:
            need[name] = "the recorded command (--model) or inputs/sitegen.json declares it as a model entry"
    for name in declared_fusions(bundle, corpus):
        need[name] = "inputs/sitegen.json declares it among its fusions"
    for name in reranks:
        need[name] = "inputs/sitegen.json declares it among its reranks"
    return need


def check_choices(check: Check, bundle: Bundle, corpus: str) -> str:
    """The rankers the bundle holds are those the recorded command and the inputs call for, no more, no fewer;
    the corpora are those its --only names. Without this, leaving out a ranker that lost and rewriting the
    command would pass every other check."""
    command, need = recorded_command(bundle), expected_rankers(bundle, corpus)
    present = set(bundle.rankers(corpus))
    rel = f"evidence/{corpus}/postgres.json"
    not_run = set(bundle.json(rel).get("not_run") or {}) if (bundle.site / rel).is_file() else set()
    postgres = {r for r in need if r in NEEDS_POSTGRES}
    if not_run and not_run != postgres:
        check.fail(
            f"{rel}: not_run names {sorted(not_run)}; when PostgreSQL fails every ranker that needs it is not run: "
            f"{sorted(postgres)}"
        )
    for name, reason in need.items():
        if name not in present and name not in not_run:
            check.fail(f"evidence/{corpus}/runs/{name}.json: missing, and {reason}")
    for name in sorted(present - set(need)):
        check.fail(f"evidence/{corpus}/runs/{name}.json: ranker {name} is not one the recorded command calls for")
    listed = bundle.json("evidence/manifest.json").get("corpora")
    if command.only and sorted(set(command.only)) != listed:
        check.fail(f"evidence/manifest.json: corpora {listed!r}, the recorded command builds --only {command.only}")
    skipped = f"; {len(not_run)} not run (PostgreSQL)" if not_run else ""
    return f"{len(need) - len(not_run)} runs, as the recorded command and the inputs call for{skipped}"


def declared_fusions(bundle: Bundle, corpus: str) -> dict[str, dict[str, Any]]:
    """The fusions inputs/sitegen.json declares (``"fusions"``), as their runs must state them: k 60, 20
    candidates a list and weight 1 each unless the declaration says otherwise."""
    rel = f"evidence/{corpus}/inputs/sitegen.json"
    config = bundle.json(rel) if (bundle.site / rel).is_file() else {}
    declared = {}
    for entry in config.get("fusions", []) if isinstance(config.get("fusions"), list) else []:
        if not (isinstance(entry, dict) and isinstance(entry.get("name"), str)):
            continue
        components = list(entry.get("components", []))
        weights = entry.get("weights") or [1.0] * len(components)
        declared[entry["name"]] = {
            "components": components,
            "k": float(entry.get("k", _RRF["k"])),
            "candidates_per_list": entry.get("candidates", _RRF["candidates_per_list"]),
            "weights": {c: float(w) for c, w in zip(components, weights, strict=False)},
        }
    return declared


# The verifier of each scorer kind a corpus's sitegen.json may declare for a rerank stage, and the params its run
# must then state; candidates default to 50, a bi-encoder's embedding to the packaged model's ranker.
RERANK_SCORERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "bi-encoder": ("bi-encoder rerank", ("embedding",)),
    "cross-encoder": ("cross-encoder rerank", ("model", "max_length")),
    "hook": ("hook rerank", ("hook",)),
}
RERANK_DEFAULTS = {"candidates": 50, "embedding": "dense", "max_length": None}


def declared_reranks(bundle: Bundle, corpus: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """The rerank stages inputs/sitegen.json declares (``"reranks"``): name -> (verifier, the params its run must
    state). An entry of an unknown scorer kind is left out, and its run is then refused as a ranker nobody
    declared."""
    rel = f"evidence/{corpus}/inputs/sitegen.json"
    config = bundle.json(rel) if (bundle.site / rel).is_file() else {}
    declared = {}
    for entry in config.get("reranks", []) if isinstance(config.get("reranks"), list) else []:
        scorer = entry.get("scorer") if isinstance(entry, dict) else None
        if (
            not (isinstance(entry.get("name"), str) and isinstance(scorer, dict))
            or scorer.get("kind") not in RERANK_SCORERS
        ):
            continue
        verifier, keys = RERANK_SCORERS[scorer["kind"]]
        first = entry.get("first_stage")
        declared[entry["name"]] = (
            verifier,
            {
                "first_stage": first,
                "components": [first],
                "candidates": entry.get("candidates", RERANK_DEFAULTS["candidates"]),
                "scorer": scorer["kind"],
                **{k: scorer.get(k, RERANK_DEFAULTS.get(k)) for k in keys},
            },
        )
    return declared


def pinned_params_problems(ranker: str, params: dict[str, Any]) -> list[str]:
    """How a shipped ranker's stated params differ from this file's pins (empty: they agree)."""
    problems = []
    for key, want in PINNED_PARAMS.get(ranker, {}).items():
        if key == "stop_words_sha256":
            stop = params.get("stop_words")
            got = hashlib.sha256(json.dumps(stop).encode("utf-8")).hexdigest() if isinstance(stop, list) else None
            if got != want:
                problems.append(f"its stop list has sha256 {got}, the shipped list's is {want}")
        elif params.get(key, False if key == "filtered" else None) != want:
            problems.append(f"{key} is {params.get(key)!r}, the shipped {ranker} has {want!r}")
    return problems


# What each verifier's check of a run's own lists rests on: the bundled inputs, the stored vectors (which only
# `sitegen audit --reembed` can hold to the model), PostgreSQL (only `sitegen audit --postgres` reruns it) or an
# external source (the ranking cannot be reproduced at all). A fusion's rest on its components'. A row resting
# on PostgreSQL or an external source, and any fusion over it, is never marked best over a verified one.
VERIFIER_BASIS: dict[str, tuple[str, ...]] = {
    "okapi-bm25": ("inputs",),
    "exact cosine": ("vectors",),
    "pgvector-hnsw": ("vectors",),
    "postgres-tsvector": ("postgres",),
    "external trec run": ("external",),
    "reciprocal rank fusion": (),
    "postgres-hybrid-sql": (),
    "bi-encoder rerank": ("vectors",),
    "cross-encoder rerank": ("model",),
    "hook rerank": ("external",),
}
BASIS_ORDER = ("inputs", "vectors", "postgres", "external", "model")
RECOMPUTABLE_BASIS = frozenset({"inputs", "vectors"})


def _components(bundle: Bundle, corpus: str, name: str) -> list[str]:
    return bundle.run(corpus, name)["params"].get("components") or []


def _own_basis(bundle: Bundle, corpus: str, name: str) -> tuple[str, ...]:
    """The basis of a run's own lists; none for a run this audit refuses to check (its run check says why)."""
    try:
        return VERIFIER_BASIS[expected_contract(bundle, corpus, name, bundle.run(corpus, name))[1]]
    except AuditError:
        return ()


def verification_basis(bundle: Bundle, corpus: str, rankers: list[str]) -> dict[str, list[str]]:
    """What this audit's check of each ranker's lists rests on, its own basis and its components', by this
    file's tables, not by what the runs declare."""

    def rests_on(name: str) -> set[str]:
        if name not in rankers:
            return set()
        return set(_own_basis(bundle, corpus, name)).union(*(rests_on(c) for c in _components(bundle, corpus, name)))

    return {name: [b for b in BASIS_ORDER if b in rests_on(name)] for name in rankers}


def unverified_rankers(bundle: Bundle, corpus: str, rankers: list[str]) -> dict[str, list[str]]:
    """Each ranker whose lists this audit cannot recompute, with the rankers (itself, then its components')
    that make it so."""

    def rests_on(name: str) -> list[str]:
        if name not in rankers:
            return []
        own = [] if set(_own_basis(bundle, corpus, name)) <= RECOMPUTABLE_BASIS else [name]
        return list(dict.fromkeys([*own, *(r for c in _components(bundle, corpus, name) for r in rests_on(c))]))

    return {name: found for name in rankers if (found := rests_on(name))}


def family_of(bundle: Bundle, corpus: str, ranker: str, run: dict[str, Any]) -> str | None:
    """The family :func:`expected_contract` gives, or None where the run check reports why there is none."""
    try:
        return expected_contract(bundle, corpus, ranker, run)[0]
    except AuditError:
        return None


def expected_contract(bundle: Bundle, corpus: str, ranker: str, run: dict[str, Any]) -> tuple[str, str]:
    """(family, verifier) for a run, decided by this file's table and the inputs, never by the run alone."""
    if ranker in SHIPPED_RANKERS:
        return SHIPPED_RANKERS[ranker]
    if (bundle.site / f"evidence/{corpus}/inputs/runs/{ranker}.trec").is_file():
        return EXTERNAL
    if ranker in (reranks := declared_reranks(bundle, corpus)):
        return "rerank", reranks[ranker][0]
    family = (run.get("contract") or {}).get("family")
    if family not in RECOMPUTED_FAMILIES:
        raise AuditError(
            f"evidence/{corpus}/runs/{ranker}.json: ranker {ranker} is not one sitegen ships and has no run file in "
            f"the inputs; it declares family {family!r}, but only a lexical, dense or fusion ranker, which this "
            "audit recomputes, may be added"
        )
    return family, RECOMPUTED_FAMILIES[family]


def check_run(check: Check, bundle: Bundle, corpus: str, ranker: str) -> str:
    rel = f"evidence/{corpus}/runs/{ranker}.json"
    run, inputs = bundle.run(corpus, ranker), bundle.inputs(corpus)
    if run.get("schema_version") not in (1, 2, RUN_SCHEMA_VERSION):
        check.fail(f"{rel}: schema_version is {run.get('schema_version')!r}, this audit reads runs of 1 to 3")
    for key, want in (("corpus", corpus), ("ranker", ranker)):
        if run.get(key) != want:
            check.fail(f"{rel}: {key} is {run.get(key)!r}, expected {want!r}")
    depth = run.get("depth")
    if type(depth) is not int or depth < 1:
        raise AuditError(f"{rel}: depth {depth!r} is not a positive integer")
    family, verifier = expected_contract(bundle, corpus, ranker, run)
    declared = run.get("contract") or {}
    params = run["params"]
    stated = {
        "family": (declared.get("family"), family),
        "verifier": (declared.get("verifier"), verifier),
        "params.method": (params.get("method"), verifier),
        "components": (declared.get("components"), params.get("components", [])),
        "filtered": (declared.get("filtered"), bool(params.get("filtered"))),
    }
    for key, (got, want) in stated.items():
        if got != want:
            check.fail(f"{rel}: ranker {ranker}: {key} is {got!r}, expected {want!r}; checked as {family}: {verifier}")
    if depth != (asked := recorded_command(bundle).depth):
        check.fail(f"{rel}: depth {depth}, the recorded command ranks every ranker to {asked}")
    for problem in pinned_params_problems(ranker, params):
        check.fail(f"{rel}: ranker {ranker}: {problem}")
    declared = declared_fusions(bundle, corpus).get(ranker)
    if declared is not None:
        for key, want in declared.items():
            if params.get(key) != want:
                check.fail(
                    f"{rel}: fusion {ranker}: {key} is {params.get(key)!r}, inputs/sitegen.json declares {want!r}"
                )
    stage = declared_reranks(bundle, corpus).get(ranker) if ranker not in PINNED_PARAMS else None
    for key, want in (stage[1] if stage is not None else {}).items():
        if params.get(key) != want:
            check.fail(f"{rel}: rerank {ranker}: {key} is {params.get(key)!r}, inputs/sitegen.json declares {want!r}")
    if family == "dense" and (ranker in PINNED_PARAMS or ranker in declared_models(bundle, corpus)):
        folder = vector_folder(bundle, corpus, ranker)
        want = folder_models(bundle, corpus).get(folder, PACKAGED_MODEL["model"])
        index = bundle.json(f"evidence/{corpus}/{folder}/index.json")
        if "supplied" not in index and index.get("model") != want:
            check.fail(
                f"{rel}: {ranker} ranks by vectors of model {index.get('model')!r}, not {want}"
                + (", and the corpus supplied no vectors" if folder == VECTORS else "")
            )
    if sorted(run["queries"]) != sorted(inputs.queries):
        check.fail(f"{rel}: its query ids differ from inputs/queries.jsonl's")
    for qid, hits in run["queries"].items():
        ids, ranks = [h["doc_id"] for h in hits], [h["rank"] for h in hits]
        if ranks != list(range(1, len(hits) + 1)):
            bad = next(i for i, r in enumerate(ranks, start=1) if r != i)
            check.fail(f"{rel}: query {qid}: rank fields are not 1..{len(hits)}: hit {bad} has rank {ranks[bad - 1]}")
        # Only an external run may name passages the corpus lacks; its own check lists them.
        foreign = {d for d in ids if d not in inputs.doc_text} if (family, verifier) != EXTERNAL else set()
        if len(hits) > depth or len(set(ids)) != len(ids) or foreign:
            check.fail(f"{rel}: query {qid}: more than {depth} hits, a repeated doc id or a doc id not in the inputs")
    detail = VERIFIERS[verifier](check, bundle, corpus, run, rel)
    done = "checked" if check.needs else "recomputed"
    return f"{sum(map(len, run['queries'].values()))} hits {done} ({family}: {verifier}): {detail}"


def check_trec(check: Check, bundle: Bundle, corpus: str, ranker: str) -> str:
    rel = f"evidence/{corpus}/runs/{ranker}.trec"
    run = bundle.run(corpus, ranker)
    blocks: dict[str, list[list[str]]] = {}
    last = None
    for number, line in enumerate(bundle.lines(rel), start=1):
        cols = line.split()
        if len(cols) != 6 or cols[1] != "Q0" or cols[5] != ranker or not re.fullmatch(r"[0-9]+", cols[4]):
            check.fail(f"{rel}: line {number}: expected 'qid Q0 docid rank score {ranker}' with an integer score")
            continue
        cols[0], cols[2] = unquote(cols[0]), unquote(cols[2])  # ids: "%" and whitespace are percent-encoded
        if cols[0] != last and cols[0] in blocks:
            check.fail(f"{rel}: line {number}: query {cols[0]}'s lines are not together")
        blocks.setdefault(cols[0], []).append(cols)
        last = cols[0]
    for qid in sorted(set(blocks) - set(run["queries"])):
        check.fail(f"{rel}: query {qid} is not in {ranker}.json")
    for qid, hits in run["queries"].items():
        want, got = [h["doc_id"] for h in hits[:TREC_DEPTH]], [c[2] for c in blocks.get(qid, [])]
        if got != want:
            at = next((i for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w), min(len(got), len(want)))
            seen, json_doc = (x[at] if at < len(x) else "nothing" for x in (got, want))
            check.fail(f"{rel}: query {qid}: rank {at + 1} is doc {seen}, {ranker}.json has {json_doc}")
            continue
        for rank, cols in enumerate(blocks.get(qid, []), start=1):
            score = len(got) + 1 - rank  # n + 1 - rank, n = that query's hit count
            if cols[3] != str(rank) or int(cols[4]) != score:
                check.fail(
                    f"{rel}: query {qid}: doc {cols[2]}: rank, score {cols[3]}, {cols[4]}; expected {rank}, {score}"
                )
    return f"{sum(map(len, blocks.values()))} lines agree with {ranker}.json (top {TREC_DEPTH})"


def check_metrics(check: Check, bundle: Bundle, corpus: str, ranker: str) -> str:
    rel = f"evidence/{corpus}/metrics.json"
    where = f"{rel}: ranker {ranker}"
    inputs = bundle.inputs(corpus)
    bundle.run(corpus, ranker)  # a run that cannot be read fails this check first
    names = bundle.json(f"evidence/{corpus}/corpus.json").get("metrics")
    stored = bundle.json(rel).get(ranker)
    if not isinstance(names, list) or not names:
        raise AuditError(f"evidence/{corpus}/corpus.json: no 'metrics' list")
    if not isinstance(stored, dict) or not all(
        isinstance(stored.get(s), dict) for s in ("overall", "by_kind", "per_query")
    ):
        raise AuditError(f"{where}: missing, or without 'overall', 'by_kind' and 'per_query' objects")
    tol = TOLERANCES["metric_absolute"]

    def compare(label: str, got: Any, want: dict[str, float]) -> None:
        if not isinstance(got, dict) or sorted(got) != sorted(want):
            check.fail(
                f"{where}: {label}: metric names {sorted(got) if isinstance(got, dict) else got}, expected {names}"
            )
            return
        for name, value in want.items():
            if not _is_number(got[name]) or abs(got[name] - value) > tol:
                check.fail(f"{where}: {label}: {name} is {got[name]!r}, recomputed {value!r}")

    by_name = bundle.scores(corpus, ranker, names)  # only questions with a relevant passage are scored
    per_query = {q: {n: v[q] for n, v in zip(names, by_name, strict=True)} for q in scored_questions(inputs)}
    if sorted(stored["per_query"]) != sorted(per_query):
        check.fail(f"{where}: per_query has {sorted(stored['per_query'])}, expected {sorted(per_query)}")
    for qid, values in per_query.items():
        if qid in stored["per_query"]:
            compare(f"query {qid}", stored["per_query"][qid], values)

    def mean(qids: list[str]) -> dict[str, float]:
        return {n: math.fsum(per_query[q][n] for q in qids) / len(qids) if qids else 0.0 for n in names}

    groups: dict[str, list[str]] = {}
    for qid in per_query:
        groups.setdefault(inputs.queries[qid]["kind"], []).append(qid)
    if sorted(stored["by_kind"]) != sorted(groups):
        check.fail(f"{where}: by_kind has kinds {sorted(stored['by_kind'])}, expected {sorted(groups)}")
    for kind, qids in groups.items():
        if kind in stored["by_kind"]:
            compare(f"kind {kind}", stored["by_kind"][kind], mean(qids))
    compare("overall", stored["overall"], mean(list(per_query)))
    return f"{len(names)} metrics for {len(per_query)} questions, {len(groups)} kinds and overall"


def check_report(check: Check, bundle: Bundle, corpus: str) -> str:
    """report.json: the counts, best values, ranks of the right passage and samples the pages show."""
    rel = f"evidence/{corpus}/report.json"
    stored = bundle.json(rel)
    inputs = bundle.inputs(corpus)
    rankers = [r for r in bundle.json(f"evidence/{corpus}/corpus.json").get("rankers", []) if isinstance(r, str)]
    scored = [q for q in inputs.queries if any(g > 0 for g in inputs.qrels.get(q, {}).values())]
    kinds: dict[str, list[str]] = {}
    for qid in scored:
        kinds.setdefault(inputs.queries[qid]["kind"], []).append(qid)

    first: dict[str, dict[str, int | None]] = {}
    for qid in scored:
        grades = inputs.qrels[qid]
        first[qid] = {}
        for ranker in rankers:
            hits = bundle.run(corpus, ranker)["queries"].get(qid, [])
            first[qid][ranker] = next((i for i, h in enumerate(hits, 1) if grades.get(h["doc_id"], 0) > 0), None)
    names = [n for n in bundle.json(f"evidence/{corpus}/corpus.json").get("metrics", []) if isinstance(n, str)]
    cutoffs = [int(n.split("@")[1]) for n in names if n.startswith("hit@")]

    def hit_counts(qids: list[str]) -> dict[str, dict[str, int]]:
        return {
            r: {f"hit@{k}": sum(1 for q in qids if first[q][r] is not None and first[q][r] <= k) for k in cutoffs}
            for r in rankers
        }

    def mean_score(r: str, name: str, qids: list[str]) -> float:
        """One ranker's mean over these questions, recomputed from its run (every metric's scores at once); 0.0
        over no question, as built."""
        if not qids:
            return 0.0
        by_question = bundle.scores(corpus, r, [*names, name])[-1]
        return math.fsum(by_question[q] for q in qids) / len(qids)

    unverified = unverified_rankers(bundle, corpus, rankers)
    competing = [r for r in rankers if r not in unverified] or rankers

    def best(qids: list[str], name: str) -> list[str]:
        """Verified rankers with the highest mean, recomputed from the runs (not read from metrics.json)."""
        values = {r: mean_score(r, name, qids) for r in competing}
        top = max(values.values())
        return [r for r, v in values.items() if top - v <= 1e-12]

    def clear(qids: list[str], name: str) -> bool:
        """Whether the highest mean leads the next by more than one question (1/n), recomputed from the runs."""
        values = [mean_score(r, name, qids) for r in competing]
        top = max(values, default=0.0)
        rest = [v for v in values if top - v > 1e-12]
        return bool(rest) and len(qids) > 0 and top - max(rest) > 1 / len(qids) + 1e-12

    disputes = []
    for qid in scored:
        right = [r for r in rankers if first[qid][r] == 1]
        if 0 < len(right) < len(rankers):
            wrong = [r for r in rankers if r not in right]
            disputes.append(
                {"query_id": qid, "kind": inputs.queries[qid]["kind"], "right_at_1": right, "wrong_at_1": wrong}
            )
    disputed = {d["query_id"] for d in disputes}
    want = {
        "questions": {"overall": len(scored), "by_kind": {k: len(v) for k, v in kinds.items()}},
        "hit_counts": {"overall": hit_counts(scored), "by_kind": {k: hit_counts(v) for k, v in kinds.items()}},
        "basis": verification_basis(bundle, corpus, rankers),
        "unverified": unverified,
        "best": {
            "overall": {n: best(scored, n) for n in names},
            "by_kind": {k: {n: best(qids, n) for n in names} for k, qids in kinds.items()},
        },
        "best_clear": {
            "overall": {n: clear(scored, n) for n in names},
            "by_kind": {k: {n: clear(qids, n) for n in names} for k, qids in kinds.items()},
        },
        "first_relevant_rank": first,
        "rank1_disagreements": disputes,
        "wins_losses": {
            r: {
                "right_at_1": sum(1 for q in scored if first[q][r] == 1),
                "only_right_at_1": sum(1 for d in disputes if d["right_at_1"] == [r]),
                "only_wrong_at_1": sum(1 for d in disputes if d["wrong_at_1"] == [r]),
            }
            for r in rankers
        },
        "samples": [
            {"kind": k, "query_id": next((q for q in qids if q in disputed), qids[0])} for k, qids in kinds.items()
        ],
    }
    want["failures"] = _expected_failures(bundle, corpus, rankers, scored, inputs)
    judged = _expected_judged(bundle, corpus, rankers, scored, inputs)
    if not _close(stored.get("judged"), judged, TOLERANCES["metric_absolute"]):
        check.fail(f"{rel}: judged: stored {stored.get('judged')!r}, recomputed {judged!r}")
    for key, value in want.items():
        got = stored.get(key)
        if got == value:
            continue
        if isinstance(got, dict) and isinstance(value, dict) and sorted(got) == sorted(value):
            for sub in value:
                if got[sub] != value[sub]:
                    check.fail(f"{rel}: {key}.{sub}: stored {got[sub]!r}, recomputed {value[sub]!r}")
        else:
            check.fail(f"{rel}: {key}: stored {got!r}, recomputed {value!r}")
    return f"{len(want)} tables recomputed for {len(scored)} questions and {len(rankers)} rankers"


# What each verifier's lists are made of, for the failure taxonomy (sitegen.scoring.diagnostics.signal).
SIGNAL_OF_VERIFIER = {
    "okapi-bm25": "lexical",
    "postgres-tsvector": "lexical",
    "exact cosine": "dense",
    "pgvector-hnsw": "dense",
    "reciprocal rank fusion": "fusion",
    "postgres-hybrid-sql": "fusion",
    "external trec run": "other",
    "bi-encoder rerank": "fusion",  # a list made from another ranker's list, as sitegen's signal() says
    "cross-encoder rerank": "fusion",
    "hook rerank": "fusion",
}
FAILURE_DEPTH = 10
FAILURE_CLASSES = ("all-miss", "only-lexical", "only-dense", "every-family", "only-fusion", "other")
JUDGED_DEPTH = 10
JUDGED_GAP = 0.1


def _expected_failures(bundle: Bundle, corpus: str, rankers: list[str], scored: list[str], inputs: Inputs) -> dict:
    """report.json's failures: each scored question's class at k = 10 and what each fusion lost or rescued,
    from the runs and this file's own table of what each verifier's lists are made of."""
    signal = {}
    for r in rankers:
        try:
            signal[r] = SIGNAL_OF_VERIFIER.get(expected_contract(bundle, corpus, r, bundle.run(corpus, r))[1], "other")
        except AuditError:
            signal[r] = "other"
    top = {r: bundle.run(corpus, r)["queries"] for r in rankers}
    questions, lost, rescued = {}, {}, {}
    fusions = [r for r in rankers if signal[r] == "fusion"]
    lost = {f: [] for f in fusions}
    rescued = {f: [] for f in fusions}
    for q in scored:
        relevant = {d for d, g in inputs.qrels[q].items() if g > 0}
        found = {r for r in rankers if any(h["doc_id"] in relevant for h in top[r].get(q, [])[:FAILURE_DEPTH])}
        made_of = {signal[r] for r in found}
        if not found:
            questions[q] = "all-miss"
        elif "lexical" in made_of and "dense" in made_of:
            questions[q] = "every-family"
        elif "lexical" in made_of or "dense" in made_of:
            questions[q] = "only-lexical" if "lexical" in made_of else "only-dense"
        else:
            questions[q] = "only-fusion" if "fusion" in made_of else "other"
        for f in fusions:
            parts = [c for c in _components(bundle, corpus, f) if c in rankers]
            if any(c in found for c in parts) and f not in found:
                lost[f].append(q)
            if not any(c in found for c in parts) and f in found:
                rescued[f].append(q)
    by_kind: dict[str, dict[str, int]] = {}
    for q in scored:
        counts = by_kind.setdefault(inputs.queries[q]["kind"], dict.fromkeys(FAILURE_CLASSES, 0))
        counts[questions[q]] += 1
    return {
        "k": FAILURE_DEPTH,
        "classes": list(FAILURE_CLASSES),
        "signals": {s: [r for r in rankers if signal[r] == s] for s in ("lexical", "dense", "fusion", "other")},
        "questions": questions,
        "counts": {"overall": {c: list(questions.values()).count(c) for c in FAILURE_CLASSES}, "by_kind": by_kind},
        "fusion_lost": lost,
        "fusion_rescued": rescued,
    }


def _expected_judged(bundle: Bundle, corpus: str, rankers: list[str], scored: list[str], inputs: Inputs) -> dict:
    """report.json's judged: judged@10 (judged passages in the top 10 over 10, grade 0 counted as judged), nDCG@10
    and the condensed nDCG@10 (unjudged passages dropped before the cut), per ranker over the scored questions."""
    rows = {}
    for r in rankers:
        queries = bundle.run(corpus, r)["queries"]
        share, plain, condensed = [], [], []
        for q in scored:
            ids = [h["doc_id"] for h in sorted(queries.get(q, []), key=lambda h: h["rank"])]
            grades = inputs.qrels[q]
            share.append(len([d for d in ids[:JUDGED_DEPTH] if d in grades]) / JUDGED_DEPTH)
            plain.append(metric(f"ndcg@{JUDGED_DEPTH}", ids, grades))
            condensed.append(metric(f"ndcg@{JUDGED_DEPTH}", [d for d in ids if d in grades], grades))
        n = len(scored)
        rows[r] = {
            "judged": math.fsum(share) / n if n else 0.0,
            "ndcg": math.fsum(plain) / n if n else 0.0,
            "ndcg_condensed": math.fsum(condensed) / n if n else 0.0,
        }
    highest = max((row["judged"] for row in rows.values()), default=0.0)
    for row in rows.values():
        row["low"] = highest - row["judged"] > JUDGED_GAP + 1e-12
    sizes = [len(inputs.qrels[q]) for q in scored]
    return {
        "k": JUDGED_DEPTH,
        "gap": JUDGED_GAP,
        "questions": len(scored),
        "per_question": {
            "mean": math.fsum(sizes) / len(sizes) if sizes else 0.0,
            "min": min(sizes, default=0),
            "max": max(sizes, default=0),
        },
        "relevant": {q: sum(1 for g in inputs.qrels[q].values() if g > 0) for q in scored},
        "rankers": rows,
    }


def _close(got: Any, want: Any, tol: float) -> bool:
    """Structural equality with numbers compared to a tolerance."""
    if isinstance(want, dict):
        return isinstance(got, dict) and sorted(got) == sorted(want) and all(_close(got[k], want[k], tol) for k in want)
    if isinstance(want, list):
        return (
            isinstance(got, list)
            and len(got) == len(want)
            and all(_close(g, w, tol) for g, w in zip(got, want, strict=True))
        )
    if isinstance(want, float) and not isinstance(want, bool):
        return _is_number(got) and abs(got - want) <= tol
    return got == want


# The fixed rules of the paired tests (sitegen.scoring.statistics), pinned here: which exact method a test uses,
# how many Monte Carlo rounds a family needs, the power and the smallest sample given an interval.
LATTICE = 2520  # lcm(1..10): hit, precision and mrr@k<=10 differences are whole multiples of 1/2520
LATTICE_BUDGET = 1 << 26  # n * sum(|units|) up to which the lattice distribution is computed
SPLIT_HALF_MAX = 44  # differing questions up to which all 2^n sign patterns are counted
MC_FACTOR = 20  # Monte Carlo rounds >= 20 m / alpha
MIN_INTERVAL_QUESTIONS = 20
POWER = 0.8
HEADLINE_METRIC = "ndcg@10"
DETECTABLE_EXAMPLES = (0.02, 0.05)


def _lattice_sign_p(units: list[int]) -> float:
    """The exact sign-flip p of integer differences: the differences of one magnitude v, c of them, add
    v * (c - 2j) with probability C(c, j) / 2^c; those distributions are convolved magnitude by magnitude.

    Only the sums that can occur are held: with R the magnitudes added so far, -R, -R + 2, ..., R (a sum moves
    by steps of 2v). The sums left out have probability 0.0 exactly, so each held probability is the same
    float as one convolved over every integer from -total to total would be."""
    step = math.gcd(*units)  # the sums live on this grid; dividing it out leaves every probability as it is
    magnitudes = Counter(abs(u) // step for u in units if u)
    units = [u // step for u in units] if step else units
    observed = abs(sum(units))
    if observed == 0:
        return 1.0
    dist, reach = np.ones(1), 0  # dist[m]: the probability of the sum 2m - reach
    for v, c in sorted(magnitudes.items()):
        mixed, product = np.zeros(reach + v * c + 1), np.empty(reach + 1)
        for j in range(c + 1):  # v * (c - 2j) moves the sum 2m - reach to 2(m + v(c - j)) - (reach + v c)
            at = v * (c - j)
            np.multiply(dist, math.comb(c, j) / 2.0**c, out=product)
            mixed[at : at + reach + 1] += product
        dist, reach = mixed, reach + v * c
    outside = np.abs(2 * np.arange(reach + 1) - reach) >= observed
    return math.fsum(dist[outside].tolist())


def _pattern_sums(d: np.ndarray) -> np.ndarray:
    """sum(s * d) for every sign pattern s, in no particular order: each difference doubles the list, once
    added and once taken away, in place in one array."""
    out = np.zeros(2 ** len(d))
    for i, value in enumerate(d.tolist()):
        half = out[: 2**i]
        np.subtract(half, value, out=out[2**i : 2 ** (i + 1)])
        half += value
    return out


_SIGNS_KEPT = 1 << 27  # sign-flip draws kept for reuse across tests: 128 MB at most (5,000 questions x 25,000 rounds)


class _SignStream:
    """PCG64 seeded ``seed``'s 0/1 draws, ``Generator.integers(0, 2)``, kept as uint8 as far as they were read.
    A draw does not depend on how the draws are blocked (each 64-bit output gives two, the second kept in the
    generator for its next call), so every Monte Carlo test of one seed reads a prefix of this one stream."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.drawn = np.zeros(0, dtype=np.uint8)

    def first(self, count: int) -> np.ndarray:
        if count > self.drawn.size:  # at least doubled, so a family of tests draws the stream about once
            more = min(max(count, 2 * self.drawn.size), _SIGNS_KEPT) - self.drawn.size
            self.drawn = np.concatenate((self.drawn, self.rng.integers(0, 2, size=more).astype(np.uint8)))
            self.drawn.flags.writeable = False
        return self.drawn[:count]


@functools.lru_cache(maxsize=1)
def _sign_stream(seed: int) -> _SignStream:
    return _SignStream(seed)


def _sign_blocks(seed: int, rounds: int, n: int) -> Iterator[np.ndarray]:
    """The 0/1 signs of ``rounds`` rounds of n, PCG64 seeded ``seed``, in blocks of 1,000 rounds: read from
    the kept stream when it holds them (rounds x n at most ``_SIGNS_KEPT``), else drawn block by block."""
    kept = _sign_stream(seed).first(rounds * n) if rounds * n <= _SIGNS_KEPT else None
    rng = np.random.default_rng(seed) if kept is None else None
    for done in range(0, rounds, 1000):
        block = min(1000, rounds - done)
        if rng is not None:
            yield rng.integers(0, 2, size=(block, n))
        else:
            yield kept[done * n : (done + block) * n].reshape(block, n)


def _sign_test_p(d: np.ndarray, seed: int, rounds: int) -> tuple[float, int, str, str]:
    """The randomisation test as documented in sitegen/scoring/statistics.py, written independently.

    Zero differences are dropped; with n left: differences that are whole multiples of 1/2520 (within 1e-6)
    with n * sum(|d| * 2520) <= 2^26 get the exact lattice distribution; else n <= 44 counts all 2^n patterns
    (the two halves' sums met in sorted order); else PCG64 seeded ``seed`` draws 0/1 signs in blocks of 1,000
    rounds and p = (extreme + 1) / (rounds + 1). A pattern is extreme when |sum(s d)| >= |sum(d)| - 1e-12.
    Returns (p, n, method, kind)."""
    d = np.array([x for x in d.tolist() if x != 0], dtype=np.float64)
    n = len(d)
    if n == 0:
        return 1.0, 0, "no question differs", "lattice"
    scaled = d * LATTICE
    units = [round(x) for x in scaled.tolist()]
    on_lattice = all(abs(x - u) <= 1e-6 for x, u in zip(scaled.tolist(), units, strict=True))
    if on_lattice and n * sum(abs(u) for u in units) <= LATTICE_BUDGET:
        p = _lattice_sign_p(units)
        return p, n, f"exact: the sign-flip distribution over {n} questions (lattice)", "lattice"
    observed = abs(math.fsum(d.tolist()))
    if n <= SPLIT_HALF_MAX:
        if observed - 1e-12 <= 0:
            return 1.0, n, f"exact: all 2^{n} sign patterns (split-half)", "split-half"
        # Each half's sums are symmetric, bit for bit (s and -s give x and -x exactly), so the patterns at or
        # below -(observed - 1e-12) mirror those at or above it: count one side, twice.
        first = np.sort(_pattern_sums(d[: n // 2]))  # sorted, so the searches below stay in the cache
        second = np.sort(_pattern_sums(d[n // 2 :]))
        above = 0
        for start in range(0, first.size, 1 << 15):
            x = first[start : start + (1 << 15)]
            above += int(second.size * x.size - np.searchsorted(second, observed - 1e-12 - x, side="left").sum())
        return 2 * above / 2**n, n, f"exact: all 2^{n} sign patterns (split-half)", "split-half"
    extreme = 0
    for drawn in _sign_blocks(seed, rounds, n):
        flips = drawn.astype(np.float64)
        flips *= 2.0  # in place: -1 and +1, no more (block, n) temporaries
        flips -= 1.0
        extreme += int(np.count_nonzero(np.abs(flips @ d) >= observed - 1e-12))
    return (extreme + 1) / (rounds + 1), n, f"Monte Carlo, {rounds} rounds, seed {seed} (2^{n} patterns)", "monte-carlo"


def _bootstrap_intervals(columns: Sequence[np.ndarray], seed: int, rounds: int) -> list[tuple[float, float]]:
    """95% percentile interval of each column's mean, every column over the same n questions and resampled by
    the same PCG64 indices, drawn in blocks of 1,000 rounds. A block's draws become how often each question is
    drawn in each round, and every column's round means are one matrix product of those counts; a mean summed
    from counts differs from one summed in draw order in its last bits only, far inside the audit's tolerance.
    Memory: a few (1,000 x n) blocks and 8 bytes per round and column."""
    if not columns:
        return []
    d = np.column_stack([np.asarray(c, dtype=np.float64) for c in columns])
    n = d.shape[0]
    rng, means = np.random.default_rng(seed), np.empty((rounds, d.shape[1]))
    for done in range(0, rounds, 1000):
        block = min(1000, rounds - done)
        cells = rng.integers(0, n, size=(block, n)) + n * np.arange(block)[:, None]  # (round, question) as one
        counts = np.bincount(cells.ravel(), minlength=block * n).reshape(block, n).astype(np.float64)
        means[done : done + block] = counts @ d / n
    low, high = np.quantile(means, [0.025, 0.975], axis=0)
    return list(zip(low.tolist(), high.tolist(), strict=True))


def _bootstrap_interval(d: np.ndarray, seed: int, rounds: int) -> tuple[float, float]:
    """:func:`_bootstrap_intervals` of one column."""
    return _bootstrap_intervals([d], seed, rounds)[0]


def _adjusted(p: list[float], correction: str) -> list[float]:
    """Holm (step-down, running max) or Benjamini-Hochberg (step-up, running min) adjusted p-values."""
    m = len(p)
    ranked = sorted(range(m), key=lambda i: (p[i], i))
    out = [1.0] * m
    if correction == "holm":
        best = 0.0
        for j, i in enumerate(ranked):
            best = max(best, min(1.0, (m - j) * p[i]))
            out[i] = best
    else:
        best = 1.0
        for j in reversed(range(m)):
            best = min(best, min(1.0, m * p[ranked[j]] / (j + 1)))
            out[ranked[j]] = best
    return out


def _tukey_order_blocks(seed: int, rounds: int, n: int, k: int) -> Iterator[np.ndarray]:
    """Each round's row orders, (block, n, k) in blocks of 400,000 // (n k) rounds: PCG64 seeded ``seed`` draws
    uniform keys (n, k) per round, consecutively, and each row is ordered by a stable argsort of its keys."""
    rng, step = np.random.default_rng(seed), max(1, 400_000 // (n * k))
    for done in range(0, rounds, step):
        yield np.argsort(rng.random((min(step, rounds - done), n, k)), axis=2, kind="stable")


def _tukey_exact(x: np.ndarray) -> np.ndarray:
    """The exact Tukey p of each pair when (k!)**n row permutations are few: every combination enumerated."""
    n, k = x.shape
    means = x.mean(axis=0)
    observed = np.abs(means[:, None] - means[None, :]) - 1e-12
    ranges = []
    for combo in itertools.product(list(itertools.permutations(range(k))), repeat=n):
        col = np.zeros(k)
        for q, perm in enumerate(combo):  # the count does not depend on the enumeration order
            col += x[q][list(perm)]
        col /= n
        ranges.append(col.max() - col.min())
    r = np.array(ranges)
    return (r[None, None, :] >= observed[:, :, None]).sum(axis=2) / math.factorial(k) ** n


def _tukey_ps(xs: Sequence[np.ndarray], seed: int, rounds: int) -> list[tuple[np.ndarray, str, bool]]:
    """Randomised Tukey HSD as documented in experiments.py, written independently, for each (n, k) matrix.

    Rows (questions) are permuted across columns (rankers); a round's statistic is max - min of the column means
    and pair (i, j) counts the rounds with statistic >= |mean_i - mean_j| - 1e-12. (k!)**n <= rounds enumerates
    every combination (itertools.product of itertools.permutations) for the exact share; otherwise PCG64 seeded
    ``seed`` draws uniform keys (n, k) per round, consecutively, and each row is ordered by a stable argsort of
    its keys; p = (extreme + 1) / (rounds + 1). Rounds here are drawn in blocks of another size than the build's.
    The orders depend on the seed and the shape only, so the matrices of one shape read each block of them once.
    Returns (p, method, exact) per matrix."""
    found: dict[int, tuple[np.ndarray, str, bool]] = {}
    shapes: dict[tuple[int, int], list[int]] = {}
    for i, x in enumerate(xs):
        n, k = x.shape
        if math.factorial(k) ** n <= rounds:
            total = math.factorial(k) ** n
            found[i] = (_tukey_exact(x), f"exact enumeration of ({k}!)^{n} = {total} row permutations", True)
        else:
            shapes.setdefault((n, k), []).append(i)
    for (n, k), members in shapes.items():
        observed = {}
        for i in members:
            means = xs[i].mean(axis=0)
            observed[i] = np.abs(means[:, None] - means[None, :]) - 1e-12
        values = {i: np.ascontiguousarray(xs[i]).ravel() for i in members}
        extreme = {i: np.zeros((k, k), dtype=np.int64) for i in members}
        starts = np.arange(n)[:, None] * k  # row q's scores from q * k on
        for order in _tukey_order_blocks(seed, rounds, n, k):
            at = order + starts
            for i in members:
                col = values[i][at].mean(axis=1)  # the shuffled (block, n, k) scores' column means
                r = col.max(axis=1) - col.min(axis=1)
                extreme[i] += (r[None, None, :] >= observed[i][:, :, None]).sum(axis=2)
        for i in members:
            method = f"Monte Carlo, {rounds} rounds, seed {seed} (({k}!)^{n} permutations)"
            found[i] = ((extreme[i] + 1) / (rounds + 1), method, False)
    for p, _, _ in found.values():
        np.fill_diagonal(p, 1.0)
    return [found[i] for i in range(len(xs))]


def _tukey_p(x: np.ndarray, seed: int, rounds: int) -> tuple[np.ndarray, str, bool]:
    """:func:`_tukey_ps` of one matrix."""
    return _tukey_ps([x], seed, rounds)[0]


def _wins_ties_losses(d: np.ndarray) -> dict[str, Any]:
    """Per-question wins, exact ties and losses of the first ranker, and Cohen's d_z = mean(d) / sd(d, n - 1):
    0 when every difference is 0, None when all are equal but nonzero or there is one question."""
    out: dict[str, Any] = {
        "wins": int((d > 0).sum()),
        "ties": int((d == 0).sum()),
        "losses": int((d < 0).sum()),
        "effect_size": None,
    }
    values = d.tolist()
    if values and len(set(values)) == 1:
        out["effect_size"] = 0.0 if values[0] == 0 else None
    elif len(values) > 1:
        mu = math.fsum(values) / len(values)
        out["effect_size"] = mu / math.sqrt(math.fsum((v - mu) ** 2 for v in values) / (len(values) - 1))
    return out


def _maximal_cliques(items: list[str], apart: set[frozenset[str]]) -> list[list[str]]:
    """Every maximal set of items no two of which are apart (Bron-Kerbosch with Tomita's pivot: only the candidates
    apart from the pivot start a branch, so rankers that nothing separates cost one branch, not 2^k): the rank
    groups."""
    found: list[list[str]] = []

    def near(a: str, b: str) -> bool:
        return a != b and frozenset((a, b)) not in apart

    def extend(clique: list[str], candidates: list[str], excluded: list[str]) -> None:
        if not candidates and not excluded:
            found.append(clique)
            return
        pivot = max([*candidates, *excluded], key=lambda u: sum(near(u, c) for c in candidates))
        for item in [c for c in candidates if not near(c, pivot)]:
            extend([*clique, item], [c for c in candidates if near(c, item)], [x for x in excluded if near(x, item)])
            candidates = [c for c in candidates if c != item]
            excluded = [*excluded, item]

    if items:
        extend([], list(items), [])
    place = {item: i for i, item in enumerate(items)}
    return sorted((sorted(c, key=place.__getitem__) for c in found), key=lambda c: [place[x] for x in c])


def _letters(n: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return alphabet[n] if n < len(alphabet) else f"g{n + 1}"


def _z_sum(alpha: float, power: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)


def _expected_significance(
    rows_of: dict[str, list[list[str]]],
    scores_of: Callable[[str, str], list[float]],
    questions: int,
    correction: str,
    unverified: set[str],
) -> dict[str, Any]:
    """significance as sitegen.scoring.significance documents it, recomputed: the distinct rows, the family and
    its tests, the notes, Tukey over the rows, the detectable effects, the rank groups and the headline."""
    seed, rounds, alpha, minimum = (SIGNIFICANCE_SETTINGS[k] for k in ("seed", "rounds", "alpha", "min_differing"))
    metrics = SIGNIFICANCE_SETTINGS["metrics"]
    shown = questions >= MIN_INTERVAL_QUESTIONS
    reps_of = {m: [r[0] for r in rows_of[m]] for m in metrics}
    ends = [(a, b, m) for m in metrics for i, a in enumerate(reps_of[m]) for b in reps_of[m][i + 1 :]]
    alone = [(r, m) for m in metrics for r in reps_of[m]]
    # every interval at once: the pairs' differences and the rows' scores resampled by the same draws
    columns = [np.array(scores_of(a, m)) - np.array(scores_of(b, m)) for a, b, m in ends]
    columns += [np.array(scores_of(r, m)) for r, m in alone]
    intervals: dict[tuple[str, ...], tuple[Any, Any]] = {key: (None, None) for key in [*ends, *alone]}
    if shown:
        intervals.update(zip([*ends, *alone], _bootstrap_intervals(columns, seed, rounds), strict=True))
    pairs: list[dict[str, Any]] = []
    for m in metrics:
        reps = reps_of[m]
        for i, a in enumerate(reps):
            for b in reps[i + 1 :]:
                x, y = np.array(scores_of(a, m)), np.array(scores_of(b, m))
                d = x - y
                interval = intervals[a, b, m]
                differing = int(np.count_nonzero(d))
                pairs.append(
                    {
                        "a": a,
                        "b": b,
                        "metric": m,
                        "mean_a": math.fsum(x.tolist()) / questions,
                        "mean_b": math.fsum(y.tolist()) / questions,
                        "difference": math.fsum(d.tolist()) / questions,
                        "differing": differing,
                        "tested": differing >= minimum,
                        "method": None,
                        "p_method": None,
                        "p_value": None,
                        "p_adjusted": None,
                        "ci_low": interval[0],
                        "ci_high": interval[1],
                        "significant": None,
                        "note": None,
                        **_wins_ties_losses(d),
                        "tukey_p": None,
                        "tukey_significant": None,
                    }
                )
    family = [w for w in pairs if w["tested"]]
    size = len(family)
    mc_rounds = max(rounds, math.ceil(MC_FACTOR * size / alpha))
    for w in family:
        d = np.array(scores_of(w["a"], w["metric"])) - np.array(scores_of(w["b"], w["metric"]))
        w["p_value"], _, w["method"], w["p_method"] = _sign_test_p(d, seed, mc_rounds)
    for w, adj in zip(family, _adjusted([w["p_value"] for w in family], correction), strict=True):
        w["p_adjusted"], w["significant"] = adj, adj < alpha
    for w in pairs:  # note codes: the pages say them in words, sitegen's wording table
        if not w["tested"]:
            w["note"] = "too_few_differing"
        elif w["ci_low"] is not None:
            outside = w["ci_low"] > 0 or w["ci_high"] < 0
            if outside and not w["significant"]:
                w["note"] = "interval_not_corrected"
            elif w["significant"] and not outside:
                w["note"] = "interval_includes_zero"
    tukey = {}
    compared = [m for m in metrics if len(reps_of[m]) >= 2]
    matrices = [np.array([scores_of(r, m) for r in reps_of[m]], dtype=np.float64).T for m in compared]
    for m, (p, method, exact) in zip(compared, _tukey_ps(matrices, seed, rounds), strict=True):
        reps = reps_of[m]
        mine = [w for w in pairs if w["metric"] == m]
        for w in mine:
            w["tukey_p"] = float(p[reps.index(w["a"]), reps.index(w["b"])])
            w["tukey_significant"] = w["tukey_p"] < alpha
        tukey[m] = {
            "method": method,
            "exact": exact,
            "pairs": len(mine),
            "significant": sum(bool(w["tukey_significant"]) for w in mine),
            "adjusted_significant": sum(bool(w["significant"]) for w in mine),
        }
    per_test = alpha / max(1, size)
    detectable: dict[str, Any] = {}
    groups: dict[str, Any] = {}
    for m in metrics:
        reps = [r[0] for r in rows_of[m]]
        detectable[m] = None
        if len(reps) >= 2 and questions >= 2:
            spread = []
            for i, a in enumerate(reps):
                for b in reps[i + 1 :]:
                    d = (np.array(scores_of(a, m)) - np.array(scores_of(b, m))).tolist()
                    mu = math.fsum(d) / len(d)
                    spread.append(math.fsum((v - mu) ** 2 for v in d) / (len(d) - 1))
            sd = math.sqrt(math.fsum(spread) / len(spread))
            z = _z_sum(per_test, POWER)
            detectable[m] = {
                "sd": sd,
                "alpha_per_test": per_test,
                "mde": z * sd / math.sqrt(questions),
                "questions_for": {f"{e:g}": max(1, math.ceil((z * sd / e) ** 2 - 1e-9)) for e in DETECTABLE_EXAMPLES},
            }
        if not reps:
            continue
        mean = {r: math.fsum(scores_of(r, m)) / questions for r in reps}
        members = {r[0]: r for r in rows_of[m]}
        checked = {r: any(x not in unverified for x in members[r]) for r in reps}
        order = sorted(reps, key=lambda r: (not checked[r], -mean[r], reps.index(r)))
        apart = {frozenset((w["a"], w["b"])) for w in pairs if w["metric"] == m and w["significant"]}
        cliques = _maximal_cliques(order, apart)
        table = []
        for r in order:
            ci = intervals[r, m]
            table.append(
                {
                    "rankers": members[r],
                    "mean": mean[r],
                    "ci_low": ci[0],
                    "ci_high": ci[1],
                    "verified": checked[r],
                    "letters": "".join(_letters(i) for i, c in enumerate(cliques) if r in c),
                }
            )
        as_rows = [[order.index(r) for r in c] for c in cliques]
        groups[m] = {
            "rows": table,
            "groups": as_rows,
            "best_alone": len(order) > 1 and all(len(c) == 1 for c in as_rows if 0 in c),
        }
    headline = None
    top = groups.get(HEADLINE_METRIC)
    if top is not None and len(top["rows"]) >= 2:
        first, second = top["rows"][0]["rankers"][0], top["rows"][1]["rankers"][0]
        d = np.array(scores_of(first, HEADLINE_METRIC)) - np.array(scores_of(second, HEADLINE_METRIC))
        ci = (
            (None, None)
            if not shown
            else intervals.get((first, second, HEADLINE_METRIC)) or _bootstrap_interval(d, seed, rounds)
        )
        test = next(w for w in pairs if w["metric"] == HEADLINE_METRIC and {w["a"], w["b"]} == {first, second})
        headline = {
            "metric": HEADLINE_METRIC,
            "leader": 0,
            "runner_up": 1,
            "difference": math.fsum(d.tolist()) / questions,
            "ci_low": ci[0],
            "ci_high": ci[1],
            "tested": test["tested"],
            "p_adjusted": test["p_adjusted"],
            "significant": test["significant"],
            "same_group": any(0 in c and 1 in c for c in top["groups"]),
            "mde": detectable[HEADLINE_METRIC]["mde"] if detectable.get(HEADLINE_METRIC) else None,
        }
    return {
        "pairs": pairs,
        "family": {"tests": len(pairs), "excluded": len(pairs) - size, "size": size},
        "monte_carlo_rounds": mc_rounds,
        "intervals": shown,
        "methods": {k: sum(1 for w in family if w["p_method"] == k) for k in ("lattice", "split-half", "monte-carlo")},
        "identical": {m: [r for r in rows_of[m] if len(r) > 1] for m in metrics},
        "significant_uncorrected": sum(w["p_value"] < alpha for w in family),
        "significant_adjusted": sum(bool(w["significant"]) for w in family),
        "tukey": tukey,
        "detectable": detectable,
        "groups": groups,
        "headline": headline,
    }


def check_experiments(check: Check, bundle: Bundle, corpus: str) -> str:
    """experiments.json: RRF sweeps, held-out selection, paired tests, ablation and the unanswerable view.

    The randomised tests are re-run with the recorded seed and the documented numpy
    algorithm (PCG64 sign flips and bootstrap indices), so they must agree to the metric tolerance.
    """
    rel = f"evidence/{corpus}/experiments.json"
    if not (bundle.site / rel).is_file():
        return "no experiments in this bundle"
    stored = bundle.json(rel)
    inputs = bundle.inputs(corpus)
    tol = TOLERANCES["metric_absolute"]
    rankers = [r for r in bundle.json(f"evidence/{corpus}/corpus.json").get("rankers", []) if isinstance(r, str)]
    runs = {r: bundle.run(corpus, r) for r in rankers}
    ranking = {r: {q: [h["doc_id"] for h in hits] for q, hits in runs[r]["queries"].items()} for r in rankers}
    scored = [q for q in inputs.queries if any(g > 0 for g in inputs.qrels.get(q, {}).values())]

    def mean(values: list[float]) -> float:
        return math.fsum(values) / len(values) if values else 0.0

    def scores_of(ranker: str, name: str, qids: list[str] = scored) -> list[float]:
        """A ranker's per-question scores over these questions (the scored ones unless named), from its run."""
        by_question = bundle.scores(corpus, ranker, [name])[0]
        return [by_question[q] for q in qids]

    def compare(label: str, got: Any, want: Any) -> None:
        if not _close(got, want, tol):
            check.fail(f"{rel}: {label}: stored {got!r}, recomputed {want!r}")

    sweep_metrics = list(RRF_SWEEP_METRICS)  # what sitegen sweeps and selects on, whatever the file says
    compare("metrics", stored.get("metrics"), sweep_metrics)
    heldout = stored.get("heldout", {})
    seed, selection = SIGNIFICANCE_SETTINGS["seed"], SELECTION_METRIC  # pinned, never read from the bundle
    compare("heldout.seed", heldout.get("seed"), seed)
    compare("heldout.selection_metric", heldout.get("selection_metric"), SELECTION_METRIC)
    # the split: within each kind, numpy PCG64 seeded [seed, position of the kind] permutes the ids
    by_kind: dict[str, list[str]] = {}
    for q in scored:
        by_kind.setdefault(inputs.queries[q]["kind"], []).append(q)
    folds: dict[str, list[str]] = {"A": [], "B": []}
    for i, ids in enumerate(by_kind.values()):
        shuffled = [ids[j] for j in np.random.default_rng([seed, i]).permutation(len(ids))]
        half = (len(ids) + 1) // 2
        first, second = ("A", "B") if i % 2 == 0 else ("B", "A")
        folds[first] += shuffled[:half]
        folds[second] += shuffled[half:]
    order = {q: n for ids in by_kind.values() for n, q in enumerate(ids)}
    folds = {f: sorted(ids, key=lambda q: (order[q], q)) for f, ids in folds.items()}
    compare("heldout.folds", heldout.get("folds"), folds)
    two_list_fusions = [
        r
        for r in rankers
        if family_of(bundle, corpus, r, runs[r]) == "fusion" and len(runs[r]["params"]["components"]) == 2
    ]
    compare("sweeps: the fusions swept", sorted(stored.get("sweeps", {})), sorted(two_list_fusions) if scored else [])

    swept = list(dict.fromkeys([*sweep_metrics, selection]))
    measures = [_measure(m) for m in swept]
    for fusion, by_sweep in stored.get("sweeps", {}).items():
        comps = runs[fusion]["params"]["components"]
        # The fusion's dense component on its own, or its first component when none is dense.
        alone = next((c for c in comps if family_of(bundle, corpus, c, runs[c]) == "dense"), comps[0])
        for sweep, data in by_sweep.items():
            per_setting = []
            for n, row in enumerate(data["rows"]):
                p = row["params"]
                fused = {}
                for q in scored:
                    lists = {c: ranking[c].get(q, []) for c in comps}
                    f, _ = rrf(lists, p["k"], p["candidates"], dict(zip(comps, p["weights"], strict=True)))
                    fused[q] = sorted(f, key=lambda d: -f[d])
                by_question: dict[str, dict[str, float]] = {m: {} for m in swept}
                for q in scored:
                    for m, value in zip(swept, metrics_of(measures, fused[q], inputs.qrels[q]), strict=True):
                        by_question[m][q] = value
                per_setting.append(by_question)
                want = {m: mean(list(by_question[m].values())) for m in sweep_metrics}
                compare(f"sweeps.{fusion}.{sweep}.rows[{n}].overall", row["overall"], want)
            result = heldout["results"][fusion][sweep]
            default = next(n for n, r in enumerate(data["rows"]) if r["value"] == result["folds"][0]["default"])
            wins = significant_folds = 0
            for n, fold in enumerate(result["folds"]):
                tune, test = folds[fold["tune_on"]], folds[fold["test_on"]]
                sel = [mean([f[selection][q] for q in tune]) for f in per_setting]
                tied = [i for i, v in enumerate(sel) if max(sel) - v <= 1e-12]
                chosen = default if default in tied else tied[0]
                want_scores = {
                    "tuned": {m: mean([per_setting[chosen][m][q] for q in test]) for m in sweep_metrics},
                    "default": {m: mean([per_setting[default][m][q] for q in test]) for m in sweep_metrics},
                    "dense": {m: mean(scores_of(alone, m, test)) for m in sweep_metrics},
                }
                beats = want_scores["tuned"][selection] - want_scores["default"][selection] > 1e-12
                wins += beats
                label = f"heldout.{fusion}.{sweep}.folds[{n}]"
                compare(f"{label}.chosen", fold["chosen"], data["rows"][chosen]["value"])
                compare(f"{label}.dense_ranker", fold.get("dense_ranker"), alone)
                compare(f"{label}.scores", fold["scores"], want_scores)
                compare(f"{label}.tuned_beats_default", fold["tuned_beats_default"], beats)
                held = {"test_size": len(test), "p_value": None, "p_method": None, "significant": None}
                if test:  # the tuned setting against the default on the held-out questions, one test per fold
                    d = np.array([per_setting[chosen][selection][q] - per_setting[default][selection][q] for q in test])
                    alpha = SIGNIFICANCE_SETTINGS["alpha"]
                    mc = max(SIGNIFICANCE_SETTINGS["rounds"], math.ceil(MC_FACTOR / alpha))
                    p, _, _, kind = _sign_test_p(d, seed, mc)
                    held.update(p_value=p, p_method=kind, significant=p < alpha)
                significant_folds += bool(held["significant"])
                compare(f"{label} held-out test", {k: fold.get(k) for k in held}, held)
                size, count = len(tune), len(data["rows"])
                small = size < count
                compare(f"{label}.tune_size", fold.get("tune_size"), size)
                compare(f"{label}.too_small", fold.get("too_small"), small)
                compare(f"{label}.note", fold.get("note"), "fold_too_small" if small else None)
            compare(f"heldout.{fusion}.{sweep}.tuned_beats_default_in", result["tuned_beats_default_in"], wins)
            compare(f"heldout.{fusion}.{sweep}.significant_in", result.get("significant_in"), significant_folds)

    sig = stored.get("significance", {})
    for key, want in SIGNIFICANCE_SETTINGS.items():  # the settings are this file's, whatever the bundle says
        compare(f"significance.{key}", sig.get(key), want)
    sig_metrics = SIGNIFICANCE_SETTINGS["metrics"]
    config_rel = f"evidence/{corpus}/inputs/sitegen.json"
    config = bundle.json(config_rel) if (bundle.site / config_rel).is_file() else {}
    correction = config.get("significance", {}).get("correction", "holm")
    rows_of: dict[str, list[list[str]]] = {}
    for m in sig_metrics:  # rankers with equal per-question values are one row, the first named standing for it
        found: dict[tuple[float, ...], list[str]] = {}
        for r in rankers if scored else []:
            found.setdefault(tuple(scores_of(r, m)), []).append(r)
        rows_of[m] = list(found.values())
    unverified = set(unverified_rankers(bundle, corpus, rankers))
    want_sig = _expected_significance(rows_of, scores_of, len(scored), correction, unverified)
    stored_pairs = sig.get("pairs", [])
    keys = [(w["a"], w["b"], w["metric"]) for w in want_sig["pairs"]]
    if [(p.get("a"), p.get("b"), p.get("metric")) for p in stored_pairs] != keys:
        check.fail(
            f"{rel}: significance.pairs cover {len(stored_pairs)} comparisons, expected {len(keys)}: every pair "
            "of distinct rows (identical rankers merged) x metric, in order"
        )
    else:
        for n, (pair, want) in enumerate(zip(stored_pairs, want_sig["pairs"], strict=True)):
            compare(f"significance.pairs[{n}] ({pair['a']} vs {pair['b']}, {pair['metric']})", pair, want)
    compare("significance.correction", sig.get("correction"), correction)
    compare("significance.correction_name", sig.get("correction_name"), _CORRECTION_NAMES.get(correction))
    compare(
        "significance.family counts",
        {k: sig.get("family", {}).get(k) for k in ("tests", "excluded", "size")},
        want_sig["family"],
    )
    compare(
        "significance counts",
        [sig.get("significant_uncorrected"), sig.get("significant_adjusted")],
        [want_sig["significant_uncorrected"], want_sig["significant_adjusted"]],
    )
    for key in ("monte_carlo_rounds", "intervals", "methods", "identical", "detectable", "groups", "headline"):
        compare(f"significance.{key}", sig.get(key), want_sig[key])
    tukey = sig.get("tukey") if isinstance(sig.get("tukey"), dict) else {}
    compare("significance.tukey.by_metric", tukey.get("by_metric"), want_sig["tukey"])
    compare(
        "significance.tukey.rounds/seed/alpha",
        [tukey.get("rounds"), tukey.get("seed"), tukey.get("alpha")],
        [SIGNIFICANCE_SETTINGS[k] for k in ("rounds", "seed", "alpha")],
    )
    pairs = {(w["a"], w["b"], w["metric"]): w for w in want_sig["pairs"]}

    def row_of(ranker: str, m: str) -> str:
        return next((r[0] for r in rows_of[m] if ranker in r), ranker)

    config_rel = f"evidence/{corpus}/inputs/sitegen.json"
    configured = config.get("ablation")
    if configured:  # a chain: each row against the row above
        chain = [s for s in configured if s["ranker"] in rankers]
        steps = [(chain[n - 1]["ranker"] if n else None, s["ranker"], s["adds"]) for n, s in enumerate(chain)]
    else:  # each ranker against one it differs from by one declared component (its run's contract)
        steps = []
        for r in rankers:
            contract = bundle.run(corpus, r).get("contract") or {}
            components = contract.get("components") or []
            for c in components:
                others = [o for o in components if o != c]
                if c in rankers and others:
                    steps.append((c, r, f"{', '.join(others)} fused in"))
            if contract.get("unfiltered") in rankers:
                steps.append((contract["unfiltered"], r, "the question's metadata filter"))
            if contract.get("family") == "rerank" and components and components[0] in rankers:
                steps.append((components[0], r, RERANK_ADDS))
    steps = steps if scored else []
    rows = []
    for prev, r, adds in steps:
        row = {
            "ranker": r,
            "baseline": prev,
            "adds": adds,
            "delta": None,
            "p_adjusted": None,
            "significant": None,
            "identical": None,
            "overall": {m: mean(scores_of(r, m)) for m in sig_metrics},
        }
        if prev is not None:
            row["delta"] = {
                m: mean([x - y for x, y in zip(scores_of(r, m), scores_of(prev, m), strict=True)]) for m in sig_metrics
            }
            ends = {m: (row_of(r, m), row_of(prev, m)) for m in sig_metrics}
            found = {m: pairs.get((a, b, m)) or pairs.get((b, a, m)) for m, (a, b) in ends.items()}
            row["identical"] = {m: a == b for m, (a, b) in ends.items()}
            row["p_adjusted"] = {m: f["p_adjusted"] if f else None for m, f in found.items()}
            row["significant"] = {m: f["significant"] if f else None for m, f in found.items()}
        rows.append(row)
    compare("ablation.rows", stored.get("ablation", {}).get("rows"), rows)

    unanswerable = [q for q, v in inputs.queries.items() if not v["answerable"]]
    view = {
        "questions": unanswerable,
        "rows": {
            r: {
                q: {
                    "hits": len(runs[r]["queries"].get(q, [])),
                    "top_score": runs[r]["queries"][q][0]["score"] if runs[r]["queries"].get(q) else None,
                }
                for q in unanswerable
            }
            for r in rankers
        },
        "answerable_median_top_score": {},
    }
    for r in rankers:
        tops = sorted(runs[r]["queries"][q][0]["score"] for q in scored if runs[r]["queries"].get(q))
        mid = len(tops) // 2
        view["answerable_median_top_score"][r] = (
            None if not tops else tops[mid] if len(tops) % 2 else (tops[mid - 1] + tops[mid]) / 2
        )
    compare("unanswerable", stored.get("unanswerable"), view)
    compare("one_question_points", stored.get("one_question_points"), 100.0 / len(scored) if scored else None)
    compare("scored_questions", stored.get("scored_questions"), len(scored))
    if not scored and (stored.get("sweeps") or heldout.get("results")):
        check.fail(f"{rel}: sweeps or held-out results scored on no questions")
    return f"sweeps, held-out folds, {len(pairs)} paired tests, ablation and unanswerable view recomputed"


def check_packing(check: Check, bundle: Bundle, corpus: str) -> str:
    """packing.json: packs (whole passages in rank order, skip what does not fit, keep trying),
    answer-reached-the-prompt counts, and every citation verdict."""
    rel = f"evidence/{corpus}/packing.json"
    if not (bundle.site / rel).is_file():
        return "no packing in this bundle"
    stored = bundle.json(rel)
    inputs = bundle.inputs(corpus)
    rankers = [r for r in bundle.json(f"evidence/{corpus}/corpus.json").get("rankers", []) if isinstance(r, str)]
    top_n, candidates, budgets = stored.get("top_n"), stored.get("candidates"), stored.get("budgets", [])
    settings = [f"top{top_n}"] + [str(b) for b in budgets]
    if stored.get("settings") != settings:
        check.fail(f"{rel}: settings {stored.get('settings')!r}, expected {settings!r}")
    if not inputs.texts:
        return _needs(check, "the budgets, packs and citation verdicts")
    text = inputs.doc_text
    derived = stored.get("budgets_from")
    if isinstance(derived, dict):  # not configured: the median passage length (lower median) times each multiple
        lengths = sorted(len(t) for t in text.values())
        median = max(1, lengths[(len(lengths) - 1) // 2]) if lengths else 1
        want_budgets = [median * k for k in derived.get("multiples", [])]
        if derived.get("median_characters") != median or budgets != want_budgets:
            check.fail(
                f"{rel}: budgets {budgets!r} from a median of {derived.get('median_characters')!r} characters; "
                f"the passages give a median of {median}, so {want_budgets!r}"
            )
    elif derived != "sitegen.json":
        check.fail(f"{rel}: budgets_from {derived!r} is neither derived nor sitegen.json")

    def fill(ids: list[str], budget: int | None) -> dict[str, Any]:
        included, skipped, used = [], [], 0
        for doc in ids:
            if budget is None or used + len(text[doc]) <= budget:
                included.append(doc)
                used += len(text[doc])
            else:
                skipped.append(doc)
        return {"included": included, "skipped": skipped, "used": used}

    # schema 2 stores a pack as the run ranks it sends ({"ranks", "used"}); 1 as the ids sent and skipped
    by_rank = stored.get("schema_version") == PACKING_SCHEMA_VERSION
    if stored.get("schema_version") not in (1, PACKING_SCHEMA_VERSION):
        check.fail(f"{rel}: schema_version is {stored.get('schema_version')!r}, this audit reads packing 1 and 2")
    packs: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rankers:
        hits = bundle.run(corpus, r)["queries"]
        packs[r] = {}
        for q in inputs.queries:
            ids = [h["doc_id"] for h in hits.get(q, [])][:candidates]
            ids = [d for d in ids if d in text]  # an external run may name passages the corpus lacks
            want = {f"top{top_n}": fill(ids[:top_n], None)} | {str(b): fill(ids, b) for b in budgets}
            packs[r][q] = want
            if by_rank:
                rank = {h["doc_id"]: h["rank"] for h in hits.get(q, [])}
                want = {s: {"ranks": [rank[d] for d in p["included"]], "used": p["used"]} for s, p in want.items()}
            got = stored.get("packs", {}).get(r, {}).get(q)
            if got != want:
                check.fail(f"{rel}: packs.{r}.{q}: stored {got!r}, recomputed {want!r}")

    def relevant(q: str) -> set[str]:
        return {d for d, g in inputs.qrels.get(q, {}).items() if g > 0}

    def row(qids: list[str], r: str) -> dict[str, Any]:
        hits = bundle.run(corpus, r)["queries"]
        answerable = [q for q in qids if relevant(q)]
        firsts = [
            next((i for i, h in enumerate(hits.get(q, []), 1) if h["doc_id"] in relevant(q)), None) for q in answerable
        ]
        return {
            "questions": len(answerable),
            "rank1": firsts.count(1),
            "top3": sum(1 for f in firsts if f is not None and f <= 3),
            "answer_included": {
                s: sum(1 for q in answerable if relevant(q) & set(packs[r][q][s]["included"])) for s in settings
            },
            "unanswerable": len(qids) - len(answerable),
            "unanswerable_with_candidates": sum(1 for q in qids if not relevant(q) and hits.get(q)),
        }

    kinds: dict[str, list[str]] = {}
    for q, v in inputs.queries.items():
        kinds.setdefault(v["kind"], []).append(q)
    for r in rankers:
        want = {"overall": row(list(inputs.queries), r), "by_kind": {k: row(v, r) for k, v in kinds.items()}}
        got = stored.get("results", {}).get(r)
        if got != want:
            check.fail(f"{rel}: results.{r}: stored {got!r}, recomputed {want!r}")

    fixture_rel = f"evidence/{corpus}/inputs/citations.jsonl"
    fixture = {}
    if bundle.has(fixture_rel):
        fixture = {
            json.loads(line)["query_id"]: json.loads(line)["citations"]
            for line in bundle.lines(fixture_rel)
            if line.strip()
        }
    if sorted(stored.get("citations", {})) != sorted(fixture):
        check.fail(f"{rel}: citations for {sorted(stored.get('citations', {}))}, the fixture has {sorted(fixture)}")
    counted = {r: {s: {} for s in settings} for r in rankers}
    verdicts = 0
    for q, items in fixture.items():
        for n, c in enumerate(items):
            for r in rankers:
                for s in settings:
                    if not c["quote"]:
                        want = "empty-quote"
                    elif c["doc_id"] not in text:
                        want = "unknown-id"
                    elif c["doc_id"] not in packs[r][q][s]["included"]:
                        want = "not-in-evidence"
                    else:
                        want = "valid" if c["quote"] in text[c["doc_id"]] else "quote-not-found"
                    counted[r][s][want] = counted[r][s].get(want, 0) + 1
                    verdicts += 1
                    try:
                        got = stored["citations"][q][n]["verdicts"][r][s]
                    except (KeyError, IndexError, TypeError):
                        got = None
                    if n < len(stored.get("citations", {}).get(q, [])) and not _same_text(stored["citations"][q][n], c):
                        check.fail(f"{rel}: citations.{q}[{n}]: its quote is not the fixture's")
                    if got != want:
                        check.fail(
                            f"{rel}: citations.{q}[{n}] ({c['kind']}): ranker {r}, {s}: "
                            f"stored {got!r}, recomputed {want!r}"
                        )
    for r in rankers:
        for s in settings:
            got = {v: n for v, n in stored.get("citation_summary", {}).get(r, {}).get(s, {}).items() if n}
            if got != counted[r][s]:
                check.fail(f"{rel}: citation_summary.{r}.{s}: stored {got!r}, recomputed {counted[r][s]!r}")
    return f"{len(rankers) * len(inputs.queries) * len(settings)} packs and {verdicts} citation verdicts recomputed"


def _same_text(stored: dict[str, Any], fixture: dict[str, Any]) -> bool:
    """A citation as packing.json states it is the fixture's: its quote, or in a redacted bundle the quote's
    sha256."""
    if "quote_sha256" in stored:
        return stored["quote_sha256"] == text_sha256(fixture["quote"])
    return stored.get("quote") == fixture["quote"]


def text_sha256(text: str) -> str:
    """What stands in for a text in a redacted bundle: the sha256 of its exact UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hashed_record(obj: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """A record with each text field (a string under one of ``fields``) replaced by ``<field>_sha256``, every
    other field kept: the rule a redacted bundle's records follow, written again here."""
    return {
        (f"{k}_sha256" if k in fields and isinstance(v, str) else k): (
            text_sha256(v) if k in fields and isinstance(v, str) else v
        )
        for k, v in obj.items()
    }


def check_postgres(check: Check, bundle: Bundle, corpus: str) -> str:
    """postgres.json: the agreement figures, recounted from the stored runs."""
    rel = f"evidence/{corpus}/postgres.json"
    if not (bundle.site / rel).is_file():
        return "no PostgreSQL rankers in this bundle"
    stored = bundle.json(rel)

    def same_top(a: str, b: str, n: int) -> int:
        run_a, run_b = bundle.run(corpus, a)["queries"], bundle.run(corpus, b)["queries"]
        return sum(
            1 for q in run_a if [h["doc_id"] for h in run_a[q][:n]] == [h["doc_id"] for h in run_b.get(q, [])[:n]]
        )

    present = set(bundle.rankers(corpus))
    entries = stored.get("agreement", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise AuditError(f"{rel}: agreement must be a list of objects")
    listed = {(e.get("ranker"), e.get("reproduces"), e.get("top")) for e in entries}
    if stored.get("plans") is not None:  # the server ran: every claim this file knows of must be counted
        for ranker, (reference, top) in REPRODUCTIONS.items():
            if {ranker, reference} <= present and (ranker, reference, top) not in listed:
                check.fail(f"{rel}: no agreement count for {ranker} against {reference} (top {top})")
    counted = []
    for entry in entries:
        ranker, reference, top = entry.get("ranker"), entry.get("reproduces"), entry.get("top")
        if REPRODUCTIONS.get(ranker) != (reference, top) or not {ranker, reference} <= present:
            check.fail(f"{rel}: agreement of {ranker} against {reference} (top {top}) is not a claim sitegen makes")
            continue
        want = same_top(reference, ranker, top)
        if entry.get("identical") != want:
            check.fail(
                f"{rel}: {ranker} against {reference}: identical is {entry.get('identical')!r}, the runs give {want}"
            )
        counted.append(f"{ranker} = {reference} top {top}: {want}")
    if stored.get("not_run"):
        return f"not run: {', '.join(sorted(stored['not_run']))}"
    return "; ".join(counted) or "no agreement figures"


def check_chunking(check: Check, bundle: Bundle, corpus: str) -> str:
    """chunking.json and chunks.jsonl: the passages and span-derived labels equal this file's own chunker;
    every sweep row is recomputed: BM25 from the inputs, dense and RRF from the bundled sweep vectors."""
    rel = f"evidence/{corpus}/chunking.json"
    if not (bundle.site / rel).is_file():
        return "not chunked"
    stored = bundle.json(rel)
    inputs = bundle.inputs(corpus)
    if not inputs.texts:
        return _needs(check, "the chunks and the chunking sweep")
    documents = {}
    for line in bundle.lines(f"evidence/{corpus}/inputs/corpus.jsonl"):
        if line.strip():
            obj = json.loads(line)
            documents[obj["_id"]] = obj
    chunks_rel = f"evidence/{corpus}/chunks.jsonl"
    chunks: dict[str, Any] = {}
    if (bundle.site / chunks_rel).is_file():
        for line in bundle.lines(chunks_rel):
            if line.strip():
                obj = json.loads(line)
                chunks[obj["_id"]] = f"{obj['title']}\n{obj['text']}" if obj.get("title") else obj["text"]
        fresh: dict[str, Any] = inputs.doc_text
    else:  # a redacted bundle: the chunks' records, each text by its sha256
        chunks_rel = f"evidence/{corpus}/referenced/chunks.jsonl"
        chunks = {o["_id"]: o for _, o in _jsonl(bundle, chunks_rel, "text_sha256")}
        fresh = {}
        for cid, meta in inputs.doc_meta.items():
            doc = documents[meta["doc_id"]]
            piece = {"_id": cid, "title": doc.get("title") or "", "text": doc["text"][meta["start"] : meta["end"]]}
            fresh[cid] = hashed_record({**piece, "metadata": meta}, ("title", "text"))
    if chunks != fresh:
        missing = sorted(set(fresh) ^ set(chunks))[:3] or [c for c in fresh if chunks.get(c) != fresh[c]][:3]
        check.fail(f"{chunks_rel}: passages differ from a fresh chunking (e.g. {missing})")
    if stored.get("qrels") != inputs.qrels:
        check.fail(f"{rel}: qrels differ from the labels derived from the answer spans")
    if stored.get("passages") != len(inputs.doc_text):
        check.fail(f"{rel}: passages is {stored.get('passages')}, a fresh chunking gives {len(inputs.doc_text)}")
    config_rel = f"evidence/{corpus}/inputs/sitegen.json"
    config = bundle.json(config_rel) if (bundle.site / config_rel).is_file() else {}
    declared = config.get("chunking") if isinstance(config.get("chunking"), dict) else {}
    if stored.get("default") != chunk_setting(declared.get("default", {})):
        check.fail(f"{rel}: default {stored.get('default')!r} is not the setting inputs/sitegen.json declares")
    sweep = stored.get("sweep") or {"rows": []}
    grid = sweep_settings(declared) if declared else []
    if [row.get("setting") for row in sweep["rows"]] != grid:
        check.fail(f"{rel}: the sweep rows' settings (labels included) are not the grid inputs/sitegen.json declares")
    sweep_vectors = query_vectors = None
    index_rel = f"evidence/{corpus}/embeddings/sweep-index.json"
    matrix_rel = f"evidence/{corpus}/embeddings/sweep-passages.npy"
    withheld = _vectors_withheld(bundle, corpus) or (
        not bundle.has(matrix_rel) and "embeddings/sweep-passages.npy" in referenced_files(bundle, corpus)
    )
    if (bundle.site / index_rel).is_file() and not withheld:
        sweep_ids = bundle.json(index_rel)["passages"]
        sweep_vectors = dict(zip(sweep_ids, np.load(bundle.file(matrix_rel)), strict=True))
        emb = bundle.embeddings(corpus)
        query_vectors = dict(zip(emb.index["queries"], emb.queries, strict=True))
    has_vectors = (bundle.site / f"evidence/{corpus}/embeddings/index.json").is_file()
    sweep_rankers = ["bm25", "dense", "rrf-dense-bm25"] if has_vectors else ["bm25"]
    for n, (row, setting) in enumerate(zip(sweep["rows"], grid, strict=False)):
        texts, _, qrels = _chunk_inputs(documents, inputs.queries, setting)
        label = f"{rel}: sweep row {n} ({setting['label']})"
        if row["passages"] != len(texts):
            check.fail(f"{label}: {row['passages']} passages, recomputed {len(texts)}")
        characters = sum(len(t) for t in texts.values())
        if row.get("characters_embedded") != characters:
            check.fail(f"{label}: characters_embedded {row.get('characters_embedded')!r}, recomputed {characters}")
        if sorted(row["scores"]) != sorted(sweep_rankers):
            check.fail(f"{label}: scores for {sorted(row['scores'])}, the sweep ranks with {sweep_rankers}")
        if has_vectors and sweep_vectors is None and not withheld:
            check.fail(f"{label}: dense and RRF columns cannot be recomputed: {index_rel} is missing")
        for ranker in row["scores"]:
            if sorted(row["scores"][ranker]) != sorted(CHUNKING_SWEEP_METRICS):
                reported = sorted(row["scores"][ranker])
                check.fail(f"{label}: {ranker} reports {reported}, the sweep scores {list(CHUNKING_SWEEP_METRICS)}")
        docs = {d: tokens(t) for d, t in texts.items()}
        queries = {q: tokens(v["text"]) for q, v in inputs.queries.items()}
        chunk_ids = list(docs)
        bm25_lists = {
            q: sorted(sc, key=lambda d: (-sc[d], d))[:TREC_DEPTH]
            for q, values in bm25_scores(docs.values(), queries, 1.2, 0.75)
            for sc in [top_scores(values, chunk_ids, values > 0, TREC_DEPTH, [])]
        }
        ranked = {"bm25": bm25_lists}
        if sweep_vectors is not None:
            ids = sorted(texts)
            matrix = np.stack([sweep_vectors[i] for i in ids])
            dense_lists = {}
            for q in inputs.queries:
                cos = matrix @ query_vectors[q]
                dense_lists[q] = [ids[i] for i in sorted(range(len(ids)), key=lambda i: (-cos[i], ids[i]))][:TREC_DEPTH]
            fused_lists = {}
            for q in inputs.queries:
                lists = {"dense": dense_lists[q], "bm25": bm25_lists.get(q, [])}
                fused, _ = rrf(lists, 60.0, 20, {"dense": 1.0, "bm25": 1.0})
                fused_lists[q] = sorted(fused, key=lambda d: -fused[d])
            ranked |= {"dense": dense_lists, "rrf-dense-bm25": fused_lists}
        scored = [q for q in inputs.queries if any(g > 0 for g in qrels.get(q, {}).values())]
        for ranker, by_query in ranked.items():
            for name, value in row["scores"].get(ranker, {}).items():
                want = math.fsum(metric(name, by_query.get(q, []), qrels[q]) for q in scored) / len(scored)
                if abs(value - want) > TOLERANCES["metric_absolute"]:
                    check.fail(
                        f"{rel}: sweep row {n} ({setting['label']}): {ranker} {name} is {value!r}, recomputed {want!r}"
                    )
    for ranker, best in (sweep.get("best_recall@10") or {}).items():
        values = [row["scores"][ranker]["recall@10"] for row in sweep["rows"]]
        first = next(row for row in sweep["rows"] if row["scores"][ranker]["recall@10"] == max(values))
        if best != {"label": first["setting"]["label"], "recall@10": max(values)}:
            check.fail(f"{rel}: best_recall@10 for {ranker} is {best!r}, the rows give {first['setting']['label']}")
    if withheld:
        return f"{len(chunks)} chunks and their labels re-derived, the sweep's BM25 columns recomputed; " + _needs(
            check, "the sweep's dense and RRF columns", "vectors"
        )
    return (
        f"{len(chunks)} chunks and their labels re-derived; {len(sweep['rows'])} sweep rows recomputed "
        f"({', '.join(sweep_rankers)}; settings and characters embedded from inputs/sitegen.json)"
    )


RERANK_SWEEP_DEPTHS = (10, 20, 50, 100)
RERANK_SWEEP_METRICS = ("ndcg@10", "mrr@10", "recall@10")


def exact_dot(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Dot products as sitegen stores them: each float32 product exact in float64, summed by halving the columns
    (column j plus column j + half, zero-padded to a power of two), so every machine gets the same bits."""
    products = matrix.astype(np.float64) * vector.astype(np.float64)
    size = 1 << max(products.shape[1] - 1, 0).bit_length() if products.shape[1] else 0
    products = np.pad(products, ((0, 0), (0, size - products.shape[1])))
    while products.shape[1] > 1:
        half = products.shape[1] // 2
        products = products[:, :half] + products[:, half:]
    return products[:, 0] if size else np.zeros(products.shape[0])


def check_rerank(check: Check, bundle: Bundle, corpus: str) -> str:
    """rerank.json: every bi-encoder rerank stage run again over its first stage's top N for each N of the sweep,
    from the stored vectors, scored beside the first stage."""
    rel = f"evidence/{corpus}/rerank.json"
    stages = [
        r
        for r in bundle.rankers(corpus)
        if r in run_files(bundle.site, corpus)
        and family_of(bundle, corpus, r, bundle.run(corpus, r)) == "rerank"
        and expected_contract(bundle, corpus, r, bundle.run(corpus, r))[1] == "bi-encoder rerank"
    ]
    if not stages:
        if (bundle.site / rel).is_file():
            check.fail(f"{rel}: present, but no run is a bi-encoder rerank")
        return "no bi-encoder rerank stage"
    if any(_vectors_withheld(bundle, corpus, scoring_vectors(bundle, corpus, r, "bi-encoder rerank")) for r in stages):
        return _needs(check, "the rerank depth sweep", "vectors")
    stored, inputs = bundle.json(rel), bundle.inputs(corpus)
    depth = recorded_command(bundle).depth
    scored = [q for q in inputs.queries if any(g > 0 for g in inputs.qrels.get(q, {}).values())]
    want: dict[str, Any] = {
        "schema_version": 1,
        "depths": [n for n in RERANK_SWEEP_DEPTHS if n <= depth],
        "metrics": list(RERANK_SWEEP_METRICS),
        "questions": len(scored),
        "ties": RERANK_TIE_RULE,
        "stages": {},
    }
    for name in stages:
        params = bundle.run(corpus, name)["params"]
        first = bundle.run(corpus, params["first_stage"])["queries"]
        emb = rerank_vectors(bundle, corpus, params.get("embedding"), rel)
        rows_of = {q: i for i, q in enumerate(emb.index["queries"])}
        position = {d: i for i, d in enumerate(emb.index["passages"])}
        deepest = max(want["depths"])
        full = {}
        for q in scored:
            ids = [h["doc_id"] for h in first.get(q, [])[:deepest]]
            values = exact_dot(emb.passages[[position[d] for d in ids]], emb.queries[rows_of[q]]) if ids else []
            full[q] = {d: float(v) for d, v in zip(ids, values, strict=True)}
        rows = []
        for n in want["depths"]:
            before, after, moved = [], [], 0
            for q in scored:
                top = [h["doc_id"] for h in first.get(q, [])[:n]]
                again = sorted(top, key=lambda d, q=q: (-full[q][d], d))
                before.append({m: metric(m, top, inputs.qrels[q]) for m in RERANK_SWEEP_METRICS})
                after.append({m: metric(m, again, inputs.qrels[q]) for m in RERANK_SWEEP_METRICS})
                moved += top[:10] != again[:10]
            was = {m: math.fsum(x[m] for x in before) / len(before) if before else 0.0 for m in RERANK_SWEEP_METRICS}
            now = {m: math.fsum(x[m] for x in after) / len(after) if after else 0.0 for m in RERANK_SWEEP_METRICS}
            delta = {m: now[m] - was[m] for m in RERANK_SWEEP_METRICS}
            rows.append({"candidates": n, "first_stage": was, "reranked": now, "delta": delta, "moved": moved})
        want["stages"][name] = {
            "first_stage": params["first_stage"],
            "candidates": params["candidates"],
            "embedding": params.get("embedding"),
            "rows": rows,
        }
    tol = TOLERANCES["metric_absolute"]
    for key in want:
        if not _close(stored.get(key), want[key], tol):
            check.fail(f"{rel}: {key} differs from the recomputation")
    return f"{len(stages)} rerank stage(s) swept over {want['depths']} candidates, recomputed from the stored vectors"


# What the packaged model weighs, pinned: cost.json must say so for every index of vectors it made.
# Each packaged model's size, read from its safetensors header and file: a model a bundle names is held to
# these, whatever cost.json says.
PACKAGED_MODEL_SIZES = {
    "sentence-transformers/all-MiniLM-L6-v2": {"parameters": 22_713_728, "weights_bytes": 90_868_376},
    "sentence-transformers/all-mpnet-base-v2": {"parameters": 109_486_978, "weights_bytes": 437_971_872},
}
COST_DEFINITIONS = {
    "vectors": "passages x dimensions x 4 (float32 passage vectors of one embedding model)",
    "postings": "(terms + 1) x 8 + postings x (4 + 8): BM25's starts, passage indices and float64 weights",
    "index_bytes": "the indexes the ranker reads, its own and its components', each counted once",
    "model": "parameters from the weights file's safetensors header; weights_bytes: that file's size",
}


def bm25_postings_bytes(words: Words) -> int:
    """BM25's compressed-column postings as cost.json defines them: (terms + 1) int64 starts, and per (term,
    passage) pair an int32 passage index and a float64 weight."""
    pairs = sum(len(keys) for keys, _ in _pair_blocks(words))
    index_width = 4 if len(words.starts) - 1 < 2**31 else 8
    return (len(words.vocab) + 1) * 8 + pairs * (index_width + 8)


def check_cost(check: Check, bundle: Bundle, corpus: str) -> str:
    """cost.json: each ranker's indexes and their sizes, recomputed from the stored vectors' shape and the
    passages' tokens, and the packaged model's size against this file's pin."""
    rel = f"evidence/{corpus}/cost.json"
    stored, inputs = bundle.json(rel), bundle.inputs(corpus)
    present = set(run_files(bundle.site, corpus))
    rankers = [r for r in bundle.rankers(corpus) if r in present]
    own: dict[str, list[str]] = {}
    indexes: dict[str, int] = {}
    models: dict[str, dict[str, Any]] = {}
    needs = ""
    for name in rankers:
        run = bundle.run(corpus, name)
        try:
            verifier = expected_contract(bundle, corpus, name, run)[1]
        except AuditError:
            continue
        if "vectors" in VERIFIER_BASIS.get(verifier, ()):
            index = bundle.json(f"evidence/{corpus}/{scoring_vectors(bundle, corpus, name, verifier)}/index.json")
            model = str(run["params"].get("model") or index.get("model"))
            key = f"vectors:{model}"
            indexes[key] = len(index.get("passages") or []) * int(index.get("dimensions") or 0) * 4
            own[name] = [key]
            if "supplied" not in index and model in PACKAGED_MODEL_SIZES:
                models[model] = {**PACKAGED_MODEL_SIZES[model], "index": key}
        elif verifier == "okapi-bm25":
            stem, stop = bool(run["params"].get("stemmed")), frozenset(run["params"].get("stop_words") or [])
            key = f"postings:{'stemmed' if stem else 'plain'}"
            if key not in indexes:
                if not inputs.texts:
                    needs = _needs(check, "the BM25 postings' size")
                    indexes[key] = (stored.get("indexes") or {}).get(key)
                else:
                    indexes[key] = bm25_postings_bytes(filtered_words(bundle.words(corpus), stop, stem))
            own[name] = [key]

    def reads(name: str, seen: tuple[str, ...] = ()) -> list[str]:
        if name not in rankers or name in seen:
            return []
        found: list[str] = []
        for component in _components(bundle, corpus, name):
            found += [component, *reads(component, (*seen, name))]
        return list(dict.fromkeys(found))

    by_index = {m["index"]: name for name, m in models.items()}
    table = {}
    for name in rankers:
        uses = reads(name)
        keys = list(dict.fromkeys(k for r in (name, *uses) for k in own.get(r, ())))
        table[name] = {
            "own": own.get(name, []),
            "reads": uses,
            "indexes": keys,
            "index_bytes": sum(indexes[k] or 0 for k in keys),
            "models": [by_index[k] for k in keys if k in by_index],
        }
    want = {
        "schema_version": 1,
        "passages": len(inputs.doc_text),
        "definitions": COST_DEFINITIONS,
        "indexes": dict(sorted(indexes.items())),
        "models": dict(sorted(models.items())),
        "rankers": table,
    }
    for key, value in want.items():
        if stored.get(key) != value:
            check.fail(
                f"{rel}: {key} is {json.dumps(stored.get(key), sort_keys=True)[:200]}, recomputed "
                f"{json.dumps(value, sort_keys=True)[:200]}"
            )
    return needs or f"{len(indexes)} indexes, {len(models)} model(s) of {len(rankers)} rankers recomputed"


def check_filtering(check: Check, bundle: Bundle, corpus: str) -> str:
    """filtering.json: passages failing the question's filter, and superseded ones, in each top 5."""
    rel = f"evidence/{corpus}/filtering.json"
    if not (bundle.site / rel).is_file():
        return "no filtered questions"
    stored = bundle.json(rel)
    inputs = bundle.inputs(corpus)
    top = stored.get("top", 5)
    questions = [q for q, v in inputs.queries.items() if v["filter"]]
    rankers = bundle.rankers(corpus)
    metrics = bundle.json(f"evidence/{corpus}/metrics.json")
    if sorted(stored.get("rows", {})) != sorted(rankers):
        check.fail(f"{rel}: rows for {sorted(stored.get('rows', {}))}, the bundle's rankers are {sorted(rankers)}")
    twins = [[(bundle.run(corpus, r).get("contract") or {}).get("unfiltered"), r] for r in rankers]
    pairs = [[u, r] for u, r in twins if u in rankers]
    if stored.get("pairs") != pairs:
        check.fail(f"{rel}: pairs {stored.get('pairs')!r}, the runs' contracts give {pairs!r}")
    if stored.get("questions") != len(questions) or stored.get("top") != 5:
        check.fail(
            f"{rel}: questions {stored.get('questions')!r} (top {top}); the inputs give {len(questions)} (top 5)"
        )
    for ranker, row in stored.get("rows", {}).items():
        hits = bundle.run(corpus, ranker)["queries"]
        precision = metrics.get(ranker, {}).get("overall", {}).get("precision@5")
        if row.get("precision@5") != precision:
            check.fail(f"{rel}: {ranker}: precision@5 is {row.get('precision@5')!r}, metrics.json gives {precision!r}")
        if row.get("filtered") != bool(bundle.run(corpus, ranker)["params"].get("filtered")):
            check.fail(f"{rel}: {ranker}: filtered is {row.get('filtered')!r}, its run says otherwise")
        ids = [(q, h["doc_id"]) for q in questions for h in hits.get(q, [])[:top]]
        want = {
            "failing_filter": sum(1 for q, d in ids if d in inputs.doc_meta and not allowed(inputs, q, d)),
            "superseded": sum(1 for _, d in ids if inputs.doc_meta.get(d, {}).get("superseded_by")),
            "slots": len(ids),
        }
        for key, value in want.items():
            if row.get(key) != value:
                check.fail(f"{rel}: {ranker}: {key} is {row.get(key)!r}, recomputed {value}")
        if bundle.run(corpus, ranker)["params"].get("filtered") and want["failing_filter"]:
            check.fail(f"{rel}: {ranker} is filtered yet returned {want['failing_filter']} passages failing the filter")
    return f"{len(stored.get('rows', {}))} rankers' top {top} checked against {len(questions)} questions' filters"


def _score_blocks(hits: list[dict]) -> list[list[str]]:
    """Doc ids of each run of exactly equal stored scores, in rank order."""
    blocks: list[list[str]] = []
    for i, hit in enumerate(hits):
        if i and hit["score"] == hits[i - 1]["score"]:
            blocks[-1].append(hit["doc_id"])
        else:
            blocks.append([hit["doc_id"]])
    return blocks


def tie_expected(name: str, blocks: list[list[str]], grades: dict[str, int]) -> float:
    """Mean of a metric over every order within tied blocks, position by position: each position holds
    its block's mean gain; P(no relevant in the first t) is a product of hypergeometric terms over blocks."""
    family, _, cut = name.partition("@")
    k = int(cut)
    where = [(b, i) for b, block in enumerate(blocks) for i in range(len(block))][:k]
    share = [sum(1 for d in block if grades.get(d, 0) > 0) for block in blocks]

    def none_in_first() -> list[float]:
        # For t = 0..len(where). Blocks with no slot in the first t multiply by C(., 0) / C(., 0) = 1.0 exactly,
        # so only the blocks holding those slots multiply, in block order (``where`` is in block order): every
        # block whole but the t-th slot's, so each product is the one before its block times that block's term.
        out, whole = [1.0], 1.0
        for b, i in where:
            out.append(whole * (math.comb(len(blocks[b]) - share[b], i + 1) / math.comb(len(blocks[b]), i + 1)))
            if i + 1 == len(blocks[b]):
                whole = out[-1]
        return out

    if family in ("recall", "precision"):
        found = math.fsum(share[b] / len(blocks[b]) for b, _ in where)
        total = sum(1 for g in grades.values() if g > 0)
        return found / k if family == "precision" else found / total
    if family == "hit":
        return 1.0 - none_in_first()[-1]
    if family == "mrr":
        none = none_in_first()
        return math.fsum((none[t] - none[t + 1]) / (t + 1) for t in range(len(where)))
    gain = [math.fsum(max(grades.get(d, 0), 0) for d in block) / len(block) for block in blocks]
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    return math.fsum(gain[b] / math.log2(p + 2) for p, (b, _) in enumerate(where)) / math.fsum(
        g / math.log2(r + 1) for r, g in enumerate(ideal, start=1)
    )


# Question-set hygiene (hygiene.json), fixed here as sitegen computes it: leakage is a question's whole text (if it
# has at least HYGIENE_LEAK_MIN words) or any HYGIENE_LEAK_NGRAM-word n-gram of it found as consecutive words of a
# passage (title and text); near-duplicates are Jaccard similarities of word sets (questions) and of sets of
# HYGIENE_SHINGLE-word shingles (passages), at least the fractions below, compared in integers.
HYGIENE_LEAK_NGRAM = 8
HYGIENE_LEAK_MIN = 3
HYGIENE_QUESTION_JACCARD = (4, 5)
HYGIENE_SHINGLE = 5
HYGIENE_PASSAGE_JACCARD = (4, 5)
HYGIENE_KINDS = (
    "leakage",
    "duplicate_questions",
    "near_duplicate_questions",
    "title_questions",
    "unlabelled_near_duplicates",
)


def _jaccard_at_least(shared: int, union: int, fraction: tuple[int, int]) -> bool:
    return union > 0 and shared * fraction[1] >= fraction[0] * union


def _passage_text(title: str, text: str) -> str:
    return f"{title}\n{text}" if title else text


def _passage_shingles(words: list[Any]) -> set[tuple[Any, ...]]:
    """A passage's set of HYGIENE_SHINGLE-word windows (zip of shifted lists: one window per start)."""
    if len(words) < HYGIENE_SHINGLE:
        return {tuple(words)} if words else set()
    return set(zip(*(words[k:] for k in range(HYGIENE_SHINGLE)), strict=False))


def _window_keys(columns: list[np.ndarray]) -> np.ndarray:
    """One uint64 per window of word ids (``columns[k]``: each window's k-th id), a polynomial that wraps
    around: equal windows get equal keys, so a key not wanted rules its window out; a wanted key is then
    confirmed on the ids themselves."""
    key = np.zeros(len(columns[0]), dtype=np.uint64)
    for column in columns:
        key *= np.uint64(1_000_003)
        key += column.astype(np.uint64)
    return key


def _windows_found(words: Words, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, passage) of each window of ``wanted``'s width inside one passage whose key is a row of
    ``wanted``'s: a bitmap of the keys' low 20 bits rules most windows out, a binary search confirms the key;
    2**20 windows at a time, so a few MB at most."""
    low, chunk, width = (1 << 20) - 1, 1 << 20, wanted.shape[1]
    table = np.unique(_window_keys([wanted[:, k] for k in range(width)]))
    bitmap = np.zeros(1 << 20, dtype=bool)
    bitmap[(table & low).astype(np.int64)] = True
    found = [np.zeros(0, dtype=np.int64)]
    windows = len(words.ids) - width + 1
    for start in range(0, windows if len(table) else 0, chunk):
        keys = _window_keys([words.ids[start + k : min(start + chunk, windows) + k] for k in range(width)])
        maybe = np.flatnonzero(bitmap[(keys & low).astype(np.int64)])
        at = np.minimum(np.searchsorted(table, keys[maybe]), len(table) - 1)
        found.append(start + maybe[table[at] == keys[maybe]])
    at = np.concatenate(found)
    owner = np.searchsorted(words.starts, at, side="right") - 1
    inside = at + width <= words.starts[owner + 1]
    return at[inside], owner[inside]


def _hygiene_candidates(
    words: Words, tables: list[tuple[int, dict[tuple[int, ...], set[str]]]], holders: dict[tuple[int, ...], set[str]]
) -> tuple[dict[int, set[str]], set[int]]:
    """The passage loop of ``hygiene_flags`` over all passages' ids at once: {passage: the questions whose
    n-gram (``tables``, by length) stands in it} and the passages that may share a shingle with a labelled
    one (a window keyed as a holder shingle, or a passage shorter than a shingle). A window is looked up in a
    table only when its key is one of the table's, so every match is still decided on the words' ids."""
    found: dict[int, set[str]] = {}
    for length, table in tables:
        at, owner = _windows_found(words, np.array(list(table), dtype=np.int64).reshape(-1, length))
        for i, p in zip(at.tolist(), owner.tolist(), strict=True):
            if hit := table.get(tuple(words.ids[i : i + length].tolist())):
                found.setdefault(p, set()).update(hit)
    near: set[int] = set()
    if holders:
        lengths = np.diff(words.starts)
        near.update(np.flatnonzero((lengths > 0) & (lengths < HYGIENE_SHINGLE)).tolist())
        full = [s for s in holders if len(s) == HYGIENE_SHINGLE]
        near.update(_windows_found(words, np.array(full, dtype=np.int64).reshape(-1, HYGIENE_SHINGLE))[1].tolist())
    return found, near


def hygiene_flags(
    passages: Sequence[tuple[str, str, str]],
    questions: list[tuple[str, str]],
    qrels: dict[str, dict[str, int]],
    filters: dict[str, Any] | None = None,
    words: Words | None = None,
) -> dict[str, Any]:
    """The flags and counts of hygiene.json from the source passages (id, title, text), the questions (id, text),
    the labels and the questions' metadata filters (questions under different filters are never duplicates):
    every passage's windows looked up in a table of the questions' n-grams (only where the window's first two
    words open one); near-duplicate questions by comparing every pair; near-duplicate passages among those
    sharing a shingle with a labelled one. Passages are tokenised once into word ids (``words``, when given,
    holds them for these passages' texts), and n-grams and shingles are tuples of ids: the same words give
    the same ids, so every comparison is the one on words."""
    if words is None:
        words = words_of(_passage_text(title, text) for _, title, text in passages)
    word_id = {w: i for i, w in enumerate(words.vocab)}
    starts = words.starts.tolist()

    def ids_of(i: int) -> list[int]:
        return words.ids[starts[i] : starts[i + 1]].tolist()

    q_words = [(qid, tokens(text)) for qid, text in questions]
    grams: dict[int, dict[tuple[int, ...], set[str]]] = {}
    for qid, q in q_words:
        q_ids = [word_id.get(w, -1) for w in q]  # -1: no passage has the word, so no n-gram holding it matches
        if len(q) >= HYGIENE_LEAK_NGRAM:
            for i in range(len(q) - HYGIENE_LEAK_NGRAM + 1):
                gram = tuple(q_ids[i : i + HYGIENE_LEAK_NGRAM])
                if -1 not in gram:
                    grams.setdefault(HYGIENE_LEAK_NGRAM, {}).setdefault(gram, set()).add(qid)
        elif len(q) >= HYGIENE_LEAK_MIN and -1 not in q_ids:
            grams.setdefault(len(q), {}).setdefault(tuple(q_ids), set()).add(qid)
    tables = sorted(grams.items())
    order = {doc_id: i for i, (doc_id, _, _) in enumerate(passages)}
    labelled_ids = {d for grades in qrels.values() for d, g in grades.items() if g > 0 and d in order}
    labelled = sorted(labelled_ids, key=order.get)
    shingles = {
        doc_id: _passage_shingles(ids_of(i))
        for i, (doc_id, _, _) in enumerate(passages)
        if doc_id in labelled_ids and order[doc_id] == i
    }
    holders: dict[tuple[int, ...], set[str]] = {}
    for d in labelled:
        for shingle in shingles[d]:
            holders.setdefault(shingle, set()).add(d)
    leaked: dict[str, list[str]] = {}
    near_passages: dict[str, list[str]] = {d: [] for d in labelled}
    leaks, near_candidates = _hygiene_candidates(words, tables, holders)
    for p in sorted(leaks.keys() | near_candidates):  # every other passage finds nothing: see there
        doc_id = passages[p][0]
        for qid in leaks.get(p, ()):
            leaked.setdefault(qid, []).append(doc_id)
        mine = _passage_shingles(ids_of(p)) if p in near_candidates else set()
        if not holders.keys().isdisjoint(mine):  # iterates the passage's ~100 shingles, not every holder
            sharing = {d for shingle in mine if shingle in holders for d in holders[shingle]} - {doc_id}
            for d in sharing:
                shared = len(mine & shingles[d])
                if _jaccard_at_least(shared, len(mine) + len(shingles[d]) - shared, HYGIENE_PASSAGE_JACCARD):
                    near_passages[d].append(doc_id)
    leakage = [{"query_id": qid, "doc_ids": leaked[qid]} for qid, _ in q_words if qid in leaked]
    scope = {qid: json.dumps((filters or {}).get(qid) or {}, sort_keys=True) for qid, _ in q_words}
    texts: dict[tuple[str, str], list[str]] = {}
    for qid, q in q_words:
        if q:
            texts.setdefault((scope[qid], " ".join(q)), []).append(qid)
    duplicates = [{"query_ids": group, "text": key[1]} for key, group in texts.items() if len(group) > 1]
    near_questions = []
    nonempty = [(qid, q, set(q), scope[qid]) for qid, q in q_words if q]
    for (a, wa, sa, scope_a), (b, wb, sb, scope_b) in itertools.combinations(nonempty, 2):
        if scope_a == scope_b and wa != wb:
            shared = len(sa & sb)
            union = len(sa) + len(sb) - shared
            if _jaccard_at_least(shared, union, HYGIENE_QUESTION_JACCARD):
                near_questions.append({"query_ids": [a, b], "shared_words": shared, "union_words": union})
    titles: dict[str, list[str]] = {}
    for doc_id, title, _ in passages:
        if title_words := tokens(title):
            titles.setdefault(" ".join(title_words), []).append(doc_id)
    title_questions = [{"query_id": qid, "doc_ids": titles[" ".join(q)]} for qid, q in q_words if " ".join(q) in titles]
    unlabelled = []
    for qid, _ in q_words:
        grades = qrels.get(qid, {})
        for d in sorted((d for d, g in grades.items() if g > 0 and d in order), key=order.get):
            missed = [other for other in near_passages[d] if other not in grades]
            if missed:
                unlabelled.append({"query_id": qid, "doc_id": d, "near_duplicates": missed})
    flags = {
        "leakage": leakage,
        "duplicate_questions": duplicates,
        "near_duplicate_questions": near_questions,
        "title_questions": title_questions,
        "unlabelled_near_duplicates": unlabelled,
    }
    flagged = {q for entries in flags.values() for e in entries for q in e.get("query_ids", [e.get("query_id")])}
    counts = {kind: len(entries) for kind, entries in flags.items()}
    return {"flags": flags, "counts": counts | {"flagged_questions": len(flagged), "labelled_passages": len(labelled)}}


def check_hygiene(check: Check, bundle: Bundle, corpus: str) -> str:
    rel = f"evidence/{corpus}/hygiene.json"
    stated = bundle.json(rel)
    base = f"evidence/{corpus}/inputs"
    _check_hygiene_rules(check, rel, stated.get("rules") or {})
    if any(_text_file(bundle, corpus, name)[1] != "text" for name in ("corpus.jsonl", "queries.jsonl")):
        return _needs(check, "the flags")
    try:
        inputs = bundle.inputs(corpus)
        passages, doc_text = inputs.passages, inputs.doc_text
    except AuditError:  # the inputs check reports it; hygiene reads the passages on its own
        passages = [(o["_id"], o.get("title") or "", o["text"]) for _, o in _jsonl(bundle, f"{base}/corpus.jsonl")]
        doc_text = {}
    raw_questions = [o for _, o in _jsonl(bundle, f"{base}/queries.jsonl")]
    questions = [(o["_id"], o["text"]) for o in raw_questions]
    filters = {o["_id"]: o.get("filter") or {} for o in raw_questions}
    qrels: dict[str, dict[str, int]] = {}
    for line in bundle.lines(f"{base}/qrels/test.tsv")[1:]:
        if line.strip():
            qid, doc_id, grade = (c.strip() for c in line.split("\t"))
            qrels.setdefault(qid, {})[doc_id] = int(grade)
    same = len(doc_text) == len(passages) and all(  # not chunked: the BM25 checks' words are these passages'
        doc_text.get(doc_id) == _passage_text(title, text) for doc_id, title, text in passages
    )
    expected = hygiene_flags(passages, questions, qrels, filters, bundle.words(corpus) if same else None)
    if publication(bundle, corpus).redacted:  # a duplicate group's words stand as their sha256
        flags = expected["flags"]
        flags["duplicate_questions"] = [hashed_record(e, ("text",)) for e in flags["duplicate_questions"]]
    for key, want in (("questions", len(questions)), ("passages", len(passages)), ("counts", expected["counts"])):
        if stated.get(key) != want:
            check.fail(f"{rel}: {key} is {stated.get(key)!r}, the inputs give {want!r}")
    for kind in HYGIENE_KINDS:
        got, want = (stated.get("flags") or {}).get(kind), expected["flags"][kind]
        if got != want:
            shown = json.dumps(want[:3], sort_keys=True)
            check.fail(f"{rel}: flags.{kind} differ from the recomputed {len(want)} (first: {shown})")
    counts = expected["counts"]
    return (
        f"{counts['flagged_questions']} of {len(questions)} questions flagged "
        f"({', '.join(f'{kind} {counts[kind]}' for kind in HYGIENE_KINDS)})"
    )


def _check_hygiene_rules(check: Check, rel: str, rules: dict[str, Any]) -> None:
    """hygiene.json's rules are sitegen's, fixed here."""
    fixed = {
        "leakage.ngram_words": ((rules.get("leakage") or {}).get("ngram_words"), HYGIENE_LEAK_NGRAM),
        "leakage.min_question_words": ((rules.get("leakage") or {}).get("min_question_words"), HYGIENE_LEAK_MIN),
        "near_duplicate_questions.at_least": (
            (rules.get("near_duplicate_questions") or {}).get("at_least"),
            HYGIENE_QUESTION_JACCARD[0] / HYGIENE_QUESTION_JACCARD[1],
        ),
        "unlabelled_near_duplicates.at_least": (
            (rules.get("unlabelled_near_duplicates") or {}).get("at_least"),
            HYGIENE_PASSAGE_JACCARD[0] / HYGIENE_PASSAGE_JACCARD[1],
        ),
    }
    for key, (got, want) in fixed.items():
        if got != want:
            check.fail(f"{rel}: rules.{key} is {got!r}, sitegen's rule is {want!r}")
    shingle = str((rules.get("unlabelled_near_duplicates") or {}).get("measure", ""))
    if f"{HYGIENE_SHINGLE}-word shingles" not in shingle:
        check.fail(
            f"{rel}: rules.unlabelled_near_duplicates.measure {shingle!r} names no {HYGIENE_SHINGLE}-word shingle"
        )


def check_ties(check: Check, bundle: Bundle, corpus: str) -> str:
    """ties.json: per ranker and metric, the questions whose value depends on the order of tied scores."""
    rel = f"evidence/{corpus}/ties.json"
    stored = bundle.json(rel)
    inputs = bundle.inputs(corpus)
    summary = bundle.json(f"evidence/{corpus}/corpus.json")
    names = [n for n in summary.get("metrics", []) if isinstance(n, str) and n.partition("@")[0] in TIE_MEASURES]
    rankers = [r for r in summary.get("rankers", []) if isinstance(r, str)]
    scored = [q for q in inputs.queries if any(g > 0 for g in inputs.qrels.get(q, {}).values())]
    tol = TOLERANCES["metric_absolute"]
    if stored.get("metrics") != names:
        check.fail(f"{rel}: metrics {stored.get('metrics')!r}, expected {names}")
    got_rankers = stored.get("rankers")
    if not isinstance(got_rankers, dict) or sorted(got_rankers) != sorted(rankers):
        raise AuditError(
            f"{rel}: rankers {sorted(got_rankers) if isinstance(got_rankers, dict) else None}, "
            f"expected {sorted(rankers)}"
        )
    moved = 0
    for ranker in rankers:
        queries, got = bundle.run(corpus, ranker)["queries"], got_rankers[ranker]
        want: dict[str, dict[str, Any]] = {n: {"depending": 0, "largest_move": 0.0, "questions": {}} for n in names}
        sums = {n: [0.0, 0.0] for n in names}  # reported, expected
        depending = set()
        by_name = bundle.scores(corpus, ranker, names)  # an unknown metric name fails here, if a question is scored
        measures = [_measure(n) for n in names] if scored else []
        for qid in scored:
            hits, grades = queries.get(qid, []), inputs.qrels[qid]
            blocks = _score_blocks(hits)
            lows = highs = reports = [v[qid] for v in by_name]  # no tie: the worst and best orders are reported
            if len(blocks) < len(hits):
                worst = [d for block in blocks for d in sorted(block, key=lambda d: grades.get(d, 0))]
                best = [d for block in blocks for d in sorted(block, key=lambda d: -grades.get(d, 0))]
                lows, highs = metrics_of(measures, worst, grades), metrics_of(measures, best, grades)
            for n, reported, low, high in zip(names, reports, lows, highs, strict=True):
                expected = tie_expected(n, blocks, grades) if high - low > 1e-12 else reported
                sums[n][0] += reported
                sums[n][1] += expected
                if high - low > 1e-12:
                    depending.add(qid)
                    want[n]["depending"] += 1
                    want[n]["largest_move"] = max(want[n]["largest_move"], high - low)
                    want[n]["questions"][qid] = {"reported": reported, "expected": expected, "min": low, "max": high}
        moved += len(depending)
        where = f"{rel}: {ranker}"
        if (got.get("questions"), got.get("depending")) != (len(scored), len(depending)):
            check.fail(
                f"{where}: questions/depending {got.get('questions')}/{got.get('depending')}, "
                f"recomputed {len(scored)}/{len(depending)}"
            )
        for n in names:
            entry = got.get("metrics", {}).get(n)
            if not isinstance(entry, dict):
                check.fail(f"{where}: no entry for {n}")
                continue
            means = {"reported_mean": sums[n][0], "expected_mean": sums[n][1]}
            for key, total in means.items():
                value = total / len(scored) if scored else 0.0
                if not _is_number(entry.get(key)) or abs(entry[key] - value) > tol:
                    check.fail(f"{where}: {n} {key} is {entry.get(key)!r}, recomputed {value!r}")
            if entry.get("depending") != want[n]["depending"]:
                check.fail(f"{where}: {n} depending is {entry.get('depending')!r}, recomputed {want[n]['depending']}")
            if not _is_number(entry.get("largest_move")) or abs(entry["largest_move"] - want[n]["largest_move"]) > tol:
                check.fail(
                    f"{where}: {n} largest_move is {entry.get('largest_move')!r}, "
                    f"recomputed {want[n]['largest_move']!r}"
                )
            questions = entry.get("questions")
            if not isinstance(questions, dict) or sorted(questions) != sorted(want[n]["questions"]):
                check.fail(
                    f"{where}: {n} questions {sorted(questions) if isinstance(questions, dict) else None}, "
                    f"recomputed {sorted(want[n]['questions'])}"
                )
                continue
            for qid, values in want[n]["questions"].items():
                row = questions[qid]
                for key, value in values.items():
                    if not isinstance(row, dict) or not _is_number(row.get(key)) or abs(row[key] - value) > tol:
                        check.fail(f"{where}: {n} query {qid} {key} is {row!r}, recomputed {value!r}")
                        break
    return f"{len(rankers)} rankers x {len(names)} metrics; {moved} ranker-questions depend on the tie order"


# Checks run per corpus, then per (corpus, ranker); a new derived table gets one function and one line here.
CHANGES_PLOT_METRIC = "ndcg@10"  # sitegen.compare.changes.PLOT_METRIC
_CORRECTION_NAMES = {"holm": "Holm-Bonferroni", "bh": "Benjamini-Hochberg"}


def _natural(text: str) -> tuple[Any, ...]:
    parts = re.split(r"([0-9]+)", text)
    return (tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text)


def _unified(before: list[str], after: list[str]) -> list[str]:
    import difflib

    return list(difflib.unified_diff(before, after, "baseline", "now", n=1, lineterm=""))


def _labels_of(bundle: Bundle, rel: str) -> dict[tuple[str, str], int]:
    """(question, passage) -> grade from a qrels TSV: header line, then query-id TAB corpus-id TAB grade."""
    pairs: dict[tuple[str, str], int] = {}
    if not (bundle.site / rel).is_file():
        return pairs
    for number, line in enumerate(bundle.lines(rel), start=1):
        if number == 1 or not line.strip():
            continue
        cells = [c.strip() for c in line.split("\t")]
        if len(cells) != 3:
            raise AuditError(f"{rel}: line {number}: expected query-id<TAB>corpus-id<TAB>grade")
        pairs[cells[0], cells[1]] = int(cells[2])
    return pairs


def _input_diff(bundle: Bundle, old: str, new: str, old_names: list[str], new_names: list[str]) -> dict[str, Any]:
    """Passages, questions, labels and other input files between two input folders (``.../inputs``)."""

    def records(folder: str, names: list[str], name: str) -> dict[str, dict]:
        rel = f"{folder}/{name}"
        return {str(obj.get("_id")): obj for _, obj in _jsonl(bundle, rel)} if name in names else {}

    def lines(obj: dict) -> list[str]:
        return json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=False).split("\n")

    def by_id(name: str) -> dict[str, Any]:
        a, b = records(old, old_names, name), records(new, new_names, name)
        return {
            "added": sorted(b.keys() - a.keys(), key=_natural),
            "removed": sorted(a.keys() - b.keys(), key=_natural),
            "edited": [
                {"id": k, "diff": _unified(lines(a[k]), lines(b[k]))}
                for k in sorted(a.keys() & b.keys(), key=_natural)
                if a[k] != b[k]
            ],
        }

    tsv = "qrels/test.tsv"
    la = _labels_of(bundle, f"{old}/{tsv}") if tsv in old_names else {}
    lb = _labels_of(bundle, f"{new}/{tsv}") if tsv in new_names else {}

    def pair_key(pair: tuple[str, str]) -> tuple[Any, ...]:
        return (_natural(pair[0]), _natural(pair[1]))

    special = ("corpus.jsonl", "queries.jsonl", tsv)
    oa = [n for n in old_names if n not in special]
    ob = [n for n in new_names if n not in special]
    edited_files = []
    for name in sorted(set(oa) & set(ob)):
        ta, tb = bundle.text(f"{old}/{name}"), bundle.text(f"{new}/{name}")
        if (bundle.site / old / name).read_bytes() != (bundle.site / new / name).read_bytes():
            edited_files.append({"file": name, "diff": _unified(ta.split("\n"), tb.split("\n"))})
    return {
        "passages": by_id("corpus.jsonl"),
        "questions": by_id("queries.jsonl"),
        "labels": {
            "added": [
                {"query_id": q, "doc_id": d, "grade": lb[q, d]} for q, d in sorted(lb.keys() - la.keys(), key=pair_key)
            ],
            "removed": [
                {"query_id": q, "doc_id": d, "grade": la[q, d]} for q, d in sorted(la.keys() - lb.keys(), key=pair_key)
            ],
            "edited": [
                {"query_id": q, "doc_id": d, "before": la[q, d], "after": lb[q, d]}
                for q, d in sorted(la.keys() & lb.keys(), key=pair_key)
                if la[q, d] != lb[q, d]
            ],
        },
        "files": {"added": sorted(set(ob) - set(oa)), "removed": sorted(set(oa) - set(ob)), "edited": edited_files},
    }


def _first_differences(got: Any, want: Any, where: str, tol: float, out: list[str]) -> None:
    """Where ``got`` and ``want`` differ (numbers within ``tol``), as JSON pointers."""
    if len(out) >= 20:
        return
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(got) | set(want)):
            if key not in got or key not in want:
                out.append(f"{where}/{key}: {'missing' if key not in got else 'not expected'}")
            else:
                _first_differences(got[key], want[key], f"{where}/{key}", tol, out)
    elif isinstance(want, list) and isinstance(got, list) and len(got) == len(want):
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _first_differences(g, w, f"{where}/{i}", tol, out)
    elif not _close(got, want, tol):
        out.append(f"{where}: {json.dumps(got)[:120]}, recomputed {json.dumps(want)[:120]}")


def _vector_rankers(bundle: Bundle, corpus: str) -> dict[str, list[str]]:
    """The rankers that rank by each folder of vectors, directly (by this file's verifier table and
    vector_folder) or through the runs they fuse."""
    folders: dict[str, set[str]] = {}

    def of(name: str) -> set[str]:
        if name not in folders:
            folders[name] = set()
            try:
                verifier = expected_contract(bundle, corpus, name, bundle.run(corpus, name))[1]
            except AuditError:
                return folders[name]
            own = {vector_folder(bundle, corpus, name)} if "vectors" in VERIFIER_BASIS.get(verifier, ()) else set()
            folders[name] = own.union(*(of(c) for c in _components(bundle, corpus, name)))
        return folders[name]

    found: dict[str, list[str]] = {}
    for ranker in bundle.json(f"evidence/{corpus}/corpus.json")["rankers"]:
        for folder in sorted(of(ranker)):
            found.setdefault(folder, []).append(ranker)
    return found


def _row_sha256(row: np.ndarray) -> str:
    return hashlib.sha256(np.asarray(row, dtype="<f4").tobytes()).hexdigest()


def _vector_changes(bundle: Bundle, corpus: str, before: dict[str, Any], stated: Any) -> list[dict[str, Any]]:
    """changes.json's "vectors", recomputed from baseline.json's row hashes and this bundle's vectors. How far
    changed vectors moved needs the baseline's own vectors, which the bundle does not copy: that one value is
    taken as stated (the page says so), and must be 0 when nothing changed."""
    base = f"evidence/{corpus}"
    now: dict[str, tuple[dict[str, Any], dict[tuple[str, str], str]]] = {}
    for index_path in sorted((bundle.site / base / VECTORS).glob("**/index.json")):
        folder = index_path.parent.relative_to(bundle.site / base).as_posix()
        if folder != VECTORS and folder.count("/") != 1:
            continue
        index = bundle.json(f"{base}/{folder}/index.json")
        rows = {}
        for key in ("passages", "queries"):
            if bundle.has(f"{base}/{folder}/{key}.npy"):
                matrix = np.load(bundle.file(f"{base}/{folder}/{key}.npy"), allow_pickle=False)
                rows.update({(key, str(i)): _row_sha256(r) for i, r in zip(index.get(key) or [], matrix, strict=False)})
        now[folder] = ({k: index.get(k) for k in ("model", "weights_sha256", "config_sha256")}, rows)
    by_folder = _vector_rankers(bundle, corpus)
    stated_max = {e.get("folder"): e.get("max_abs_diff") for e in stated or [] if isinstance(e, dict)}
    entries = []
    for folder in sorted(set(before) | set(now)):
        old = before.get(folder)
        old_rows = {(k, i): h for k, by_id in (old or {}).get("rows", {}).items() for i, h in by_id.items()}
        new_id, new_rows = now.get(folder, (None, {}))
        shared = set(old_rows) & set(new_rows)
        changed = sum(1 for key in shared if new_rows[key] != old_rows[key])
        old_id = {k: old.get(k) for k in ("model", "weights_sha256", "config_sha256")} if old is not None else None
        entries.append(
            {
                "folder": folder,
                "rankers": by_folder.get(folder, []),
                "before": old_id,
                "now": new_id,
                "model_changed": old_id != new_id,
                "compared": len(shared),
                "changed": changed,
                "added": len(set(new_rows) - set(old_rows)),
                "removed": len(set(old_rows) - set(new_rows)),
                "max_abs_diff": stated_max.get(folder) if changed else (0.0 if shared else None),
            }
        )
    return entries


def check_changes(check: Check, bundle: Bundle, corpus: str) -> str:
    """``changes.json`` (sitegen build --baseline) recomputed from the baseline copy in ``baseline/`` and this
    bundle: the input diff, every metric's means, difference, randomisation p and adjusted p, the questions
    whose first relevant passage moved and their order, the rankers added or removed, the difference plot data.
    It proves the page follows from the copy; that the copy is the baseline's is what its manifest sha256 says."""
    base = f"evidence/{corpus}"
    rel, copy_rel = f"{base}/changes.json", f"{base}/baseline/baseline.json"
    if not (bundle.site / rel).is_file() and not (bundle.site / copy_rel).is_file():
        return "no baseline: this corpus was not built with --baseline"
    changes, kept = bundle.json(rel), bundle.json(copy_rel)
    summary, metrics = bundle.json(f"{base}/corpus.json"), bundle.json(f"{base}/metrics.json")
    config_rel = f"{base}/inputs/sitegen.json"
    config = bundle.json(config_rel) if (bundle.site / config_rel).is_file() else {}
    correction = str(config.get("significance", {}).get("correction", "holm"))
    # The corpus page's test settings: this file's pins (the experiments check holds experiments.json to them).
    seed, rounds, alpha, minimum = (SIGNIFICANCE_SETTINGS[k] for k in ("seed", "rounds", "alpha", "min_differing"))
    depth = summary["depth"]
    rankers = [r for r in summary["rankers"]]
    compared = [r for r in rankers if r in kept["rankers"]]
    rows = []
    for ranker in compared:
        before_q, now_q = kept["per_query"][ranker], metrics[ranker]["per_query"]
        questions = sorted(set(before_q) & set(now_q), key=_natural)
        if not questions:
            continue
        for name in sorted(set(before_q[questions[0]]) & set(now_q[questions[0]]), key=_natural):
            before = [float(before_q[q][name]) for q in questions]
            after = [float(now_q[q][name]) for q in questions]
            d = np.array(after, dtype=np.float64) - np.array(before, dtype=np.float64)
            p, differing, *_ = _sign_test_p(d, seed, rounds)
            tested = differing >= minimum
            rows.append(
                {
                    "ranker": ranker,
                    "metric": name,
                    "questions": len(questions),
                    "baseline": math.fsum(before) / len(questions),
                    "now": math.fsum(after) / len(questions),
                    "difference": math.fsum((np.array(after) - np.array(before)).tolist()) / len(questions),
                    "differing": differing,
                    "tested": tested,
                    "p_value": p if tested else None,
                    "p_adjusted": None,
                    "significant": None,
                }
            )
    family = [row for row in rows if row["tested"]]
    for row, adjusted in zip(family, _adjusted([r["p_value"] for r in family], correction), strict=True):
        row["p_adjusted"], row["significant"] = adjusted, adjusted < alpha
    grades = bundle.inputs(corpus).qrels
    moved = []
    for ranker in compared:
        queries = bundle.run(corpus, ranker)["queries"]
        now_rank: dict[str, int | None] = {}
        for qid in set(queries) | set(grades):
            ranked = sorted(queries.get(qid, []), key=lambda h: h["rank"])
            judged = grades.get(qid, {})
            now_rank[qid] = next((n for n, h in enumerate(ranked, 1) if judged.get(h["doc_id"], 0) > 0), None)
        before_rank = kept["first_relevant"][ranker]
        for qid in set(now_rank) | set(before_rank):
            b, a = before_rank.get(qid), now_rank.get(qid)
            if a != b:
                far = abs((depth + 1 if b is None else b) - (depth + 1 if a is None else a))
                moved.append({"query_id": qid, "ranker": ranker, "before": b, "after": a, "distance": far})
    moved.sort(key=lambda m: (-m["distance"], _natural(m["query_id"]), _natural(m["ranker"])))
    agreement = []
    for ranker in compared:
        before_q, now_q = kept["per_query"][ranker], metrics[ranker]["per_query"]
        questions = sorted(set(before_q) & set(now_q), key=_natural)
        if not questions or CHANGES_PLOT_METRIC not in now_q[questions[0]]:
            continue
        before = [float(before_q[q][CHANGES_PLOT_METRIC]) for q in questions]
        after = [float(now_q[q][CHANGES_PLOT_METRIC]) for q in questions]
        d = np.array(after, dtype=np.float64) - np.array(before, dtype=np.float64)
        low, high = _bootstrap_interval(d, seed, rounds)
        agreement.append(
            {
                "ranker": ranker,
                "metric": CHANGES_PLOT_METRIC,
                "questions": len(questions),
                "mean_difference": math.fsum(d.tolist()) / len(questions),
                "ci_low": low,
                "ci_high": high,
                "points": [
                    {"query_id": q, "mean": (x + y) / 2, "difference": x - y}
                    for q, x, y in zip(questions, after, before, strict=True)
                ],
            }
        )
    now_inputs = [n.removeprefix("inputs/") for n in summary["inputs"]]
    want = {
        "schema_version": 1,
        "baseline": {"manifest_sha256": kept["manifest_sha256"], "command": kept["command"]},
        "settings": {
            "seed": seed,
            "rounds": rounds,
            "alpha": alpha,
            "min_differing": minimum,
            "correction": correction,
            "correction_name": _CORRECTION_NAMES[correction],
            "plot_metric": CHANGES_PLOT_METRIC,
            "depth": depth,
        },
        "inputs": _input_diff(bundle, f"{base}/baseline/inputs", f"{base}/inputs", kept["inputs"], now_inputs),
        "rankers": {
            "added": [r for r in rankers if r not in kept["rankers"]],
            "removed": [r for r in kept["rankers"] if r not in rankers],
            "compared": compared,
        },
        "family": {"tests": len(rows), "size": len(family), "excluded": len(rows) - len(family)},
        "metrics": rows,
        "moved": moved,
        "moved_questions": sorted({m["query_id"] for m in moved}, key=_natural),
        "agreement": agreement,
        "vectors": _vector_changes(bundle, corpus, kept.get("vectors") or {}, changes.get("vectors")),
    }
    differences: list[str] = []
    _first_differences(changes, want, rel + "#", TOLERANCES["metric_absolute"], differences)
    for message in differences:
        check.fail(message)
    return (
        f"changes.json follows from the baseline copy: {len(rows)} metric rows ({len(family)} tested), "
        f"{len(moved)} moves of {len(want['moved_questions'])} questions"
    )


# A redacted bundle's records: each text input's text fields, which the records replace by their sha256.
TEXT_FIELDS = {
    "inputs/corpus.jsonl": ("title", "text"),
    "inputs/queries.jsonl": ("text",),
    "chunks.jsonl": ("title", "text"),
}
CITATIONS = "inputs/citations.jsonl"  # its text is each citation's quote
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _records_of(name: str, obj: dict[str, Any], hashed: bool = True) -> dict[str, Any]:
    """One line of a withheld text file as its record stands: text fields by their sha256 (a redacted corpus's),
    or left out (``hashed`` False: a file held by reference for its size)."""

    def record(item: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
        return hashed_record(item, fields) if hashed else {k: v for k, v in item.items() if k not in fields}

    if name == CITATIONS:
        items = obj.get("citations")
        if isinstance(items, list):
            return {**obj, "citations": [record(c, ("quote",)) if isinstance(c, dict) else c for c in items]}
        return dict(obj)
    return record(obj, TEXT_FIELDS[name])


def check_referenced(check: Check, bundle: Bundle, corpus: str) -> str:
    """A redacted corpus (by its inputs and the recorded command) holds its texts, its chunks and, unless the
    command publishes them, its vectors by reference, never a copy; each record stands for a text by its sha256
    and holds no text; a corpus that is not redacted holds nothing by reference."""
    published, base = publication(bundle, corpus), f"evidence/{corpus}"
    rel = f"{base}/referenced.json"
    if not published.redacted:
        return _check_large(check, bundle, corpus, published)
    files = referenced_files(bundle, corpus)
    if bundle.json(rel).get("schema_version") != 1:
        check.fail(f"{rel}: schema_version {bundle.json(rel).get('schema_version')!r}, this audit reads 1")
    config_rel = f"{base}/inputs/sitegen.json"
    config = bundle.json(config_rel) if (bundle.site / config_rel).is_file() else {}
    must = ["inputs/corpus.jsonl", "inputs/queries.jsonl"]
    must += ["chunks.jsonl"] if isinstance(config.get("chunking"), dict) else []
    if not published.vectors and (bundle.site / base / "embeddings" / "index.json").is_file():
        must += ["embeddings/passages.npy", "embeddings/queries.npy"]
    if not published.vectors and (bundle.site / base / "embeddings" / "sweep-index.json").is_file():
        must.append("embeddings/sweep-passages.npy")
    for index in sorted((bundle.site / base / VECTORS).glob("*/index.json")) if not published.vectors else []:
        must += [f"{VECTORS}/{index.parent.name}/passages.npy", f"{VECTORS}/{index.parent.name}/queries.npy"]
    for name in must:
        if name not in files:
            check.fail(f"{rel}: does not hold {name}, which a redacted corpus withholds")
    records = 0
    for name, entry in files.items():
        large = name in LARGE_CANDIDATES and published.held(entry["bytes"])  # published vectors, too large to copy
        if name not in must and name != CITATIONS and not large:
            check.fail(f"{rel}: holds {name}, which this corpus's publication does not withhold")
        if (bundle.site / base / name).exists():
            check.fail(f"{base}/{name}: published, and {rel} says it is withheld")
        for number, items, fields in _held_records(check, bundle, base, name, entry):
            for item in items:
                if not isinstance(item, dict) or any(f in item for f in fields):
                    check.fail(f"{base}/referenced/{name}: line {number}: holds a text, not its sha256")
                elif not all(_SHA256.fullmatch(str(item.get(f"{f}_sha256", ""))) for f in fields if f != "title"):
                    check.fail(f"{base}/referenced/{name}: line {number}: a text's sha256 is missing or malformed")
            records += 1
    _check_records_listed(check, bundle, corpus, files)
    vectors = "published" if published.vectors else "withheld"
    return f"{len(files)} files held by reference ({records} records stand for their texts); vectors {vectors}"


def _held_records(
    check: Check, bundle: Bundle, base: str, name: str, entry: dict[str, Any]
) -> Iterator[tuple[int, list[Any], tuple[str, ...]]]:
    """A held file's entry in referenced.json names its records exactly when the file holds texts; for such a
    file, each record line's number, its items (a citations line's citations, else the line) and the text
    fields they stand for."""
    texts = name in TEXT_FIELDS or name == CITATIONS
    want = f"referenced/{name}" if texts else None
    if entry.get("records") != want:
        check.fail(f"{base}/referenced.json: {name}: records is {entry.get('records')!r}, expected {want!r}")
    if not texts:
        return
    fields = ("quote",) if name == CITATIONS else TEXT_FIELDS[name]
    for number, obj in _json_records(bundle, f"{base}/referenced/{name}"):
        items = obj.get("citations") if name == CITATIONS and isinstance(obj.get("citations"), list) else [obj]
        yield number, items, fields


def _check_records_listed(check: Check, bundle: Bundle, corpus: str, files: dict[str, dict[str, Any]]) -> None:
    """Every file under referenced/ is the records of a file referenced.json holds, stored by the size rule."""
    base = f"evidence/{corpus}"
    listed = {f"referenced/{n}" for n, e in files.items() if e.get("records")}
    for path in sorted((bundle.site / base / "referenced").rglob("*")):
        name = path.relative_to(bundle.site / base).as_posix().removesuffix(".gz")
        if path.is_file() and name not in listed:
            where = path.relative_to(bundle.site).as_posix()
            check.fail(f"{where}: not the records of a file {base}/referenced.json holds")
    for name in sorted(listed):
        _check_stored_form(check, bundle, f"{base}/{name}")


# What any corpus holds by reference when it is larger than --reference-above, or when --reference names the corpus.
LARGE_CANDIDATES = (
    "inputs/corpus.jsonl",
    "inputs/queries.jsonl",
    CITATIONS,
    "chunks.jsonl",
    "embeddings/passages.npy",
    "embeddings/queries.npy",
    "embeddings/sweep-passages.npy",
)


def _check_large(check: Check, bundle: Bundle, corpus: str, published: Publication) -> str:
    """A corpus that is not redacted holds by reference exactly the large candidates the recorded command calls
    for (each above --reference-above, or all of them with --reference NAME), never a copy beside one; a text
    file's records keep every field but its texts, and hold none."""
    base = f"evidence/{corpus}"
    rule = "named with --reference" if published.referenced else f"above --reference-above {published.reference_above}"
    for name in LARGE_CANDIDATES:
        copy = bundle.site / base / name
        if copy.is_file() and published.held(copy.stat().st_size):
            size = copy.stat().st_size
            check.fail(f"{base}/{name}: a copy of {size} bytes, and the corpus is {rule}: it is held by reference")
    files = referenced_files(bundle, corpus)
    if not files:
        if (bundle.site / base / "referenced").exists():
            check.fail(f"{base}/referenced/: records of files, and {base}/referenced.json holds none")
        return "every input is copied (not redacted)"
    records = 0
    for name, entry in files.items():
        if name not in LARGE_CANDIDATES:
            check.fail(f"{base}/referenced.json: holds {name}, which is always copied")
            continue
        if (bundle.site / base / name).exists():
            check.fail(f"{base}/{name}: copied, and {base}/referenced.json says it is held by reference")
        if not published.held(entry["bytes"]):
            check.fail(f"{base}/referenced.json: holds {name} ({entry['bytes']} bytes), which is not {rule}")
        for number, items, fields in _held_records(check, bundle, base, name, entry):
            if any(not isinstance(i, dict) or any(f in i or f"{f}_sha256" in i for f in fields) for i in items):
                check.fail(f"{base}/referenced/{name}: line {number}: holds a text or its sha256; the file's binds it")
            records += 1
    _check_records_listed(check, bundle, corpus, files)
    return f"{len(files)} large files held by reference ({rule}; {records} records of their other fields)"


CORPUS_CHECKS: list[tuple[str, Callable[[Check, Bundle, str], str]]] = [
    ("inputs", check_inputs),
    ("presence", check_presence),
    ("referenced", check_referenced),
    ("corpus", check_summary),
    ("choices", check_choices),
    ("embeddings", check_embeddings),
    ("report", check_report),
    ("experiments", check_experiments),
    ("packing", check_packing),
    ("postgres", check_postgres),
    ("chunking", check_chunking),
    ("filtering", check_filtering),
    ("rerank", check_rerank),
    ("cost", check_cost),
    ("ties", check_ties),
    ("changes", check_changes),
    ("hygiene", check_hygiene),
]
RANKER_CHECKS: list[tuple[str, Callable[[Check, Bundle, str, str], str]]] = [
    ("run", check_run),
    ("trec", check_trec),
    ("metrics", check_metrics),
]


def _run_check(name: str, body: Callable[..., str], *args: Any) -> Check:
    """Run one check; a broken bundle becomes a failed check, never a crash."""
    check, detail = Check(name), ""
    try:
        detail = body(check, *args)
    except AuditError as exc:
        check.fail(str(exc))
    except Exception as exc:  # evidence malformed in a way no check foresaw
        check.fail(f"{name}: cannot verify: {type(exc).__name__}: {exc}")
    n = len(check.mismatches)
    check.detail = f"{n} mismatch{'es' if n > 1 else ''}; first: {check.mismatches[0]}" if n else detail
    return check


PAGES_FILE = "pages.json"
# The pages check's own line, fixed so that a build can render the verdict table before it runs.
PAGES_DETAIL = (
    "pages.json lists every page, plot and served file with its sha256; every number a page shows with its "
    "source equals that evidence value, and every number a plot prints beside its rows is one of them; the audit "
    "badge on every page and the verdict table are this audit's own result"
)
_BADGE = re.compile(r"Audit: (?:passed \((\d+)/(\d+) checks\)|FAILED \((\d+) of (\d+) checks\)|not run)")


def served_files(site: Path) -> list[str]:
    """Every file the site serves outside the evidence bundle, except what the audit itself writes."""
    skip = {"audit.json", PAGES_FILE}
    return sorted(
        rel
        for p in site.rglob("*")
        if p.is_file() and (rel := p.relative_to(site).as_posix()) not in skip and not rel.startswith("evidence/")
    )


class _VerdictTable(html.parser.HTMLParser):
    """The rows of the table that follows the "Audit verdict" heading: (check, result, detail)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._heading = self._in_table = self._in_cell = False
        self._seen = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "h2":
            self._heading = True
        elif tag == "table" and self._seen and not self.rows:
            self._in_table = True
        elif self._in_table and tag == "tr":
            self.rows.append([])
        elif self._in_table and tag == "td":
            self._in_cell = True
            self.rows[-1].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "h2":
            self._heading = False
        elif tag == "table" and self._in_table:
            self._in_table, self._seen = False, False
        elif tag == "td":
            self._in_cell = False

    def handle_data(self, data: str) -> None:
        if self._heading and data.strip() == "Audit verdict":
            self._seen = True
        elif self._in_cell:
            self.rows[-1][-1] += data


class _SourcedNumbers(html.parser.HTMLParser):
    """Every ``<span data-ev="FILE#POINTER" data-fmt="FORMAT">TEXT</span>`` of a page: a number with its source.

    A table may name a base, ``<table data-ev-base="FILE#POINTER" data-ev-fmt="FORMAT">``: inside it, a
    ``data-ev`` that does not start with ``evidence/`` is a pointer relative to the base (``BASE/VALUE``) and
    takes the table's format unless it states its own. Question pages use it for their score columns, so the
    run's file name is printed once per table rather than once per hit.

    A number in a shortened format (:data:`TITLED_FORMATS`) carries its full value in its ``title``: that is a
    second number of the same source, in the full format (an empty one when the title is missing)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.numbers: list[tuple[str, str, str]] = []
        self._open: list[str] | None = None
        self._title: str | None = None
        self._bases: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table":
            self._bases.append((found.get("data-ev-base") or "", found.get("data-ev-fmt") or ""))
        if tag == "span" and found.get("data-ev"):
            src, fmt = found["data-ev"] or "", found.get("data-fmt")
            base, base_fmt = self._bases[-1] if self._bases else ("", "")
            if base and not src.startswith("evidence/"):
                src, fmt = f"{base}/{src}", fmt or base_fmt
            self._open, self._title = [src, fmt or "raw", ""], found.get("title")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self._bases:
            self._bases.pop()
        if tag == "span" and self._open is not None:
            src, fmt, text = self._open
            self.numbers.append((src, fmt, text))
            if fmt in TITLED_FORMATS:
                self.numbers.append((src, TITLED_FORMATS[fmt], self._title or ""))
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open[2] += data


_PLAIN_TOKEN = re.compile(
    r"<(?:(?i:!doctype html)|/(?P<end>[a-zA-Z][a-zA-Z0-9]*)[ \t\n]*"
    r'|(?P<start>[a-zA-Z][a-zA-Z0-9]*)(?P<attrs>(?:[ \t\n]+[a-zA-Z_:][-a-zA-Z0-9_:.]*(?:="[^"<]*")?)*)[ \t\n]*'
    r"(?P<closed>/?))>"
)
_PLAIN_ATTR = re.compile(r'([a-zA-Z_:][-a-zA-Z0-9_:.]*)(?:="([^"]*)")?')
_RAW_TEXT = frozenset({"script", "style", "title", "textarea", "xmp", "iframe", "noembed", "noframes", "noscript"})


def _sourced_numbers(text: str) -> list[tuple[str, str, str]]:
    """What :class:`_SourcedNumbers` finds in a page. html.parser costs about 20 microseconds a tag, most of
    the pages check at 1,000 question pages; a page in the plain subset sitegen writes is tokenised by one regex
    instead and its span and table tags handed to the same handlers, names lowercased and values and text
    unescaped as html.parser does. The subset: a doctype, tags whose attributes are double-quoted or bare
    names, every ``<`` opening such a tag (none in a comment, say) outside script and style content (skipped
    by html.parser's own rule), text only inside a raw-text element, and only text inside a sourced number.
    Any other page goes through html.parser itself."""
    parser = _SourcedNumbers()
    at, raw, accounted = 0, "", 0
    while (match := _PLAIN_TOKEN.search(text, at)) is not None:
        accounted += 1
        end, start = match.group("end"), match.group("start")
        tag = (end or start or "").lower()
        if (raw and (end is None or tag != raw)) or (parser._open is not None and (end is None or tag != "span")):
            accounted = -1  # a tag inside a raw-text element or a sourced number: left to html.parser
            break
        raw = ""
        if parser._open is not None:  # the number's text: this gap, as html.parser hands it over
            if match.start() > at:
                parser.handle_data(html.unescape(text[at : match.start()]))
        at = match.end()
        if start is None:
            if tag in ("span", "table"):
                parser.handle_endtag(tag)
            continue
        closed = match.group("closed")
        if tag in ("span", "table"):
            attrs = [
                (a[1].lower(), html.unescape(a[2]) if a[2] else a[2])  # a bare name's value is None
                for a in _PLAIN_ATTR.finditer(match.group("attrs"))
            ]
            parser.handle_starttag(tag, attrs)
            if closed:
                parser.handle_endtag(tag)
        elif closed:
            continue
        elif tag in html.parser.HTMLParser.CDATA_CONTENT_ELEMENTS:
            close = re.compile(rf"</\s*{tag}\s*>", re.IGNORECASE).search(text, at)  # html.parser's own rule
            if close is None:
                accounted = -1
                break
            accounted += text.count("<", at, close.end())
            at = close.end()
        elif tag in _RAW_TEXT:
            raw = tag
    if accounted == text.count("<"):  # every < opened a token: no markup outside the subset
        return parser.numbers
    parser = _SourcedNumbers()
    parser.feed(text)
    return parser.numbers


def _p_value_text(value: float) -> str:
    return "< 0.01" if value < 0.005 else f"{value:.2f}"


def _delta_text(value: float) -> str:
    """A signed difference with three to six decimals, as many as it needs not to read +0.000."""
    decimals = 3
    while decimals < 6 and value and round(abs(value), decimals) == 0:
        decimals += 1
    return f"{value:+.{decimals}f}"


def _short_text(value: float) -> str:
    """About four significant digits, at most six decimals; "0" for zero."""
    if value == 0:
        return "0"
    return f"{value:.{min(6, max(0, 3 - math.floor(math.log10(abs(value)))))}f}"


# How a page prints a number (sitegen.publish.pages' filters), written again here.
SHOWN_FORMATS: dict[str, Callable[[Any], str]] = {
    "raw": str,
    "score": lambda v: f"{v:.3f}",
    "score6": lambda v: f"{v:.6f}",
    "short": _short_text,
    "signed": lambda v: f"{v:+.3f}",
    "minus": lambda v: f"{0.0 - v:+.3f}",
    "delta": _delta_text,
    "pvalue": _p_value_text,
    "setting": lambda v: f"{v:g}",
}
#: A shortened format, and the format of the full value its number carries in its ``title``.
TITLED_FORMATS = {"short": "score6"}


class _PlotRows(_SourcedNumbers):
    """A page's pictures that print numbers, ``<img src="PLOT.svg" data-plot-rows="TABLE">``, and the texts of the
    sourced numbers in each body row of every table with an id, in order: what each picture's rows are checked
    against (a number with its full value in a title counts once, by its shown text)."""

    def __init__(self) -> None:
        super().__init__()
        self.plots: list[tuple[str, str]] = []
        self.rows: dict[str, list[list[str]]] = {}
        self._ids: list[str] = []
        self._in_body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "img" and found.get("data-plot-rows"):
            self.plots.append((found.get("src") or "", found.get("data-plot-rows") or ""))
        elif tag == "table":
            self._ids.append(found.get("id") or "")
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body and self._ids and self._ids[-1]:
            self.rows.setdefault(self._ids[-1], []).append([])
        super().handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        before = len(self.numbers)
        super().handle_endtag(tag)
        if len(self.numbers) > before and self._in_body and self._ids and self._ids[-1] in self.rows:
            self.rows[self._ids[-1]][-1].append(self.numbers[before][2])
        if tag == "table" and self._ids:
            self._ids.pop()
        elif tag == "tbody":
            self._in_body = False


_PLOT_ROW = re.compile(r'<g id="row-(\d+)">\s*<text[^>]*>([^<]*)</text>')
_PLOT_NUMBER = re.compile(r"[+-]?\d+\.\d+")


def check_plot_numbers(check: Check, bundle: Bundle, page: str, text: str) -> int:
    """Each picture that prints numbers beside its rows (``<g id="row-N"><text>`` in the SVG, N from 1) prints, for
    row N, the first sourced numbers of row N of the table it names on the page, which the pages check compares
    with the evidence: so the picture's numbers are the evidence's. Where it draws them is bound by pages.json's
    sha256, not checked here."""
    parser = _PlotRows()
    parser.feed(text)
    for src, table in parser.plots:
        plot = posixpath.normpath(posixpath.join(posixpath.dirname(page), unquote(src)))
        path = bundle.site / plot
        if plot.startswith("..") or not plot.endswith(".svg") or not path.is_file():
            check.fail(f"{page}: a picture {src!r} whose numbers are checked is not an SVG of this site")
            continue
        labels = sorted((int(n), html.unescape(label)) for n, label in _PLOT_ROW.findall(path.read_text("utf-8")))
        rows = parser.rows.get(table, [])
        if [n for n, _ in labels] != list(range(1, len(rows) + 1)) or not rows:
            check.fail(f"{plot}: {len(labels)} numbered rows, the table #{table} on {page} has {len(rows)}")
            continue
        for (n, label), sourced in zip(labels, rows, strict=True):
            printed = _PLOT_NUMBER.findall(label)
            if not printed or printed != sourced[: len(printed)]:
                check.fail(f"{plot}: row {n} prints {label!r}, the page's sourced numbers are {sourced!r}")
    return len(parser.plots)


def _pointed(data: Any, pointer: str) -> Any:
    """The value a JSON pointer (RFC 6901) names."""
    if pointer == "":
        return data
    if not pointer.startswith("/"):
        raise KeyError(pointer)
    for part in pointer[1:].split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        data = data[int(key)] if isinstance(data, list) else data[key]
    return data


def check_page_numbers(check: Check, bundle: Bundle, page: str) -> int:
    """Each number the page carries with its source must be that evidence value, printed the stated way."""
    numbers = _sourced_numbers((bundle.site / page).read_text(encoding="utf-8", errors="replace"))
    for src, fmt, text in numbers:
        path, _, pointer = src.partition("#")
        if not path.startswith("evidence/") or ".." in path.split("/") or fmt not in SHOWN_FORMATS:
            check.fail(f"{page}: a number cites {src!r} ({fmt!r}), not a value of the evidence bundle")
            continue
        try:
            value = bundle.pointed(path, pointer)
        except (AuditError, KeyError, IndexError, ValueError, TypeError):
            check.fail(f"{page}: shows {text!r} from {src}, which the evidence does not have")
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or SHOWN_FORMATS[fmt](value) != text:
            want = SHOWN_FORMATS[fmt](value) if type(value) in (int, float) else repr(value)
            check.fail(f"{page}: shows {text!r} for {src}, the evidence gives {want!r}")
    return len(numbers)


def check_pages(check: Check, bundle: Bundle, earlier: list[Check]) -> str:
    """The pages: each is the file pages.json names (sha256 and size), every corpus has its page, and the badge
    and verdict table state this audit's own result (the checks before this one, and this one passing)."""
    site, rel = bundle.site, PAGES_FILE
    listing = bundle.json(rel)
    files = listing.get("files")
    if not isinstance(files, dict):
        raise AuditError(f"{rel}: expected a 'files' object")
    manifest = site / "evidence" / "manifest.json"
    if manifest.is_file() and listing.get("manifest_sha256") != _sha256(manifest):
        check.fail(f"{rel}: manifest_sha256 is not the sha256 of evidence/manifest.json: pages of another bundle")
    served = served_files(site)
    for path in served:
        entry = files.get(path)
        if not isinstance(entry, dict):
            check.fail(f"{path}: served by the site but not listed in {rel}")
        elif (size := (site / path).stat().st_size) != entry.get("bytes"):
            check.fail(f"{path}: {size} bytes, {rel} says {entry.get('bytes')}")
        elif (digest := _sha256(site / path)) != entry.get("sha256"):
            check.fail(f"{path}: sha256 {digest}, {rel} says {entry.get('sha256')}")
    for path in sorted(set(files) - set(served)):
        check.fail(f"{path}: listed in {rel} but missing")
    for corpus in bundle.corpora():
        if f"corpora/{corpus}/index.html" not in served:
            check.fail(f"corpora/{corpus}/index.html: the corpus has evidence but no page")
        if (site / "evidence" / corpus / "changes.json").is_file() and f"corpora/{corpus}/changes.html" not in served:
            check.fail(f"corpora/{corpus}/changes.html: the corpus has changes.json but no Changes page")
    total = len(earlier) + 1
    passed = sum(1 for c in earlier if not c.mismatches) + 1
    badge = (
        f"Audit: passed ({total}/{total} checks)"
        if passed == total
        else f"Audit: FAILED ({total - passed} of {total} checks)"
    )

    def page_problems(path: str) -> list[str]:
        """One page's numbers, plot rows and badge against the evidence and this audit."""
        found_in = Check(check.name)
        check_page_numbers(found_in, bundle, path)
        text = (site / path).read_text(encoding="utf-8", errors="replace")
        if "data-plot-rows" in text:
            check_plot_numbers(found_in, bundle, path, text)
        shown = [m.group(0) for m in _BADGE.finditer(text)]
        if shown != [badge]:
            found_in.fail(f"{path}: the audit badge reads {shown!r}, this audit: {badge!r}")
        return found_in.mismatches

    pages = [p for p in served if p.endswith(".html")]
    for problems in in_workers(page_problems, pages, _workers() if len(pages) >= PARALLEL_PAGES_FROM else 1):
        check.mismatches += problems
    reproducibility = site / "reproducibility.html"
    if reproducibility.is_file():
        text = reproducibility.read_text(encoding="utf-8")
        table = _VerdictTable()
        table.feed(text)
        rows = [row for row in table.rows if row]  # the header row has no td cells
        want = [[c.name, "fail" if c.mismatches else "pass", c.detail] for c in earlier]
        want.append(["pages", "pass", PAGES_DETAIL])
        if rows != want:
            differ = next(
                (n for n, (a, b) in enumerate(zip(rows, want, strict=False)) if a != b),
                min(len(want), len(rows)),
            )
            shown_row = rows[differ] if differ < len(rows) else None
            want_row = want[differ] if differ < len(want) else None
            check.fail(
                f"reproducibility.html: verdict table row {differ + 1} is {shown_row!r}, this audit: {want_row!r}"
            )
        if manifest.is_file() and _sha256(manifest) not in text:
            check.fail("reproducibility.html: does not state the sha256 of evidence/manifest.json")
        if (site / "audit.py").is_file() and _sha256(site / "audit.py") not in text:
            check.fail("reproducibility.html: does not state the sha256 of the audit.py it ships")
    else:
        check.fail("reproducibility.html: missing")
    return PAGES_DETAIL


# The files of a corpus folder that a build reads (and copies into the bundle), besides runs/*.trec and the
# vectors a corpus supplies under embeddings/.
CORPUS_FORMAT_FILES = (
    "README.md",
    FROZEN_FILE,
    "citations.jsonl",
    "corpus.jsonl",
    "qrels/test.tsv",
    "queries.jsonl",
    "sitegen.json",
)
SUPPLIED_VECTOR_FILES = ("embeddings/index.json", "embeddings/passages.npy", "embeddings/queries.npy")


def _trusted_files(folder: Path) -> dict[str, str]:
    """sha256 of every file a build would read from a trusted corpus folder, by path in it."""
    names = [n for n in (*CORPUS_FORMAT_FILES, *SUPPLIED_VECTOR_FILES) if (folder / n).is_file()]
    names += [f"runs/{p.name}" for p in sorted((folder / "runs").glob("*.trec")) if p.is_file()]
    return {name: _sha256(folder / name) for name in sorted(names)}


def _bundled_files(bundle: Bundle, corpus: str, command: BuildCommand) -> dict[str, str]:
    """sha256 of every input the bundle says came from the corpus folder: the input copies (less the run files
    --run and --retriever brought from elsewhere) and the supplied vectors embeddings/index.json records."""
    outside = {name for name, (where, _) in command.runs.items() if where == corpus} | set(command.retrievers)
    hashes = {
        name: digest
        for name, digest in input_hashes(bundle, corpus).items()
        if not (name.startswith("runs/") and name[5:-5] in outside)
    }
    index_rel = f"evidence/{corpus}/embeddings/index.json"
    supplied = bundle.json(index_rel).get("supplied") if (bundle.site / index_rel).is_file() else None
    if isinstance(supplied, dict) and isinstance(supplied.get("files_sha256"), dict):
        hashes.update(supplied["files_sha256"])
    return hashes


def check_trusted_corpora(check: Check, bundle: Bundle, trusted: Path) -> str:
    """``--corpora DIR``: every input the bundle copied equals the file in a trusted checkout's corpus folder,
    byte for byte (FROZEN.json included), every file a build would read there was copied, and the bundle holds
    exactly the checkout's corpora (those --only names, when it does). A consistent rebuild from edited inputs
    passes every other check; this one names each file that differs from the checkout."""
    command = recorded_command(bundle)
    on_disk = sorted(p.name for p in trusted.iterdir() if p.is_dir() and (p / "corpus.jsonl").is_file())
    wanted = sorted(set(command.only)) if command.only else on_disk
    held = bundle.corpora()
    for name in sorted(set(wanted) - set(held)):
        check.fail(f"{trusted / name}: a corpus of the trusted checkout that the bundle leaves out")
    compared = 0
    for corpus in held:
        folder = trusted / corpus
        if corpus not in on_disk:
            check.fail(f"evidence/{corpus}/: the trusted checkout {trusted} has no such corpus")
            continue
        want, got = _trusted_files(folder), _bundled_files(bundle, corpus, command)
        for name in sorted({*want, *got}):
            if name not in got:
                check.fail(f"{folder / name}: in the trusted checkout, not among the bundle's inputs")
            elif name not in want:
                check.fail(f"evidence/{corpus}/inputs/{name}: not in the trusted checkout {folder}")
            elif want[name] != got[name]:
                check.fail(f"evidence/{corpus}/inputs/{name}: differs from {folder / name} (sha256 {want[name]})")
        compared += len(want)
        for name, (where, path) in command.runs.items():
            source = trusted.parent / path
            if where == corpus and source.is_file() and _sha256(source) != got.get(f"runs/{name}.trec", ""):
                check.fail(f"evidence/{corpus}/inputs/runs/{name}.trec: differs from --run's {source}")
    return f"{compared} input files of {len(held)} corpora equal the trusted checkout {trusted}"


_RECORD_KINDS = {"inputs/corpus.jsonl": "passage", "inputs/queries.jsonl": "question", CITATIONS: "citations of"}


def _record_differences(bundle: Bundle, corpus: str, name: str, path: Path, hashed: bool) -> list[str]:
    """Each record of a brought text file that differs from the bundle's (by its id, in file order): which
    passage or question, which of its fields, on which line of the file brought."""
    records = {}
    for _, obj in _json_records(bundle, f"evidence/{corpus}/referenced/{name}"):
        records[str(obj.get("query_id" if name == CITATIONS else "_id"))] = obj
    brought = Bundle(path.parent, {})
    found, seen = [], set()
    kind = _RECORD_KINDS[name]
    try:
        lines = list(_json_records(brought, path.name))
    except AuditError as exc:
        return [f"{path}: {exc}"]
    for number, obj in lines:
        key = str(obj.get("query_id" if name == CITATIONS else "_id"))
        seen.add(key)
        want, got = records.get(key), _records_of(name, obj, hashed)
        if want is None:
            found.append(f"{path}: line {number}: {kind} {key} is not in the bundle's records")
        elif got != want:
            fields = sorted(k for k in {*got, *want} if got.get(k) != want.get(k))
            shown = ", ".join(f"{k} {got.get(k)!r} (recorded {want.get(k)!r})" for k in fields)
            found.append(f"{path}: line {number}: {kind} {key} differs from its record: {shown}")
    found += [f"{path}: {kind} {key} is recorded in the bundle but missing here" for key in records if key not in seen]
    return found


def check_held(check: Check, bundle: Bundle, corpus: str, folder: Path) -> str:
    """``--inputs DIR``: every text file the bundle holds by reference, brought in ``DIR/<corpus>/`` (a corpus
    folder's layout), has the recorded sha256 and size; when one differs, each passage or question whose text
    (or any field) differs from its record is named. Vectors brought in ``DIR/<corpus>/embeddings/`` are used
    for the dense checks whether or not they are the withheld bytes (a re-embedding on another machine is not),
    and the detail says which. The files that match are then read in place of the missing copies."""
    files, notes = referenced_files(bundle, corpus), []
    try:
        redacted = publication(bundle, corpus).redacted
    except AuditError:
        redacted = True
    for name, entry in sorted(files.items()):
        if name == "chunks.jsonl":
            continue  # made from the texts: the chunking check recomputes it from them
        path = folder / name.removeprefix("inputs/")
        site_rel = f"evidence/{corpus}/{name}"
        if not path.is_file():
            if name.startswith("inputs/"):
                check.fail(f"{path}: missing; the bundle holds {name} by reference (sha256 {entry['sha256']})")
            else:
                notes.append(f"{name} not brought")
            continue
        digest, size = _sha256(path), path.stat().st_size
        if digest == entry["sha256"] and size == entry["bytes"]:
            bundle.held[site_rel] = path
            notes.append(f"{name} matches")
        elif not name.startswith("inputs/") and redacted:
            bundle.held[site_rel] = path
            notes.append(f"{name} brought, not the withheld bytes (sha256 {digest[:16]}...): used as brought")
        elif not name.startswith("inputs/"):  # vectors held for their size: the bytes the build ranked by, or nothing
            recorded = f"{entry['sha256']} ({entry['bytes']} bytes)"
            check.fail(f"{path}: sha256 {digest} ({size} bytes); the bundle records {recorded}")
        else:
            for problem in _record_differences(bundle, corpus, name, path, redacted):
                check.fail(problem)
            recorded = f"{entry['sha256']} ({entry['bytes']} bytes)"
            check.fail(f"{path}: sha256 {digest} ({size} bytes); the bundle records {recorded}")
    if check.mismatches:
        return "the files brought are not the ones the bundle holds by reference"
    return f"{folder}: " + "; ".join(notes)


def held_checks(site: Path, inputs: Path, earlier: list[Check]) -> list[Check]:
    """``--inputs DIR``: for each corpus holding files by reference, the files brought (:func:`check_held`), then,
    when they match, every earlier check that needed them, run again on them (``held:<check>``)."""
    bundle = Bundle(site)
    needed = {c.name for c in earlier if c.needs}
    checks = []
    for corpus in bundle.corpora():
        if not (site / "evidence" / corpus / "referenced.json").is_file():
            continue
        held = _run_check(f"held:{corpus}", check_held, bundle, corpus, inputs / corpus)
        checks.append(held)
        if held.mismatches:
            continue  # recomputed from other files, the checks would prove nothing
        for prefix, fn in CORPUS_CHECKS:
            if f"{prefix}:{corpus}" in needed:
                checks.append(_run_check(f"held:{prefix}:{corpus}", fn, bundle, corpus))
        for prefix, fn in RANKER_CHECKS:
            for ranker in bundle.rankers(corpus):
                if f"{prefix}:{corpus}/{ranker}" in needed:
                    checks.append(_run_check(f"held:{prefix}:{corpus}/{ranker}", fn, bundle, corpus, ranker))
    return checks


def still_needed(checks: list[Check]) -> list[str]:
    """The checks that could not recompute what needs withheld texts or vectors, and were not run again on the
    files --inputs brought (or were, and still lacked some): what this audit did not verify."""
    rerun = {c.name.removeprefix("held:") for c in checks if c.name.startswith("held:")}
    return [c.name for c in checks if c.needs and c.name not in rerun]


def evidence_checks(bundle: Bundle) -> list[Check]:
    """Every check of the evidence bundle, in report order; the pages check comes after these."""
    checks = [_run_check("manifest", check_manifest, bundle)]
    for corpus in bundle.corpora():
        jobs = [(f"{prefix}:{corpus}", fn, (bundle, corpus)) for prefix, fn in CORPUS_CHECKS]
        for prefix, fn in RANKER_CHECKS:
            jobs += [(f"{prefix}:{corpus}/{r}", fn, (bundle, corpus, r)) for r in bundle.rankers(corpus)]
        checks += _corpus_checks(bundle, corpus, jobs)
    bundle.release()  # a build renders the pages next, with this bundle still held for the pages check
    return checks


def _checks_split(bundle: Bundle, corpus: str) -> bool:
    """Whether a corpus's checks split between processes: passages x questions at least ``PARALLEL_FROM``, as
    corpus.json states them (only the speed depends on it), with two CPUs or more."""
    try:
        stated = bundle.json(f"evidence/{corpus}/corpus.json")
        size = int(stated.get("documents", 0)) * int(stated.get("queries", 0))
    except (AuditError, TypeError, ValueError):
        size = 0
    return size >= PARALLEL_FROM and _workers() >= 2


def _corpus_checks(bundle: Bundle, corpus: str, jobs: list[tuple[str, Callable[..., str], tuple]]) -> list[Check]:
    """One corpus's checks, in ``jobs`` order. For a large corpus (:func:`_checks_split`), the experiments check,
    the longest, runs in a forked worker of its own while this process runs the others."""
    alone = [job for job in jobs if job[1] is check_experiments]
    parts = [[job for job in jobs if job[1] is not check_experiments], alone]
    if not _checks_split(bundle, corpus) or not alone:
        parts = [jobs]
    done = {c.name: c for c in in_parts(lambda job: _run_check(job[0], job[1], *job[2]), parts)}
    return [done[name] for name, _, _ in jobs]


def pages_check(bundle: Bundle, earlier: list[Check]) -> Check:
    return _run_check("pages", check_pages, bundle, earlier)


def expected_pages_check() -> Check:
    """The pages check as a build expects it to end: passing, with its fixed detail."""
    return Check("pages", [], PAGES_DETAIL)


def audit_report(site: Path, checks: list[Check]) -> dict[str, Any]:
    """audit.json's content for these checks: no timestamps and no absolute paths."""
    failed = sum(1 for c in checks if c.mismatches)
    manifest = site / "evidence" / "manifest.json"
    return {
        "schema_version": SCHEMA_VERSION,
        "verdict": "pass" if checks and not failed else "fail",
        "manifest_sha256": _sha256(manifest) if manifest.is_file() else None,
        "checks": [
            {
                "name": c.name,
                "status": "fail" if c.mismatches else "pass",
                "detail": c.detail,
                "mismatches": c.mismatches[:MAX_LISTED]
                + ([f"... and {len(c.mismatches) - MAX_LISTED} more"] if len(c.mismatches) > MAX_LISTED else []),
            }
            for c in checks
        ],
        "counts": {"checks": len(checks), "passed": len(checks) - failed, "failed": failed},
        "tolerances": dict(TOLERANCES),
        # what needs the withheld texts or vectors of a redacted corpus and was not recomputed (--inputs DIR)
        **({"needs_inputs": pending} if (pending := still_needed(checks)) else {}),
    }


def write_report(site: Path, report: dict[str, Any]) -> None:
    text = json.dumps(report, sort_keys=True, indent=2, ensure_ascii=False)
    (site / "audit.json").write_text(text + "\n", encoding="utf-8")


def run_audit(
    site_dir: Path, echo: Callable[[str], None] = print, corpora: Path | None = None, inputs: Path | None = None
) -> dict[str, Any]:
    """Run every check on a site folder, print one line per check, write ``audit.json``, return the report.
    With ``corpora`` (a trusted checkout's corpora folder) the inputs are compared with it too, and with
    ``inputs`` (a folder of corpus folders holding what a redacted bundle withholds) the withheld files are
    checked and what needed them recomputed (:func:`held_checks`); both after the pages check, whose badge
    states the checks every reader of the site can run."""
    site = Path(site_dir)
    echo(f"audit.py sha256 {_sha256(Path(__file__))} ({Path(__file__).name}); compare it with a copy you trust")
    bundle = Bundle(site)
    checks = evidence_checks(bundle)
    checks.append(pages_check(bundle, checks))
    if corpora is not None:
        checks.append(_run_check("trusted-inputs", check_trusted_corpora, bundle, Path(corpora)))
    if inputs is not None:
        del bundle  # what the pages check read (every run's JSON among it) goes before the held checks read the texts
        checks += held_checks(site, Path(inputs), checks)
    for check in checks:
        echo(f"{'FAIL' if check.mismatches else 'PASS'} {check.name}: {check.detail}")
        for message in check.mismatches[1:MAX_PRINTED]:
            echo(f"    {message}")
        if len(check.mismatches) > MAX_PRINTED:
            echo(f"    ... and {len(check.mismatches) - MAX_PRINTED} more (see audit.json)")
    report = audit_report(site, checks)
    try:
        write_report(site, report)
    except OSError as exc:
        echo(f"could not write audit.json: {exc}")
    counts = report["counts"]
    echo(f"AUDIT {report['verdict'].upper()}: {counts['passed']} of {counts['checks']} checks passed")
    if report.get("needs_inputs"):
        names = report["needs_inputs"]
        echo(
            f"NOT RECOMPUTED: {len(names)} checks passed on what the bundle holds, and could not recompute what needs "
            f"texts or vectors held by reference ({', '.join(names[:MAX_PRINTED])}"
            f"{', ...' if len(names) > MAX_PRINTED else ''}); a holder of the collection runs "
            "audit.py SITE --inputs DIR"
        )
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="audit.py",
        description="Recompute a sitegen report's rankings and metrics from its evidence bundle; exit 0 if all hold.",
    )
    parser.add_argument(
        "site",
        nargs="?",
        type=Path,
        default=Path(__file__).resolve().parent,
        help="the site folder (the one holding evidence/); default: the folder holding this script",
    )
    parser.add_argument(
        "--corpora",
        type=Path,
        default=None,
        metavar="DIR",
        help="a trusted checkout's corpora folder: every input the bundle copied must equal its file there, "
        "FROZEN.json included, and the bundle must hold exactly its corpora",
    )
    parser.add_argument(
        "--inputs",
        type=Path,
        default=None,
        metavar="DIR",
        help="the files a redacted bundle holds by reference, in DIR/<corpus>/ as a corpus folder has them "
        "(corpus.jsonl, queries.jsonl, embeddings/passages.npy, ...): each is checked against its sha256, and "
        "what needs the texts or vectors is recomputed from them",
    )
    args = parser.parse_args(argv)
    if args.inputs is not None and not args.inputs.is_dir():
        print(f"error: --inputs {args.inputs} is not a folder; pass the folder holding <corpus>/", file=sys.stderr)
        return 2
    if not (args.site / "evidence").is_dir():
        print(f"error: {args.site} has no evidence/ folder; pass the site folder", file=sys.stderr)
        return 2
    if args.corpora is not None and not args.corpora.is_dir():
        print(f"error: --corpora {args.corpora} is not a folder; pass a checkout's corpora folder", file=sys.stderr)
        return 2
    return 0 if run_audit(args.site, corpora=args.corpora, inputs=args.inputs)["verdict"] == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
