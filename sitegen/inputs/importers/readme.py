"""The corpus README an import writes: provenance (where it came from, license, source files with sizes and hashes,
the command, the source's own README), counts and conversion notes.

Its first paragraph names the source and its license paragraph follows, so the corpus page, which shows both above
the collapsed README, states where the collection came from. The command is the one that reruns the import from the
folder it ran in: a path given relative (``../shared/collections/cranfield``) is kept as given, an absolute one
inside the current folder is made relative to it, and an absolute one outside is shown by its last component
alone, so an import never publishes a home or workspace path (the sha256 values name the files instead).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sitegen.inputs.importers.plan import ImportResult, Plan, SourceFile

__all__ = ["ReadmeCounts", "command_line", "readme"]


@dataclass(frozen=True)
class ReadmeCounts:
    """What the README counts beyond :class:`ImportResult`: the relevant pairs, the unanswerable queries kept,
    the queries dropped as judged with no relevant document or never judged, the qrels rows dropped by reason,
    and the sentence on how grades were converted."""

    relevant_pairs: int
    unanswerable: int
    dropped_judged: int
    dropped_unjudged: int
    dropped_rows: Mapping[str, int]
    grade_note: str


def readme(plan: Plan, sources: list[SourceFile], result: ImportResult, counts: ReadmeCounts) -> str:
    relevant_pairs, unanswerable, dropped_rows = counts.relevant_pairs, counts.unanswerable, counts.dropped_rows
    dropped_judged, dropped_unjudged, grade_note = counts.dropped_judged, counts.dropped_unjudged, counts.grade_note
    license_line = plan.license_text.strip() or "license: not stated"
    shown = ", ".join(f"`{_shown_path(path)}`" for path in plan.origin or [path for _, path in plan.sources])
    lines = [
        f"# {plan.name}",
        "",
        f"Imported from {shown} ({plan.kind}) by `sitegen import {plan.kind.lower()}`: the text, queries and "
        "judgements are the source's, not this project's. The sha256 of every source file, the command that reruns "
        "the import and the conversion are below; the license is the one stated by whoever ran the import.",
        "",
        "## License",
        "",
        license_line,
        "",
        "## Source files",
        "",
        "| file | bytes | sha256 |",
        "|---|---:|---|",
        *(f"| `{s.label}` | {s.size} | `{s.sha256}` |" for s in sources),
        "",
        "## Command",
        "",
        "Run from the folder the import ran in (a path given as absolute outside it is shown by its last component "
        "alone: pass the files with the sha256 values above):",
        "",
        "```sh",
        plan.command,
        "```",
        "",
        "## Counts",
        "",
        f"- documents: {result.documents}",
        f"- queries: {result.queries}"
        + (
            f' ({unanswerable} judged with no relevant document, kept as `"answerable": false`)' if unanswerable else ""
        ),
        f"- judged pairs: {result.judged_pairs} ({relevant_pairs} relevant, grade > 0)",
        f"- queries dropped: {result.dropped_queries} ({dropped_judged} judged with no relevant document, "
        f"{dropped_unjudged} never judged)",
        f"- qrels rows dropped: {result.dropped_qrels}"
        + (" (" + "; ".join(f"{n} {why}" for why, n in sorted(dropped_rows.items())) + ")" if dropped_rows else ""),
        "",
        "## Conversion",
        "",
        *(f"- {note}" for note in plan.notes),
        f"- {grade_note}",
        "- Ids stripped; whitespace in titles and text collapsed to single spaces.",
        "- A query is kept only if some document is judged relevant to it (grade > 0).",
        "",
    ]
    if plan.source_readme is not None:
        lines += [
            "## The source's README",
            "",
            "Quoted as the source ships it (its headings two levels down): what the collection is, where it comes "
            "from and how it was converted before this import.",
            "",
            *(_quoted(line) for line in plan.source_readme.strip().splitlines()),
            "",
        ]
    return "\n".join(lines)


def _quoted(line: str) -> str:
    """One line of the source's README as a Markdown quote, a heading moved two levels down."""
    if line.startswith("#"):
        line = "##" + line
    return f"> {line}".rstrip()


def command_line(kind: str, positional: Sequence[Path | str], options: Mapping[str, Any]) -> str:
    """A ``sitegen import`` command equivalent to this call, options in a fixed order, shell-quoted.

    The README is published, so paths are shown relative to the current folder, or by name alone
    when they lie outside it: never a home or workspace path."""
    words = ["sitegen", "import", kind, *(_shown_path(Path(p)) for p in positional)]
    for option, value in options.items():
        if value is True:
            words.append(option)
        elif isinstance(value, Path):
            words += [option, _shown_path(value)]
        elif value is not False and value is not None:
            words += [option, str(value)]
    return shlex.join(words)


def _shown_path(path: Path) -> str:
    """``path`` as given when relative (the command reruns from the same folder), relative to the current folder
    when it is absolute and lies inside it, else its last component."""
    if not path.is_absolute():
        return path.as_posix()
    here = Path.cwd().resolve()
    resolved = path.resolve()
    if resolved.is_relative_to(here) and resolved != here:
        return resolved.relative_to(here).as_posix()
    return resolved.name or "."
