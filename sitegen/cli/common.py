"""What several ``sitegen`` commands share: one-line OS errors, the site-folder check, a progress bar and
the custom click parameter types."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click


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
    if not (value / "evidence").is_dir():
        raise click.BadParameter(f"{value} has no evidence/ folder; pass a built site folder", ctx, param)
    return value


class _Progress:
    """A click progress bar on stderr, or nothing when ``--quiet``."""

    def __init__(self, total: int, label: str, quiet: bool) -> None:
        self._bar: Any = None
        if not quiet:
            self._bar = click.progressbar(length=total, label=label, file=sys.stderr)
            self._bar.__enter__()

    def update(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
