"""The home cards' picture of the rank groups: the same rows give the same bytes, each row prints its numbers in
the element the audit reads, every group's bracket is named by its letter, and a group's letter is read from the
letters of the rows that share it."""

from __future__ import annotations

import re

import pytest

from sitegen.publish.pages.home import _rank_groups
from sitegen.publish.plots import GroupRow, RankGroup, groups_svg

ROWS = [
    GroupRow("bm25", 0.554, 0.434, 0.671, True, "0.554 [0.434, 0.671] a"),
    GroupRow("dense \u2261 pg-vector", 0.502, 0.388, 0.616, True, "0.502 [0.388, 0.616] ab"),
    GroupRow("pg-tsvector", 0.412, None, None, False, "0.412 b"),
]
GROUPS = [RankGroup("a", (0, 1)), RankGroup("b", (1, 2))]


def test_the_rank_group_plot_is_the_same_bytes_for_the_same_rows_and_prints_each_rows_numbers() -> None:
    first = groups_svg(ROWS, GROUPS, "tiny: ndcg@10", "ndcg@10")
    assert first == groups_svg(ROWS, GROUPS, "tiny: ndcg@10", "ndcg@10")
    svg = first.decode("utf-8")
    labels = re.findall(r'<g id="row-(\d+)">\s*<text[^>]*>([^<]*)</text>', svg)
    assert labels == [(str(n), row.label) for n, row in enumerate(ROWS, start=1)]
    assert ">a</text>" in svg and ">b</text>" in svg
    assert groups_svg(ROWS[:2], GROUPS[:1], "tiny: ndcg@10", "ndcg@10") != first


def test_a_groups_letter_is_read_from_the_letters_of_its_rows() -> None:
    table = {
        "rows": [{"letters": "a"}, {"letters": "ab"}, {"letters": "bc"}, {"letters": "c"}],
        "groups": [[0, 1], [1, 2], [2, 3]],
    }
    assert _rank_groups(table) == [RankGroup("a", (0, 1)), RankGroup("b", (1, 2)), RankGroup("c", (2, 3))]
    with pytest.raises(ValueError, match="do not name its groups"):
        _rank_groups({**table, "rows": [{"letters": "a"}, {"letters": "a"}, {"letters": "bc"}, {"letters": "c"}]})
