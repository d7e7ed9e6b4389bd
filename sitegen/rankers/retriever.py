"""Your own retriever, evaluated as an external run: ``sitegen build --retriever NAME=module:callable``.

The callable is ``(question_text: str, k: int, filter: dict | None) -> [(doc_id, score), ...]``, best
first. A callable that also takes keyword arguments ``corpus`` and ``query_id`` (or ``**kwargs``) is given the
corpus's name and the question's id too, so one retriever can serve several corpora, each from its own index;
one with the three-argument signature is called as before. The build imports it from the current project (the
working directory first on ``sys.path``, as ``python -m`` does), calls it once for every question of every
corpus while loading, before any ranker runs, and checks every answer: known document ids only, no id twice,
finite numeric scores, at most ``k`` pairs. A mistake stops the build with one line naming the retriever, the
question and the bad value.

The answers become a TREC run (``qid Q0 docid rank score NAME``), written into the bundle's inputs as
``inputs/runs/NAME.trec`` and read back with the same reader as ``--run`` files, so the run is scored,
shown and audited exactly like one: "external: metrics verified, ranking not reproducible here".
Order is the TREC run rule: score descending, ties by document id descending (trec_eval's order), so a
retriever's own order among equal scores is not kept. ``k`` is the build's depth; ``filter`` is the
question's metadata filter (None when it has none), which the retriever may apply or ignore.

How long each call took is timing, not evidence: it goes to ``timings/retrievers-NAME.json`` on the
site, beside the benchmark files and outside ``evidence/``, so the evidence stays byte-identical.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import json
import math
import numbers
import os
import platform
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sitegen.errors import BuildError
from sitegen.inputs.corpus import Corpus
from sitegen.rankers.external import ExternalRunRanker, parse_trec_run
from sitegen.wording import a_type

__all__ = [
    "LATENCY_KIND",
    "Retriever",
    "RetrieverRanker",
    "load_retriever",
    "parse_retriever_spec",
    "retriever_ranker",
    "write_latency_file",
]

LATENCY_KIND = "sitegen-retriever-latency"
#: Set on a callable (as the adapters do) to say in the run's params how its scores were made.
SCORES_ATTRIBUTE = "sitegen_scores"
#: The keyword arguments a retriever that asks for them is given: the corpus's name and the question's id.
CONTEXT_KEYWORDS = frozenset({"corpus", "query_id"})
_TARGET = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
_SPACE = re.compile(r"\s")


def parse_retriever_spec(text: str) -> tuple[str, str]:
    """``NAME=module:callable`` as (name, target); ValueError with the expected form otherwise."""
    name, eq, target = text.partition("=")
    if not (eq and name and _TARGET.fullmatch(target)):
        raise ValueError(f"{text!r} is not NAME=module:callable (e.g. mine=my_project.search:retrieve)")
    return name, target


@contextmanager
def _project_on_path() -> Iterator[None]:
    """The working directory first on ``sys.path`` while the retriever is imported and run, as ``python -m``."""
    cwd = os.getcwd()
    added = sys.path[:1] != [cwd]
    if added:
        sys.path.insert(0, cwd)
    try:
        yield
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


@dataclass(frozen=True)
class Retriever:
    """A retriever to evaluate: its name in the report, where it came from, and the callable."""

    name: str
    target: str
    function: Callable[..., Any]

    @property
    def wants_context(self) -> bool:
        """Whether the callable takes the keyword arguments ``corpus`` and ``query_id`` (or any ``**kwargs``)."""
        try:
            parameters = inspect.signature(self.function).parameters.values()
        except (TypeError, ValueError):  # a builtin or C callable without a signature: the plain call
            return False
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
            return True
        keyword = {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        return CONTEXT_KEYWORDS <= keyword

    @property
    def scores(self) -> str:
        note = getattr(self.function, SCORES_ATTRIBUTE, None)
        return note if isinstance(note, str) else "the retriever's own scores"


def load_retriever(name: str, target: str | Callable[..., Any]) -> Retriever:
    """Import ``module:callable`` (or take a callable as given); one-line BuildError when that fails."""
    if callable(target):
        where = f"{getattr(target, '__module__', '?')}:{getattr(target, '__qualname__', type(target).__name__)}"
        return Retriever(name, where, target)
    module_name, colon, attribute = str(target).partition(":")
    if not (colon and module_name and attribute):
        raise BuildError(f"retriever {name}: {target!r} is not module:callable")
    with _project_on_path():
        try:
            found: Any = importlib.import_module(module_name)
        except Exception as exc:
            raise BuildError(
                f"retriever {name}: cannot import {module_name} (from {os.getcwd()}): {_first_line(exc)}"
            ) from exc
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise BuildError(f"retriever {name}: {module_name} has no {attribute}") from None
    if not callable(found):
        raise BuildError(f"retriever {name}: {target} is {a_type(found)}, not a callable")
    return Retriever(name, str(target), found)


class RetrieverRanker(ExternalRunRanker):
    """A retriever's answers as an external run; the bytes scored are the bytes written to the bundle."""

    def __init__(self, retriever: Retriever, input_copy: str, data: bytes, seconds: Sequence[float]) -> None:
        run = parse_trec_run(data, Path(f"<retriever {retriever.name}>"))
        super().__init__(retriever.name, Path(f"<retriever {retriever.name}>"), input_copy, run)
        self.retriever = retriever
        self.data = data
        self.seconds = tuple(seconds)

    def write_input(self, target: Path) -> None:
        target.write_bytes(self.data)

    def params(self) -> dict[str, Any]:
        return super().params() | {"retriever": self.retriever.target, "scores": self.retriever.scores}


def _plain(value: Any) -> Any:
    """A copy of a question's filter in plain dicts and lists, which the retriever may keep or change."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _score(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        number = float(value)
    except (OverflowError, ValueError, TypeError):
        return None
    return number if math.isfinite(number) else None


def _lazy(result: Any) -> bool:
    return not isinstance(result, (list, tuple, str, bytes, Mapping)) and hasattr(result, "__iter__")


def _answer(
    retriever: Retriever, corpus: str, query_id: str, result: Any, doc_ids: Set[str], depth: int
) -> dict[str, float]:
    """One call's result checked: {doc id: score}; any mistake is a BuildError naming the question."""
    where = f"retriever {retriever.name}: corpus {corpus}: question {query_id}"
    if result is None or isinstance(result, (str, bytes, Mapping)) or not hasattr(result, "__iter__"):
        raise BuildError(f"{where}: returned {a_type(result)}, not a list of (doc_id, score) pairs")
    scores: dict[str, float] = {}
    for position, pair in enumerate(result, 1):
        if position > depth:
            raise BuildError(f"{where}: returned more than k={depth} pairs")
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise BuildError(f"{where}: item {position} is {pair!r}, not a (doc_id, score) pair")
        doc_id, raw = pair
        if not isinstance(doc_id, str):
            raise BuildError(f"{where}: item {position}: document id {doc_id!r} is {a_type(doc_id)}, not a string")
        if doc_id not in doc_ids:
            raise BuildError(f"{where}: unknown document id {doc_id!r} (not in the corpus)")
        if doc_id in scores:
            raise BuildError(f"{where}: document id {doc_id!r} returned twice")
        if _SPACE.search(doc_id):  # a TREC line splits at whitespace
            raise BuildError(f"{where}: document id {doc_id!r} holds whitespace, which a TREC run line cannot carry")
        score = _score(raw)
        if score is None:
            raise BuildError(f"{where}: document {doc_id!r}: score {raw!r} is not a finite number")
        scores[doc_id] = score
    return scores


def retriever_ranker(
    retriever: Retriever,
    corpus: Corpus,
    doc_ids: Set[str],
    depth: int,
    clock: Callable[[], float],
    input_copy: str,
) -> RetrieverRanker:
    """Ask ``retriever`` every question of ``corpus`` (ranked as ``doc_ids``) and make its run, which the
    bundle's inputs will hold at ``input_copy`` (its params name it)."""
    lines: list[str] = []
    seconds: list[float] = []
    context = retriever.wants_context
    with _project_on_path():
        for query in corpus.queries:
            query_filter = _plain(query.filter) if query.filter else None
            extra = {"corpus": corpus.name, "query_id": query.query_id} if context else {}
            start = clock()
            try:
                result = retriever.function(query.text, depth, query_filter, **extra)
                if _lazy(result):  # a generator's time is the retriever's time; one pair past k is enough
                    result = list(itertools.islice(result, depth + 1))
            except Exception as exc:
                raise BuildError(
                    f"retriever {retriever.name}: corpus {corpus.name}: question {query.query_id}: "
                    f"raised {_first_line(exc)}"
                ) from exc
            seconds.append(clock() - start)
            scores = _answer(retriever, corpus.name, query.query_id, result, doc_ids, depth)
            if scores and _SPACE.search(query.query_id):
                raise BuildError(
                    f"retriever {retriever.name}: corpus {corpus.name}: question id {query.query_id!r} holds "
                    "whitespace, which a TREC run line cannot carry"
                )
            ordered = sorted(sorted(scores.items(), reverse=True), key=lambda item: -item[1])
            lines.extend(
                f"{query.query_id} Q0 {doc_id} {rank} {score!r} {retriever.name}\n"
                for rank, (doc_id, score) in enumerate(ordered, 1)
            )
    if not lines:
        raise BuildError(
            f"retriever {retriever.name}: corpus {corpus.name}: returned no passage for any of "
            f"{len(corpus.queries)} questions"
        )
    return RetrieverRanker(retriever, input_copy, "".join(lines).encode("utf-8"), seconds)


def _percentile(values: Sequence[float], share: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default)."""
    ordered = sorted(values)
    position = share * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class _Latency:
    corpus: str
    seconds: tuple[float, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        values = self.seconds or (0.0,)
        return {
            "corpus": self.corpus,
            "questions": len(self.seconds),
            "p50_ms": _percentile(values, 0.5) * 1000,
            "p95_ms": _percentile(values, 0.95) * 1000,
            "max_ms": max(values) * 1000,
            "total_s": sum(self.seconds),
        }


def write_latency_file(path: Path, retriever: Retriever, depth: int, runs: Mapping[str, RetrieverRanker]) -> Path:
    """``path`` (the site's ``timings/retrievers-NAME.json``): per corpus, each call's wall-clock time summarised
    (p50, p95, max, total), measured in the build's process on this machine. Timing, so never part of the
    evidence."""
    every = [s for run in runs.values() for s in run.seconds]
    data = {
        "kind": LATENCY_KIND,
        "schema_version": 1,
        "retriever": retriever.name,
        "target": retriever.target,
        "k": depth,
        "method": "time.perf_counter() around each call of the retriever, one question at a time, in the build's "
        "process; includes whatever the retriever does per call (embedding the question, network, ...)",
        "measured_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "logical_cpus": os.cpu_count(),
        },
        "corpora": [_Latency(corpus, run.seconds).as_dict() for corpus, run in sorted(runs.items())],
        "overall": _Latency("all", tuple(every)).as_dict() | {"corpus": None},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path
