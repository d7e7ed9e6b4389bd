"""The output folder: refused before anything is loaded when the build would replace what it should not
(the inputs, someone's files, other corpora, published PostgreSQL rows), and cleared of a killed build's
staging folders."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence, Set
from pathlib import Path
from typing import Any

from sitegen.builder.load import select_corpora
from sitegen.builder.options import BuildOptions
from sitegen.errors import OutputFolderError
from sitegen.publish.layout import EVIDENCE_DIR, MANIFEST, CorpusFiles
from sitegen.publish.reader import CorpusReader, SiteFolder

__all__ = [
    "checked_out_dir",
    "published_postgres_rows",
    "rankers_run",
    "refuse_replacing",
    "remove_stale_staging",
]


def checked_out_dir(options: BuildOptions) -> Path:
    """The resolved output folder, refused before anything is created or locked when it is, holds or sits
    inside the corpora folder (always, even with ``force``), or is a file."""
    out_dir = options.out_dir.resolve()
    corpora_dir = options.corpora_dir.resolve()
    if out_dir == corpora_dir:
        relation = "equals"
    elif out_dir.is_relative_to(corpora_dir):
        relation = "is inside"
    elif corpora_dir.is_relative_to(out_dir):
        relation = "contains"
    else:
        relation = ""
    if relation:
        raise OutputFolderError(
            f"--out {options.out_dir} {relation} the corpora folder {options.corpora_dir}; "
            "the build would replace its inputs"
        )
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputFolderError(f"--out {options.out_dir} is a file, not a folder")
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputFolderError(f"cannot create {out_dir.parent}: {exc.strerror or exc}") from exc
    return out_dir


def _site_manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest of a site sitegen wrote (``tool.name`` is sitegen), else None."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    tool = manifest.get("tool") if isinstance(manifest, dict) else None
    return manifest if isinstance(tool, dict) and tool.get("name") == "sitegen" else None


def refuse_replacing(out_dir: Path, options: BuildOptions) -> None:
    """A build replaces the whole output folder: refuse, before loading anything, a folder holding
    someone else's files (unless ``force``) or, under ``only``, a site whose other corpora would vanish."""
    entries = sorted(p.name for p in out_dir.iterdir()) if out_dir.is_dir() else []
    if not entries:
        return
    manifest = _site_manifest(out_dir)
    if manifest is None:
        if options.force:
            return
        shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
        raise OutputFolderError(
            f"--out {options.out_dir} is not empty and is not a sitegen site (it holds {shown}); "
            "choose a new or empty folder, or pass --force to replace it"
        )
    if options.only:
        select_corpora(options.corpora_dir, options.only)  # an unknown name is the clearer error
    held = manifest.get("corpora")
    if not isinstance(held, list):
        held = [p.name for p in (out_dir / EVIDENCE_DIR).iterdir() if p.is_dir()]
    others = sorted({str(name) for name in held} - set(options.only)) if options.only else []
    if others:
        raise OutputFolderError(
            f"--only {', '.join(sorted(set(options.only)))} would remove {', '.join(others)} from the site at "
            f"{options.out_dir} (a build replaces the whole folder); build every corpus, or choose another --out"
        )


def remove_stale_staging(out_dir: Path) -> None:
    """Staging folders a killed build left beside the output; ours to remove, as this build holds the lock."""
    prefix = f".{out_dir.name}.building-"
    for path in sorted(out_dir.parent.iterdir()):
        if path.name.startswith(prefix) and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)


def published_postgres_rows(out_dir: Path, corpora: Sequence[str], needs_pg: Set[str]) -> dict[str, list[str]]:
    """Rows of the rankers ``needs_pg`` names (this build's that need PostgreSQL) that the site at ``out_dir``
    publishes, by corpus: a PostgreSQL failure would make them vanish from the report."""
    if not needs_pg or _site_manifest(out_dir) is None:
        return {}
    published: dict[str, list[str]] = {}
    for name in corpora:
        try:
            summary = json.loads((out_dir / CorpusFiles(name).summary).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        listed = summary.get("rankers") if isinstance(summary, dict) else None
        rows = [r for r in listed if isinstance(r, str) and r in needs_pg] if isinstance(listed, list) else []
        if rows:
            published[name] = rows
    return published


def rankers_run(site: Path, corpora: Sequence[str]) -> tuple[str, ...]:
    """The rankers that produced a run in at least one corpus (each corpus.json lists its own), in first-seen
    order: the count a build reports, not the rankers asked for (a fusion of a filtered corpus, say, may not
    apply)."""
    ran: dict[str, None] = {}
    for name in corpora:
        ran.update(dict.fromkeys(CorpusReader(SiteFolder(site), name).summary().rankers))
    return tuple(ran)
