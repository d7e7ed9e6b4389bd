"""The settings a corpus's ``sitegen.json`` may hold, checked for shape when the corpus loads (each setting's
own parser says what it accepts); ``"reranks"`` are parsed by :mod:`sitegen.rankers.rerank_settings`, as they name
scorers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sitegen.embedding.models import ModelEntryError, parse_model_entries
from sitegen.errors import CorpusError
from sitegen.inputs.chunk_settings import ChunkingError, parse_chunking
from sitegen.inputs.fusion_settings import FusionSettingsError, parse_fusions
from sitegen.inputs.metric_settings import MetricSettingsError, parse_metric_settings

__all__ = ["PUBLISH_MODES", "check_settings"]

#: ``"publish"``: the report with every text, or without them (:mod:`sitegen.publish.redaction`).
PUBLISH_MODES = ("full", "redacted")


def check_settings(path: Path, text: str, config: dict[str, Any]) -> None:
    """Raise :class:`CorpusError` (file, and the setting's line where it can be found) for the first setting of
    ``config`` (parsed from ``text``, the file ``path``) that is unknown or malformed."""
    known = (
        "ablation",
        "chunking",
        "filters",
        "fusions",
        "metrics",
        "models",
        "packing",
        "publish",
        "reranks",
        "significance",
    )
    unknown = sorted(set(config) - set(known))
    if unknown:
        raise CorpusError(path, f"unknown setting(s) {', '.join(unknown)}; known: {', '.join(known)}")
    if config.get("publish", PUBLISH_MODES[0]) not in PUBLISH_MODES:
        line = next((n for n, row in enumerate(text.splitlines(), 1) if '"publish"' in row), None)
        modes = " or ".join(f'"{m}"' for m in PUBLISH_MODES)
        raise CorpusError(path, f'"publish" must be {modes}, got {config["publish"]!r}', line)
    try:
        parse_metric_settings(config.get("metrics", {}))
    except MetricSettingsError as exc:
        line = next((n for n, r in enumerate(text.splitlines(), 1) if '"metrics"' in r), None)
        raise CorpusError(path, str(exc), line) from None
    significance = config.get("significance", {})
    if (
        not isinstance(significance, dict)
        or set(significance) - {"correction"}
        or significance.get("correction", "holm") not in ("holm", "bh")
    ):
        line = next((n for n, row in enumerate(text.splitlines(), 1) if '"significance"' in row), None)
        raise CorpusError(
            path, '"significance" must be {"correction": "holm"} (Holm-Bonferroni) or {"correction": "bh"}', line
        )
    if "chunking" in config:
        try:
            parse_chunking(config["chunking"])
        except ChunkingError as exc:
            raise CorpusError(path, str(exc)) from None
    settings = (("fusions", parse_fusions, FusionSettingsError), ("models", parse_model_entries, ModelEntryError))
    for key, parse, error in settings:
        try:
            if key in config:
                parse(config[key])
        except error as exc:
            line = next((n for n, row in enumerate(text.splitlines(), 1) if f'"{key}"' in row), None)
            raise CorpusError(path, str(exc), line) from None
    # "reranks" name scorers, which are rankers' business: sitegen.rankers.rerank_settings parses them (the build
    # and `sitegen validate` call it), so that this layer never imports a ranker.
    packing = config.get("packing", {})
    budgets = packing.get("budgets", []) if isinstance(packing, dict) else None
    if (
        not isinstance(packing, dict)
        or set(packing) - {"budgets"}
        or not isinstance(budgets, list)
        or not all(type(b) is int and b >= 0 for b in budgets)
    ):
        raise CorpusError(path, '"packing" must be {"budgets": [non-negative integers]} (characters)')
    steps = config.get("ablation", [])
    if not isinstance(steps, list) or not all(
        isinstance(s, dict) and set(s) == {"ranker", "adds"} and all(isinstance(v, str) and v for v in s.values())
        for s in steps
    ):
        raise CorpusError(path, '"ablation" must be a list of {"ranker": NAME, "adds": TEXT} objects')
