"""Where the input loaders put a problem (:class:`Problems`): raised at once for a build, or kept while the next
line is read, so ``sitegen validate`` and ``sitegen import`` list every problem in one run; and what they need to
say it once: the id a broken line names, and a JSON value's type in a reader's words."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sitegen.errors import CorpusError

__all__ = ["Problems", "json_type", "record_id", "salvaged_id"]


class Problems:
    """Where the loaders put a problem: raised at once (the build), or kept and the line skipped (validate, the
    importers), so one run lists every problem.

    A line left out also leaves out the id it names, and every reference to that id elsewhere (a qrels row, a
    span) would be reported again. :meth:`skipped` keeps the id, read from the line where it can be, and
    :meth:`follows` then excuses those references: one broken line is one problem. Where no id can be read from
    it, every reference to an unknown id of that file is excused until the line is fixed."""

    def __init__(self, collect: bool) -> None:
        self.collect = collect
        self.found: list[CorpusError] = []
        self._left_out: dict[Path, set[str] | None] = {}

    def add(self, problem: CorpusError) -> None:
        if not self.collect:
            raise problem
        self.found.append(problem)

    def skipped(self, problem: CorpusError, identifier: str | None) -> None:
        """``problem`` left a record of its file out; ``identifier`` is the id it names, None when unreadable."""
        self.add(problem)
        ids = self._left_out.setdefault(problem.path, set())
        if identifier is None:
            self._left_out[problem.path] = None
        elif ids is not None:
            ids.add(identifier)

    def follows(self, path: Path, identifier: str) -> bool:
        """Whether an id of ``path`` that is not among its records is one a reported, left-out line names."""
        if path not in self._left_out:
            return False
        ids = self._left_out[path]
        return ids is None or identifier in ids


_ID_FIELD = r'"{}"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9]+)'


def salvaged_id(text: str, keys: Sequence[str] = ("_id",)) -> str | None:
    """The id a line that is not valid JSON names, when one of ``keys`` is followed by a whole string or integer
    (``{"_id": "d4", "text": "cut sho`` names ``d4``); None when it cannot be read (cut inside the id, say)."""
    for key in keys:
        found = re.search(_ID_FIELD.format(re.escape(key)), text)
        if found is not None:
            try:
                value = json.loads(found.group(1))
            except ValueError:
                continue
            return str(value).strip()
    return None


def record_id(obj: Mapping[str, Any], keys: Sequence[str] = ("_id",)) -> str | None:
    """The id a parsed record names, for a record refused for another reason; None when it has none."""
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return str(value).strip()
    return None


def json_type(value: Any) -> str:
    """What a JSON value is, in JSON's words ("an array", "a number"), for a message: never Python's "a int"."""
    if isinstance(value, bool):
        return "true or false"
    names = {list: "an array", dict: "an object", str: "a string", int: "a number", float: "a number"}
    return names.get(type(value), "null")
