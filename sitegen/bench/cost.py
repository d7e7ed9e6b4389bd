"""Time each ranker of each corpus: indexing or embedding time and warm per-question latency (``bench/cost.py``).

Timings describe one machine on one day, so they never enter the evidence: this writes
``bench/results-cost.json`` (``"kind": "sitegen-cost"``, the machine beside the numbers), which a build copies to
``timings/`` and the corpus pages show beside the sizes of ``cost.json``.

How a ranker is timed, whatever it is: :meth:`Ranker.rank` on the corpus with no question (``t0``: what it does
once per call, such as building BM25's index, which is its indexing time) and with one question asked
:data:`COPIES` times (``t_q``); a question's latency is ``(t_q - t0) / COPIES``, each time the best of
:data:`REPEATS` calls after a warm-up call, over the first :data:`QUESTIONS` questions in file order. A fusion's
or a rerank's own latency leaves out its first stages, whose runs it is given; ``pipeline`` adds theirs (each
counted once) and, where a ranker of the pipeline ranks by vectors, the question's embedding time, which a
deployment pays once per question (each model's once). Embedding time is the passages' encoding with each
model, as a build embeds (MiniLM one text per pass, a model entry its ``batch_size`` per pass); it is a dense
ranker's indexing time.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from sitegen.embedding.models import DEFAULT_SPEC
from sitegen.embedding.vectors import CorpusEmbeddings
from sitegen.inputs.corpus import Corpus
from sitegen.rankers import RankInputs, Run, make_rankers
from sitegen.rankers.base import Basis, Contract, Family

__all__ = ["COST_KIND", "Embedded", "corpus_timings", "percentile"]

COST_KIND = "sitegen-cost"
QUESTIONS = 30
REPEATS = 3
COPIES = 50
DEPTH = 100  # a build's depth


def percentile(values: Sequence[float], share: float) -> float | None:
    """Linear interpolation between the closest ranks (numpy's default), over the values measured (not NaN); None
    when fewer than half the questions were measured."""
    ordered = sorted(v for v in values if not math.isnan(v))
    if not ordered or len(ordered) * 2 < len(values):
        return None
    position = share * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclasses.dataclass(frozen=True)
class Embedded:
    """One model's vectors of a corpus, how long its passages took, and how to embed one question with it."""

    name: str  # the dense ranker the model serves: "dense" (the packaged model) or a model entry's name
    vectors: CorpusEmbeddings
    encode: Callable[[Sequence[str]], np.ndarray]
    passages_s: float


def _best(call: Callable[[], Any], repeats: int, clock: Callable[[], float]) -> float:
    call()  # warm: caches, lazy imports, BLAS threads
    times = []
    for _ in range(repeats):
        start = clock()
        call()
        times.append(clock() - start)
    return min(times)


def _one_question(inputs: RankInputs, row: int | None) -> RankInputs:
    """``inputs`` with the corpus asking only question ``row``, :data:`COPIES` times over (none when None), with
    only its vectors: the work of one question repeated, so that a per-call cost (an index built in the call)
    varies less than the question's own time."""
    corpus = inputs.corpus
    chosen = corpus.queries[row : row + 1] * COPIES if row is not None else ()
    asked = dataclasses.replace(corpus, queries=tuple(chosen))

    def only(vectors: CorpusEmbeddings) -> CorpusEmbeddings:
        rows = [vectors.query_ids.index(q.query_id) for q in chosen]
        return dataclasses.replace(
            vectors, query_ids=tuple(vectors.query_ids[r] for r in rows), query_vectors=vectors.query_vectors[rows]
        )

    dense = only(inputs.embeddings) if inputs.embeddings is not None else None
    return RankInputs(asked, dense, inputs.runs, vectors={n: only(v) for n, v in inputs.vectors.items()})


def corpus_timings(
    corpus: Corpus,
    embedded: Sequence[Embedded],
    ranker_names: Sequence[str],
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """One corpus's timings: ``{"passages", "questions_timed", "embedding": {"passages_s", "question_p50_ms",
    "question_p95_ms"}, "embeddings": {model name: the same}, "rankers": {name: {"index_s", "p50_ms", "p95_ms",
    "pipeline_p50_ms", "pipeline_p95_ms", "reads", "embeds_questions"}}}``. ``embedding`` is the packaged model's
    (``dense``); a ranker whose model is not in ``embedded`` is left out. PostgreSQL rankers are left to
    ``sitegen bench-pg``; every list is ranked to :data:`DEPTH`."""
    depth, clock = DEPTH, time.perf_counter
    questions = list(range(min(QUESTIONS, len(corpus.queries))))
    models = {e.name: e for e in embedded}
    embed_ms = {
        e.name: [_best(lambda r=r, e=e: e.encode([corpus.queries[r].text]), 1, clock) * 1000 for r in questions]
        for e in embedded
    }
    dense = models[DEFAULT_SPEC.name].vectors if DEFAULT_SPEC.name in models else None
    vectors = {n: e.vectors for n, e in models.items() if n != DEFAULT_SPEC.name}
    rankers = [r for r in make_rankers(ranker_names) if not r.contract.uses_postgres]
    runs: dict[str, Run] = {}
    own: dict[str, list[float]] = {}
    table: dict[str, dict[str, Any]] = {}
    for ranker in rankers:
        if ranker.contract.filtered and not any(q.filter for q in corpus.queries):
            continue
        if any(c not in runs for c in ranker.contract.components):
            continue
        if ranker.contract.uses_embeddings and _model_name(ranker.contract) not in models:
            continue
        full = RankInputs(corpus, dense, runs, vectors=vectors)
        runs[ranker.name] = ranker.rank(full, depth)
        rank = functools.partial(ranker.rank, depth=depth)
        empty = _best(functools.partial(rank, _one_question(full, None)), REPEATS, clock)
        latencies = []
        for row in questions:
            asked = functools.partial(rank, _one_question(full, row))
            gap = _best(asked, REPEATS, clock) - empty
            # no larger than the per-call cost's own variation: below this method's resolution, not 0
            latencies.append(gap / COPIES * 1000 if gap > 0 else math.nan)
        own[ranker.name] = latencies
        table[ranker.name] = _row(ranker.name, runs, own, embed_ms, empty)
        if ranker.contract.family is Family.DENSE:
            table[ranker.name]["index_s"] = models[_model_name(ranker.contract)].passages_s
        log(f"{corpus.name}: {ranker.name}: p50 {table[ranker.name]['p50_ms']} ms")
    summaries = {
        name: {
            "passages_s": models[name].passages_s,
            "question_p50_ms": percentile(times, 0.5),
            "question_p95_ms": percentile(times, 0.95),
        }
        for name, times in embed_ms.items()
    }
    return {
        "corpus": corpus.name,
        "passages": len(corpus.documents),
        "questions_timed": len(questions),
        "embedding": summaries.get(DEFAULT_SPEC.name),
        "embeddings": summaries,
        "rankers": table,
    }


def _model_name(contract: Contract) -> str:
    """The dense ranker whose model a contract ranks by: a model entry's name, else the packaged model's."""
    return (contract.model or DEFAULT_SPEC).name


def _reads(name: str, runs: Mapping[str, Run]) -> list[str]:
    found: list[str] = []
    for component in runs[name].contract.components:
        found += [component, *_reads(component, runs)]
    return list(dict.fromkeys(found))


def _row(
    name: str,
    runs: Mapping[str, Run],
    own: Mapping[str, list[float]],
    embed_ms: Mapping[str, Sequence[float]],
    empty: float,
) -> dict[str, Any]:
    reads = _reads(name, runs)
    pipeline = [name, *reads]
    # each model the pipeline ranks by embeds the question once
    models = sorted({_model_name(runs[r].contract) for r in pipeline if Basis.VECTORS in runs[r].contract.basis})
    # a stage's time below the method's resolution counts as 0 in a pipeline's sum, so every question has a sum
    per_question = [
        math.fsum(0.0 if math.isnan(own[r][i]) else own[r][i] for r in pipeline)
        + math.fsum(embed_ms[m][i] for m in models)
        for i in range(len(own[name]))
    ]
    return {
        "index_s": empty if runs[name].contract.family is Family.LEXICAL else None,
        "p50_ms": percentile(own[name], 0.5),
        "p95_ms": percentile(own[name], 0.95),
        "pipeline_p50_ms": percentile(per_question, 0.5),
        "pipeline_p95_ms": percentile(per_question, 0.95),
        "reads": reads,
        "embeds_questions": bool(models),
    }
