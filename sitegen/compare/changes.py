"""Changes since a baseline: what ``sitegen build --baseline DIR`` writes for each corpus in both builds.

People rebuild because they changed something; the first question is what changed and whether it helped.
The baseline (an earlier site or bundle) is opened through :func:`sitegen.publish.bundle.open_bundle`, so
every file is checked against its own manifest first, and only what the audit needs to recompute the page
is copied into the new bundle, beside the baseline manifest's sha256:

- ``evidence/<corpus>/baseline/inputs/...``: the baseline's input files (the input diff is recomputed from them);
- ``evidence/<corpus>/baseline/baseline.json``: ``{"schema_version", "manifest_sha256", "command", "inputs": [name],
  "rankers": [r], "per_query": {r: {qid: {metric: value}}}, "first_relevant": {r: {qid: rank | null}}}``.

``evidence/<corpus>/changes.json`` is then a pure function (:func:`changes_report`) of that copy and the
new evidence. Its shape::

    {"schema_version": 1, "baseline": {"manifest_sha256", "command"},
     "settings": {"seed", "rounds", "alpha", "min_differing", "correction", "correction_name",
                  "plot_metric", "depth"},
     "inputs": {"passages" | "questions": {"added": [id], "removed": [id], "edited": [{"id", "diff": [line]}]},
                "labels": {"added" | "removed": [{"query_id", "doc_id", "grade"}],
                           "edited": [{"query_id", "doc_id", "before", "after"}]},
                "files": {"added": [name], "removed": [name], "edited": [{"file", "diff": [line]}]}},
     "rankers": {"added": [r], "removed": [r], "compared": [r]},
     "family": {"tests", "size", "excluded"},
     "metrics": [{"ranker", "metric", "questions", "baseline", "now", "difference", "differing", "tested",
                  "p_value", "p_adjusted", "significant"}],
     "moved": [{"query_id", "ranker", "before", "after", "distance"}],
     "moved_questions": [query_id],
     "agreement": [{"ranker", "metric", "questions", "mean_difference", "ci_low", "ci_high",
                    "points": [{"query_id", "mean", "difference"}]}]}

Statistics are the corpus page's (:mod:`sitegen.scoring.experiments`): the paired randomisation test per
ranker x metric over the questions scored in both builds, one family per corpus adjusted with the corpus's
correction, tests with fewer than ``min_differing`` differing questions left out of the family. Records are
diffed as ``json.dumps(record, sort_keys=True, indent=1, ensure_ascii=False)`` lines, unified, 1 line of context.
"""

from __future__ import annotations

import difflib
import json
import math
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sitegen.compare.diff import compare_first_relevant, first_relevant_ranks
from sitegen.compare.order import natural_key
from sitegen.errors import BuildError, BundleError
from sitegen.hashing import sha256_file
from sitegen.inputs.corpus import CORPUS_FILE, QRELS_FILE, QUERIES_FILE, json_lines
from sitegen.publish.bundle import open_bundle
from sitegen.publish.evidence import write_json
from sitegen.publish.layout import MANIFEST, input_of
from sitegen.publish.reader import CorpusReader, SiteFolder, qrels_grades
from sitegen.scoring.experiments import ExperimentSettings
from sitegen.scoring.statistics import CORRECTIONS, adjust_p_values, paired_bootstrap_ci, paired_randomisation_test

__all__ = [
    "PLOT_METRIC",
    "Baseline",
    "BaselineCorpus",
    "BuildScores",
    "changes_report",
    "input_changes",
    "open_baseline",
    "write_changes",
]

CHANGES_SCHEMA_VERSION = 1
#: The metric of the per-question difference plot: graded, so a label's grade shows in it.
PLOT_METRIC = "ndcg@10"
#: The input files diffed record by record; any other input file is diffed line by line.
PASSAGES, QUESTIONS, LABELS = CORPUS_FILE, QUERIES_FILE, QRELS_FILE
#: The corpus page's test settings (seed, rounds, alpha, minimum differing questions).
DEFAULT_SETTINGS = ExperimentSettings()


@dataclass(frozen=True)
class BaselineCorpus:
    """What the new bundle keeps of one baseline corpus: its input files and ``baseline.json``."""

    inputs: Mapping[str, bytes]
    record: Mapping[str, Any]


@dataclass(frozen=True)
class Baseline:
    """A baseline bundle that passed its own manifest, read into memory when it was opened."""

    source: Path
    manifest_sha256: str
    corpora: Mapping[str, BaselineCorpus]


def open_baseline(path: Path) -> Baseline:
    """Open and verify ``--baseline DIR`` and keep what the Changes pages need; a folder that is not a sitegen
    bundle, or whose files fail its manifest's sha256, is refused with a BuildError naming the file."""
    try:
        bundle = open_bundle(path)
        tool = bundle.manifest.get("tool")
        if not isinstance(tool, Mapping) or tool.get("name") != "sitegen":
            raise BundleError(bundle.path(MANIFEST), "not written by sitegen (tool.name)")
        manifest_sha256 = sha256_file(bundle.path(MANIFEST))
        corpora: dict[str, BaselineCorpus] = {}
        for name in bundle.manifest.get("corpora") or []:
            reader = CorpusReader(bundle, name)
            if not bundle.has(reader.files.summary):
                continue
            summary = reader.summary()
            if summary.redacted:  # its Changes page would compare texts the baseline does not hold
                raise BundleError(bundle.path(reader.files.summary), f"{name} is published redacted, without texts")
            metrics = reader.json(reader.files.metrics)
            inputs = {input_of(rel): bundle.require(reader.files.at(rel)).read_bytes() for rel in summary.inputs}
            grades = reader.grades()
            rankers = list(summary.rankers)
            record = {
                "schema_version": CHANGES_SCHEMA_VERSION,
                "manifest_sha256": manifest_sha256,
                "command": bundle.manifest.get("command"),
                "inputs": sorted(inputs),
                "rankers": rankers,
                "per_query": {r: metrics[r]["per_query"] for r in rankers},
                "first_relevant": {r: first_relevant_ranks(reader.run(r), grades) for r in rankers},
            }
            corpora[name] = BaselineCorpus(inputs, record)
    except BundleError as exc:
        raise BuildError(f"--baseline {path} is refused: {exc}") from None
    except (KeyError, TypeError, UnicodeDecodeError) as exc:
        raise BuildError(f"--baseline {path} is refused: not a sitegen bundle this version reads ({exc!r})") from None
    return Baseline(Path(path), manifest_sha256, corpora)


# ------------------------------------------------------------------------------------------ pure parts


def _record_lines(record: Mapping[str, Any]) -> list[str]:
    return json.dumps(record, sort_keys=True, indent=1, ensure_ascii=False).split("\n")


def _diff(before: list[str], after: list[str]) -> list[str]:
    return list(difflib.unified_diff(before, after, "baseline", "now", n=1, lineterm=""))


def _records(records: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {str(r.get("_id")): r for r in records}


def _record_changes(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    a, b = _records(before), _records(after)
    return {
        "added": sorted(b.keys() - a.keys(), key=natural_key),
        "removed": sorted(a.keys() - b.keys(), key=natural_key),
        "edited": [
            {"id": key, "diff": _diff(_record_lines(a[key]), _record_lines(b[key]))}
            for key in sorted(a.keys() & b.keys(), key=natural_key)
            if a[key] != b[key]
        ],
    }


def _pairs(grades: Mapping[str, Mapping[str, int]]) -> dict[tuple[str, str], int]:
    return {(q, d): g for q, judged in grades.items() for d, g in judged.items()}


def _label_changes(before: Mapping[str, Mapping[str, int]], after: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    a, b = _pairs(before), _pairs(after)

    def key(pair: tuple[str, str]) -> tuple[Any, ...]:
        return (natural_key(pair[0]), natural_key(pair[1]))

    return {
        "added": [{"query_id": q, "doc_id": d, "grade": b[q, d]} for q, d in sorted(b.keys() - a.keys(), key=key)],
        "removed": [{"query_id": q, "doc_id": d, "grade": a[q, d]} for q, d in sorted(a.keys() - b.keys(), key=key)],
        "edited": [
            {"query_id": q, "doc_id": d, "before": a[q, d], "after": b[q, d]}
            for q, d in sorted(a.keys() & b.keys(), key=key)
            if a[q, d] != b[q, d]
        ],
    }


def input_changes(before: Mapping[str, Path], after: Mapping[str, Path]) -> dict[str, Any]:
    """Passages, questions and labels added, removed or edited, and any other input file changed, between two
    sets of input files (``{name: path}``, names as in ``corpus.json``'s inputs without ``inputs/``)."""

    def records(files: Mapping[str, Path], name: str) -> list[dict[str, Any]]:
        return [obj for _, obj in json_lines(files[name])] if name in files else []

    def grades(files: Mapping[str, Path]) -> dict[str, dict[str, int]]:
        text = files[LABELS].read_text(encoding="utf-8") if LABELS in files else ""
        return qrels_grades(text, str(files.get(LABELS, LABELS)))

    others_a = {n: p for n, p in before.items() if n not in (PASSAGES, QUESTIONS, LABELS)}
    others_b = {n: p for n, p in after.items() if n not in (PASSAGES, QUESTIONS, LABELS)}
    edited = [
        {
            "file": name,
            "diff": _diff(
                others_a[name].read_text(encoding="utf-8").split("\n"),
                others_b[name].read_text(encoding="utf-8").split("\n"),
            ),
        }
        for name in sorted(others_a.keys() & others_b.keys())
        if others_a[name].read_bytes() != others_b[name].read_bytes()
    ]
    return {
        "passages": _record_changes(records(before, PASSAGES), records(after, PASSAGES)),
        "questions": _record_changes(records(before, QUESTIONS), records(after, QUESTIONS)),
        "labels": _label_changes(grades(before), grades(after)),
        "files": {
            "added": sorted(others_b.keys() - others_a.keys()),
            "removed": sorted(others_a.keys() - others_b.keys()),
            "edited": edited,
        },
    }


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0


def _metric_rows(
    baseline: Mapping[str, Mapping[str, Mapping[str, float]]],
    now: Mapping[str, Mapping[str, Mapping[str, float]]],
    rankers: Sequence[str],
    settings: ExperimentSettings,
    correction: str,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    rows: list[dict[str, Any]] = []
    for ranker in rankers:
        questions = sorted(baseline[ranker].keys() & now[ranker].keys(), key=natural_key)
        if not questions:
            continue
        metrics = sorted(set(baseline[ranker][questions[0]]) & set(now[ranker][questions[0]]), key=natural_key)
        for metric in metrics:
            before = [float(baseline[ranker][q][metric]) for q in questions]
            after = [float(now[ranker][q][metric]) for q in questions]
            test = paired_randomisation_test(after, before, settings.seed, settings.rounds)
            tested = test.differing >= settings.min_differing
            rows.append(
                {
                    "ranker": ranker,
                    "metric": metric,
                    "questions": len(questions),
                    "baseline": _mean(before),
                    "now": _mean(after),
                    "difference": math.fsum(x - y for x, y in zip(after, before, strict=True)) / len(questions),
                    "differing": test.differing,
                    "tested": tested,
                    "p_value": test.p_value if tested else None,
                    "p_adjusted": None,
                    "significant": None,
                }
            )
    family = [row for row in rows if row["tested"]]
    for row, adjusted in zip(family, adjust_p_values([r["p_value"] for r in family], correction), strict=True):
        row["p_adjusted"] = adjusted
        row["significant"] = adjusted < settings.alpha
    return rows, {"tests": len(rows), "size": len(family), "excluded": len(rows) - len(family)}


def _distance(before: int | None, after: int | None, depth: int) -> int:
    """How far a first relevant passage moved; "not in the run" counts as rank depth + 1."""
    return abs((depth + 1 if before is None else before) - (depth + 1 if after is None else after))


def _agreement(
    baseline: Mapping[str, Mapping[str, Mapping[str, float]]],
    now: Mapping[str, Mapping[str, Mapping[str, float]]],
    rankers: Sequence[str],
    settings: ExperimentSettings,
) -> list[dict[str, Any]]:
    """Per ranker, each question's mean of the two scores and their difference (now - baseline) on
    :data:`PLOT_METRIC`, with the mean difference and its 95% bootstrap interval: a Bland-Altman view."""
    rows = []
    for ranker in rankers:
        questions = sorted(baseline[ranker].keys() & now[ranker].keys(), key=natural_key)
        if not questions or PLOT_METRIC not in now[ranker][questions[0]]:
            continue
        before = [float(baseline[ranker][q][PLOT_METRIC]) for q in questions]
        after = [float(now[ranker][q][PLOT_METRIC]) for q in questions]
        low, high = paired_bootstrap_ci(after, before, settings.seed, settings.rounds)
        rows.append(
            {
                "ranker": ranker,
                "metric": PLOT_METRIC,
                "questions": len(questions),
                "mean_difference": math.fsum(x - y for x, y in zip(after, before, strict=True)) / len(questions),
                "ci_low": low,
                "ci_high": high,
                "points": [
                    {"query_id": q, "mean": (x + y) / 2, "difference": x - y}
                    for q, x, y in zip(questions, after, before, strict=True)
                ],
            }
        )
    return rows


@dataclass(frozen=True)
class BuildScores:
    """What the new build measured on one corpus: its rankers, their per-question metrics
    (``{ranker: {qid: {metric: value}}}``) and first relevant ranks, and the depth of its runs."""

    rankers: Sequence[str]
    per_query: Mapping[str, Mapping[str, Mapping[str, float]]]
    first_relevant: Mapping[str, Mapping[str, int | None]]
    depth: int


def changes_report(
    baseline: Mapping[str, Any],
    inputs: Mapping[str, Any],
    build: BuildScores,
    correction: str,
    settings: ExperimentSettings = DEFAULT_SETTINGS,
) -> dict[str, Any]:
    """``changes.json`` for one corpus from the baseline record (``baseline.json``), the input diff
    (:func:`input_changes`), and the new build's rankers, per-question metrics and first relevant ranks."""
    rankers, per_query, first_relevant, depth = build.rankers, build.per_query, build.first_relevant, build.depth
    compared = [r for r in rankers if r in baseline["rankers"]]
    rows, family = _metric_rows(baseline["per_query"], per_query, compared, settings, correction)
    moved = []
    for ranker in compared:
        moves = compare_first_relevant("", ranker, baseline["first_relevant"][ranker], first_relevant[ranker])
        moved += [
            {
                "query_id": m.query_id,
                "ranker": ranker,
                "before": m.before,
                "after": m.after,
                "distance": _distance(m.before, m.after, depth),
            }
            for m in moves
        ]
    moved.sort(key=lambda m: (-m["distance"], natural_key(m["query_id"]), natural_key(m["ranker"])))
    return {
        "schema_version": CHANGES_SCHEMA_VERSION,
        "baseline": {"manifest_sha256": baseline["manifest_sha256"], "command": baseline["command"]},
        "settings": {
            "seed": settings.seed,
            "rounds": settings.rounds,
            "alpha": settings.alpha,
            "min_differing": settings.min_differing,
            "correction": correction,
            "correction_name": CORRECTIONS[correction],
            "plot_metric": PLOT_METRIC,
            "depth": depth,
        },
        "inputs": dict(inputs),
        "rankers": {
            "added": [r for r in rankers if r not in baseline["rankers"]],
            "removed": [r for r in baseline["rankers"] if r not in rankers],
            "compared": compared,
        },
        "family": family,
        "metrics": rows,
        "moved": moved,
        "moved_questions": sorted({m["query_id"] for m in moved}, key=natural_key),
        "agreement": _agreement(baseline["per_query"], per_query, compared, settings),
    }


# ------------------------------------------------------------------------------------------ writing


def write_changes(
    site_dir: Path, baseline: Baseline, corpora: Sequence[str], correction: Mapping[str, str]
) -> list[str]:
    """For each corpus in both builds: copy the baseline's inputs and record under ``<corpus>/baseline/`` and
    write ``<corpus>/changes.json`` from that copy and the new evidence. Returns the corpora compared."""
    done = []
    for name in corpora:
        kept = baseline.corpora.get(name)
        if kept is None:
            continue
        reader = CorpusReader(SiteFolder(site_dir), name)
        files = reader.files
        if (site_dir / files.baseline).exists():
            shutil.rmtree(site_dir / files.baseline)
        old_inputs = {rel: site_dir / files.baseline_input(rel) for rel in kept.inputs}
        for rel, data in kept.inputs.items():
            old_inputs[rel].parent.mkdir(parents=True, exist_ok=True)
            old_inputs[rel].write_bytes(data)
        write_json(site_dir / files.baseline_record, kept.record)
        summary = reader.summary()
        metrics = reader.json(files.metrics)
        grades = reader.grades()
        rankers = list(summary.rankers)
        report = changes_report(
            kept.record,
            input_changes(old_inputs, reader.inputs(summary)),
            BuildScores(
                rankers,
                {r: metrics[r]["per_query"] for r in rankers},
                {r: first_relevant_ranks(reader.run(r), grades) for r in rankers},
                int(summary.depth),
            ),
            correction.get(name, "holm"),
        )
        write_json(site_dir / files.changes, report)
        done.append(name)
    return done
