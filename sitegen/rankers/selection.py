"""Which rankers each corpus gets (:func:`select_rankers`): the build's own (``--ranker``, model entries), then per
corpus its model entries, its external runs (``runs/*.trec``, ``--run``), the ``--retriever`` runs, its fusions
and its rerank stages, every name and every run checked in the load phase, before any ranker runs."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from sitegen.embedding.models import ModelEntryError, ModelSpec, parse_model_entries
from sitegen.errors import BuildError, CorpusError, SitegenError
from sitegen.inputs.chunk_settings import parse_chunking
from sitegen.inputs.chunking import chunk_corpus
from sitegen.inputs.corpus import CONFIG_FILE, RUNS_DIR, Corpus
from sitegen.inputs.fusion_settings import parse_fusions
from sitegen.rankers import make_rankers, model_rankers
from sitegen.rankers.external import ExternalRunRanker, check_ids, read_trec_run
from sitegen.rankers.fusion import RRFRanker, RRFSettings
from sitegen.rankers.rerank import BiEncoderScorer, RerankRanker
from sitegen.rankers.rerank_settings import RerankConfig, RerankSettingsError, parse_reranks
from sitegen.rankers.retriever import RetrieverRanker, load_retriever, retriever_ranker

__all__ = [
    "RankerRequest",
    "RankerSelection",
    "config_fusions",
    "config_models",
    "config_reranks",
    "external_rankers",
    "rerank_entries",
    "retriever_rankers",
    "select_rankers",
]

Log = Callable[[str], None]
#: Where a run's copy lies among the bundle's inputs, by the run's name (the bundle's layout decides).
InputCopy = Callable[[str], str]


def _quiet(_: str) -> None:
    return None


_RUN_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


class RankerRequest(Protocol):
    """The rankers a build is asked for, as its options give them (``sitegen.builder.options.BuildOptions``)."""

    @property
    def rankers(self) -> tuple[str, ...]:
        """``--ranker`` names (or the default set)."""

    @property
    def models(self) -> tuple[ModelSpec, ...]:
        """Model entries (``sitegen.toml``'s ``[[models]]``, ``--model``): a dense ranker each."""

    @property
    def external_runs(self) -> tuple[tuple[str, str, Path], ...]:
        """``--run NAME=CORPUS:PATH``."""

    @property
    def retrievers(self) -> tuple[tuple[str, str | Callable[..., Any]], ...]:
        """``--retriever NAME=module:callable`` (or a callable)."""

    @property
    def depth(self) -> int:
        """How many hits a retriever is asked for."""


@dataclass(frozen=True)
class RankerSelection:
    """Every ranker of the build, checked: the build's own, and each corpus's own, by corpus name."""

    #: The rankers ``--ranker`` asks for (or the default set), then the model entries', in build order.
    rankers: tuple[Any, ...]
    #: Per corpus: the dense rankers of the model entries its ``sitegen.json`` declares (``"models"``).
    models: Mapping[str, tuple[Any, ...]]
    #: Per corpus: its runs from other systems (``runs/*.trec``, ``--run``), then the ``--retriever`` runs.
    externals: Mapping[str, tuple[ExternalRunRanker, ...]]
    #: Per corpus: the fusions its ``sitegen.json`` asks for, then its rerank stages (``"reranks"``).
    fusions: Mapping[str, tuple[RRFRanker | RerankRanker, ...]]
    #: Per corpus: the ``--retriever`` runs alone, whose call times go to ``timings/``.
    retrieved: Mapping[str, tuple[RetrieverRanker, ...]]


def select_rankers(
    corpora: Sequence[Corpus], request: RankerRequest, input_copy: InputCopy, log: Log = _quiet
) -> RankerSelection:
    """The rankers of ``request`` and of each corpus, every name checked against the others and every run file
    and retriever read now, so a mistake stops the build before any ranker runs; warnings go to ``log``."""
    rankers = [*make_rankers(request.rankers), *model_rankers(request.models)]
    builtin = [r.name for r in rankers]
    models = {c.name: tuple(config_models(c, builtin)) for c in corpora}
    # Run files are parsed here, once, and kept.
    runs = {c.name: external_rankers(c, request.external_runs, builtin, input_copy, log) for c in corpora}
    retrieved = retriever_rankers(corpora, request, builtin, runs, input_copy, log)
    externals = {name: (*found, *retrieved[name]) for name, found in runs.items()}
    fusions: dict[str, tuple[RRFRanker | RerankRanker, ...]] = {}
    for c in corpora:
        known = [*builtin, *(m.name for m in models[c.name])]
        fused = config_fusions(c, known, [e.name for e in externals[c.name]])
        staged = [*known, *(e.name for e in externals[c.name]), *(f.name for f in fused)]
        specs = {r.name: r.contract.model for r in [*rankers, *models[c.name]] if r.contract.model is not None}
        fusions[c.name] = (*fused, *config_reranks(c, staged, specs))
    return RankerSelection(
        rankers=tuple(rankers),
        models=models,
        externals=externals,
        fusions=fusions,
        retrieved={name: tuple(found) for name, found in retrieved.items()},
    )


def _ranked_doc_ids(corpus: Corpus) -> set[str]:
    """The document ids the rankers will see: a chunked corpus is ranked as its chunks."""
    if "chunking" in corpus.config:
        corpus = chunk_corpus(corpus, parse_chunking(corpus.config["chunking"]).default)
    return {d.doc_id for d in corpus.documents}


def external_rankers(
    corpus: Corpus,
    given: Sequence[tuple[str, str, Path]],
    builtin: Sequence[str],
    input_copy: InputCopy,
    log: Log = _quiet,
) -> list[ExternalRunRanker]:
    """External TREC runs for one corpus (``<corpus>/runs/NAME.trec`` files and ``given``, the
    ``--run NAME=CORPUS:PATH`` options), each parsed and checked against the corpus's ids now, in the load phase,
    so that a bad line or a run whose ids mostly miss fails before any ranker runs; the parsed run is kept and
    never read again. Ids the corpus lacks, below ``MAX_UNKNOWN_SHARE``, are warned about on ``log``."""
    found: dict[str, Path] = {}
    runs_dir = corpus.root / RUNS_DIR
    if runs_dir.is_dir():
        found.update((p.stem, p) for p in sorted(runs_dir.glob("*.trec")))
    for name, corpus_name, path in given:
        if corpus_name == corpus.name:
            if name in found:
                raise CorpusError(path, f"external run name {name!r} is given twice for corpus {corpus.name}")
            found[name] = path
    rankers = []
    doc_ids: set[str] | None = None
    for name, path in sorted(found.items()):
        if not _RUN_NAME.fullmatch(name):
            raise CorpusError(path, f"external run name {name!r} must be lowercase letters, digits, '.', '_' or '-'")
        if name in builtin:
            raise CorpusError(path, f"external run name {name!r} is already a built-in ranker; rename it")
        if not path.exists():
            raise CorpusError(path, "external run file does not exist")
        if not path.is_file():
            raise CorpusError(path, "external run path is not a file")
        run = read_trec_run(path)
        doc_ids = doc_ids if doc_ids is not None else _ranked_doc_ids(corpus)
        ids = check_ids(run, doc_ids, {q.query_id for q in corpus.queries})
        if (refusal := ids.refusal(corpus.name)) is not None:
            raise CorpusError(path, f"run {name}: {refusal}")
        for note in ids.warnings():
            log(f"warning: {corpus.name}: run {name}: {note}")
        rankers.append(ExternalRunRanker(name, path, input_copy(name), run))
    return rankers


def retriever_rankers(
    corpora: Sequence[Corpus],
    request: RankerRequest,
    builtin: Sequence[str],
    externals: Mapping[str, Sequence[ExternalRunRanker]],
    input_copy: InputCopy,
    log: Log = _quiet,
) -> dict[str, list[RetrieverRanker]]:
    """Every ``--retriever`` of ``request`` imported once and asked every question of every corpus, in the load
    phase, so a retriever that fails or answers wrongly stops the build before any ranker runs."""
    names = [name for name, _ in request.retrievers]
    for name in names:
        if not _RUN_NAME.fullmatch(name):
            raise BuildError(f"retriever name {name!r} must be lowercase letters, digits, '.', '_' or '-'")
        if names.count(name) > 1:
            raise BuildError(f"retriever name {name!r} is given twice")
        if name in builtin:
            raise BuildError(f"retriever name {name!r} is already a ranker of this build; rename it")
        for corpus, runs in externals.items():
            if any(run.name == name for run in runs):
                raise BuildError(f"retriever name {name!r} is already an external run of corpus {corpus}; rename it")
    retrievers = [load_retriever(name, target) for name, target in request.retrievers]
    found: dict[str, list[RetrieverRanker]] = {c.name: [] for c in corpora}
    for corpus in corpora:
        doc_ids = _ranked_doc_ids(corpus) if retrievers else set()
        for retriever in retrievers:
            copy = input_copy(retriever.name)
            ranker = retriever_ranker(retriever, corpus, doc_ids, request.depth, time.perf_counter, copy)
            log(
                f"{corpus.name}: retriever {retriever.name} ({retriever.target}): {len(ranker.seconds)} questions "
                f"in {sum(ranker.seconds):.2f}s"
            )
            found[corpus.name].append(ranker)
    return found


def config_fusions(corpus: Corpus, builtin: Sequence[str], externals: Sequence[str]) -> list[RRFRanker]:
    """The RRF fusions the corpus's ``sitegen.json`` asks for (``"fusions"``), in its order: each component is
    a ranker of this build, an external run or retriever of this corpus, or an earlier fusion of the list."""
    path = corpus.root / CONFIG_FILE
    known = [*builtin, *externals]
    fusions: list[RRFRanker] = []
    for fusion in parse_fusions(corpus.config.get("fusions", [])):
        if fusion.name in known:
            raise CorpusError(path, f"fusion {fusion.name!r}: the name is already a ranker or run of this corpus")
        missing = [c for c in fusion.components if c not in known]
        if missing:
            raise CorpusError(
                path,
                f"fusion {fusion.name!r}: component(s) {', '.join(missing)} are not rankers or runs of this build "
                f"for corpus {corpus.name}; known: {', '.join(known)}",
            )
        fusions.append(
            RRFRanker(fusion.name, fusion.components, RRFSettings(fusion.k, fusion.candidates, fusion.weights))
        )
        known.append(fusion.name)
    return fusions


def config_models(corpus: Corpus, builtin: Sequence[str]) -> list[Any]:
    """The dense rankers of the model entries the corpus's ``sitegen.json`` declares (``"models"``), in its order.
    The entries were checked for shape when the corpus was loaded; here their names meet the build's rankers."""
    if "models" not in corpus.config:
        return []
    try:
        return model_rankers(parse_model_entries(corpus.config["models"]), builtin)
    except (ModelEntryError, SitegenError) as exc:
        raise CorpusError(corpus.root / CONFIG_FILE, str(exc)) from None


def rerank_entries(corpus: Corpus) -> tuple[RerankConfig, ...]:
    """The corpus's ``"reranks"`` parsed; a bad entry is a :class:`CorpusError` naming the file and the line."""
    try:
        return parse_reranks(corpus.config.get("reranks", []))
    except RerankSettingsError as exc:
        path = corpus.root / CONFIG_FILE
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        line = next((n for n, row in enumerate(text.splitlines(), 1) if '"reranks"' in row), None)
        raise CorpusError(path, str(exc), line) from None


def config_reranks(
    corpus: Corpus, known: Sequence[str], models: Mapping[str, ModelSpec] | None = None
) -> list[RerankRanker]:
    """The rerank stages the corpus's ``sitegen.json`` asks for (``"reranks"``), in its order: each first stage
    is a ranker, run or fusion of this build for the corpus (``known``), or an earlier rerank of the list. A
    bi-encoder naming a model entry's dense ranker (``models``: entry by ranker name) scores by that model."""
    path = corpus.root / CONFIG_FILE
    names = list(known)
    reranks: list[RerankRanker] = []
    for entry in rerank_entries(corpus):
        if entry.name in names:
            raise CorpusError(path, f"rerank {entry.name!r}: the name is already a ranker or run of this corpus")
        if entry.first_stage not in names:
            raise CorpusError(
                path,
                f"rerank {entry.name!r}: first_stage {entry.first_stage} is not a ranker or run of this build for "
                f"corpus {corpus.name}; known: {', '.join(names)}",
            )
        scorer = entry.scorer
        if isinstance(scorer, BiEncoderScorer) and scorer.embedding in (models or {}):
            scorer = replace(scorer, model=(models or {})[scorer.embedding])
        reranks.append(RerankRanker(entry.name, entry.first_stage, entry.candidates, scorer))
        names.append(entry.name)
    return reranks
