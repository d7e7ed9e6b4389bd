"""What a finished site may weigh: GitHub Pages serves at most 1 GB a site, and git refuses a file over 100 MB.

A build measures its staging folder before swapping it in (:func:`site_size`, :func:`oversize`). Over either
limit it fails with the numbers, and the site already in ``--out`` stays as it was, or, with ``--allow-oversize``,
it says the same as a warning and publishes. A large corpus keeps its site small by holding its inputs by
reference (``--reference``, ``--reference-above``: sitegen.publish.redaction) and its large runs compressed
(sitegen.publish.evidence.write_stored).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["FILE_LIMIT", "SITE_LIMIT", "SiteLimits", "SiteSize", "oversize", "site_size"]

#: GitHub Pages: "Published GitHub Pages sites may be no larger than 1 GB."
SITE_LIMIT = 1_000_000_000
#: git (GitHub) refuses a file larger than 100 MiB; 100 MB is the round number below it.
FILE_LIMIT = 100_000_000


@dataclass(frozen=True)
class SiteLimits:
    """The largest site and file a build publishes; ``warn_only``: over them, warn and publish all the same."""

    site_bytes: int = SITE_LIMIT
    file_bytes: int = FILE_LIMIT
    warn_only: bool = False


@dataclass(frozen=True)
class SiteSize:
    """A site folder's bytes, its file count and its largest files (path relative to the site, bytes)."""

    total: int
    files: int
    largest: tuple[tuple[str, int], ...]


def site_size(folder: Path, limits: SiteLimits = SiteLimits()) -> SiteSize:
    """Every file under ``folder``: the total, and each file over ``limits.file_bytes`` (else the largest one),
    largest first, ties by path."""
    sizes = sorted(
        ((p.relative_to(folder).as_posix(), p.stat().st_size) for p in folder.rglob("*") if p.is_file()),
        key=lambda item: (-item[1], item[0]),
    )
    over = tuple(item for item in sizes if item[1] > limits.file_bytes)
    return SiteSize(sum(size for _, size in sizes), len(sizes), over or tuple(sizes[:1]))


def _mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB ({size:,} bytes)"


def oversize(size: SiteSize, limits: SiteLimits = SiteLimits()) -> list[str]:
    """One line per limit the site is over (none when it fits): the numbers and what to do about it."""
    problems = []
    if size.total > limits.site_bytes:
        problems.append(
            f"the site is {_mb(size.total)} in {size.files:,} files, over GitHub Pages' {_mb(limits.site_bytes)}"
        )
    over = [(path, n) for path, n in size.largest if n > limits.file_bytes]
    if over:
        shown = ", ".join(f"{path} {_mb(n)}" for path, n in over[:5])
        more = f" and {len(over) - 5} more" if len(over) > 5 else ""
        problems.append(f"{len(over)} file(s) over git's {_mb(limits.file_bytes)} limit: {shown}{more}")
    if problems:
        problems.append(
            "hold large inputs by reference (--reference NAME, or a lower --reference-above BYTES), "
            "build fewer corpora or rankers (--only, --ranker), or pass --allow-oversize to publish it anyway"
        )
    return problems
