"""The date a build stamps on a corpus's evidence: when its inputs were frozen, never the wall clock."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from sitegen.errors import BuildError

__all__ = ["inputs_date", "source_date_epoch"]


def source_date_epoch() -> int | None:
    """``SOURCE_DATE_EPOCH`` as whole seconds, or None when unset; a value that is not one is an error
    (the build checks it while loading, rather than dying with a traceback after ranking)."""
    text = os.environ.get("SOURCE_DATE_EPOCH")
    if not text:
        return None
    try:
        epoch = int(text)
        datetime.fromtimestamp(epoch, tz=timezone.utc)
    except (ValueError, OverflowError, OSError):
        raise BuildError(
            f"SOURCE_DATE_EPOCH={text!r} is not a date in whole seconds since 1970 (e.g. 1735689600)"
        ) from None
    return epoch


def inputs_date(folder: Path, files: Sequence[str]) -> str | None:
    """The date the inputs were frozen, never the wall clock: ``SOURCE_DATE_EPOCH`` if set, else the date of
    the last git commit touching one of the corpus's input ``files`` (relative to ``folder``; other files in
    the folder, such as FROZEN.json, change no input), else None."""
    if (epoch := source_date_epoch()) is not None:
        return datetime.fromtimestamp(epoch, tz=timezone.utc).date().isoformat()
    try:
        result = subprocess.run(
            ["git", "log", "-1", "--format=%cs", "--", *files],
            cwd=folder,
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None
