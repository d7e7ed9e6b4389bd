"""What changed in a corpus's stored vectors since the baseline: the model, its configuration, and the vectors
themselves, for each folder of vectors (``embeddings/`` for ``dense``, ``embeddings/<entry>/`` for a model entry).

A rebuild with another model, another configuration (a prefix, a maximum length) or other vectors moves
rankings without any input file changing, so the Changes page names it: which model folder, which rankers rank
by it (directly or through a fusion), how many vectors were compared, how many changed, were added or removed,
and the largest component difference among those that changed.

``baseline.json`` keeps, per folder, the model's identity and each row's vector sha256 (:func:`vector_record`),
so the standalone audit recomputes every count from the copy and this bundle's vectors. The largest difference
needs the baseline's vectors themselves, which the bundle does not copy: the build measures it, and the page
says the audit does not recompute it. Each entry of ``changes.json``'s ``"vectors"``::

    {"folder", "rankers": [r], "before": {"model", "weights_sha256", "config_sha256"} | null, "now": ... | null,
     "model_changed": bool, "compared": n, "changed": n, "added": n, "removed": n, "max_abs_diff": x | null}
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from sitegen.publish.layout import CorpusFiles, corpus_file, vector_index_files
from sitegen.publish.reader import Source

__all__ = ["VectorSet", "read_vector_sets", "vector_changes", "vector_record", "vector_row_sha256"]

_IDENTITY = ("model", "weights_sha256", "config_sha256")


@dataclass(frozen=True)
class VectorSet:
    """One folder of a corpus's vectors: the model that made them, and each row by (``passages`` | ``queries``, id)."""

    identity: Mapping[str, Any]
    rows: Mapping[tuple[str, str], np.ndarray]


def vector_row_sha256(row: np.ndarray) -> str:
    """sha256 of one vector's little-endian float32 bytes: what ``baseline.json`` keeps of each row."""
    return hashlib.sha256(np.asarray(row, dtype="<f4").tobytes()).hexdigest()


def read_vector_sets(source: Source, files: Sequence[str], corpus: str) -> dict[str, VectorSet]:
    """Every folder of vectors ``corpus`` holds among ``files`` (site paths), by folder (``embeddings``,
    ``embeddings/<entry>``); the chunking sweep's vectors are left out, and so are vectors held by reference."""
    import json

    found: dict[str, VectorSet] = {}
    for rel in sorted(files):
        place = corpus_file(rel)
        matrices = vector_index_files(place[1]) if place is not None and place[0] == corpus else None
        if matrices is None or "queries" not in dict(matrices):
            continue  # not vectors, or the chunking sweep's (passages only: chunks, not the corpus's texts)
        index = json.loads(source.path(rel).read_text(encoding="utf-8"))
        rows: dict[tuple[str, str], np.ndarray] = {}
        for key, matrix_name in matrices:
            matrix_rel = CorpusFiles(corpus).at(matrix_name)
            if not source.has(matrix_rel):
                continue
            matrix = np.load(io.BytesIO(source.path(matrix_rel).read_bytes()), allow_pickle=False)
            rows.update(((key, str(i)), row) for i, row in zip(index.get(key) or [], matrix, strict=False))
        folder = str(PurePosixPath(place[1]).parent)
        found[folder] = VectorSet({k: index.get(k) for k in _IDENTITY}, rows)
    return found


def vector_record(sets: Mapping[str, VectorSet]) -> dict[str, Any]:
    """``baseline.json``'s ``"vectors"``: per folder, the model's identity and each row's vector sha256."""
    record: dict[str, Any] = {}
    for folder, found in sorted(sets.items()):
        rows: dict[str, dict[str, str]] = {"passages": {}, "queries": {}}
        for (key, row_id), row in found.rows.items():
            rows.setdefault(key, {})[row_id] = vector_row_sha256(row)
        record[folder] = {**dict(found.identity), "rows": rows}
    return record


def vector_changes(
    before: Mapping[str, Any],
    now: Mapping[str, VectorSet],
    rankers: Mapping[str, Sequence[str]],
    baseline_rows: Mapping[str, VectorSet] | None = None,
) -> list[dict[str, Any]]:
    """``changes.json``'s ``"vectors"``: for every folder in the baseline record (``before``, as
    :func:`vector_record` gives it) or this build (``now``), what changed. ``rankers``: the rankers of this
    corpus that rank by each folder's vectors; ``baseline_rows``: the baseline's vectors themselves, for the
    largest difference (None: not measured)."""
    entries = []
    for folder in sorted(set(before) | set(now)):
        old, new = before.get(folder), now.get(folder)
        old_rows = {(k, i): h for k, by_id in (old or {}).get("rows", {}).items() for i, h in by_id.items()}
        new_rows = new.rows if new is not None else {}
        shared = sorted(set(old_rows) & set(new_rows))
        changed = [key for key in shared if vector_row_sha256(new_rows[key]) != old_rows[key]]
        worst: float | None = None
        if changed and baseline_rows is not None and folder in baseline_rows:
            kept = baseline_rows[folder].rows
            worst = max(
                float(np.max(np.abs(new_rows[k].astype(np.float64) - kept[k].astype(np.float64)))) for k in changed
            )
        elif shared and not changed:
            worst = 0.0
        old_id = {k: old.get(k) for k in _IDENTITY} if old is not None else None
        new_id = dict(new.identity) if new is not None else None
        entries.append(
            {
                "folder": folder,
                "rankers": list(rankers.get(folder, [])),
                "before": old_id,
                "now": new_id,
                "model_changed": old_id != new_id,
                "compared": len(shared),
                "changed": len(changed),
                "added": len(set(new_rows) - set(old_rows)),
                "removed": len(set(old_rows) - set(new_rows)),
                "max_abs_diff": worst,
            }
        )
    return entries
