"""Independent audit of a sitegen evidence bundle: ``python audit.py [SITE_DIR]``.

This file is copied verbatim into every built site as ``audit.py``. It needs only
Python 3.10+ and numpy, imports nothing from sitegen, and shares no code with it:
tokenising, BM25, cosine ranking, Reciprocal Rank Fusion and every metric are
written again here from the documented definitions, then compared with the bundle.

What it proves, when every check passes:

- every file under ``evidence/`` is listed in ``evidence/manifest.json`` with the
  sha256 and size it has on disk, and nothing listed is missing or extra;
- every BM25 run is what BM25 over the bundle's own copy of the corpus and the
  questions gives, with the parameters the run states (ids, ranks, hit counts, scores);
- every dense run is the exact cosine ranking of the stored, unit-length embeddings;
- every fusion run is RRF of the component runs stored next to it, component ranks included;
- every metric (per question, per kind, overall) follows from the runs and the
  qrels copy by trec_eval's definitions; the ``.trec`` files agree with the JSON runs;
  ``corpus.json`` counts agree with the inputs.

What it does not prove: that the relevance labels are right, that the questions
are fair, that the embeddings are what the named model gives for these texts
(that needs the model), that the run parameters are good ones, or that any quote
on a page entails the claim beside it. It checks arithmetic and provenance.

Tolerances (also written to ``audit.json``):

- BM25 scores: relative 1e-9 (float64; only the order of summation may differ);
- dense scores: absolute 1e-6 (float32 dot products; BLAS libraries may round differently);
- RRF scores: absolute 1e-12; RRF ids, ranks and component ranks: exact;
- metrics: absolute 1e-9; embedding row norms: 1 +- 1e-5.

For BM25 and dense runs ids and ranks must match exactly, except that two passages
whose recomputed scores are equal within the score tolerance may stand in either
order (a tie that float rounding can flip is not evidence of tampering).

Exit status 0 only when every check passes. Writes ``SITE_DIR/audit.json``
(sorted keys, no timestamps, no absolute paths: identical bundles give identical bytes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CORPUS_CHECKS", "TOLERANCES", "main", "run_audit"]

SCHEMA_VERSION = 1
TREC_DEPTH = 100
MAX_LISTED = 200  # mismatches kept per check in audit.json
MAX_PRINTED = 10  # mismatches printed under a FAIL line
TOLERANCES = {
    "bm25_score_relative": 1e-9,
    "dense_score_absolute": 1e-6,
    "rrf_score_absolute": 1e-12,
    "metric_absolute": 1e-9,
    "embedding_norm_absolute": 1e-5,
}
METRIC_FAMILIES = ("hit", "recall", "precision", "mrr", "ndcg")
_WORD = re.compile(r"[^\W_]+")


class AuditError(Exception):
    """Something a check needs is missing or unreadable; the message names the file."""


@dataclass
class Check:
    name: str
    mismatches: list[str] = field(default_factory=list)
    detail: str = ""

    def fail(self, message: str) -> None:
        self.mismatches.append(message)


def _guarded(name: str, body: Callable[[Check], str]) -> Check:
    """Run one check; a broken bundle turns into a failed check, never a crash."""
    check = Check(name)
    try:
        detail = body(check)
    except AuditError as exc:
        check.fail(str(exc))
        detail = ""
    except Exception as exc:  # malformed evidence of a shape no check foresaw
        check.fail(f"{name}: cannot verify: {type(exc).__name__}: {exc}")
        detail = ""
    if check.mismatches:
        n = len(check.mismatches)
        check.detail = f"{n} mismatch{'es' if n > 1 else ''}; first: {check.mismatches[0]}"
    else:
        check.detail = detail
    return check


# ---------------------------------------------------------------- reading the bundle


@dataclass
class Inputs:
    doc_text: dict[str, str]  # doc id -> the text every ranker indexes, in file order
    queries: dict[str, dict[str, Any]]  # query id -> {"text", "kind", "answerable"}
    qrels: dict[str, dict[str, int]]
    judged_pairs: int
    problems: list[str]


@dataclass
class Embeddings:
    index: dict[str, Any]
    passages: np.ndarray
    queries: np.ndarray


class Bundle:
    """Lazy, cached access to the files of one site; load failures are cached too."""

    def __init__(self, site: Path) -> None:
        self.site = site
        self._memo: dict[Any, tuple[Any, AuditError | None]] = {}

    def _cached(self, key: Any, load: Callable[[], Any]) -> Any:
        if key not in self._memo:
            try:
                self._memo[key] = (load(), None)
            except AuditError as exc:
                self._memo[key] = (None, exc)
        value, error = self._memo[key]
        if error is not None:
            raise error
        return value

    def text(self, rel: str) -> str:
        def load() -> str:
            path = self.site / rel
            if not path.is_file():
                raise AuditError(f"{rel}: file is missing")
            try:
                return path.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                raise AuditError(f"{rel}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None

        return self._cached(("text", rel), load)

    def json(self, rel: str) -> Any:
        def load() -> Any:
            try:
                return json.loads(self.text(rel))
            except json.JSONDecodeError as exc:
                raise AuditError(f"{rel}: malformed JSON: {exc.msg} (line {exc.lineno})") from None

        return self._cached(("json", rel), load)

    def corpora(self) -> list[str]:
        try:
            names = self.json("evidence/manifest.json")["corpora"]
            if isinstance(names, list) and all(isinstance(n, str) and "/" not in n for n in names):
                return names
        except (AuditError, KeyError, TypeError):
            pass
        evidence = self.site / "evidence"
        return sorted(p.name for p in evidence.iterdir() if (p / "corpus.json").is_file()) if evidence.is_dir() else []

    def summary(self, corpus: str) -> dict[str, Any]:
        summary = self.json(f"evidence/{corpus}/corpus.json")
        if not isinstance(summary, dict):
            raise AuditError(f"evidence/{corpus}/corpus.json: expected a JSON object")
        return summary

    def rankers(self, corpus: str) -> list[str]:
        """Rankers named in corpus.json, then any other run file present."""
        try:
            named = [r for r in self.summary(corpus).get("rankers", []) if isinstance(r, str)]
        except AuditError:
            named = []
        runs = self.site / "evidence" / corpus / "runs"
        found = sorted(p.stem for p in runs.glob("*.json")) if runs.is_dir() else []
        return list(dict.fromkeys(named + found))

    def run(self, corpus: str, ranker: str) -> dict[str, Any]:
        rel = f"evidence/{corpus}/runs/{ranker}.json"
        run = self.json(rel)
        if not isinstance(run, dict) or not isinstance(run.get("queries"), dict):
            raise AuditError(f"{rel}: expected an object with a 'queries' object")
        if not isinstance(run.get("params"), dict):
            raise AuditError(f"{rel}: expected a 'params' object")
        for qid, hits in run["queries"].items():
            if not isinstance(hits, list) or not all(isinstance(h, dict) for h in hits):
                raise AuditError(f"{rel}: query {qid}: hits must be a list of objects")
            for hit in hits:
                ok = isinstance(hit.get("doc_id"), str) and type(hit.get("rank")) is int
                if not ok or type(hit.get("score")) not in (int, float) or not math.isfinite(hit["score"]):
                    raise AuditError(f"{rel}: query {qid}: hit {hit!r} needs a string doc_id, int rank, finite score")
        return run

    def inputs(self, corpus: str) -> Inputs:
        return self._cached(("inputs", corpus), lambda: _read_inputs(self, corpus))

    def embeddings(self, corpus: str) -> Embeddings:
        return self._cached(("embeddings", corpus), lambda: _read_embeddings(self, corpus))


def _jsonl(bundle: Bundle, rel: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(bundle.text(rel).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AuditError(f"{rel}: line {number}: malformed JSON: {exc.msg}") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("_id"), str) or not isinstance(obj.get("text"), str):
            raise AuditError(f"{rel}: line {number}: expected an object with string _id and text")
        yield number, obj


def _read_inputs(bundle: Bundle, corpus: str) -> Inputs:
    base = f"evidence/{corpus}/inputs"
    problems: list[str] = []
    doc_text: dict[str, str] = {}
    for number, obj in _jsonl(bundle, f"{base}/corpus.jsonl"):
        title = obj.get("title") or ""
        if not isinstance(title, str):
            raise AuditError(f"{base}/corpus.jsonl: line {number}: title must be a string")
        if obj["_id"] in doc_text:
            problems.append(f"{base}/corpus.jsonl: line {number}: duplicate doc id {obj['_id']}")
        doc_text[obj["_id"]] = f"{title}\n{obj['text']}" if title else obj["text"]
    queries: dict[str, dict[str, Any]] = {}
    for number, obj in _jsonl(bundle, f"{base}/queries.jsonl"):
        if obj["_id"] in queries:
            problems.append(f"{base}/queries.jsonl: line {number}: duplicate query id {obj['_id']}")
        kind, answerable = obj.get("kind", "unlabelled"), obj.get("answerable", True)
        if not isinstance(kind, str) or not isinstance(answerable, bool):
            raise AuditError(f"{base}/queries.jsonl: line {number}: kind must be a string, answerable a boolean")
        queries[obj["_id"]] = {"text": obj["text"], "kind": kind, "answerable": answerable}
    rel = f"{base}/qrels/test.tsv"
    qrels: dict[str, dict[str, int]] = {}
    rows = [(n, line) for n, line in enumerate(bundle.text(rel).splitlines(), start=1) if line.strip()]
    if not rows or [c.strip() for c in rows[0][1].split("\t")] != ["query-id", "corpus-id", "score"]:
        raise AuditError(f"{rel}: line 1: expected the header query-id<TAB>corpus-id<TAB>score")
    for number, line in rows[1:]:
        columns = [c.strip() for c in line.split("\t")]
        if len(columns) != 3 or not re.fullmatch(r"[+-]?\d+", columns[2]):
            raise AuditError(f"{rel}: line {number}: expected query-id<TAB>corpus-id<TAB>integer grade")
        qid, did, grade = columns[0], columns[1], int(columns[2])
        if qid not in queries or did not in doc_text:
            problems.append(f"{rel}: line {number}: query {qid} or doc {did} is not in the inputs")
        if grade < 0 or did in qrels.get(qid, {}):
            problems.append(f"{rel}: line {number}: query {qid} doc {did}: negative grade or judged twice")
        qrels.setdefault(qid, {})[did] = grade
    for qid, query in queries.items():
        if query["answerable"] != any(g > 0 for g in qrels.get(qid, {}).values()):
            problems.append(f"{base}/queries.jsonl: query {qid}: answerable={query['answerable']} disagrees with qrels")
    return Inputs(doc_text, queries, qrels, len(rows) - 1, problems)


def _read_embeddings(bundle: Bundle, corpus: str) -> Embeddings:
    base = f"evidence/{corpus}/embeddings"
    index = bundle.json(f"{base}/index.json")
    if not isinstance(index, dict) or not all(isinstance(index.get(k), list) for k in ("passages", "queries")):
        raise AuditError(f"{base}/index.json: expected 'passages' and 'queries' id lists")
    arrays = []
    for name, ids in (("passages", index["passages"]), ("queries", index["queries"])):
        path = bundle.site / base / f"{name}.npy"
        try:
            matrix = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise AuditError(f"{base}/{name}.npy: cannot load: {exc}") from None
        want = (len(ids), index.get("dimensions"))
        if matrix.dtype != np.float32 or matrix.shape != want:
            raise AuditError(f"{base}/{name}.npy: {matrix.dtype} {matrix.shape}, index.json says float32 {want}")
        arrays.append(matrix)
    return Embeddings(index, arrays[0], arrays[1])


# ---------------------------------------------------------------- independent definitions


def tokens(text: str, stop_words: frozenset[str] = frozenset(), stem: bool = False) -> list[str]:
    """Lowercased maximal runs of letters/digits, stop words dropped, plurals stripped if ``stem``."""
    return [_singular(t) if stem else t for t in _WORD.findall(text.lower()) if t not in stop_words]


def _singular(token: str) -> str:
    if len(token) <= 3 or not token.isalpha():
        return token
    if token.endswith("ies") and len(token) > 4:
        return token[:-3] + "y"
    for ending in ("sses", "xes", "zes", "ches", "shes"):
        if token.endswith(ending):
            return token[:-2]
    if token.endswith(("ss", "us", "is")) or not token.endswith("s"):
        return token
    return token[:-1]


def bm25_index(docs: dict[str, list[str]]) -> tuple[dict[str, dict[str, int]], dict[str, int], float]:
    """Postings (term -> {doc id: term frequency}), passage lengths, mean length."""
    postings: dict[str, dict[str, int]] = {}
    for doc, toks in docs.items():
        for t in toks:
            postings.setdefault(t, {})[doc] = postings.get(t, {}).get(doc, 0) + 1
    lengths = {d: len(t) for d, t in docs.items()}
    return postings, lengths, (sum(lengths.values()) / len(lengths)) or 1.0


def bm25(index: tuple, query: list[str], k1: float, b: float) -> dict[str, float]:
    """Okapi BM25 with idf = ln(1 + (N - df + 0.5)/(df + 0.5)), query terms deduplicated; positive scores only."""
    postings, lengths, avgdl = index
    n = len(lengths)
    scores: dict[str, float] = {}
    for term in sorted(set(query)):
        having = postings.get(term, {})
        idf = math.log(1.0 + (n - len(having) + 0.5) / (len(having) + 0.5))
        for d, f in having.items():
            scores[d] = scores.get(d, 0.0) + idf * f * (k1 + 1) / (f + k1 * (1 - b + b * lengths[d] / avgdl))
    return {d: s for d, s in scores.items() if s > 0}


def metric(name: str, ranking: list[str], grades: dict[str, int]) -> float:
    """hit/recall/precision/mrr/ndcg@k, trec_eval's definitions; relevant means grade > 0."""
    family, _, cut = name.partition("@")
    if family not in METRIC_FAMILIES or not cut.isdigit() or int(cut) < 1:
        raise ValueError(f"unknown metric {name}")
    k = int(cut)
    relevant = {d for d, g in grades.items() if g > 0}
    top = ranking[:k]
    found = [r for r, d in enumerate(top, start=1) if d in relevant]
    if family == "hit":
        return 1.0 if found else 0.0
    if family == "recall":
        return len(found) / len(relevant)
    if family == "precision":
        return len(found) / k
    if family == "mrr":
        return 1.0 / found[0] if found else 0.0
    dcg = sum(grades[top[r - 1]] / math.log2(r + 1) for r in found)
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    return dcg / sum(g / math.log2(r + 1) for r, g in enumerate(ideal, start=1))


# ---------------------------------------------------------------- checks


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_manifest(bundle: Bundle) -> Check:
    def body(check: Check) -> str:
        rel = "evidence/manifest.json"
        manifest = bundle.json(rel)
        if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
            raise AuditError(f"{rel}: expected an object with a 'files' object")
        if manifest.get("schema_version") != SCHEMA_VERSION:
            check.fail(f"{rel}: schema_version {manifest.get('schema_version')!r}, this audit reads {SCHEMA_VERSION}")
        listed = manifest["files"]
        for path, entry in listed.items():
            parts = path.split("/")
            if parts[0] != "evidence" or ".." in parts or path == rel or not isinstance(entry, dict):
                check.fail(f"{rel}: entry {path!r} is not a file under evidence/ with sha256 and bytes")
                continue
            target = bundle.site / path
            if not target.is_file():
                check.fail(f"{path}: listed in {rel} but missing")
            elif target.stat().st_size != entry.get("bytes"):
                check.fail(f"{path}: {target.stat().st_size} bytes, {rel} says {entry.get('bytes')}")
            elif _sha256(target) != entry.get("sha256"):
                check.fail(f"{path}: sha256 {_sha256(target)} differs from {rel}'s {entry.get('sha256')}")
        evidence = bundle.site / "evidence"
        for path in sorted(p.relative_to(bundle.site).as_posix() for p in evidence.rglob("*") if p.is_file()):
            if path != rel and path not in listed:
                check.fail(f"{path}: file under evidence/ is not listed in {rel}")
        return f"{len(listed)} files match their sha256 and size; no unlisted files"

    return _guarded("manifest", body)


def check_inputs(bundle: Bundle, corpus: str) -> Iterable[Check]:
    def body(check: Check) -> str:
        inputs = bundle.inputs(corpus)
        for problem in inputs.problems:
            check.fail(problem)
        return f"{len(inputs.doc_text)} passages, {len(inputs.queries)} questions, {inputs.judged_pairs} judged pairs"

    yield _guarded(f"inputs:{corpus}", body)


def check_summary(bundle: Bundle, corpus: str) -> Iterable[Check]:
    def body(check: Check) -> str:
        rel = f"evidence/{corpus}/corpus.json"
        summary, inputs = bundle.summary(corpus), bundle.inputs(corpus)
        qs = inputs.queries.values()
        kinds = list(dict.fromkeys(q["kind"] for q in qs))
        runs_dir = bundle.site / "evidence" / corpus / "runs"
        metrics = bundle.json(f"evidence/{corpus}/metrics.json")
        some_metrics = next(iter(metrics.values()), {}).get("overall", {}) if isinstance(metrics, dict) else {}
        expected = {
            "name": corpus,
            "documents": len(inputs.doc_text),
            "queries": len(inputs.queries),
            "answerable_queries": sum(1 for q in qs if q["answerable"]),
            "judged_pairs": inputs.judged_pairs,
            "kinds": {k: sum(1 for q in qs if q["kind"] == k and q["answerable"]) for k in kinds},
            "kind_order": kinds,
            "embeddings": (bundle.site / "evidence" / corpus / "embeddings" / "index.json").is_file(),
        }
        for key, want in expected.items():
            if summary.get(key) != want:
                check.fail(f"{rel}: {key} is {summary.get(key)!r}, the inputs give {want!r}")
        sets = {
            "runs/*.json files": sorted(p.stem for p in runs_dir.glob("*.json")) if runs_dir.is_dir() else [],
            "metrics.json rankers": sorted(metrics) if isinstance(metrics, dict) else [],
        }
        for what, names in sets.items():
            if sorted(summary.get("rankers", [])) != names:
                check.fail(f"{rel}: rankers {summary.get('rankers')!r} differ from the {what} {names!r}")
        if sorted(summary.get("metrics", [])) != sorted(some_metrics):
            check.fail(f"{rel}: metrics {summary.get('metrics')!r} differ from metrics.json's {sorted(some_metrics)!r}")
        for name in summary.get("inputs", []):
            if not (bundle.site / "evidence" / corpus / name).is_file():
                check.fail(f"{rel}: input {name} is listed but missing")
        return (
            f"counts, kinds, rankers and metric names agree with the inputs ({len(summary.get('rankers', []))} rankers)"
        )

    yield _guarded(f"corpus:{corpus}", body)


def check_embeddings(bundle: Bundle, corpus: str) -> Iterable[Check]:
    if not (bundle.site / "evidence" / corpus / "embeddings").exists():
        return

    def body(check: Check) -> str:
        base = f"evidence/{corpus}/embeddings"
        emb, inputs = bundle.embeddings(corpus), bundle.inputs(corpus)
        for name, ids, want in (
            ("passages", emb.index["passages"], inputs.doc_text),
            ("queries", emb.index["queries"], inputs.queries),
        ):
            if sorted(ids) != sorted(want) or len(set(ids)) != len(ids):
                check.fail(f"{base}/index.json: {name} ids differ from the inputs' ids")
        tol = TOLERANCES["embedding_norm_absolute"]
        for name, matrix, ids in (
            ("passages", emb.passages, emb.index["passages"]),
            ("queries", emb.queries, emb.index["queries"]),
        ):
            norms = np.linalg.norm(matrix.astype(np.float64), axis=1)
            for row in np.flatnonzero(~(np.abs(norms - 1.0) <= tol)):
                check.fail(f"{base}/{name}.npy: row {row} (id {ids[row]}): norm {norms[row]!r}, expected 1 +- {tol}")
        model = bundle.json("evidence/manifest.json").get("model") or {}
        for key, manifest_key in (("model", "name"), ("weights_sha256", "weights_sha256")):
            if emb.index.get(key) != model.get(manifest_key):
                check.fail(
                    f"{base}/index.json: {key} {emb.index.get(key)!r}, manifest model says {model.get(manifest_key)!r}"
                )
        return f"{emb.passages.shape[0]}+{emb.queries.shape[0]} float32 vectors of {emb.passages.shape[1]} dimensions, unit length"

    yield _guarded(f"embeddings:{corpus}", body)


def _compare_scored(
    check: Check,
    where: str,
    hits: list[dict],
    scores: dict[str, float],
    depth: int,
    close: Callable[[float, float], bool],
) -> int:
    """Hits against the recomputed ranking (score desc, doc id asc); near-ties may stand in either order.

    Returns how many positions differ only by such a tie."""
    expected = sorted(scores, key=lambda d: (-scores[d], d))[:depth]
    if len(hits) != len(expected):
        check.fail(f"{where}: {len(hits)} hits, recomputed {len(expected)}")
    flipped = 0
    for rank, (hit, want) in enumerate(zip(hits, expected), start=1):
        doc, got = hit["doc_id"], scores.get(hit["doc_id"])
        if got is None:
            check.fail(f"{where}: rank {rank} is doc {doc}, which the recomputation does not rank (recomputed {want})")
            continue
        if doc != want:
            if not close(got, scores[want]):
                check.fail(f"{where}: rank {rank} is doc {doc}, recomputed {want}")
                continue
            flipped += 1
        if not close(hit["score"], got):
            check.fail(f"{where}: rank {rank} doc {doc}: score {hit['score']!r}, recomputed {got!r}")
    return flipped


def _verify_bm25(check: Check, bundle: Bundle, corpus: str, run: dict[str, Any], rel: str) -> str:
    params = run["params"]
    k1, b, stem, stop = params.get("k1"), params.get("b"), params.get("stemmed"), params.get("stop_words", [])
    if (
        not all(isinstance(x, (int, float)) for x in (k1, b))
        or not isinstance(stem, bool)
        or not isinstance(stop, list)
    ):
        raise AuditError(f"{rel}: params need numeric k1 and b, boolean stemmed, a stop_words list")
    inputs = bundle.inputs(corpus)
    stop_set = frozenset(stop)
    index = bm25_index({d: tokens(t, stop_set, stem) for d, t in inputs.doc_text.items()})
    rel_tol = TOLERANCES["bm25_score_relative"]
    flipped = 0
    for qid, hits in run["queries"].items():
        if qid in inputs.queries:
            scores = bm25(index, tokens(inputs.queries[qid]["text"], stop_set, stem), k1, b)
            flipped += _compare_scored(
                check,
                f"{rel}: query {qid}",
                hits,
                scores,
                run["depth"],
                lambda x, y: abs(x - y) <= rel_tol * max(abs(x), abs(y)),
            )
    return f"k1={k1} b={b} stemmed={stem}, {len(stop)} stop words; {flipped} near-tie swaps"


def _verify_dense(check: Check, bundle: Bundle, corpus: str, run: dict[str, Any], rel: str) -> str:
    emb = bundle.embeddings(corpus)
    for key in ("model", "weights_sha256"):
        if run["params"].get(key) != emb.index.get(key):
            check.fail(
                f"{rel}: params {key} {run['params'].get(key)!r}, embeddings/index.json says {emb.index.get(key)!r}"
            )
    rows = {q: i for i, q in enumerate(emb.index["queries"])}
    tol = TOLERANCES["dense_score_absolute"]
    flipped = 0
    for qid, hits in run["queries"].items():
        if qid not in rows:
            check.fail(f"{rel}: query {qid}: no vector in embeddings/queries.npy")
            continue
        values = emb.passages @ emb.queries[rows[qid]]  # float32, as the definition says
        scores = {d: float(v) for d, v in zip(emb.index["passages"], values)}
        flipped += _compare_scored(
            check, f"{rel}: query {qid}", hits, scores, run["depth"], lambda x, y: abs(x - y) <= tol
        )
    return f"exact cosine over {emb.passages.shape[0]} stored vectors; {flipped} near-tie swaps"


def _verify_rrf(check: Check, bundle: Bundle, corpus: str, run: dict[str, Any], rel: str) -> str:
    params = run["params"]
    comps, k, cand, weights = (
        params.get("components"),
        params.get("k"),
        params.get("candidates_per_list"),
        params.get("weights"),
    )
    shapes_ok = isinstance(comps, list) and isinstance(weights, dict) and sorted(weights) == sorted(comps)
    numbers_ok = isinstance(k, (int, float)) and (cand is None or type(cand) is int)
    if not shapes_ok or not numbers_ok or not all(isinstance(w, (int, float)) for w in weights.values()):
        raise AuditError(
            f"{rel}: params need components, numeric k and weights (one per component), candidates_per_list"
        )
    component_runs = {c: bundle.run(corpus, c) for c in comps}
    tol = TOLERANCES["rrf_score_absolute"]
    for qid, hits in run["queries"].items():
        fused: dict[str, float] = {}
        ranks: dict[str, dict[str, int | None]] = {}
        for comp in comps:
            if weights[comp] == 0:
                continue
            listed = component_runs[comp]["queries"].get(qid, [])
            for rank, hit in enumerate(listed[:cand] if cand else listed, start=1):
                fused[hit["doc_id"]] = fused.get(hit["doc_id"], 0.0) + weights[comp] / (k + rank)
                ranks.setdefault(hit["doc_id"], dict.fromkeys(comps))[comp] = rank
        expected = sorted(fused, key=lambda d: -fused[d])[: run["depth"]]  # stable: first appearance wins ties
        where = f"{rel}: query {qid}"
        if len(hits) != len(expected):
            check.fail(f"{where}: {len(hits)} hits, recomputed {len(expected)}")
        for rank, (hit, want) in enumerate(zip(hits, expected), start=1):
            if hit["doc_id"] != want:
                check.fail(f"{where}: rank {rank} is doc {hit['doc_id']}, recomputed {want}")
                continue
            if abs(hit["score"] - fused[want]) > tol:
                check.fail(f"{where}: rank {rank} doc {want}: score {hit['score']!r}, recomputed {fused[want]!r}")
            if hit.get("components") != ranks[want]:
                got, exp = json.dumps(hit.get("components"), sort_keys=True), json.dumps(ranks[want], sort_keys=True)
                check.fail(f"{where}: rank {rank} doc {want}: components {got}, recomputed {exp}")
    return f"RRF of {', '.join(comps)}, k={k}, {cand} candidates a list, weights {json.dumps(weights, sort_keys=True)}"


METHODS: dict[str, Callable[[Check, Bundle, str, dict[str, Any], str], str]] = {
    "okapi-bm25": _verify_bm25,
    "exact cosine": _verify_dense,
    "reciprocal rank fusion": _verify_rrf,
}


def check_runs(bundle: Bundle, corpus: str) -> Iterable[Check]:
    for ranker in bundle.rankers(corpus):

        def body(check: Check, ranker: str = ranker) -> str:
            rel = f"evidence/{corpus}/runs/{ranker}.json"
            run, inputs = bundle.run(corpus, ranker), bundle.inputs(corpus)
            for key, want in (("schema_version", SCHEMA_VERSION), ("corpus", corpus), ("ranker", ranker)):
                if run.get(key) != want:
                    check.fail(f"{rel}: {key} is {run.get(key)!r}, expected {want!r}")
            depth = run.get("depth")
            if type(depth) is not int or depth < 1:
                raise AuditError(f"{rel}: depth {depth!r} is not a positive integer")
            if sorted(run["queries"]) != sorted(inputs.queries):
                check.fail(f"{rel}: query ids differ from inputs/queries.jsonl")
            for qid, hits in run["queries"].items():
                ids = [h["doc_id"] for h in hits]
                if [h["rank"] for h in hits] != list(range(1, len(hits) + 1)):
                    check.fail(
                        f"{rel}: query {qid}: rank fields are {[h['rank'] for h in hits][:12]}..., not 1..{len(hits)}"
                    )
                if len(hits) > depth or len(set(ids)) != len(ids) or not set(ids) <= set(inputs.doc_text):
                    check.fail(f"{rel}: query {qid}: more than depth {depth} hits, a repeated doc or an unknown doc")
            method = run["params"].get("method")
            if method not in METHODS:
                raise AuditError(f"{rel}: cannot verify ranker {ranker}: unknown method {method!r}")
            hits_total = sum(len(h) for h in run["queries"].values())
            return f"{hits_total} hits recomputed ({method}): " + METHODS[method](check, bundle, corpus, run, rel)

        yield _guarded(f"run:{corpus}/{ranker}", body)


def check_trec_files(bundle: Bundle, corpus: str) -> Iterable[Check]:
    for ranker in bundle.rankers(corpus):

        def body(check: Check, ranker: str = ranker) -> str:
            rel = f"evidence/{corpus}/runs/{ranker}.trec"
            run = bundle.run(corpus, ranker)
            blocks: dict[str, list[list[str]]] = {}
            last = None
            for number, line in enumerate(bundle.text(rel).splitlines(), start=1):
                cols = line.split()
                if len(cols) != 6 or cols[1] != "Q0" or cols[5] != ranker:
                    check.fail(f"{rel}: line {number}: expected 'qid Q0 docid rank score {ranker}'")
                    continue
                if cols[0] != last and cols[0] in blocks:
                    check.fail(f"{rel}: line {number}: query {cols[0]}'s lines are not together")
                last = cols[0]
                blocks.setdefault(cols[0], []).append(cols)
            for qid in sorted(set(blocks) - set(run["queries"])):
                check.fail(f"{rel}: query {qid} is not in {ranker}.json")
            for qid, hits in run["queries"].items():
                want, got = [h["doc_id"] for h in hits[:TREC_DEPTH]], blocks.get(qid, [])
                if [c[2] for c in got] != want:
                    at = next((i for i, (c, w) in enumerate(zip(got, want)) if c[2] != w), min(len(got), len(want)))
                    seen = got[at][2] if at < len(got) else "nothing"
                    check.fail(
                        f"{rel}: query {qid}: rank {at + 1} is doc {seen}, {ranker}.json has {want[at] if at < len(want) else 'nothing'}"
                    )
                    continue
                for rank, cols in enumerate(got, start=1):
                    if cols[3] != str(rank) or float(cols[4]) != len(got) + 1 - rank:
                        check.fail(
                            f"{rel}: query {qid}: doc {cols[2]}: rank/score columns {cols[3]} {cols[4]}, expected {rank} {len(got) + 1 - rank}"
                        )
            return f"{sum(len(b) for b in blocks.values())} lines agree with {ranker}.json (top {TREC_DEPTH})"

        yield _guarded(f"trec:{corpus}/{ranker}", body)


def check_metrics(bundle: Bundle, corpus: str) -> Iterable[Check]:
    for ranker in bundle.rankers(corpus):

        def body(check: Check, ranker: str = ranker) -> str:
            rel = f"evidence/{corpus}/metrics.json"
            where = f"{rel}: ranker {ranker}"
            inputs, run = bundle.inputs(corpus), bundle.run(corpus, ranker)
            names = bundle.summary(corpus).get("metrics", [])
            stored = bundle.json(rel).get(ranker)
            if not isinstance(stored, dict) or not all(
                isinstance(stored.get(s), dict) for s in ("overall", "by_kind", "per_query")
            ):
                raise AuditError(f"{where}: missing, or without overall, by_kind and per_query objects")
            tol = TOLERANCES["metric_absolute"]

            def compare(label: str, got: Any, want: dict[str, float]) -> None:
                if not isinstance(got, dict) or sorted(got) != sorted(want):
                    check.fail(
                        f"{where}: {label}: metric names {sorted(got) if isinstance(got, dict) else got!r}, expected {sorted(want)}"
                    )
                    return
                for name, value in want.items():
                    if type(got[name]) not in (int, float) or not abs(got[name] - value) <= tol:
                        check.fail(f"{where}: {label}: {name} is {got[name]!r}, recomputed {value!r}")

            scored = {q: g for q, g in inputs.qrels.items() if q in inputs.queries and any(v > 0 for v in g.values())}
            per_query = {}
            for qid in inputs.queries:  # file order, so messages come in question order
                if qid in scored:
                    ranking = [h["doc_id"] for h in run["queries"].get(qid, [])]
                    per_query[qid] = {n: metric(n, ranking, scored[qid]) for n in names}
            if sorted(stored["per_query"]) != sorted(per_query):
                check.fail(
                    f"{where}: per_query ids {sorted(stored['per_query'])}, expected the {len(per_query)} questions with a relevant passage"
                )
            for qid, values in per_query.items():
                if qid in stored["per_query"]:
                    compare(f"query {qid}", stored["per_query"][qid], values)

            def mean(qids: list[str]) -> dict[str, float]:
                return {n: math.fsum(per_query[q][n] for q in qids) / len(qids) for n in names}

            groups: dict[str, list[str]] = {}
            for qid in per_query:
                groups.setdefault(inputs.queries[qid]["kind"], []).append(qid)
            if sorted(stored["by_kind"]) != sorted(groups):
                check.fail(f"{where}: by_kind kinds {sorted(stored['by_kind'])}, expected {sorted(groups)}")
            for kind, qids in groups.items():
                if kind in stored["by_kind"]:
                    compare(f"kind {kind}", stored["by_kind"][kind], mean(qids))
            if per_query:
                compare("overall", stored["overall"], mean(list(per_query)))
            return f"{len(names)} metrics x ({len(per_query)} questions + {len(groups)} kinds + overall) recomputed"

        yield _guarded(f"metrics:{corpus}/{ranker}", body)


# One function per check, each yielding named Checks; add a derived-table check by appending here.
CORPUS_CHECKS: list[Callable[[Bundle, str], Iterable[Check]]] = [
    check_inputs,
    check_summary,
    check_embeddings,
    check_runs,
    check_trec_files,
    check_metrics,
]


def run_audit(site_dir: Path, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Run every check on a site folder, print one line per check, write ``audit.json``, return the report."""
    site = Path(site_dir)
    bundle = Bundle(site)
    checks = [check_manifest(bundle)]
    for corpus in bundle.corpora():
        for make in CORPUS_CHECKS:
            checks.extend(make(bundle, corpus))
    failed = 0
    for check in checks:
        failed += bool(check.mismatches)
        echo(f"{'FAIL' if check.mismatches else 'PASS'} {check.name}: {check.detail}")
        for message in check.mismatches[1:MAX_PRINTED]:
            echo(f"    {message}")
        if len(check.mismatches) > MAX_PRINTED:
            echo(f"    ... and {len(check.mismatches) - MAX_PRINTED} more (see audit.json)")
    verdict = "fail" if failed or not checks else "pass"
    manifest = site / "evidence" / "manifest.json"
    report = {
        "schema_version": SCHEMA_VERSION,
        "verdict": verdict,
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
    }
    try:
        text = json.dumps(report, sort_keys=True, indent=2, ensure_ascii=False)
        (site / "audit.json").write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        echo(f"could not write audit.json: {exc}")
    echo(f"AUDIT {verdict.upper()}: {len(checks) - failed} of {len(checks)} checks passed")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="audit.py",
        description="Recompute a sitegen report's rankings and metrics from its evidence bundle and compare.",
    )
    parser.add_argument(
        "site",
        nargs="?",
        type=Path,
        default=Path(__file__).resolve().parent,
        help="the site folder (holding evidence/); default: the folder holding this script",
    )
    args = parser.parse_args(argv)
    if not (args.site / "evidence").is_dir():
        print(f"audit.py: {args.site} has no evidence/ folder; pass the site folder", file=sys.stderr)
        return 2
    return 0 if run_audit(args.site)["verdict"] == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
