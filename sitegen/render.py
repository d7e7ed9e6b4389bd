"""Render the HTML pages from the evidence bundle alone.

This module never imports a ranker or a metric: every number it shows is read
from a JSON file under ``evidence/`` and formatted, nothing is computed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from sitegen.evidence import EVIDENCE_DIR

__all__ = ["HEADLINE_METRICS", "TEMPLATES_DIR", "format_score", "render_site"]

_PACKAGED_TEMPLATES = Path(__file__).resolve().parent / "templates"
# An installed wheel carries the templates inside the package; a source checkout keeps them at the top.
TEMPLATES_DIR = (
    _PACKAGED_TEMPLATES if _PACKAGED_TEMPLATES.is_dir() else Path(__file__).resolve().parent.parent / "templates"
)
HEADLINE_METRICS = ("hit@1", "hit@5", "mrr@10", "ndcg@10")


def format_score(value: float) -> str:
    """Presentation rounding only; the evidence keeps full precision."""
    return f"{value:.3f}"


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES_DIR),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["score"] = format_score
    return env


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def render_site(site_dir: Path) -> list[Path]:
    """Write ``index.html`` and ``.nojekyll`` from ``site_dir/evidence``; return the pages written."""
    evidence = site_dir / EVIDENCE_DIR
    manifest = _read_json(evidence / "manifest.json")
    cards = []
    for name in manifest["corpora"]:
        summary = _read_json(evidence / name / "corpus.json")
        metrics = _read_json(evidence / name / "metrics.json")
        rows = [{"ranker": r, "values": metrics[r]["overall"]} for r in summary["rankers"]]
        cards.append(
            {
                "name": name,
                "summary": summary,
                "rows": rows,
                "metrics_href": f"{EVIDENCE_DIR}/{name}/metrics.json",
                "runs_href": f"{EVIDENCE_DIR}/{name}/runs/",
            }
        )
    env = _environment()
    page = env.get_template("index.html").render(
        cards=cards, headline=HEADLINE_METRICS, manifest=manifest, manifest_href=f"{EVIDENCE_DIR}/manifest.json"
    )
    index = site_dir / "index.html"
    index.write_text(page, encoding="utf-8")
    (site_dir / ".nojekyll").write_bytes(b"")
    return [index]
