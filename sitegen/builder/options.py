"""What a build is asked to do (:class:`BuildOptions`) and the command that asks it (:func:`build_command`)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sitegen.embedding.models import ModelSpec, model_option
from sitegen.publish.evidence import DEFAULT_TITLE, TREC_DEPTH
from sitegen.publish.redaction import REFERENCE_ABOVE
from sitegen.publish.size_guard import SiteLimits
from sitegen.publish.verification import DEFAULT_RECORD
from sitegen.rankers import DEFAULT_RANKERS

__all__ = ["BuildOptions", "build_command"]


@dataclass(frozen=True)
class BuildOptions:
    """What to build and where; defaults are the README's ``sitegen build``."""

    corpora_dir: Path = Path("corpora")
    out_dir: Path = Path("site")
    only: tuple[str, ...] = ()
    rankers: tuple[str, ...] = DEFAULT_RANKERS
    #: Model entries (``sitegen.toml``'s ``[[models]]``, ``--model``): a dense ranker each, beside ``rankers``.
    models: tuple[ModelSpec, ...] = ()
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
    #: ``--redact NAME``: publish these corpora without their texts, as ``"publish": "redacted"`` in a corpus's
    #: sitegen.json does; ``--publish-vectors``: publish a redacted corpus's vectors all the same
    #: (sitegen.publish.redaction).
    redact: tuple[str, ...] = ()
    publish_vectors: bool = False
    #: ``--reference NAME``: hold these corpora's text inputs, chunks and vectors by reference (sha256, size,
    #: source) instead of copying them; ``--reference-above BYTES``: so any such file larger than this
    #: (sitegen.publish.redaction.REFERENCE_ABOVE by default).
    reference: tuple[str, ...] = ()
    reference_above: int = REFERENCE_ABOVE
    #: What the finished site may weigh (GitHub Pages and git's limits), and whether going over fails the build
    #: or warns (sitegen.publish.size_guard).
    size_limits: SiteLimits = field(default_factory=SiteLimits)
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
    for spec in options.models:
        words += ["--model", model_option(spec)]
    if options.depth != TREC_DEPTH:
        words += ["--depth", str(options.depth)]
    for name, corpus, path in options.external_runs:
        words += ["--run", f"{name}={corpus}:{_shown_path(Path(path))}"]
    for name, spec in options.retrievers:
        words += ["--retriever", f"{name}={spec}" if isinstance(spec, str) else f"{name}=<a Python object>"]
    if options.allow_edited:
        words.append("--allow-edited")
    for name in sorted(set(options.redact)):
        words += ["--redact", name]
    if options.publish_vectors:
        words.append("--publish-vectors")
    for name in sorted(set(options.reference)):
        words += ["--reference", name]
    if options.reference_above != REFERENCE_ABOVE:
        words += ["--reference-above", str(options.reference_above)]
    if options.baseline is not None:
        words += ["--baseline", _shown_path(options.baseline)]
    if options.title != DEFAULT_TITLE:
        words += ["--title", options.title]
    if options.description:
        words += ["--description", options.description]
    return shlex.join(words)
