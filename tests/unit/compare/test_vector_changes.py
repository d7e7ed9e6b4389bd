"""changes.json's "vectors": what changed in each folder of stored vectors, from the baseline's row hashes."""

from __future__ import annotations

import numpy as np

from sitegen.compare.vector_changes import VectorSet, vector_changes, vector_record

_ID = {"model": "m", "weights_sha256": "w", "config_sha256": "c"}


def _set(rows: dict[tuple[str, str], list[float]], identity: dict = _ID) -> VectorSet:
    return VectorSet(identity, {k: np.asarray(v, dtype=np.float32) for k, v in rows.items()})


def test_unchanged_vectors_are_counted_and_moved_by_nothing() -> None:
    same = _set({("passages", "d1"): [1.0, 0.0], ("queries", "q1"): [0.0, 1.0]})
    (entry,) = vector_changes(vector_record({"embeddings": same}), {"embeddings": same}, {"embeddings": ["dense"]})
    assert entry["model_changed"] is False
    assert (entry["compared"], entry["changed"], entry["added"], entry["removed"]) == (2, 0, 0, 0)
    assert entry["max_abs_diff"] == 0.0 and entry["rankers"] == ["dense"]


def test_changed_added_and_removed_vectors_and_another_configuration_are_named() -> None:
    before = _set({("passages", "d1"): [1.0, 0.0], ("passages", "d2"): [0.0, 1.0]})
    after = _set({("passages", "d1"): [0.6, 0.8], ("passages", "d3"): [1.0, 0.0]}, {**_ID, "config_sha256": "c2"})
    record = vector_record({"embeddings/dense-x": before})
    (entry,) = vector_changes(record, {"embeddings/dense-x": after}, {}, {"embeddings/dense-x": before})
    assert entry["model_changed"] is True and entry["now"]["config_sha256"] == "c2"
    assert (entry["compared"], entry["changed"], entry["added"], entry["removed"]) == (1, 1, 1, 1)
    assert abs(entry["max_abs_diff"] - 0.8) < 1e-6


def test_a_folder_only_one_build_has_is_all_added_or_all_removed() -> None:
    only_new = vector_changes({}, {"embeddings/dense-y": _set({("queries", "q"): [1.0]})}, {})
    assert only_new[0]["before"] is None and only_new[0]["added"] == 1 and only_new[0]["max_abs_diff"] is None
    gone = vector_changes(vector_record({"embeddings": _set({("queries", "q"): [1.0]})}), {}, {})
    assert gone[0]["now"] is None and gone[0]["removed"] == 1 and gone[0]["model_changed"] is True
