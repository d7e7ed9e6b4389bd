"""Render the whole site from its evidence bundle alone: the home, metrics, reproducibility and performance
pages here, each corpus's pages from their families (:mod:`.corpus`, :mod:`.question`, :mod:`.changes`).

Nothing here imports a ranker or a metric: every number a page shows is read from a JSON file under
``evidence/`` (:mod:`sitegen.publish.reader`) and formatted.
"""

from __future__ import annotations

from pathlib import Path

from sitegen.hashing import sha256_file
from sitegen.publish import layout
from sitegen.publish.bundle import REEMBED_TOLERANCE, load_json
from sitegen.publish.evidence import DEFAULT_TITLE, write_json
from sitegen.publish.pages.base import TEMPLATES_DIR, Page, Site, environment, url_for, with_sources
from sitegen.publish.pages.changes import changes_pages
from sitegen.publish.pages.corpus import corpus_pages
from sitegen.publish.pages.home import home_cards
from sitegen.publish.pages.question import question_pages
from sitegen.publish.pages.view import read_view
from sitegen.publish.timings import load_timing_files, performance_view
from sitegen.publish.verification import read_verification

__all__ = ["render_site", "write_page_listing"]


def render_site(site_dir: Path) -> list[Path]:
    """Write every page, plot, ``.nojekyll``, the stylesheet and the script from ``site_dir/evidence``; return the
    pages written."""
    manifest = with_sources(load_json(site_dir / layout.MANIFEST), layout.MANIFEST)
    audit_path = site_dir / layout.AUDIT_REPORT
    audit = load_json(audit_path) if audit_path.exists() else None
    site = Site(site_dir)
    corpora = [read_view(site_dir, name) for name in manifest["corpora"]]
    cards = home_cards(corpora, site)
    audit_script = site_dir / layout.AUDIT_SCRIPT
    pages = [
        Page(layout.INDEX_PAGE, "index.html", {"cards": cards}),
        Page(layout.METRICS_PAGE, "metrics.html", {}),
        Page(
            layout.REPRODUCIBILITY_PAGE,
            "reproducibility.html",
            {
                "corpora": corpora,
                # the policies are the same text in every corpus's trec_eval.json: shown once
                "trec_policies": next((c.trec_eval["policies"] for c in corpora if c.trec_eval), None),
                "manifest_sha256": sha256_file(site_dir / layout.MANIFEST),
                "audit_sha256": sha256_file(audit_script) if audit_script.is_file() else None,
                "reembed_tolerance": f"{REEMBED_TOLERANCE:g}",
                "verification": read_verification(site_dir / layout.VERIFICATION, site_dir),
            },
        ),
    ]
    timing_files = load_timing_files(site_dir / layout.TIMINGS_DIR)
    if timing_files:
        pages.append(Page(layout.PERFORMANCE_PAGE, "performance.html", performance_view(timing_files)))
    for c in corpora:
        pages.extend(corpus_pages(c, site))
        pages.extend(question_pages(c))
        pages.extend(changes_pages(c, site))
    env = environment()
    written = []
    for page in pages:
        html = env.get_template(page.template).render(
            {
                **page.context,
                "manifest": manifest,
                # title and description from sitegen.toml; a bundle written before they were recorded has neither
                "project": manifest.get("report") or {"title": DEFAULT_TITLE, "description": ""},
                "audit": audit,
                "url": url_for(page.path),
                "page_path": page.path,
                "has_performance": bool(timing_files),
            }
        )
        target = site.claim(page.path)
        target.write_text(html, encoding="utf-8")
        written.append(target)
    site.claim(layout.NO_JEKYLL).write_bytes(b"")
    for name in (layout.STYLESHEET, layout.SCRIPT):  # served beside the pages, listed and hashed like them
        site.claim(name).write_bytes((TEMPLATES_DIR / name).read_bytes())
    return written


def write_page_listing(site_dir: Path) -> None:
    """``pages.json``: every file the site serves outside ``evidence/`` (pages, plots, timings, audit.py)
    with its sha256 and size, and the manifest the pages were rendered from. The audit checks each page
    against it; audit.json and this file, which come after, are left out."""
    skip = {layout.AUDIT_REPORT, layout.PAGE_LISTING}
    files = {}
    for path in sorted(site_dir.rglob("*")):
        rel = path.relative_to(site_dir).as_posix()
        if path.is_file() and rel not in skip and not rel.startswith(f"{layout.EVIDENCE_DIR}/"):
            files[rel] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}
    listing = {
        "schema_version": 1,
        "manifest_sha256": sha256_file(site_dir / layout.MANIFEST),
        "files": files,
    }
    write_json(site_dir / layout.PAGE_LISTING, listing)
