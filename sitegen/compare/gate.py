"""Regression gate: the metric values one build published, recorded, and a later build checked against them.

``sitegen gate record SITE --out FILE`` writes the gate file from a site's bundle (opened with
:func:`~sitegen.publish.bundle.open_bundle`, so a bundle that fails its manifest is refused);
``sitegen gate check FILE SITE`` checks another site against it. The file is JSON meant to be read,
edited and reviewed by hand, and committed beside the corpora (``corpora/gate.json``)::

    {
      "checks": [
        {"corpus": "tiny", "expected": 0.55, "metric": "ndcg@10", "precision": 4, "ranker": "bm25", "tolerance": 0.001},
        ...
      ],
      "format": "sitegen-gate/1"
    }

One check per line, sorted by corpus, ranker and metric, keys sorted, so a re-record shows as a line diff.
``"tolerance"`` says where the checks' tolerances came from: ``{"rule": "one-question", "questions": {corpus: n}}``
(the default: one question's effect on a mean of n per-question values in [0, 1], 1/n, rounded up to the precision
after adding one unit of it for the rounding of both values, so a one-question change is OK and two are not) or
``{"rule": "fixed", "value": x}`` (``--tolerance``). A fixed 0.001 is smaller than one question's effect on any
question set under 1,000 questions, so noise read as OK*.
Beside the checks, ``"inputs"`` records each corpus's question set as the recorded site's ``corpus.json`` gives
it: the sha256 of ``qrels/test.tsv`` and ``queries.jsonl``; and its stored vectors as the manifest hashes them, each
model's ``embeddings/.../index.json`` (which names the model and its configuration) and vector files, so a build
with another model, configuration or vectors is named too. A check against a site built from other questions
or labels FAILs and names the files (``--allow-changed-inputs`` reports them and goes on): scores of another
question set are not the same measurement, and an edited question once passed as "217 OK, 8 OK*".
``expected`` is the overall value of ``metric`` for ``ranker`` in ``evidence/<corpus>/metrics.json``,
rounded to ``precision`` decimals when recorded. Loosen one ``tolerance`` by editing its line; stop checking a
value by deleting its line. A value the site has and the file does not is not checked (the summary counts them).

The rule is Anserini's regression rule (:func:`judge`): both values are rounded to ``precision`` decimals;
equal is OK; better is OK (every metric sitegen computes is higher-is-better); a difference of at most
``tolerance`` is OK; at most 1.5 x ``tolerance`` is OK* (worth a look, not a failure); anything else FAILs,
and so does a corpus, ranker or metric the site lacks.

The rule and the comparison are pure functions; reading the site and the file happens at the edges
(:func:`record_gate`, :func:`check_gate`).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from sitegen.errors import SitegenError
from sitegen.inputs.binding import QUESTION_SET_FILES
from sitegen.inputs.vectors import SUPPLIED_DIR
from sitegen.publish.bundle import load_json, open_bundle
from sitegen.publish.layout import METRICS, SUMMARY, CorpusFiles, corpus_file, vector_index_files
from sitegen.publish.reader import CorpusReader

__all__ = [
    "FAIL",
    "FORMAT",
    "FORMAT_WITHOUT_INPUTS",
    "OK",
    "OK_NEAR",
    "CheckResult",
    "Expectation",
    "GateError",
    "GateFile",
    "GateOutcome",
    "Verdict",
    "changed_inputs",
    "check_gate",
    "compare",
    "dump_gate",
    "expectations_from_metrics",
    "format_result",
    "input_lines",
    "judge",
    "load_gate",
    "one_question_tolerance",
    "parse_gate",
    "record_gate",
    "result_json",
    "site_metrics",
    "summary_line",
    "unchecked",
]

FORMAT = "sitegen-gate/2"
#: Gate files written before the inputs were recorded: read, their inputs unchecked (the summary says so).
FORMAT_WITHOUT_INPUTS = "sitegen-gate/1"
OK, OK_NEAR, FAIL = "OK", "OK*", "FAIL"
#: The OK* band: a difference beyond the tolerance but within this many tolerances.
NEAR_FACTOR = Decimal("1.5")
MAX_PRECISION = 12

#: corpus -> ranker -> metric -> overall value, as ``evidence/<corpus>/metrics.json`` holds them.
Observed = Mapping[str, Mapping[str, Mapping[str, Any]]]


class GateError(SitegenError):
    """A gate file or a site that cannot be read as one: a one-line message naming the file."""


@dataclass(frozen=True)
class Expectation:
    """One line of the gate file."""

    corpus: str
    ranker: str
    metric: str
    expected: float
    precision: int
    tolerance: float

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.corpus, self.ranker, self.metric)

    def as_json(self) -> dict[str, Any]:
        return {
            "corpus": self.corpus,
            "ranker": self.ranker,
            "metric": self.metric,
            "expected": self.expected,
            "precision": self.precision,
            "tolerance": self.tolerance,
        }


@dataclass(frozen=True)
class Verdict:
    """What :func:`judge` decided: the status, the absolute difference after rounding, and whether the
    new value is the better one."""

    status: str
    delta: Decimal
    better: bool


@dataclass(frozen=True)
class CheckResult:
    expectation: Expectation
    status: str
    actual: float | None = None
    delta: Decimal | None = None
    better: bool = False
    #: Why there is no value to compare ("the site has no corpus x"); empty when there is one.
    problem: str = ""


#: corpus -> input file (``qrels/test.tsv``, ``queries.jsonl``) -> sha256.
InputHashes = Mapping[str, Mapping[str, str]]


@dataclass(frozen=True)
class GateFile:
    """A gate file: its checks, the question set each corpus was recorded with (None: a gate file of
    :data:`FORMAT_WITHOUT_INPUTS`, which recorded none), and the rule its tolerances follow (None: not
    recorded, a file written before the rule was)."""

    expectations: tuple[Expectation, ...]
    inputs: InputHashes | None
    tolerance: Mapping[str, Any] | None = None


def one_question_tolerance(questions: int, precision: int) -> float:
    """One question's effect on a mean of ``questions`` per-question values in [0, 1] (1/n), plus one unit of
    the precision (both values are rounded before they are compared), rounded up to the precision; 0 without a
    question."""
    if questions < 1:
        return 0.0
    unit = Decimal(1).scaleb(-precision)
    bound = Decimal(1) / Decimal(questions) + unit
    return float((bound / unit).to_integral_value(rounding="ROUND_CEILING") * unit)


@dataclass(frozen=True)
class GateOutcome:
    results: tuple[CheckResult, ...]
    #: ``corpus/ranker metric`` of the site's values that no line of the gate file checks.
    unchecked: tuple[str, ...]
    #: One line per input that differs from the recorded one (``tiny: queries.jsonl: sha256 ..., recorded ...``).
    changed_inputs: tuple[str, ...] = ()
    #: ``--allow-changed-inputs``: changed inputs are reported, not failed.
    inputs_allowed: bool = False
    #: The gate file recorded no inputs (an older format), so none were compared.
    inputs_unrecorded: bool = False

    @property
    def failed(self) -> bool:
        return any(r.status == FAIL for r in self.results) or bool(self.changed_inputs and not self.inputs_allowed)


# ------------------------------------------------------------------------------------------ the rule


def _rounded(value: float, precision: int) -> Decimal:
    """``value`` rounded to ``precision`` decimals (correctly, from its binary value), as an exact decimal."""
    return Decimal(repr(round(float(value), precision)))


def judge(expected: float, actual: float, precision: int, tolerance: float) -> Verdict:
    """Anserini's rule for a higher-is-better metric: round both to ``precision`` decimals; OK when equal,
    when ``actual`` is better, or when they differ by at most ``tolerance``; OK* within 1.5 x ``tolerance``;
    else FAIL. The comparison is in exact decimals, so a difference of exactly the tolerance is OK."""
    want, got = _rounded(expected, precision), _rounded(actual, precision)
    delta = abs(got - want)
    allowed = Decimal(repr(float(tolerance)))
    if got == want:
        return Verdict(OK, delta, False)
    if got > want:
        return Verdict(OK, delta, True)
    if delta <= allowed:
        return Verdict(OK, delta, False)
    if delta <= allowed * NEAR_FACTOR:
        return Verdict(OK_NEAR, delta, False)
    return Verdict(FAIL, delta, False)


def _finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def compare(expectations: Iterable[Expectation], observed: Observed) -> list[CheckResult]:
    """Judge every expectation against the site's values; a corpus, ranker or metric the site lacks FAILs."""
    results = []
    for exp in expectations:
        rankers = observed.get(exp.corpus)
        metrics = rankers.get(exp.ranker) if rankers is not None else None
        if rankers is None:
            problem = f"the site has no corpus {exp.corpus}"
        elif metrics is None:
            problem = f"corpus {exp.corpus} has no ranker {exp.ranker}"
        elif exp.metric not in metrics:
            problem = f"{exp.corpus}/{exp.ranker} has no metric {exp.metric}"
        elif not _finite_number(metrics[exp.metric]):
            problem = f"{exp.corpus}/{exp.ranker} {exp.metric} is {metrics[exp.metric]!r}, not a finite number"
        else:
            actual = float(metrics[exp.metric])
            verdict = judge(exp.expected, actual, exp.precision, exp.tolerance)
            results.append(CheckResult(exp, verdict.status, actual, verdict.delta, verdict.better))
            continue
        results.append(CheckResult(exp, FAIL, problem=problem))
    return results


def unchecked(expectations: Iterable[Expectation], observed: Observed) -> list[str]:
    """The site's values no expectation checks, as ``corpus/ranker metric``, sorted."""
    keys = {e.key for e in expectations}
    return [
        f"{corpus}/{ranker} {metric}"
        for corpus in sorted(observed)
        for ranker in sorted(observed[corpus])
        for metric in sorted(observed[corpus][ranker])
        if (corpus, ranker, metric) not in keys
    ]


def _is_vector_file(name: str) -> bool:
    return name.startswith(f"{SUPPLIED_DIR}/")


def changed_inputs(recorded: InputHashes, observed: InputHashes) -> list[str]:
    """One line per question-set file, or file of stored vectors (a model's ``index.json``, which names the model
    and its configuration, and its vectors), whose sha256 differs from the recorded one, or is missing on either
    side. Vectors are compared only for a corpus whose recorded inputs list some (gate files recorded before
    vectors were are read as they were)."""
    lines = []
    for corpus in sorted(recorded):
        if corpus not in observed:
            continue  # the metric checks already fail for a corpus the site lacks
        with_vectors = any(map(_is_vector_file, recorded[corpus]))
        names = {*recorded[corpus], *(n for n in observed[corpus] if with_vectors or not _is_vector_file(n))}
        for name in sorted(names):
            want, got = recorded[corpus].get(name), observed[corpus].get(name)
            if want != got:
                what = " (stored vectors: the model, its configuration or its vectors changed)"
                lines.append(
                    f"{corpus}: {name}: sha256 {got or 'not recorded'}, the gate recorded {want or 'none'}"
                    + (what if _is_vector_file(name) else "")
                )
    return lines


def expectations_from_metrics(
    observed: Observed, precision: int, tolerance: float | Mapping[str, float]
) -> list[Expectation]:
    """One expectation per corpus x ranker x metric, the value rounded to ``precision``, sorted; ``tolerance`` is
    one value for every check or one per corpus."""
    per_corpus = tolerance if isinstance(tolerance, Mapping) else dict.fromkeys(observed, tolerance)
    for value in per_corpus.values():
        _check_precision_and_tolerance(precision, value, "record")
    found = []
    for corpus in sorted(observed):
        tolerance = per_corpus[corpus]
        for ranker in sorted(observed[corpus]):
            for metric in sorted(observed[corpus][ranker]):
                value = observed[corpus][ranker][metric]
                if not _finite_number(value):
                    raise GateError(f"{corpus}/{ranker} {metric} is {value!r}, not a finite number; nothing to record")
                found.append(
                    Expectation(corpus, ranker, metric, round(float(value), precision), precision, float(tolerance))
                )
    return found


def _check_precision_and_tolerance(precision: Any, tolerance: Any, where: str) -> None:
    if type(precision) is not int or not 0 <= precision <= MAX_PRECISION:
        raise GateError(f"{where}: precision {precision!r} is not a whole number from 0 to {MAX_PRECISION}")
    if not _finite_number(tolerance) or tolerance < 0:
        raise GateError(f"{where}: tolerance {tolerance!r} is not a finite number >= 0")


# ----------------------------------------------------------------------------------------- the text


def _fixed(value: float | Decimal, precision: int) -> str:
    return f"{value:.{precision}f}"


def _tolerance_text(tolerance: float, precision: int) -> str:
    """The tolerance at ``precision`` decimals, unless that would hide digits it has (then as written)."""
    text = _fixed(tolerance, precision)
    return text if float(text) == tolerance else repr(tolerance)


def format_result(result: CheckResult) -> str:
    """One line: ``[OK*] payments-support/bm25 ndcg@10 expected 0.4465 actual 0.4451 (delta 0.0014,
    tolerance 0.0010)``; a better value adds ``, better``; a missing value says what is missing."""
    exp, p = result.expectation, result.expectation.precision
    head = f"[{result.status}] {exp.corpus}/{exp.ranker} {exp.metric} expected {_fixed(exp.expected, p)}"
    if result.problem or result.actual is None or result.delta is None:
        return f"{head} actual missing ({result.problem})"
    better = ", better" if result.better else ""
    return (
        f"{head} actual {_fixed(result.actual, p)} "
        f"(delta {_fixed(result.delta, p)}, tolerance {_tolerance_text(exp.tolerance, p)}{better})"
    )


def input_lines(outcome: GateOutcome) -> list[str]:
    """The lines about the question sets: each changed file, FAIL unless allowed."""
    status = "CHANGED" if outcome.inputs_allowed else FAIL
    return [f"[{status}] inputs {line}" for line in outcome.changed_inputs]


def summary_line(outcome: GateOutcome, source: str) -> str:
    counts = {status: sum(1 for r in outcome.results if r.status == status) for status in (OK, OK_NEAR, FAIL)}
    line = (
        f"gate {'FAIL' if outcome.failed else 'PASS'}: {len(outcome.results)} checks against {source}: "
        f"{counts[OK]} OK, {counts[OK_NEAR]} OK*, {counts[FAIL]} FAIL"
    )
    if outcome.changed_inputs:
        files = len(outcome.changed_inputs)
        line += f"; {files} question-set file{'s' if files > 1 else ''} changed since the gate was recorded" + (
            " (--allow-changed-inputs)" if outcome.inputs_allowed else ""
        )
    elif outcome.inputs_unrecorded:
        line += "; the gate file records no question set (re-record it to check the inputs)"
    if outcome.unchecked:
        line += f"; {len(outcome.unchecked)} values in the site have no check (e.g. {outcome.unchecked[0]})"
    return line


def result_json(result: CheckResult) -> dict[str, Any]:
    """A result for ``--json``: the expectation's fields plus status, actual, delta, better and problem."""
    return {
        **result.expectation.as_json(),
        "status": result.status,
        "actual": result.actual,
        "delta": float(result.delta) if result.delta is not None else None,
        "better": result.better,
        "problem": result.problem or None,
    }


def dump_gate(gate: GateFile) -> str:
    """The gate file's text: sorted keys, one check per line and one corpus's inputs per line, deterministic
    for the same gate."""
    lines = [json.dumps(e.as_json(), sort_keys=True, ensure_ascii=False, allow_nan=False) for e in gate.expectations]
    body = ",\n".join(f"    {line}" for line in lines)
    checks = f"[\n{body}\n  ]" if lines else "[]"
    rows = [
        f"    {json.dumps(corpus, ensure_ascii=False)}: {json.dumps(dict(files), sort_keys=True)}"
        for corpus, files in sorted((gate.inputs or {}).items())
    ]
    inputs = "{\n" + ",\n".join(rows) + "\n  }" if rows else "{}"
    rule = f',\n  "tolerance": {json.dumps(gate.tolerance, sort_keys=True)}' if gate.tolerance is not None else ""
    return f'{{\n  "checks": {checks},\n  "format": {json.dumps(FORMAT)},\n  "inputs": {inputs}{rule}\n}}\n'


def _parse_inputs(raw: Any, source: str) -> dict[str, dict[str, str]]:
    if not isinstance(raw, dict) or not all(
        isinstance(files, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
        for files in raw.values()
    ):
        raise GateError(f'{source}: "inputs" must map each corpus to {{file: sha256}}')
    return {corpus: dict(files) for corpus, files in raw.items()}


def parse_gate(text: str, source: str) -> GateFile:
    """A gate file's checks and inputs; a GateError naming ``source`` and the check on any problem."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GateError(f"{source}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict) or data.get("format") not in (FORMAT, FORMAT_WITHOUT_INPUTS):
        raise GateError(f'{source}: not a gate file (expected a JSON object with "format": "{FORMAT}")')
    if data["format"] == FORMAT and "inputs" not in data:
        raise GateError(f'{source}: a {FORMAT} file records "inputs", each corpus\'s question-set sha256')
    inputs = _parse_inputs(data["inputs"], source) if data["format"] == FORMAT else None
    checks = data.get("checks")
    if not isinstance(checks, list):
        raise GateError(f'{source}: "checks" must be a list of checks')
    found: list[Expectation] = []
    seen: set[tuple[str, str, str]] = set()
    fields = {"corpus", "ranker", "metric", "expected", "precision", "tolerance"}
    for number, entry in enumerate(checks, 1):
        where = f"{source}: check {number}"
        if not isinstance(entry, dict) or set(entry) != fields:
            raise GateError(f"{where}: must be an object with exactly the keys {', '.join(sorted(fields))}")
        if not all(isinstance(entry[k], str) and entry[k] for k in ("corpus", "ranker", "metric")):
            raise GateError(f"{where}: corpus, ranker and metric must be non-empty strings")
        if not _finite_number(entry["expected"]):
            raise GateError(f"{where}: expected {entry['expected']!r} is not a finite number")
        _check_precision_and_tolerance(entry["precision"], entry["tolerance"], where)
        exp = Expectation(
            entry["corpus"],
            entry["ranker"],
            entry["metric"],
            float(entry["expected"]),
            entry["precision"],
            float(entry["tolerance"]),
        )
        if exp.key in seen:
            raise GateError(f"{where}: {exp.corpus}/{exp.ranker} {exp.metric} is checked twice")
        seen.add(exp.key)
        found.append(exp)
    rule = data.get("tolerance")
    if rule is not None and not (isinstance(rule, dict) and rule.get("rule") in ("one-question", "fixed")):
        raise GateError(f'{source}: "tolerance" must say its rule: {{"rule": "one-question" or "fixed", ...}}')
    return GateFile(tuple(found), inputs, rule)


# ----------------------------------------------------------------------------------------- the edges


def load_gate(path: Path) -> GateFile:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise GateError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise GateError(f"{path}: not UTF-8") from None
    return parse_gate(text, str(path))


def site_metrics(site: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Every corpus's overall metrics by ranker, from a site (or evidence folder) verified against its
    manifest: a bundle with a missing or altered file is refused (BundleError)."""
    return _observed(site)[0]


def _observed(site: Path) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, dict[str, str]]]:
    """The site's overall metrics (see :func:`site_metrics`) and each corpus's question-set files' sha256 as
    its ``corpus.json`` records them (none for a site built before they were recorded)."""
    bundle = open_bundle(site)
    observed: dict[str, dict[str, dict[str, Any]]] = {}
    inputs: dict[str, dict[str, str]] = {}
    for rel in bundle.files:
        place = corpus_file(rel)
        if place is not None and place[1] == SUMMARY:
            recorded = CorpusReader(bundle, place[0]).summary().input_sha256
            inputs.setdefault(place[0], {}).update(
                {name: recorded[name] for name in QUESTION_SET_FILES if name in recorded}
            )
        found = vector_index_files(place[1]) if place is not None else None
        if place is not None and found is not None and "queries" in dict(found):  # not the chunking sweep's
            matrices = [m for _, m in found]
            held = _held_by_reference(bundle, place[0])
            for name in (place[1], *matrices):  # a model's index.json and its vectors, as the manifest hashes them
                sha = bundle.files.get(CorpusFiles(place[0]).at(name)) or held.get(name)  # withheld: referenced.json's
                if sha is not None:
                    inputs.setdefault(place[0], {})[name] = sha
        if place is None or place[1] != METRICS:
            continue
        path = bundle.path(rel)
        metrics = load_json(path)
        if not isinstance(metrics, dict) or not all(
            isinstance(scored, dict) and isinstance(scored.get("overall"), dict) for scored in metrics.values()
        ):
            raise GateError(f'{path}: expected {{ranker: {{"overall": {{metric: value}}}}}}')
        observed[place[0]] = {ranker: dict(scored["overall"]) for ranker, scored in metrics.items()}
    if not observed:
        raise GateError(f"{site}: the bundle holds no evidence/<corpus>/metrics.json")
    return observed, {corpus: files for corpus, files in inputs.items() if corpus in observed}


def _held_by_reference(bundle: Any, corpus: str) -> dict[str, str]:
    """The sha256 of each file a redacted corpus holds by reference (``referenced.json``), by its name."""
    rel = CorpusFiles(corpus).referenced
    if not bundle.has(rel):
        return {}
    files = load_json(bundle.path(rel)).get("files")
    if not isinstance(files, Mapping):
        return {}
    return {
        name: e["sha256"] for name, e in files.items() if isinstance(e, Mapping) and isinstance(e.get("sha256"), str)
    }


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; this is a file to commit
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def record_gate(site: Path, out: Path, precision: int = 4, tolerance: float | None = None) -> GateFile:
    """Write the gate file ``out`` from the site's metrics and question sets (atomically); return it. Without a
    ``tolerance`` each corpus's follows its question set (:func:`one_question_tolerance`)."""
    observed, inputs = _observed(site)
    if tolerance is None:
        questions = _scored_questions(site, observed)
        rule: dict[str, Any] = {"rule": "one-question", "questions": questions}
        chosen: float | dict[str, float] = {c: one_question_tolerance(n, precision) for c, n in questions.items()}
    else:
        rule, chosen = {"rule": "fixed", "value": tolerance}, tolerance
    gate = GateFile(tuple(expectations_from_metrics(observed, precision, chosen)), inputs, rule)
    _write_atomic(Path(out), dump_gate(gate))
    return gate


def _scored_questions(site: Path, observed: Observed) -> dict[str, int]:
    """Each corpus's scored (answerable) questions, as its ``corpus.json`` counts them."""
    bundle = open_bundle(site)
    found = {}
    for rel in bundle.files:
        place = corpus_file(rel)
        if place is not None and place[1] == SUMMARY and place[0] in observed:
            found[place[0]] = int(load_json(bundle.path(rel)).get("answerable_queries", 0))
    return found


def check_gate(gate_file: Path, site: Path, allow_changed_inputs: bool = False) -> GateOutcome:
    """Check the site against the gate file: one result per line of the file, in its order, and the site's
    question sets against the recorded ones (a change FAILs unless ``allow_changed_inputs``)."""
    gate = load_gate(gate_file)
    observed, inputs = _observed(site)
    return GateOutcome(
        tuple(compare(gate.expectations, observed)),
        tuple(unchecked(gate.expectations, observed)),
        tuple(changed_inputs(gate.inputs, inputs)) if gate.inputs is not None else (),
        allow_changed_inputs,
        gate.inputs is None,
    )
