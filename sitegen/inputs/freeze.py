"""Frozen question sets: ``<corpus>/FROZEN.json`` records the sha256 of every input that decides a number,
and the date the inputs were frozen, so that a later edit to a question or a label cannot pass unnoticed.

``sitegen freeze CORPUS_DIR [--date YYYY-MM-DD]`` writes::

    {
      "date": "2026-12-01",
      "files": {"corpus.jsonl": "<sha256>", "qrels/test.tsv": "<sha256>", "queries.jsonl": "<sha256>"},
      "format": "sitegen-frozen/1"
    }

(sorted keys, two-space indentation, one trailing newline: the same inputs and date give the same bytes).
The files are those the loader reads (:attr:`~sitegen.inputs.corpus.Corpus.input_files`), the external
runs in ``runs/*.trec`` and supplied vectors in ``embeddings/`` (:mod:`sitegen.inputs.vectors`), less
``README.md``: prose, rendered on the site, that changes no number.

A build refuses a frozen corpus whose inputs differ from the record (:func:`check_frozen`), naming the files
changed, added and removed; with ``--allow-edited`` it goes ahead and ``corpus.json`` records
``"frozen": {"date": ..., "edited_files": [...]}`` (an empty list when nothing changed), which the corpus
page shows. FROZEN.json is copied into the bundle beside the inputs (it decides no number, so it is not a
tracked file itself), and the audit recomputes ``frozen`` from that copy and the input copies: a corpus
edited and then frozen again passes the standalone audit, and fails ``audit.py --corpora`` against a trusted
checkout, which names every file that differs.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date as Date
from pathlib import Path
from typing import Any

from sitegen.errors import CorpusError
from sitegen.hashing import sha256_file
from sitegen.inputs.corpus import README_FILE, RUNS_DIR, Corpus, load_corpus
from sitegen.inputs.vectors import SUPPLIED_FILES, read_supplied_vectors

__all__ = [
    "FROZEN_FILE",
    "FROZEN_FORMAT",
    "Frozen",
    "FrozenState",
    "check_date",
    "check_frozen",
    "compare_hashes",
    "dump_frozen",
    "freeze_corpus",
    "frozen_state",
    "frozen_summary",
    "read_frozen",
    "tracked_files",
]

FROZEN_FILE = "FROZEN.json"
FROZEN_FORMAT = "sitegen-frozen/1"
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Frozen:
    """A corpus's FROZEN.json: the date and the sha256 of each frozen input, by path in the corpus folder."""

    date: str
    files: Mapping[str, str]


@dataclass(frozen=True)
class FrozenState:
    """How a frozen corpus's inputs compare with its record."""

    date: str
    changed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    @property
    def edited_files(self) -> list[str]:
        return sorted({*self.changed, *self.added, *self.removed})

    def describe(self) -> str:
        """``queries.jsonl changed; runs/x.trec added``: what differs, in one clause."""
        parts = [
            f"{', '.join(names)} {what}"
            for names, what in ((self.changed, "changed"), (self.added, "added"), (self.removed, "removed"))
            if names
        ]
        return "; ".join(parts)


def check_date(text: str) -> str:
    """``text`` if it is a calendar date written YYYY-MM-DD, else ValueError."""
    if not _DATE.fullmatch(text):
        raise ValueError(f"{text!r} is not a date written YYYY-MM-DD")
    try:
        Date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a calendar date") from None
    return text


def tracked_files(corpus: Corpus) -> list[str]:
    """The inputs a freeze covers, sorted: the files the loader read, less README.md, plus ``runs/*.trec``
    (the build scores those too; the loader refuses a link among them) and supplied ``embeddings/`` files."""
    names = {n for n in corpus.input_files if n != README_FILE}
    names.update(n for n in SUPPLIED_FILES if (corpus.root / n).is_file())
    runs = corpus.root / RUNS_DIR
    if runs.is_dir():
        names.update(f"{RUNS_DIR}/{p.name}" for p in runs.iterdir() if p.name.endswith(".trec") and p.is_file())
    return sorted(names)


def _hashes(folder: Path, names: Sequence[str]) -> dict[str, str]:
    return {name: sha256_file(folder / name) for name in names}


def compare_hashes(frozen: Mapping[str, str], current: Mapping[str, str]) -> tuple[list[str], list[str], list[str]]:
    """Files changed, added and removed between the record and now, each sorted."""
    changed = sorted(n for n in frozen.keys() & current.keys() if frozen[n] != current[n])
    return changed, sorted(current.keys() - frozen.keys()), sorted(frozen.keys() - current.keys())


def dump_frozen(frozen: Frozen) -> bytes:
    record = {"date": frozen.date, "files": dict(frozen.files), "format": FROZEN_FORMAT}
    return (json.dumps(record, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def read_frozen(folder: Path) -> Frozen | None:
    """The corpus's FROZEN.json, or None when it has none; a malformed one is a CorpusError naming it."""
    path = Path(folder) / FROZEN_FILE
    if not os.path.lexists(path):
        return None
    if path.is_symlink() or not path.is_file():
        raise CorpusError(path, "is not a regular file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CorpusError(path, f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CorpusError(path, "not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise CorpusError(path, f"not valid JSON: {exc.msg}", exc.lineno) from None
    expected = f'{{"date": "YYYY-MM-DD", "files": {{path: sha256}}, "format": "{FROZEN_FORMAT}"}}'
    if not isinstance(data, dict) or set(data) != {"date", "files", "format"} or data["format"] != FROZEN_FORMAT:
        raise CorpusError(path, f"expected {expected}; write it with `sitegen freeze {folder}`")
    files = data["files"]
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and _SHA256.fullmatch(v) for k, v in files.items()
    ):
        raise CorpusError(path, '"files" must map each input path to its lowercase hex sha256')
    try:
        if not isinstance(data["date"], str):
            raise ValueError(f"{data['date']!r} is not a date written YYYY-MM-DD")
        day = check_date(data["date"])
    except ValueError as exc:
        raise CorpusError(path, f'"date": {exc}') from None
    return Frozen(day, dict(files))


def frozen_state(corpus: Corpus) -> FrozenState | None:
    """How the corpus's inputs compare with its FROZEN.json; None when it is not frozen."""
    frozen = read_frozen(corpus.root)
    if frozen is None:
        return None
    changed, added, removed = compare_hashes(frozen.files, _hashes(corpus.root, tracked_files(corpus)))
    return FrozenState(frozen.date, tuple(changed), tuple(added), tuple(removed))


def frozen_summary(corpus: Corpus) -> dict[str, Any] | None:
    """``corpus.json``'s ``frozen`` entry: ``{"date", "edited_files"}``, or None when not frozen."""
    state = frozen_state(corpus)
    return None if state is None else {"date": state.date, "edited_files": state.edited_files}


def check_frozen(corpora: Sequence[Corpus], allow_edited: bool) -> dict[str, FrozenState]:
    """The state of every frozen corpus; a corpus edited since it was frozen is refused (CorpusError naming the
    files) unless ``allow_edited``."""
    states = {}
    for corpus in corpora:
        state = frozen_state(corpus)
        if state is None:
            continue
        if state.edited_files and not allow_edited:
            raise CorpusError(
                corpus.root / FROZEN_FILE,
                f"{corpus.name} was frozen on {state.date}, but its inputs were edited since: {state.describe()}. "
                f"Restore them, freeze the corpus again (sitegen freeze {corpus.root}), "
                "or build with --allow-edited to publish it flagged as edited",
            )
        states[corpus.name] = state
    return states


def freeze_corpus(folder: Path, date: str | None = None) -> tuple[Path, Frozen]:
    """Validate the corpus, then write its FROZEN.json (atomically) for ``date`` (default: today)."""
    folder = Path(folder)
    day = check_date(date) if date is not None else Date.today().isoformat()
    corpus = load_corpus(folder)
    read_supplied_vectors(corpus)
    frozen = Frozen(day, _hashes(folder, tracked_files(corpus)))
    path = folder / FROZEN_FILE
    fd, tmp = tempfile.mkstemp(prefix=f".{FROZEN_FILE}.", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(dump_frozen(frozen))
        os.chmod(tmp, 0o644)  # mkstemp makes it private; this is a file to commit
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path, frozen
