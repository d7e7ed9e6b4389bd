"""Compare two evidence bundles: files, rankings, scores, metrics, per-question moves, vectors, versions,
and how closely B reproduces A (RMSE, effect ratio, ΔRI, RBO: :mod:`sitegen.compare.repro`).

Two builds of the same inputs should give the same bundle; when they do not, a reviewer needs
to know whether the *results* moved (rankings, metrics, scores beyond a tolerance) or only
their surroundings (library versions, derived pages). This module is the base of
``sitegen diff``, of a Changes page and of a CI regression gate, so it is split the usual way:

- readers at the edges (:func:`sitegen.publish.bundle.open_bundle` and :class:`sitegen.publish.reader.BundlePair`)
  find, verify and load the files a manifest lists, and nothing else: an unlisted file is unverified evidence;
- pure comparison functions over plain dicts (:func:`compare_files`, :func:`compare_runs`,
  :func:`compare_metrics`, :func:`first_relevant_ranks`, :func:`compare_first_relevant`,
  :func:`compare_vectors`, :func:`compare_manifest_fields`) return small frozen dataclasses;
- :meth:`BundleDiff.to_json` (:mod:`sitegen.compare.diff_results`, with the other result dataclasses) and
  :func:`sitegen.compare.diff_format.format_diff` only present what they are handed.

A bundle is refused (:class:`sitegen.errors.BundleError`) unless every file its manifest lists has the listed
sha256: comparing a bundle that fails its own manifest would report edits as results.

:meth:`BundleDiff.to_json` shape::

    {"schema_version": 1, "a": str, "b": str, "tolerance": float,
     "summary": {"equivalent", "rankings_identical", "metrics_identical", "within_tolerance",
                 "files_identical", "files_total", "runs_compared", "runs_with_different_rankings",
                 "metric_values_differing", "questions_moved",
                 "largest_score_difference": {"value", "corpus"?, "ranker"?, "query_id"?, "doc_id"?, "rank"?}},
     "files": {"identical": [path], "differ": [path], "only_in_a": [path], "only_in_b": [path]},
     "runs": {"compared": [{"corpus", "ranker", "queries", "differing_queries": [query_id],
                            "compared_hits", "max_score_diff", "max_score_at": {"query_id", "doc_id", "rank"} | null,
                            "params_differ"}],
              "only_in_a": ["corpus/ranker"], "only_in_b": ["corpus/ranker"]},
     "metrics": [{"corpus", "ranker", "metric", "a", "b", "delta", "changed"}],     every overall value
     "first_relevant_rank": [{"corpus", "ranker", "query_id", "before", "after"}],  moved questions only
     "embeddings": [{"corpus", "file", "ids_match", "shape_a", "shape_b", "max_abs_diff",
                     "at": {"id", "component"} | null}],
     "manifest": [{"field", "a", "b"}],                                            differing fields only
     "reproduction": {                                       A the original, B the rerun (Breuer et al. 2020)
         "nrmse_normalisation": str, "rbo": {"p": 0.9, "depth": str}, "kendall_tau_union": str (why not),
         "scores": [{"corpus", "ranker", "metric", "questions", "questions_only_in_a", "questions_only_in_b",
                     "rmse", "nrmse", "undefined"}],                                    every metric
         "effects": [{"corpus", "baseline", "advanced", "metric", "questions_a", "questions_b",
                      "improvement_a", "improvement_b", "er", "er_undefined",
                      "ri_a", "ri_b", "delta_ri", "delta_ri_undefined"}],
         "pairs_not_compared": [{"corpus", "baseline", "advanced", "reason"}],       requested pairs only
         "rankings": [{"corpus", "ranker", "questions", "depth", "mean_rbo_ext", "min_rbo_ext", "min_at"}]}}

Paths are the manifest's (relative to the site root, ``evidence/...``); ranks are 1-based;
``null`` stands for "not in the run" or "absent", in ``reproduction`` for "undefined", with the
reason beside it (``undefined``, ``er_undefined``, ``delta_ri_undefined``). The reproduction
measures are defined in :mod:`sitegen.compare.repro`; they read the per-question scores of
``metrics.json`` (``per_query``) and the rankings of ``runs/<ranker>.json``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sitegen.compare.diff_results import (
    BundleDiff,
    EmbeddingDiff,
    FieldChange,
    FileDiff,
    HitRef,
    MetricChange,
    PairSkipped,
    RankMove,
    Reproduction,
    RunDiff,
)
from sitegen.compare.order import natural_key
from sitegen.compare.repro import (
    DEFAULT_PAIR,
    PairEffect,
    RankingAgreement,
    ScoreAgreement,
    pair_effects,
    ranking_agreement,
    score_agreement,
)
from sitegen.publish.bundle import open_bundle
from sitegen.publish.reader import BundlePair
from sitegen.scoring.report import first_relevant_rank

__all__ = [
    "compare_files",
    "compare_first_relevant",
    "compare_manifest_fields",
    "compare_metrics",
    "compare_pairs",
    "compare_runs",
    "compare_vectors",
    "diff_bundles",
    "first_relevant_ranks",
    "rankings_by_query",
]


# ---------------------------------------------------------------------------------- pure comparisons


def compare_files(a: Mapping[str, str], b: Mapping[str, str]) -> FileDiff:
    """Partition manifest paths (path -> sha256) by whether both sides list them with the same hash."""
    common = sorted(a.keys() & b.keys())
    return FileDiff(
        identical=tuple(p for p in common if a[p] == b[p]),
        differ=tuple(p for p in common if a[p] != b[p]),
        only_in_a=tuple(sorted(a.keys() - b.keys())),
        only_in_b=tuple(sorted(b.keys() - a.keys())),
    )


def _ranked(hits: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    # Order by the stored rank, not list position: the rank is what the run asserts.
    return sorted(hits, key=lambda h: h["rank"])


def compare_runs(corpus: str, ranker: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> RunDiff:
    """Compare two run documents (``{"queries": {qid: [{"doc_id", "rank", "score"}]}, "params"}``).

    A query differs when its id lists differ in content or order (a query missing on one side
    counts as an empty list). The score difference is taken over hits with the same document at
    the same rank; the first largest one in query-id, then rank order is kept as the example.
    """
    qa: Mapping[str, Sequence[Mapping[str, Any]]] = a.get("queries", {})
    qb: Mapping[str, Sequence[Mapping[str, Any]]] = b.get("queries", {})
    differing: list[str] = []
    compared = 0
    worst = 0.0
    where: HitRef | None = None
    for qid in sorted(qa.keys() | qb.keys(), key=natural_key):
        hits_a, hits_b = _ranked(qa.get(qid, ())), _ranked(qb.get(qid, ()))
        if [h["doc_id"] for h in hits_a] != [h["doc_id"] for h in hits_b]:
            differing.append(qid)
        at_rank = {h["rank"]: h for h in hits_b}
        for hit in hits_a:
            other = at_rank.get(hit["rank"])
            if other is None or other["doc_id"] != hit["doc_id"]:
                continue
            compared += 1
            diff = abs(float(hit["score"]) - float(other["score"]))
            if diff > worst:  # strict: the first largest one is the example; none when all are equal
                worst, where = diff, HitRef(qid, hit["doc_id"], hit["rank"])
    return RunDiff(
        corpus=corpus,
        ranker=ranker,
        queries=len(qa.keys() | qb.keys()),
        differing_queries=tuple(differing),
        compared_hits=compared,
        max_score_diff=worst,
        max_score_at=where,
        params_differ=a.get("params") != b.get("params"),
    )


def compare_metrics(corpus: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[MetricChange, ...]:
    """Every overall value of ``metrics.json`` (``{ranker: {"overall": {metric: value}}}``) on either side,
    in ranker then metric order; a ranker or metric present on one side only has ``None`` on the other."""
    changes = []
    for ranker in sorted(a.keys() | b.keys(), key=natural_key):
        overall_a: Mapping[str, Any] = a.get(ranker, {}).get("overall", {})
        overall_b: Mapping[str, Any] = b.get(ranker, {}).get("overall", {})
        for metric in sorted(overall_a.keys() | overall_b.keys(), key=natural_key):
            changes.append(MetricChange(corpus, ranker, metric, overall_a.get(metric), overall_b.get(metric)))
    return tuple(changes)


def first_relevant_ranks(run: Mapping[str, Any], grades: Mapping[str, Mapping[str, int]]) -> dict[str, int | None]:
    """Rank of the first passage graded above 0 for every question in the run or the qrels
    (``None`` when the run returns no relevant passage, or has no entry for the question)."""
    queries: Mapping[str, Sequence[Mapping[str, Any]]] = run.get("queries", {})
    return {
        qid: first_relevant_rank([h["doc_id"] for h in _ranked(queries.get(qid, ()))], grades.get(qid, {}))
        for qid in sorted(queries.keys() | grades.keys(), key=natural_key)
    }


def compare_first_relevant(
    corpus: str, ranker: str, before: Mapping[str, int | None], after: Mapping[str, int | None]
) -> tuple[RankMove, ...]:
    """The questions whose first relevant rank differs between A (``before``) and B (``after``)."""
    return tuple(
        RankMove(corpus, ranker, qid, before.get(qid), after.get(qid))
        for qid in sorted(before.keys() | after.keys(), key=natural_key)
        if before.get(qid) != after.get(qid)
    )


def compare_vectors(
    corpus: str,
    file: str,
    a_ids: Sequence[str] | None,
    a: np.ndarray,
    b_ids: Sequence[str] | None,
    b: np.ndarray,
) -> EmbeddingDiff:
    """Largest absolute component difference of two arrays whose row ids (``None``: unknown on that
    side) and shapes match; rows of different ids are different vectors, so they are not compared."""
    ids_match = (None if a_ids is None else list(a_ids)) == (None if b_ids is None else list(b_ids))
    if not ids_match or a.shape != b.shape:
        return EmbeddingDiff(corpus, file, ids_match, tuple(a.shape), tuple(b.shape), None, None, None)
    if a.size == 0:
        return EmbeddingDiff(corpus, file, True, tuple(a.shape), tuple(b.shape), 0.0, None, None)
    delta = np.abs(a.astype(np.float64) - b.astype(np.float64))
    flat = int(np.argmax(delta))
    index = np.unravel_index(flat, delta.shape)
    worst = float(delta.flat[flat])
    if worst == 0.0:
        return EmbeddingDiff(corpus, file, True, tuple(a.shape), tuple(b.shape), 0.0, None, None)
    row = int(index[0])
    row_id = a_ids[row] if a_ids is not None and row < len(a_ids) else f"row {row}"
    component = int(index[1]) if len(index) > 1 else None
    return EmbeddingDiff(corpus, file, True, tuple(a.shape), tuple(b.shape), worst, str(row_id), component)


_ABSENT = object()


def _leaves(obj: Any, prefix: str) -> dict[str, Any]:
    if isinstance(obj, Mapping) and obj:
        out: dict[str, Any] = {}
        for key in obj:
            out.update(_leaves(obj[key], f"{prefix}.{key}"))
        return out
    return {prefix: obj}


def compare_manifest_fields(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[FieldChange, ...]:
    """The manifest fields other than ``files`` that differ, to the leaf (``libraries.numpy``), so a
    version bump names the library; a field absent on one side shows ``None`` there."""
    leaves_a: dict[str, Any] = {}
    leaves_b: dict[str, Any] = {}
    for key in a:
        if key != "files":
            leaves_a.update(_leaves(a[key], key))
    for key in b:
        if key != "files":
            leaves_b.update(_leaves(b[key], key))
    changes = []
    for name in sorted(leaves_a.keys() | leaves_b.keys()):
        va, vb = leaves_a.get(name, _ABSENT), leaves_b.get(name, _ABSENT)
        if va != vb or (va is _ABSENT) != (vb is _ABSENT):
            changes.append(FieldChange(name, None if va is _ABSENT else va, None if vb is _ABSENT else vb))
    return tuple(changes)


def rankings_by_query(run: Mapping[str, Any]) -> dict[str, list[str]]:
    """A run document's rankings, ``{qid: [doc_id, ...]}`` in stored-rank order."""
    queries: Mapping[str, Sequence[Mapping[str, Any]]] = run.get("queries", {})
    return {qid: [h["doc_id"] for h in _ranked(hits)] for qid, hits in queries.items()}


def compare_pairs(
    corpus: str,
    per_query_a: Mapping[str, Mapping[str, Mapping[str, Any]]],
    per_query_b: Mapping[str, Mapping[str, Mapping[str, Any]]],
    pairs: Sequence[tuple[str, str]] = (),
) -> tuple[tuple[PairEffect, ...], tuple[PairSkipped, ...]]:
    """ER and ΔRI (:func:`sitegen.compare.repro.pair_effects`) for each (baseline, advanced) pair on one
    corpus, from ``{ranker: {qid: {metric: score}}}`` of A and B. With no ``pairs``, the default pair
    (bm25, rrf-dense-bm25) where all four sides have it, silently skipped elsewhere; a requested pair
    missing a side is listed as not compared, with the reason."""
    requested = list(pairs) or [DEFAULT_PAIR]
    effects: list[PairEffect] = []
    skipped: list[PairSkipped] = []
    for baseline, advanced in requested:
        missing = [
            f"{name} has no per-question scores in {side}"
            for side, scored in (("A", per_query_a), ("B", per_query_b))
            for name in (baseline, advanced)
            if not scored.get(name)
        ]
        if missing:
            if pairs:
                skipped.append(PairSkipped(corpus, baseline, advanced, "; ".join(missing)))
            continue
        effects.extend(pair_effects(corpus, baseline, advanced, per_query_a, per_query_b))
    return tuple(effects), tuple(skipped)


# ------------------------------------------------------------------------------------------- readers


def _per_query(scored: Mapping[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{ranker: {qid: {metric: score}}}`` of a checked metrics document."""
    return {ranker: dict(doc.get("per_query", {})) for ranker, doc in scored.items()}


def diff_bundles(a: Path, b: Path, tolerance: float = 0.0, pairs: Sequence[tuple[str, str]] = ()) -> BundleDiff:
    """Verify and compare two bundles (site folders or ``evidence/`` folders); ``tolerance`` is the
    largest absolute score difference, on the same hit, that still counts as equal. ``pairs``
    (baseline, advanced) are the rankers whose effect ratio and ΔRI are reported (default: bm25 and
    rrf-dense-bm25 where both exist); they do not affect :attr:`BundleDiff.equivalent`."""
    if not (isinstance(tolerance, int | float) and math.isfinite(tolerance) and tolerance >= 0):
        raise ValueError(f"tolerance must be a finite number >= 0, not {tolerance!r}")
    pair = BundlePair(open_bundle(a), open_bundle(b))
    files = compare_files(pair.a.files, pair.b.files)

    runs_a, runs_b = pair.runs()
    grades: dict[str, tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]] = {}
    run_diffs: list[RunDiff] = []
    moves: list[RankMove] = []
    rankings: list[RankingAgreement] = []
    # One pair of runs in memory at a time: a large bundle holds many.
    for corpus, ranker in sorted(runs_a & runs_b, key=lambda k: (k[0], natural_key(k[1]))):
        run_a, run_b = pair.run(corpus, ranker)
        run_diffs.append(compare_runs(corpus, ranker, run_a, run_b))
        if corpus not in grades:
            grades[corpus] = pair.grades(corpus)
        grades_a, grades_b = grades[corpus]
        before = first_relevant_ranks(run_a, grades_a)
        after = first_relevant_ranks(run_b, grades_b)
        moves.extend(compare_first_relevant(corpus, ranker, before, after))
        rankings.append(ranking_agreement(corpus, ranker, rankings_by_query(run_a), rankings_by_query(run_b)))

    metric_changes: list[MetricChange] = []
    scores: list[ScoreAgreement] = []
    effects: list[PairEffect] = []
    skipped: list[PairSkipped] = []
    for corpus, scored_a, scored_b in pair.metrics():
        metric_changes.extend(compare_metrics(corpus, scored_a, scored_b))
        per_query_a, per_query_b = _per_query(scored_a), _per_query(scored_b)
        for ranker in sorted(per_query_a.keys() & per_query_b.keys(), key=natural_key):
            scores.extend(score_agreement(corpus, ranker, per_query_a[ranker], per_query_b[ranker]))
        found, not_found = compare_pairs(corpus, per_query_a, per_query_b, pairs)
        effects.extend(found)
        skipped.extend(not_found)

    vectors = [compare_vectors(v.corpus, v.file, v.ids_a, v.a, v.ids_b, v.b) for v in pair.vectors()]

    return BundleDiff(
        a=str(a),
        b=str(b),
        tolerance=float(tolerance),
        files=files,
        runs=tuple(run_diffs),
        runs_only_in_a=tuple(f"{c}/{r}" for c, r in sorted(runs_a - runs_b)),
        runs_only_in_b=tuple(f"{c}/{r}" for c, r in sorted(runs_b - runs_a)),
        metrics=tuple(metric_changes),
        moves=tuple(moves),
        embeddings=tuple(vectors),
        manifest=compare_manifest_fields(pair.a.manifest, pair.b.manifest),
        reproduction=Reproduction(tuple(scores), tuple(effects), tuple(skipped), tuple(rankings)),
    )
