"""What each ranker costs in bytes: its index and its model. Sizes are deterministic (the same inputs give the
same bytes on any machine), so they are evidence and the audit recomputes them; times are not, and live in the
benchmark's timing file (``sitegen.bench.cost``, ``bench/results-cost.json``).

An index is named by what it holds, so two rankers reading one index count it once:

- ``vectors:EMBEDDING``: the passages' stored vectors of one embedding model (named by its dense ranker),
  ``passages x dimensions x 4`` bytes (float32); question vectors are not an index. dense, pg-vector (whose
  PostgreSQL copy's page overhead is not counted) and a bi-encoder rerank read them;
- ``postings:RANKER``: a BM25 ranker's compressed-column postings, ``(terms + 1) x 8`` (starts) plus
  ``postings x (4 + 8)`` (passage indices, float64 weights), a posting being one (term, passage) pair; the
  search accelerators (per-term maxima, dense term-frequency rows) are left out.

A fusion or a rerank adds the indexes of every ranker it reads. A model is the embedding model behind a
``vectors:`` index the build embedded with the packaged model: its parameter count (from the safetensors
header) and weights file size; vectors a corpus brought name no model here. A PostgreSQL table's or index's
size depends on the server's page layout and HNSW's random levels, so it is not evidence: ``sitegen bench-pg``
measures it.

``evidence/<corpus>/cost.json`` shape::

    {"schema_version": 1, "passages": n, "definitions": {...},
     "indexes": {key: bytes}, "models": {name: {"parameters", "weights_bytes", "index"}},
     "rankers": {ranker: {"own": [key], "reads": [ranker], "indexes": [key], "index_bytes": n,
                          "models": [name]}}}
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sitegen.rankers.base import Run

__all__ = ["COST_DEFINITIONS", "cost_report", "safetensors_parameters"]

COST_DEFINITIONS = {
    "vectors": "passages x dimensions x 4 (float32 passage vectors of one embedding model)",
    "postings": "(terms + 1) x 8 + postings x (4 + 8): BM25's starts, passage indices and float64 weights",
    "index_bytes": "the indexes the ranker reads, its own and its components', each counted once",
    "model": "parameters from the weights file's safetensors header; weights_bytes: that file's size",
}


def safetensors_parameters(path: Path) -> int:
    """The number of parameters a safetensors file holds, read from its JSON header alone."""
    with path.open("rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
    return sum(math.prod(t["shape"]) for name, t in header.items() if name != "__metadata__")


def cost_report(
    runs: Mapping[str, Run],
    passages: int,
    own: Mapping[str, Sequence[str]],
    indexes: Mapping[str, int],
    models: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """``cost.json`` for one corpus: ``own`` names each ranker's own indexes, ``indexes`` gives each index's bytes
    and ``models`` the model behind a ``vectors:`` index (both measured by the build:
    :mod:`sitegen.builder.cost`); every ranker a ranker reads is found through its contract."""

    def reads(name: str, seen: tuple[str, ...] = ()) -> list[str]:
        run = runs.get(name)
        if run is None or name in seen:
            return []
        found: list[str] = []
        for component in run.contract.components:
            found += [component, *reads(component, (*seen, name))]
        return list(dict.fromkeys(found))

    by_index = {m["index"]: name for name, m in models.items()}
    table = {}
    for name in runs:
        uses = reads(name)
        keys = list(dict.fromkeys(k for r in (name, *uses) for k in own.get(r, ())))
        table[name] = {
            "own": list(own.get(name, ())),
            "reads": uses,
            "indexes": keys,
            "index_bytes": sum(indexes[k] for k in keys),
            "models": [by_index[k] for k in keys if k in by_index],
        }
    return {
        "schema_version": 1,
        "passages": passages,
        "definitions": COST_DEFINITIONS,
        "indexes": dict(sorted(indexes.items())),
        "models": {name: dict(m) for name, m in sorted(models.items())},
        "rankers": table,
    }
