"""What several ``sitegen`` commands share: one-line OS errors, the site-folder check, a progress bar and
the custom click parameter types."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from sitegen.wording import count


class CommandError(click.ClickException):
    """A sitegen failure, printed as ``error: ...`` (the style of ``sitegen validate``) rather than click's
    ``Error: ...``, which stays on click's own usage errors."""

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", file=file if file is not None else sys.stderr)


class _ExternalRun(click.ParamType):
    """``NAME=CORPUS:PATH``: a TREC run file to score beside the built-in rankers."""

    name = "NAME=CORPUS:PATH"

    def convert(self, value: Any, param: Any, ctx: Any) -> tuple[str, str, Path]:
        if isinstance(value, tuple):
            return value
        name, eq, rest = str(value).partition("=")
        corpus, colon, path = rest.partition(":")
        if not (eq and colon and name and corpus and path):
            self.fail(f"{value!r} is not NAME=CORPUS:PATH (e.g. es-bm25=payments-support:runs/es.trec)", param, ctx)
        return (name, corpus, Path(path))


class _Retriever(click.ParamType):
    """``NAME=module:callable``: a retriever to call on every question, scored as an external run."""

    name = "NAME=module:callable"

    def convert(self, value: Any, param: Any, ctx: Any) -> tuple[str, str]:
        if isinstance(value, tuple):
            return value
        from sitegen.rankers.retriever import parse_retriever_spec

        try:
            return parse_retriever_spec(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class _ModelEntry(click.ParamType):
    """``NAME=MODEL`` or a JSON model entry: a dense ranker NAME ranking with MODEL's vectors."""

    name = "NAME=MODEL"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        from sitegen.embedding.models import ModelEntryError, ModelSpec, parse_model_option

        if isinstance(value, ModelSpec):
            return value
        try:
            return parse_model_option(str(value))
        except ModelEntryError as exc:
            self.fail(str(exc), param, ctx)


class _Tolerance(click.ParamType):
    """A finite number >= 0: NaN would make every comparison false, infinity would accept anything."""

    name = "FLOAT"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        import math

        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number (e.g. 1e-6)", param, ctx)
        if not (math.isfinite(number) and number >= 0):
            self.fail(f"{value!r} is not a finite number >= 0 (e.g. 1e-6)", param, ctx)
        return number


def _os_problem(exc: OSError) -> str:
    """An operating-system failure (a file where a folder should be, no permission, a full disk) as
    one line naming the path, instead of a traceback."""
    where = f"{exc.filename}: " if exc.filename is not None else ""
    return f"{where}{exc.strerror or exc}"


def _site_folder(ctx: click.Context, param: click.Parameter, value: Path) -> Path:
    """A folder without ``evidence/`` is the wrong folder, not a site whose audit failed."""
    from sitegen.publish.layout import EVIDENCE_DIR

    if not (value / EVIDENCE_DIR).is_dir():
        raise click.BadParameter(f"{value} has no {EVIDENCE_DIR}/ folder; pass a built site folder", ctx, param)
    return value


class _Progress:
    """A click progress bar on stderr with texts/s and an ETA, or nothing when ``--quiet``; ``finish`` prints
    the count, seconds and rate, which a log (no terminal, so no bar) would otherwise lack."""

    def __init__(self, total: int, label: str, quiet: bool) -> None:
        self._bar: Any = None
        self._label = label
        self._done = 0
        self._start = time.perf_counter()
        if not quiet:
            self._bar = click.progressbar(
                length=total, label=label, file=sys.stderr, show_eta=True, item_show_func=lambda rate: rate
            )
            self._bar.__enter__()

    def _rate(self) -> float:
        return self._done / max(time.perf_counter() - self._start, 1e-9)

    def update(self, n: int) -> None:
        self._done += n
        if self._bar is not None:
            self._bar.update(n, f"{self._rate():.1f} texts/s")

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            seconds = time.perf_counter() - self._start
            done = count(self._done, "text")
            click.echo(f"{self._label}: {done} in {seconds:.1f} s ({self._rate():.1f} texts/s)", err=True)
