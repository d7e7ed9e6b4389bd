"""Errors the core raises; the CLI turns them into one-line messages and exit code 1."""

from __future__ import annotations

from pathlib import Path

__all__ = ["BuildError", "BundleError", "CorpusError", "CorpusProblems", "OutputFolderError", "SitegenError"]


class SitegenError(Exception):
    """Base class for every error sitegen reports to a user."""


class CorpusError(SitegenError):
    """Bad input in a corpus folder, located to a file and, where possible, a line."""

    def __init__(self, path: Path | str, problem: str, line: int | None = None) -> None:
        self.path = Path(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line is not None else str(self.path)
        super().__init__(f"{where}: {problem}")


class CorpusProblems(CorpusError):
    """Every problem an input has, found in one pass (``problems``, in the order found); it reads as the first,
    with the number of the others, so a caller that shows one line still says there are more."""

    def __init__(self, problems: list[CorpusError]) -> None:
        if not problems:
            raise ValueError("CorpusProblems needs at least one problem")
        self.problems = list(problems)
        first, more = problems[0], len(problems) - 1
        tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        super().__init__(first.path, first.problem + tail, first.line)


class BuildError(SitegenError):
    """A build could not complete; the previous output is left untouched."""


class OutputFolderError(SitegenError):
    """An output folder that is not safe to replace: another writer holds it, it holds the inputs or someone
    else's files, or the swap into it failed (the previous contents are then kept)."""


class BundleError(SitegenError):
    """An evidence bundle that cannot be trusted: unreadable, or a file that does not match its manifest."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")
