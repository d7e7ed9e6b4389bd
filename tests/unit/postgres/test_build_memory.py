"""The HNSW build's memory rule: pgvector keeps the graph in memory only while it fits in
maintenance_work_mem, and inserts row by row into the on-disk index once it does not."""

from __future__ import annotations

import pytest

from sitegen.postgres.index import HNSW_BUILD_FLOOR_MB, HNSW_M, hnsw_build_memory_mb


@pytest.mark.parametrize("rows", [1, 1_000, 50_000])
def test_small_tables_keep_the_servers_usual_build_memory(rows: int) -> None:
    assert hnsw_build_memory_mb(rows, 384) == HNSW_BUILD_FLOOR_MB


@pytest.mark.parametrize(("rows", "dimensions"), [(1_000_000, 384), (300_000, 768), (2_000_000, 64)])
def test_large_tables_get_room_for_every_vector_and_its_layer_zero_neighbours(rows: int, dimensions: int) -> None:
    # Each element holds its vector (4 bytes a dimension plus a header) and 2m neighbours at
    # layer 0, each a pointer and a distance; the allowance must cover all of them.
    graph_bytes = rows * (4 * dimensions + 8 + 2 * HNSW_M * (8 + 4))
    allowance = hnsw_build_memory_mb(rows, dimensions) * (1 << 20)
    assert allowance >= graph_bytes
    assert allowance < 3 * graph_bytes  # not wasteful: a few GB at a million rows, not tens


def test_the_allowance_grows_with_rows_and_dimensions() -> None:
    assert hnsw_build_memory_mb(2_000_000, 384) > hnsw_build_memory_mb(1_000_000, 384)
    assert hnsw_build_memory_mb(1_000_000, 768) > hnsw_build_memory_mb(1_000_000, 384)
