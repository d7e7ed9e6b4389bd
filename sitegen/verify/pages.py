"""Check a site's pages against a re-render of its evidence (``sitegen audit --pages``).

The standalone audit proves the evidence bundle; this check proves the pages shown beside it.
The site's files that no render writes (``evidence/``, ``timings/``, ``audit.json``,
``audit.py``, ``pages.json``), which hold everything :func:`sitegen.publish.pages.render_site`
reads, are copied into a fresh temporary folder; the pages are rendered there with this
sitegen's templates, and every file the render writes is compared byte for byte with the
site's file of the same path. Nothing is written into the site.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from jinja2 import TemplateError

from sitegen.errors import BundleError
from sitegen.publish.layout import AUDIT_REPORT, AUDIT_SCRIPT, EVIDENCE_DIR, PAGE_LISTING, TIMINGS_DIR, VERIFICATION
from sitegen.publish.pages import render_site

__all__ = ["EXCERPT_CHARS", "PageDifference", "PagesComparison", "compare_pages"]

EXCERPT_CHARS = 120
SHOWN = 5  # paths of each kind listed on failure
# Inputs of the render and files the site carries that no render writes and that are not pages.
_INPUT_DIRS = frozenset({EVIDENCE_DIR, TIMINGS_DIR})
_NOT_PAGES = frozenset({AUDIT_SCRIPT, AUDIT_REPORT, PAGE_LISTING, VERIFICATION})


@dataclass(frozen=True)
class PageDifference:
    """A site file that differs from the re-render: the first differing line (1-based) and both lines."""

    path: str
    line: int
    site: str
    rendered: str


@dataclass(frozen=True)
class PagesComparison:
    compared: int
    identical: int
    differing: tuple[PageDifference, ...]
    only_in_site: tuple[str, ...]
    only_in_render: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not (self.differing or self.only_in_site or self.only_in_render)

    @property
    def differing_paths(self) -> tuple[str, ...]:
        return tuple(d.path for d in self.differing)

    def summary(self) -> str:
        """One line: what differs from the re-render, in counts."""
        parts = [f"{len(self.differing)} of {self.compared} files differ from a re-render from the evidence"]
        if self.only_in_site:
            parts.append(f"{len(self.only_in_site)} only in the site")
        if self.only_in_render:
            parts.append(f"{len(self.only_in_render)} rendered but missing from the site")
        return ", ".join(parts)

    def details(self, shown: int = SHOWN) -> list[str]:
        """The first ``shown`` paths of each kind, a differing file with its first differing line."""
        lines = []
        for d in self.differing[:shown]:
            lines += [f"differs: {d.path} line {d.line}", f"  site:     {d.site}", f"  rendered: {d.rendered}"]
        lines += _more(len(self.differing), shown, "differing")
        for label, paths in (("only in the site", self.only_in_site), ("missing from the site", self.only_in_render)):
            lines += [f"{label}: {path}" for path in paths[:shown]] + _more(len(paths), shown, label)
        return lines


def _more(count: int, shown: int, label: str) -> list[str]:
    return [f"... and {count - shown} more {label}"] if count > shown else []


def _is_output(relative: str) -> bool:
    """True for a path a render may write: anything but the render's inputs and the site's non-page files."""
    return relative.split("/", 1)[0] not in _INPUT_DIRS and relative not in _NOT_PAGES


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def _excerpt(line: str, column: int) -> str:
    """About EXCERPT_CHARS characters of ``line`` around ``column``, where the two lines first differ."""
    start = max(0, column - EXCERPT_CHARS // 3) if len(line) > EXCERPT_CHARS else 0
    text = line[start : start + EXCERPT_CHARS]
    head = "..." if start else ""
    tail = "..." if start + EXCERPT_CHARS < len(line) else ""
    return head + text.strip() + tail


def _first_difference(path: str, site: bytes, rendered: bytes) -> PageDifference:
    ours, theirs = site.split(b"\n"), rendered.split(b"\n")
    common = min(len(ours), len(theirs))
    number = next((i for i in range(common) if ours[i] != theirs[i]), common) + 1
    end = "(end of file)"
    a_line = ours[number - 1].decode("utf-8", "replace") if number <= len(ours) else None
    b_line = theirs[number - 1].decode("utf-8", "replace") if number <= len(theirs) else None
    column = 0
    if a_line is not None and b_line is not None:
        column = next((i for i, (x, y) in enumerate(zip(a_line, b_line, strict=False)) if x != y), 0)
        if column == 0 and a_line[: len(b_line)] == b_line[: len(a_line)]:
            column = min(len(a_line), len(b_line))
    return PageDifference(
        path,
        number,
        end if a_line is None else _excerpt(a_line, column),
        end if b_line is None else _excerpt(b_line, column),
    )


def _copy_inputs(site_dir: Path, target: Path) -> None:
    """Copy every file of the site that is not a render output: what render_site reads (the evidence
    tree, ``audit.json`` for the badge, ``audit.py`` for its sha256, ``timings/``, the verification record
    the Reproducibility page shows) and nothing it writes."""
    shutil.copytree(site_dir / EVIDENCE_DIR, target / EVIDENCE_DIR)
    for name in sorted(_NOT_PAGES):
        if (site_dir / name).is_file():
            shutil.copyfile(site_dir / name, target / name)
    if (site_dir / TIMINGS_DIR).is_dir():
        shutil.copytree(site_dir / TIMINGS_DIR, target / TIMINGS_DIR)


def compare_pages(site_dir: Path) -> PagesComparison:
    """Re-render ``site_dir``'s pages and plots from its evidence in a temporary folder and compare.

    Every file the render writes (pages, plots, ``.nojekyll``) is compared byte for byte with the
    site's file of the same path; a site file outside ``evidence/``, ``timings/``, ``audit.py``,
    ``audit.json``, ``pages.json`` and ``verification.json`` that the render does not write is listed as
    only in the site.
    Raises :class:`BundleError` when the evidence cannot be rendered at all.
    """
    with tempfile.TemporaryDirectory(prefix="sitegen-pages-") as scratch:
        fresh = Path(scratch) / "site"
        fresh.mkdir()
        _copy_inputs(site_dir, fresh)
        try:
            render_site(fresh)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError, TemplateError) as exc:
            raise BundleError(site_dir / EVIDENCE_DIR, f"cannot render pages from it: {exc!r}") from exc
        rendered = {p for p in _files(fresh) if _is_output(p)}
        carried = {p for p in _files(site_dir) if _is_output(p)}
        differing = []
        identical = 0
        for path in sorted(rendered & carried):
            ours, theirs = (site_dir / path).read_bytes(), (fresh / path).read_bytes()
            if ours == theirs:
                identical += 1
            else:
                differing.append(_first_difference(path, ours, theirs))
    return PagesComparison(
        compared=len(rendered & carried),
        identical=identical,
        differing=tuple(differing),
        only_in_site=tuple(sorted(carried - rendered)),
        only_in_render=tuple(sorted(rendered - carried)),
    )
