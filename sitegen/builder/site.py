"""The whole build (:func:`build_site`): check and lock the output folder, load every input, build each corpus
into a fresh folder beside the output, write what spans corpora (changes, manifest, timings), audit and render,
then swap the new site in. A failed build leaves the previous site untouched."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sitegen.builder.corpus import BuildRun, CorpusJob, PostgresSession, build_corpus, is_postgres_unavailable
from sitegen.builder.load import LoadedInputs, Log, load_inputs, quiet
from sitegen.builder.options import BuildOptions, build_command
from sitegen.builder.output import (
    checked_out_dir,
    published_postgres_rows,
    rankers_run,
    refuse_replacing,
    remove_stale_staging,
)
from sitegen.compare.changes import write_changes
from sitegen.compare.vector_drift import DriftTracker, VectorDrift, compare_with_source
from sitegen.embedding.cache import Embedder, EmbeddingCache, ProgressFactory, cache_key, default_cache_dir
from sitegen.embedding.model import MODEL_NAME, MODEL_PACKAGE, EmbeddingModel
from sitegen.embedding.models import DEFAULT_SPEC, ModelSpec, model_name
from sitegen.embedding.vectors import EmbedStats
from sitegen.errors import BuildError, BundleError, SitegenError
from sitegen.inputs.binding import git_source
from sitegen.publish.audit_stage import audit_and_render
from sitegen.publish.bundle import StoredVectors, has_manifest, stored_vectors
from sitegen.publish.evidence import ManifestRecord, write_manifest
from sitegen.publish.layout import VERIFICATION, model_vector_dir, retriever_timing
from sitegen.publish.size_guard import oversize, site_size
from sitegen.publish.timings import copy_timing_files, load_timing_files
from sitegen.publish.verification import read_verification
from sitegen.rankers import needs_postgres
from sitegen.rankers.base import Basis
from sitegen.rankers.retriever import RetrieverRanker, write_latency_file
from sitegen.stepcache import StepCache
from sitegen.swap import TargetLock, fresh_sibling, swap_into_place
from sitegen.timer import StageTimer

__all__ = ["STEP_CACHE_FOLDER", "BuildResult", "build_site", "step_cache"]

STEP_CACHE_FOLDER = "steps"


@dataclass(frozen=True)
class BuildResult:
    corpora: tuple[str, ...]
    rankers: tuple[str, ...]
    embed_stats: EmbedStats
    audit_verdict: str
    seconds: dict[str, float] = field(default_factory=dict)
    steps: dict[str, dict[str, int]] = field(default_factory=dict)
    drift: VectorDrift | None = None


@dataclass(frozen=True)
class _Request:
    """What :func:`build_site` was called with."""

    options: BuildOptions
    log: Log
    progress: ProgressFactory | None
    #: A model to embed with instead of each entry's own (tests pass a fake): one for every entry, or by entry name.
    model: EmbeddingModel | Mapping[str, EmbeddingModel] | None


@dataclass(frozen=True)
class _Embedded:
    """What building every corpus gave besides its evidence: where the vectors came from, the model and
    PostgreSQL versions for the manifest, and how far re-embedded vectors moved."""

    stats: EmbedStats
    model: Mapping[str, str] | None
    postgres: Mapping[str, str] | None
    drift: VectorDrift | None
    #: Each other model entry's model, by entry name, for the manifest's ``models``; None when there is none.
    models: Mapping[str, Mapping[str, str]] | None = None


def step_cache(options: BuildOptions) -> StepCache:
    """Experiments already computed from the same inputs, beside the embedding cache."""
    return StepCache((options.cache_dir or default_cache_dir()) / STEP_CACHE_FOLDER)


def build_site(
    options: BuildOptions,
    log: Log = quiet,
    progress: ProgressFactory | None = None,
    model: EmbeddingModel | Mapping[str, EmbeddingModel] | None = None,
) -> BuildResult:
    """Run the whole flow; raise SitegenError (output untouched) on any failure.

    The output folder is checked and locked before anything is loaded, and the lock is held until the
    new site is swapped in: a second build into the same folder fails at once instead of racing this one.
    """
    out_dir = checked_out_dir(options)
    with TargetLock(out_dir) as lock:
        refuse_replacing(out_dir, options)
        return _build_locked(_Request(options, log, progress, model), out_dir, lock)


def _build_locked(request: _Request, out_dir: Path, lock: TargetLock) -> BuildResult:
    """The build proper; ``out_dir`` was checked and is locked by :func:`build_site` until the swap."""
    options, log = request.options, request.log
    command = build_command(options)
    timer = StageTimer()
    with timer.stage("load"):
        loaded = load_inputs(options, log)
        needs_pg = needs_postgres(loaded.rankers)
        published_pg = (
            {}
            if options.require_postgres or options.allow_missing_postgres
            else published_postgres_rows(out_dir, loaded.names, needs_pg)
        )
        remove_stale_staging(out_dir)
        timing_files = load_timing_files(options.timings_folder)
    # Rows the published site has must not vanish because PostgreSQL failed this time: treat it as required.
    run_request = replace(request, options=replace(options, require_postgres=True)) if published_pg else request
    staging = fresh_sibling(out_dir, "building")
    staging.mkdir()
    try:
        steps = step_cache(options)
        try:
            embedded = _build_corpora(run_request, loaded, staging, steps, timer)
        except SitegenError as exc:
            if published_pg and is_postgres_unavailable(exc):
                rows = "; ".join(f"{corpus}: {', '.join(names)}" for corpus, names in published_pg.items())
                raise BuildError(
                    f"PostgreSQL failed ({exc}), and the site at {options.out_dir} publishes rows this build "
                    f"would drop ({rows}); fix PostgreSQL (or --pg-dsn), or pass --allow-missing-postgres "
                    "to publish them as not run"
                ) from exc
            raise
        with timer.stage("write"):
            _write_site_files(options, loaded, embedded, staging, command)
        drift = embedded.drift
        if drift is not None:
            drift = compare_with_source(drift, options.vectors_source, staging)
        if timing_files:
            copy_timing_files(options.timings_folder, staging)
        if read_verification(options.verification_record, staging) is not None:  # a bad record fails here
            shutil.copyfile(options.verification_record, staging / VERIFICATION)
        _write_retriever_timings(staging, options, loaded.retrieved)
        names = loaded.names
        del loaded  # every corpus's passages and vectors go before the pages are rendered (GBs at a million)
        audit_report = audit_and_render(staging, log, timer)
        log(
            "step cache (experiments): "
            + "; ".join(f"{name} {n['computed']} computed, {n['reused']} reused" for name, n in steps.counts.items())
        )
        ran = rankers_run(staging, names)
        _check_size(staging, options, log)
        swap_into_place(staging, out_dir, lock)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return BuildResult(
        corpora=tuple(names),
        rankers=ran,
        embed_stats=embedded.stats,
        audit_verdict=audit_report["verdict"],
        seconds=timer.seconds,
        steps={name: dict(n) for name, n in steps.counts.items()},
        drift=drift,
    )


def _model_specs(loaded: LoadedInputs) -> list[ModelSpec]:
    """Every model entry a ranker of the build ranks by, other than ``dense``'s, in build order."""
    rankers = [*loaded.rankers, *(r for found in loaded.models.values() for r in found)]
    specs: dict[str, ModelSpec] = {}
    for ranker in rankers:
        spec = ranker.contract.model
        if ranker.contract.uses_embeddings and spec is not None and spec != DEFAULT_SPEC:
            specs.setdefault(spec.name, spec)
    return list(specs.values())


def _check_size(staging: Path, options: BuildOptions, log: Log) -> None:
    """Refuse (or, with ``--allow-oversize``, warn about) a site over GitHub Pages' or git's size limits, before it
    replaces the one in ``--out``."""
    limits = options.size_limits
    problems = oversize(site_size(staging, limits), limits)
    if not problems:
        return
    if not limits.warn_only:
        found = "; ".join(problems)
        raise BuildError(f"the site would not fit on GitHub Pages: {found}; {options.out_dir} is unchanged")
    log(f"warning: the site will not fit on GitHub Pages: {'; '.join(problems[:-1])} (published: --allow-oversize)")


def _build_corpora(
    request: _Request, loaded: LoadedInputs, staging: Path, steps: StepCache, timer: StageTimer
) -> _Embedded:
    """Build every corpus's evidence into ``staging``, with the models, their caches and PostgreSQL open while
    they run and closed after."""
    options, log = request.options, request.log
    default_rankers = [*loaded.rankers, *(r for found in loaded.models.values() for r in found)]
    needs_embeddings = any(r.contract.uses_embeddings and r.contract.model is None for r in default_rankers)
    # The packaged model is loaded only for corpora that bring no vectors of their own.
    needs_model = needs_embeddings and any(vectors is None for vectors in loaded.supplied.values())
    model = _model_for(request, DEFAULT_SPEC) if needs_model else None
    stored = StoredVectors(options.vectors_source, {}, 0)
    drift = DriftTracker()
    total = EmbedStats(embedded=0, cached=0)
    with ExitStack() as stack:
        embedder = None
        if model is not None:
            embedder, stored = _embedder(request, model, stack)
        specs = {spec.name: spec for spec in _model_specs(loaded)}
        others = {name: _embedder(request, _model_for(request, spec), stack) for name, spec in specs.items()}
        postgres = _start_postgres(loaded.rankers, options, log, stack)
        run = BuildRun(options, staging, log, timer, steps, loaded.rankers, embedder, stored, drift, postgres, others)
        for source in loaded.corpora:
            total += build_corpus(run, CorpusJob.of(source, loaded, log))
        pg_versions = postgres.server.versions() if postgres.server is not None else None
    model_info = None
    if model is not None:
        model_info = {
            "name": MODEL_NAME,
            "weights_sha256": model.weights_sha256,
            "config_sha256": model.config.sha256(),
            "package": MODEL_PACKAGE,
        }
    entries = {
        name: {
            "name": getattr(other.model, "name", MODEL_NAME),
            "weights_sha256": other.model.weights_sha256,
            "config_sha256": other.model.config.sha256(),
            "entry": spec.as_dict(),
        }
        for name, (other, _) in others.items()
        for spec in [specs[name]]
    }
    embedded_any = model is not None or bool(others)
    result_drift = drift.result(options.vectors_source) if options.reembed and embedded_any else None
    return _Embedded(total, model_info, pg_versions, result_drift, entries or None)


def _model_for(request: _Request, spec: ModelSpec) -> EmbeddingModel:
    """The model of an entry: the one the caller passed (by entry name in a mapping; a single one serves its own
    entry, or, a stand-in without a spec such as a test's fake, every entry), else the entry's own, found by
    :func:`sitegen.embedding.models.resolve_model`."""
    given = request.model
    if isinstance(given, Mapping):
        given = given.get(spec.name)
    elif isinstance(getattr(given, "spec", None), ModelSpec) and given.spec != spec:  # type: ignore[union-attr]
        given = None  # a real model is another entry's model: this entry loads its own
    if given is not None and spec != DEFAULT_SPEC and not hasattr(given, "name"):
        given = _AsEntry(given, model_name(spec))
    return given if given is not None else EmbeddingModel(device=request.options.device, spec=spec)


class _AsEntry:
    """One model passed for every entry (a test's fake), publishing its vectors under the entry's model name."""

    def __init__(self, model: Any, name: str) -> None:
        self._model, self.name = model, name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._model, attribute)


def _embedder(request: _Request, model: EmbeddingModel, stack: ExitStack) -> tuple[Embedder, StoredVectors]:
    """How one model's vectors are got (frozen ones of the earlier bundle, its cache, the model), its cache
    closed with ``stack``."""
    options, log = request.options, request.log
    cache_dir = options.cache_dir or default_cache_dir()
    cache = EmbeddingCache(cache_dir, cache_key(model.config, model.device), model.config.dimensions)
    stack.callback(cache.close)
    name = getattr(model, "name", MODEL_NAME)
    log(f"embedding model {name}, weights sha256 {model.weights_sha256[:12]}..., cache {cache.path}")
    stored = _stored_vectors(options, model, log)
    frozen = None if options.reembed else stored.vectors
    return Embedder(model, cache, request.progress, frozen, options.reembed), stored


def _write_site_files(
    options: BuildOptions, loaded: LoadedInputs, embedded: _Embedded, staging: Path, command: str
) -> None:
    """What spans the corpora, once each corpus's evidence is written: the Changes since ``--baseline`` and
    the manifest, which lists every evidence file and the ``command`` that built them."""
    if loaded.baseline is not None:
        corrections = {c.name: str(c.config.get("significance", {}).get("correction", "holm")) for c in loaded.corpora}
        write_changes(staging, loaded.baseline, loaded.names, corrections, _vector_rankers(loaded))
    source = git_source(options.corpora_dir)
    write_manifest(
        staging,
        ManifestRecord(
            loaded.names,
            embedded.model,
            embedded.postgres,
            command,
            {"title": options.title, "description": options.description},
            source.as_dict() if source is not None else None,
            embedded.models,
        ),
    )


def _vector_rankers(loaded: LoadedInputs) -> dict[str, list[str]]:
    """The rankers that rank by each folder of vectors (``embeddings`` for ``dense``'s, ``embeddings/<entry>``),
    directly or through what they fuse, read from their contracts."""
    rankers = [*loaded.rankers]
    for corpus in loaded.names:
        rankers += [*loaded.models.get(corpus, ()), *loaded.fusions.get(corpus, ())]
    folder_of: dict[str, set[str]] = {}
    for ranker in rankers:  # build order: components come first
        contract = ranker.contract
        own = {model_vector_dir(contract.model.vectors_folder if contract.model else None)}
        folders = own if Basis.VECTORS in contract.basis else set()
        for component in contract.components:
            folders |= folder_of.get(component, set())
        folder_of[ranker.name] = folders
    found: dict[str, list[str]] = {}
    for name, folders in folder_of.items():
        for folder in sorted(folders):
            found.setdefault(folder, []).append(name)
    return found


def _write_retriever_timings(
    staging: Path, options: BuildOptions, retrieved: Mapping[str, Sequence[RetrieverRanker]]
) -> None:
    """Each retriever's call times, in ``timings/`` beside the benchmark files: timing, never evidence."""
    by_name: dict[str, dict[str, RetrieverRanker]] = {}
    for corpus, runs in retrieved.items():
        for run in runs:
            by_name.setdefault(run.name, {})[corpus] = run
    for runs in by_name.values():
        retriever = next(iter(runs.values())).retriever
        write_latency_file(staging / retriever_timing(retriever.name), retriever, options.depth, runs)


def _stored_vectors(options: BuildOptions, model: EmbeddingModel, log: Log) -> StoredVectors:
    """The vectors of the earlier bundle (``--vectors-from``, else the output site), as frozen inputs."""
    source = options.vectors_source
    if options.vectors_from is not None and not has_manifest(source):
        raise BuildError(f"{source}: no evidence/manifest.json there, so no stored vectors to reuse")
    try:
        stored = stored_vectors(source, model.config.sha256(), model.config.dimensions)
    except BundleError as exc:
        raise BuildError(
            f"the stored vectors cannot be trusted: {exc}. Restore the bundle (git checkout {source}), "
            "or build into another --out"
        ) from None
    if stored.vectors or stored.skipped:
        note = f" ({stored.skipped} left out: another model configuration or unusable)" if stored.skipped else ""
        use = "compared with the new ones" if options.reembed else "reused as frozen inputs"
        name = getattr(model, "name", MODEL_NAME)
        spec = getattr(model, "spec", None)
        entry = f" ({spec.name})" if isinstance(spec, ModelSpec) and spec != DEFAULT_SPEC else ""
        log(f"stored vectors of {name}{entry}: {len(stored.vectors)} in {source}, {use}{note}")
    return stored


def _start_postgres(rankers: Sequence[Any], options: BuildOptions, log: Log, stack: ExitStack) -> PostgresSession:
    """Start (or connect to) PostgreSQL when a pg ranker is asked for; stopped when ``stack`` closes."""
    if not any(r.contract.uses_postgres for r in rankers):
        return PostgresSession()
    from sitegen.postgres.server import PostgresServer, PostgresUnavailable

    try:
        server = stack.enter_context(PostgresServer(options.pg_dsn))
    except PostgresUnavailable as exc:
        if options.require_postgres:
            raise
        log(f"PostgreSQL rankers not run: {exc}")
        return PostgresSession(problem=str(exc))
    log(f"postgres: {server.describe()}")
    return PostgresSession(server)
