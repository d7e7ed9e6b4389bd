"""Command line: ``sitegen build``, ``audit``, ``validate``, ``rankers``, ``bench-pg``, ``diff``, ``import``,
``gate``, ``pool``, ``freeze``, ``init``.

This module defines the ``cli`` group and adds every command to it; the commands live one module per concern:
``build_command`` (build), ``audit_command`` (audit), ``inputs_commands`` (validate, import, freeze),
``info_commands`` (rankers, bench-pg) and ``compare_commands`` (diff, gate, pool). ``common`` holds the helpers and
click parameter types they share. The command modules never import this one, so there is no import cycle.
"""

from __future__ import annotations

from typing import Any

import click

from sitegen import __version__
from sitegen.cli.audit_command import audit
from sitegen.cli.build_command import build
from sitegen.cli.common import CommandError
from sitegen.cli.compare_commands import diff_command, gate_group, pool_command
from sitegen.cli.info_commands import bench_pg, rankers
from sitegen.cli.init_command import init_command
from sitegen.cli.inputs_commands import freeze_command, import_group, validate

__all__ = ["cli"]


class _Group(click.Group):
    """The ``sitegen`` group: every command's own failure (a ``ClickException`` that is not a usage error)
    prints as ``error: ...``, whichever module raised it, so the style cannot drift command by command."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError:
            raise
        except click.ClickException as exc:
            if isinstance(exc, CommandError):
                raise
            error = CommandError(exc.message)
            error.exit_code = exc.exit_code
            raise error from exc


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="sitegen")
def cli() -> None:
    """Turn frozen retrieval test collections into a verifiable evaluation report."""


for _command in (
    build,
    audit,
    validate,
    rankers,
    bench_pg,
    diff_command,
    import_group,
    freeze_command,
    gate_group,
    pool_command,
    init_command,
):
    cli.add_command(_command)
