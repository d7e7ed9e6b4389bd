"""A corpus's own rerank stages, from ``sitegen.json``: ``"reranks": [{"name", "first_stage", "candidates",
"scorer"}]``::

    "reranks": [
      {"name": "rerank-dense-top20", "first_stage": "rrf-dense-bm25", "candidates": 20,
       "scorer": {"kind": "bi-encoder", "embedding": "dense"}},
      {"name": "rerank-minilm-ce", "first_stage": "bm25", "candidates": 50,
       "scorer": {"kind": "cross-encoder", "model": "cross-encoder/ms-marco-MiniLM-L-6-v2", "max_length": 256}},
      {"name": "rerank-mine", "first_stage": "bm25", "candidates": 20,
       "scorer": {"kind": "hook", "hook": "my_project.rerank:score"}}
    ]

``first_stage`` is any ranker or run of the build for the corpus (a fusion, a filtered twin, an external run,
an earlier rerank); ``candidates`` (N, default 50) is how many of its first hits are scored again. The scorer's
``kind`` is read here, once, into the scorer class that carries it (:mod:`sitegen.rankers.rerank`); nothing
downstream looks at the word. Whether the first stage exists is checked by the build.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sitegen.rankers.rerank import BiEncoderScorer, CrossEncoderScorer, HookScorer, Scorer

__all__ = ["DEFAULT_CANDIDATES", "RerankConfig", "RerankSettingsError", "parse_reranks"]

DEFAULT_CANDIDATES = 50
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_KEYS = {"name", "first_stage", "candidates", "scorer"}
_HOOK = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


class RerankSettingsError(ValueError):
    """A ``"reranks"`` entry that cannot be used; the message names the entry."""


@dataclass(frozen=True)
class RerankConfig:
    name: str
    first_stage: str
    candidates: int
    scorer: Scorer


def _scorer(where: str, raw: Any) -> Scorer:
    if not isinstance(raw, dict) or not isinstance(raw.get("kind"), str):
        raise RerankSettingsError(f'{where}: scorer must be an object with a "kind": bi-encoder, cross-encoder or hook')
    kind, rest = raw["kind"], {k: v for k, v in raw.items() if k != "kind"}
    if kind == "bi-encoder":
        if set(rest) - {"embedding"} or not isinstance(rest.get("embedding", "dense"), str):
            raise RerankSettingsError(f'{where}: a bi-encoder scorer takes only "embedding" (a dense ranker name)')
        return BiEncoderScorer(rest.get("embedding", "dense"))
    if kind == "cross-encoder":
        model, length, batch = rest.get("model"), rest.get("max_length"), rest.get("batch_size", 32)
        if (
            set(rest) - {"model", "max_length", "batch_size"}
            or not (isinstance(model, str) and model.strip())
            or not (length is None or (type(length) is int and length > 0))
            or not (type(batch) is int and batch > 0)
        ):
            raise RerankSettingsError(
                f'{where}: a cross-encoder scorer needs "model" (hub id or folder), may have positive integers '
                '"max_length" and "batch_size"'
            )
        return CrossEncoderScorer(model, batch, length)
    if kind == "hook":
        hook = rest.get("hook")
        if set(rest) != {"hook"} or not (isinstance(hook, str) and _HOOK.fullmatch(hook)):
            raise RerankSettingsError(f'{where}: a hook scorer needs "hook": "module:callable"')
        return HookScorer(hook)
    raise RerankSettingsError(f"{where}: scorer kind {kind!r} is not bi-encoder, cross-encoder or hook")


def parse_reranks(raw: Any) -> tuple[RerankConfig, ...]:
    """Every entry of ``"reranks"``, checked for shape; raises :class:`RerankSettingsError`."""
    if not isinstance(raw, list):
        raise RerankSettingsError('"reranks" must be a list of {"name", "first_stage", "candidates", "scorer"} objects')
    found: list[RerankConfig] = []
    for number, entry in enumerate(raw, start=1):
        where = f'"reranks" entry {number}'
        if not isinstance(entry, dict) or not {"name", "first_stage", "scorer"} <= set(entry) or set(entry) - _KEYS:
            raise RerankSettingsError(f"{where}: needs name, first_stage and scorer, may have candidates")
        name, first = entry["name"], entry["first_stage"]
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise RerankSettingsError(f"{where}: name {name!r} must be lowercase letters, digits, '.', '_' or '-'")
        where = f'"reranks" entry {name}'
        if not isinstance(first, str) or not first or first == name:
            raise RerankSettingsError(f"{where}: first_stage must name another ranker or run")
        candidates = entry.get("candidates", DEFAULT_CANDIDATES)
        if type(candidates) is not int or candidates < 1:
            raise RerankSettingsError(f"{where}: candidates must be a positive integer, got {candidates!r}")
        if any(r.name == name for r in found):
            raise RerankSettingsError(f"{where}: the name is given twice")
        found.append(RerankConfig(name, first, candidates, _scorer(where, entry["scorer"])))
    return tuple(found)
