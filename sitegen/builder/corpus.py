"""One corpus's build: its vectors, the chunking sweep, every ranker's run and metrics, the derived tables, and
its part of the bundle (:func:`build_corpus`). What all corpora of a build share is one :class:`BuildRun`; what
one corpus brings is its :class:`CorpusJob`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sitegen.builder.cost import corpus_cost
from sitegen.builder.load import LoadedInputs, Log
from sitegen.builder.options import BuildOptions
from sitegen.compare.vector_drift import DriftTracker
from sitegen.embedding.cache import Embedder
from sitegen.embedding.models import ModelNotFound
from sitegen.embedding.vectors import CorpusEmbeddings, EmbedStats
from sitegen.errors import BuildError, SitegenError
from sitegen.inputs.binding import git_source
from sitegen.inputs.chunk_settings import ChunkConfig, parse_chunking
from sitegen.inputs.chunking import RELEVANCE_RULE as CHUNK_RELEVANCE_RULE
from sitegen.inputs.chunking import chunk_corpus
from sitegen.inputs.corpus import Corpus
from sitegen.inputs.dates import inputs_date
from sitegen.inputs.freeze import frozen_summary
from sitegen.inputs.vectors import SuppliedVectors, embed_corpus
from sitegen.parallel import in_forks, processes_for
from sitegen.publish.bundle import StoredVectors
from sitegen.publish.evidence import TREC_DEPTH
from sitegen.publish.redaction import publication
from sitegen.publish.writer import CorpusResults, DerivedTables, Provenance, write_corpus_evidence
from sitegen.rankers import RankInputs, Run
from sitegen.rankers.external import ExternalRunRanker
from sitegen.rankers.filtering import has_filters
from sitegen.scoring.chunking_sweep import ChunkingSweep, chunking_sweep
from sitegen.scoring.experiments import experiment_inputs, run_experiments
from sitegen.scoring.metrics import configured_metric_names, evaluate
from sitegen.scoring.packing import packing_report
from sitegen.scoring.postgres_report import postgres_report
from sitegen.scoring.report import derive_report, filtering_report
from sitegen.scoring.rerank_sweep import rerank_sweep
from sitegen.scoring.ties import ties_report
from sitegen.stepcache import StepCache
from sitegen.timer import StageTimer
from sitegen.wording import count

__all__ = ["BuildRun", "CorpusJob", "PostgresSession", "build_corpus", "is_postgres_unavailable"]


def is_postgres_unavailable(exc: Exception) -> bool:
    from sitegen.postgres.server import PostgresUnavailable

    return isinstance(exc, PostgresUnavailable)


@dataclass(frozen=True)
class PostgresSession:
    """The server the build's PostgreSQL rankers use (None when none was asked for or it failed), and why not."""

    server: Any = None
    problem: str | None = None


@dataclass(frozen=True)
class BuildRun:
    """What every corpus of one build shares: the options, where the new site is written, the log, the stage
    timer, the step cache, the rankers asked for, how vectors are got, and the PostgreSQL server."""

    options: BuildOptions
    staging: Path
    log: Log
    timer: StageTimer
    steps: StepCache
    rankers: tuple[Any, ...]
    #: None when no corpus needs the packaged model (nothing dense asked for, or every corpus brings vectors).
    embedder: Embedder | None
    #: An earlier bundle's vectors: frozen inputs, or what ``--reembed`` measures its drift against.
    stored: StoredVectors
    drift: DriftTracker
    postgres: PostgresSession
    #: Each other model entry's embedder and the earlier bundle's vectors of that model, by entry name.
    models: Mapping[str, tuple[Embedder, StoredVectors]] = field(default_factory=dict)

    @property
    def needs_embeddings(self) -> bool:
        """Some ranker ranks by ``dense``'s vectors (or those a corpus supplies)."""
        return any(r.contract.uses_embeddings and r.contract.model is None for r in self.rankers)


@dataclass(frozen=True)
class CorpusJob:
    """One corpus as the build takes it: loaded (``source``), as ranked (``corpus``: its chunks when its
    ``sitegen.json`` chunks it), with the runs, vectors and hygiene report its load phase found."""

    source: Corpus
    corpus: Corpus
    chunking: ChunkConfig | None
    externals: tuple[ExternalRunRanker, ...]
    fusions: tuple[Any, ...]
    supplied: SuppliedVectors | None
    hygiene: Mapping[str, Any]
    #: The dense rankers of the model entries the corpus's sitegen.json declares.
    models: tuple[Any, ...] = ()

    @classmethod
    def of(cls, source: Corpus, loaded: LoadedInputs, log: Log) -> CorpusJob:
        chunking = parse_chunking(source.config["chunking"]) if "chunking" in source.config else None
        corpus = source
        if chunking is not None:
            corpus = chunk_corpus(source, chunking.default)
            log(f"{corpus.name}: {len(corpus.documents)} chunks ({chunking.default.label})")
        name = source.name
        return cls(
            source=source,
            corpus=corpus,
            chunking=chunking,
            externals=loaded.externals[name],
            fusions=loaded.fusions[name],
            supplied=loaded.supplied[name],
            hygiene=loaded.hygiene[name],
            models=loaded.models.get(name, ()),
        )


@dataclass(frozen=True)
class _Ranked:
    """Every run and its metrics, the rankers that could not run with why, and ``postgres.json``."""

    runs: Mapping[str, Run]
    metrics: Mapping[str, Any]
    not_run: Mapping[str, str]
    postgres: Mapping[str, Any] | None
    #: The model entries a run of the corpus ranked by: their vectors go into the bundle.
    runs_by_model: frozenset[str] = frozenset()


def build_corpus(run: BuildRun, job: CorpusJob) -> EmbedStats:
    """Embed, rank, score, derive the experiments and write one corpus's evidence; return where its vectors
    came from (for the build's log)."""
    embeddings, stats = _embeddings(run, job)
    model_vectors, model_stats = _model_embeddings(run, job)
    stats += model_stats
    sweep = None
    if job.chunking is not None and run.embedder is not None:
        with run.timer.stage("experiments"):
            sweep = chunking_sweep(job.source, job.chunking, run.embedder, run.log, TREC_DEPTH)
        stats += sweep.stats
    ranked = _rank_corpus(run, job, embeddings, model_vectors)
    with run.timer.stage("experiments"):
        inputs = RankInputs(corpus=job.corpus, embeddings=embeddings, runs=ranked.runs, vectors=model_vectors)
        reranks = rerank_sweep([*run.rankers, *job.fusions], inputs, run.options.depth)
        costs = corpus_cost(inputs, ranked.runs)
        tables = dataclasses.replace(_derive(run, job, ranked, sweep), rerank=reranks, cost=costs)
        run.log(f"{job.corpus.name}: experiments done (sweeps, held-out selection, significance, ablation, packing)")
    with run.timer.stage("write"):
        source = git_source(job.corpus.root)
        results = CorpusResults(
            corpus=job.corpus,
            runs=ranked.runs,
            metrics=ranked.metrics,
            metric_list=tuple(configured_metric_names(job.corpus.config)),
            depth=run.options.depth,
            tables=tables,
            embeddings=embeddings,
            model_embeddings={n: v for n, v in model_vectors.items() if n in ranked.runs_by_model},
            sweep_vectors=sweep.vectors if sweep is not None else None,
            provenance=Provenance(
                inputs_date=inputs_date(job.corpus.root, job.corpus.input_files),
                frozen=frozen_summary(job.corpus),
                source=source.as_dict() if source is not None else None,
            ),
            external_inputs=job.externals,
            publication=publication(
                job.corpus,
                run.options.redact,
                run.options.publish_vectors,
                run.options.reference,
                run.options.reference_above,
            ),
        )
        write_corpus_evidence(run.staging, results)
    return stats


def _embeddings(run: BuildRun, job: CorpusJob) -> tuple[CorpusEmbeddings | None, EmbedStats]:
    """The vectors the corpus brings, else the packaged model's (frozen, cached or fresh); none when no ranker
    of the build needs them."""
    corpus, log = job.corpus, run.log
    if job.supplied is not None and run.needs_embeddings:
        log(f"{corpus.name}: vectors supplied by the corpus ({job.supplied.describe()}); nothing embedded")
        if run.options.reembed:
            log(f"{corpus.name}: --reembed leaves supplied vectors as they are: sitegen did not make them")
        return job.supplied.embeddings(), EmbedStats(embedded=0, cached=0)
    if run.embedder is None:
        return None, EmbedStats(embedded=0, cached=0)
    with run.timer.stage("embed"):
        embeddings, stats = embed_corpus(corpus, run.embedder)
        log(
            f"{corpus.name}: {count(stats.frozen, 'vector')} from {run.stored.source}, {stats.cached} from the "
            f"cache, {count(stats.embedded, 'text')} embedded"
        )
        if stats.rejected:
            rows = count(stats.rejected, "cache row")
            log(f"warning: {corpus.name}: {rows} failed a checksum or held no unit vector; embedded again")
        if run.options.reembed:
            run.drift.add(corpus, embeddings, run.stored.vectors)
    return embeddings, stats


def _model_embeddings(run: BuildRun, job: CorpusJob) -> tuple[dict[str, CorpusEmbeddings], EmbedStats]:
    """Each other model entry's vectors of the corpus (frozen, cached or fresh), for the entries a ranker of the
    corpus ranks by."""
    wanted = {r.contract.model.name for r in [*run.rankers, *job.models] if r.contract.model is not None}
    found: dict[str, CorpusEmbeddings] = {}
    total = EmbedStats(embedded=0, cached=0)
    for name, (embedder, stored) in run.models.items():
        if name not in wanted:
            continue
        with run.timer.stage("embed"):
            try:
                vectors, stats = embed_corpus(job.corpus, embedder)
            except ModelNotFound as exc:
                raise BuildError(f"{job.corpus.name}: {exc}") from None
        run.log(
            f"{job.corpus.name}: {name}: {count(stats.frozen, 'vector')} from {stored.source}, {stats.cached} from "
            f"the cache, {count(stats.embedded, 'text')} embedded"
        )
        if run.options.reembed:
            run.drift.add(job.corpus, vectors, stored.vectors, name)
        found[name] = vectors
        total += stats
    return found, total


def _rank_corpus(
    run: BuildRun, job: CorpusJob, embeddings: CorpusEmbeddings | None, vectors: Mapping[str, CorpusEmbeddings]
) -> _Ranked:
    """Every ranker's run and metrics for the corpus, its PostgreSQL index loaded for the pg rankers (and
    dropped once they ran); a ranker that cannot run says why."""
    corpus, options = job.corpus, run.options
    filters = has_filters(corpus)  # a filtered variant says nothing where no question has a filter
    with ExitStack() as stack:
        pg_index, pg_problem = None, run.postgres.problem
        if run.postgres.server is not None and embeddings is not None:
            from sitegen.postgres.index import PgCorpusIndex

            try:
                connection = run.postgres.server.connect()
                pg_index = stack.enter_context(PgCorpusIndex.load(connection, corpus, embeddings, owns_connection=True))
            except SitegenError as exc:
                if options.require_postgres or not is_postgres_unavailable(exc):
                    raise
                pg_problem = str(exc)
                run.log(f"{corpus.name}: PostgreSQL rankers not run: {exc}")
        runs: dict[str, Run] = {}
        metrics: dict[str, Any] = {}
        not_run: dict[str, str] = {}
        skipped: set[str] = set()
        for ranker in [*run.rankers, *job.models, *job.externals, *job.fusions]:
            contract = ranker.contract
            if (contract.filtered and not filters) or set(contract.components) & skipped:
                skipped.add(ranker.name)
                continue
            missing = [c for c in contract.components if c not in runs]
            if (contract.uses_postgres and pg_index is None) or missing:
                not_run[ranker.name] = pg_problem or f"needs {', '.join(missing)}, which did not run"
                continue
            inputs = RankInputs(corpus=corpus, embeddings=embeddings, runs=runs, postgres=pg_index, vectors=vectors)
            try:
                with run.timer.stage("rank"):
                    runs[ranker.name] = ranker.rank(inputs, options.depth)
            except SitegenError as exc:
                if not (contract.uses_postgres and is_postgres_unavailable(exc)) or options.require_postgres:
                    raise
                not_run[ranker.name] = str(exc)
                continue
            except Exception as exc:  # a ranker bug must still name the corpus and ranker
                raise BuildError(f"{corpus.name}: ranker {ranker.name} failed: {exc!r}") from exc
            metrics[ranker.name] = _score(run, corpus, runs[ranker.name])
        postgres = postgres_report(corpus, run.rankers, runs, embeddings, pg_index, not_run)
    by_model = {r.contract.model.name for r in runs.values() if r.contract.model is not None}
    return _Ranked(runs, metrics, not_run, postgres, frozenset(by_model))


def _score(run: BuildRun, corpus: Corpus, ranked: Run) -> dict[str, Any]:
    """One run's metrics (overall, by kind, per question), logged."""
    with run.timer.stage("score"):
        rankings = {q: [h.doc_id for h in hits] for q, hits in ranked.hits.items()}
        kinds = {q.query_id: q.kind for q in corpus.queries}
        scored = evaluate(rankings, corpus.qrels, kinds, configured_metric_names(corpus.config))
    overall = scored["overall"]
    run.log(
        f"{corpus.name}: {ranked.ranker:<22} hit@1 {overall['hit@1']:.3f}  "
        f"hit@5 {overall['hit@5']:.3f}  mrr@10 {overall['mrr@10']:.3f}"
    )
    return scored


def _each(jobs: Sequence[Callable[[], Any]]) -> list[Any]:
    return [job() for job in jobs]


def _derive(run: BuildRun, job: CorpusJob, ranked: _Ranked, sweep: ChunkingSweep | None) -> DerivedTables:
    """The tables derived from the runs: report, experiments (from the step cache when computed before from the
    same inputs), ties, packing, filtering, chunking and PostgreSQL. For many hits the experiments are computed
    here while a forked process (:mod:`sitegen.parallel`) computes the ties and packing tables."""
    corpus, runs, metrics = job.corpus, ranked.runs, ranked.metrics
    rankings = {r: {q: [h.doc_id for h in hits] for q, hits in found.hits.items()} for r, found in runs.items()}
    contracts = {r: found.contract for r, found in runs.items()}
    run_scores = {r: {q: [h.score for h in hits] for q, hits in found.hits.items()} for r, found in runs.items()}
    chunking = None
    if job.chunking is not None:
        chunking = {
            "schema_version": 1,
            "default": job.chunking.default.as_dict(),
            "rule": CHUNK_RELEVANCE_RULE,
            "passages": len(corpus.documents),
            "qrels": {q: dict(g) for q, g in corpus.qrels.items()},
            "sweep": sweep.table if sweep is not None else None,
        }

    def experiments() -> Any:  # this process's part: the step cache's counts stay here
        inputs = experiment_inputs(corpus, rankings, contracts, run_scores)
        return run.steps.json("experiments", inputs, lambda: run_experiments(corpus, rankings, contracts, run_scores))

    def ties_and_packing() -> tuple[Any, Any]:
        ties = ties_report(rankings, run_scores, corpus.qrels, [q.query_id for q in corpus.queries], metrics)
        budgets = corpus.config.get("packing", {}).get("budgets")  # None: derived from the passage lengths
        return ties, packing_report(corpus, rankings, corpus.citations, budgets)

    hits = sum(len(h) for found in runs.values() for h in found.hits.values())
    jobs = [experiments, ties_and_packing]
    parts = [[job] for job in jobs] if processes_for(hits) >= 2 else [jobs]
    experiments_table, (ties, packing) = [value for part in in_forks(_each, parts) for value in part]
    return DerivedTables(
        report=derive_report(corpus, rankings, metrics, contracts),
        experiments=experiments_table,
        ties=ties,
        packing=packing,
        hygiene=job.hygiene,
        filtering=filtering_report(corpus, rankings, metrics, contracts) if has_filters(corpus) else None,
        chunking=chunking,
        postgres=ranked.postgres,
    )
