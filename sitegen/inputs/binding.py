"""What binds a report to the inputs it evaluated: each input file's sha256, the question set's one hash,
and, in a git checkout, the commit and tree the corpus folder comes from.

A reader checks the binding with ordinary tools: ``sha256sum`` in the corpus folder gives every input hash,
``sha256sum qrels/test.tsv queries.jsonl | sha256sum`` the question set's, and ``git rev-parse COMMIT:PATH``
the tree; ``audit.py SITE --corpora DIR`` compares every copied input with a trusted checkout at once.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sitegen.hashing import sha256_file

__all__ = ["QUESTION_SET_FILES", "GitSource", "file_hashes", "git_source", "question_set_sha256"]

#: The files that make up the question set, in the order their ``sha256sum`` listing is hashed.
QUESTION_SET_FILES = ("qrels/test.tsv", "queries.jsonl")
_GIT_TIMEOUT = 30


def file_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder``, by its path relative to it, sorted."""
    return {p.relative_to(folder).as_posix(): sha256_file(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def question_set_sha256(hashes: Mapping[str, str]) -> str:
    """The question set's hash: sha256 of the output of ``sha256sum qrels/test.tsv queries.jsonl`` (a file
    that is absent is listed with ``-``)."""
    listing = "".join(f"{hashes.get(name, '-')}  {name}\n" for name in QUESTION_SET_FILES)
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class GitSource:
    """Where a folder's files come from in git: the last commit that changed the folder, the folder's tree
    at that commit, that commit's date, and whether the files on disk differ from it (uncommitted edits or
    untracked files, which a checkout of the commit would not have)."""

    commit: str
    tree: str
    date: str
    uncommitted_changes: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "tree": self.tree,
            "date": self.date,
            "uncommitted_changes": self.uncommitted_changes,
        }


def _git(folder: Path, *args: str) -> str | None:
    try:
        result = subprocess.run(
            ["git", *args], cwd=folder, capture_output=True, text=True, check=False, timeout=_GIT_TIMEOUT
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def git_source(folder: Path) -> GitSource | None:
    """The folder's :class:`GitSource`, or None outside a git checkout or before its first commit. The last
    commit touching the folder, not HEAD, so committing the rebuilt site does not change what is recorded."""
    folder = folder.resolve()
    found = _git(folder, "log", "-1", "--format=%H %cs", "--", ".")
    prefix = _git(folder, "rev-parse", "--show-prefix")
    if not found or prefix is None:
        return None
    commit, date = found.split()
    tree = _git(folder, "rev-parse", f"{commit}:{prefix}")
    status = _git(folder, "status", "--porcelain", "--untracked-files=all", "--", ".")
    if not tree or status is None:
        return None
    return GitSource(commit, tree, date, bool(status))
