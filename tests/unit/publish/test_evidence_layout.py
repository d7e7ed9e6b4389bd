"""The line layout of the evidence JSON files (canonical_json): the same values, few bytes, one record a line."""

from __future__ import annotations

import json
import random

import pytest

from sitegen.publish.evidence import LINE_WIDTH, _compact_tree, canonical_json


def _per_question(questions: int) -> dict:
    """A metrics.json-shaped value: a few rankers, each with a record of 25 floats per question."""
    rng = random.Random(7)
    names = [f"{m}@{k}" for m in ("hit", "recall", "precision", "mrr", "ndcg") for k in (1, 3, 5, 10, 20)]
    return {
        ranker: {
            "overall": {n: rng.random() for n in names},
            "per_query": {f"q{i:05d}": {n: rng.random() for n in names} for i in range(questions)},
        }
        for ranker in ("bm25", "dense")
    }


def _random_value(rng: random.Random, depth: int) -> object:
    pick = rng.randrange(7 if depth < 4 else 4)
    if pick == 0:
        return rng.random() * 10 ** rng.randrange(-5, 5)
    if pick == 1:
        return rng.randrange(-(10**6), 10**6)
    if pick == 2:
        return rng.choice(["", 'é "q" \\ \n', "x" * rng.randrange(0, 3 * LINE_WIDTH), None, True])
    if pick == 3:
        return [] if rng.random() < 0.2 else [rng.random() for _ in range(rng.randrange(0, 400))]
    if pick in (4, 5):
        return {f"k{i}/~{rng.randrange(9)}": _random_value(rng, depth + 1) for i in range(rng.randrange(0, 12))}
    return [_random_value(rng, depth + 1) for _ in range(rng.randrange(0, 12))]


@pytest.mark.parametrize("seed", range(40))
def test_the_layout_reads_back_as_the_same_value_in_canonical_form(seed: int) -> None:
    value = {"root": _random_value(random.Random(seed), 0), "schema_version": 1}
    data = canonical_json(value)
    assert json.loads(data) == value
    assert data.endswith(b"\n") and not data.endswith(b"\n\n")
    assert canonical_json(json.loads(data)) == data  # a fixed point: reading and writing again changes no byte


@pytest.mark.parametrize("seed", range(40))
def test_the_compact_form_joined_from_its_parts_is_json_dumps_own(seed: int) -> None:
    value = {"root": _random_value(random.Random(100 + seed), 0), "é\n": [{"b": 1, "a": [2.5, None]}]}
    kept: dict[int, str] = {}
    assert _compact_tree(value, kept) == json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert kept[id(value["é\n"][0])] == '{"a":[2.5,null],"b":1}'


def test_a_line_is_longer_than_the_width_only_when_it_holds_one_long_scalar() -> None:
    value = {"a": {"long": "y" * (2 * LINE_WIDTH), "numbers": list(range(5000))}, "b": _per_question(50)}
    for line in canonical_json(value).decode().splitlines():
        if len(line) > LINE_WIDTH:
            assert line.strip().startswith('"long": "yyy')


def test_each_question_record_is_one_line_and_the_file_costs_little_over_compact_json() -> None:
    value = _per_question(2000)
    data = canonical_json(value)
    compact = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    indented = json.dumps(value, sort_keys=True, indent=2).encode()
    lines = {line.strip().removesuffix(",") for line in data.decode().splitlines()}
    for ranker in value:
        for qid, record in value[ranker]["per_query"].items():
            assert f"{json.dumps(qid)}: {json.dumps(record, sort_keys=True, separators=(',', ':'))}" in lines
    assert len(data) <= 1.02 * len(compact) < 0.8 * len(indented)


def test_the_top_level_object_has_one_key_per_line_even_when_small() -> None:
    assert canonical_json({"b": [1, 2], "a": {"x": 1}}) == b'{\n  "a": {"x":1},\n  "b": [1,2]\n}\n'
    assert canonical_json({}) == b"{}\n"
