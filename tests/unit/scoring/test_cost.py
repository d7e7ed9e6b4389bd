"""Cost: the sizes cost.json states, a safetensors header's parameter count, the Pareto frontier."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

from sitegen import audit
from sitegen.publish.cost_view import pareto_frontier
from sitegen.rankers.base import Contract, Family, Run
from sitegen.rankers.bm25 import build_bm25_index
from sitegen.rankers.tokenize import tokenize
from sitegen.scoring.cost import cost_report, safetensors_parameters


def test_the_parameter_count_is_read_from_the_safetensors_header_alone(tmp_path: Path) -> None:
    header = {
        "a": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]},
        "b": {"dtype": "F32", "shape": [5]},
        "__metadata__": {"format": "pt"},
    }
    raw = json.dumps(header).encode()
    (tmp_path / "m.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    assert safetensors_parameters(tmp_path / "m.safetensors") == 17


def test_bm25_postings_bytes_agree_with_the_audits_count_from_tokens() -> None:
    texts = ["the cat sat", "the cat the cat", "", "dogs and cats", "sat sat sat"]
    index = build_bm25_index([tokenize(t) for t in texts])
    # 6 distinct words (the, cat, sat, dogs, and, cats), 9 (word, passage) pairs: (6 + 1) x 8 + 9 x (4 + 8)
    assert index.postings_bytes == 7 * 8 + 9 * 12
    assert audit.bm25_postings_bytes(audit.words_of(texts)) == 7 * 8 + 9 * 12


def _run(name: str, family: Family, components: tuple[str, ...] = ()) -> Run:
    return Run(name, Contract(family, "x", components=components), {}, {})


def test_a_fusion_counts_each_index_it_reads_once() -> None:
    runs = {
        "bm25": _run("bm25", Family.LEXICAL),
        "dense": _run("dense", Family.DENSE),
        "rrf": _run("rrf", Family.FUSION, ("dense", "bm25")),
        "rerank": _run("rerank", Family.RERANK, ("rrf",)),
    }
    own = {"bm25": ["postings:plain"], "dense": ["vectors:m"], "rerank": ["vectors:m"]}
    models = {"m": {"parameters": 10, "weights_bytes": 40, "index": "vectors:m"}}
    report = cost_report(runs, 3, own, {"postings:plain": 100, "vectors:m": 1000}, models)
    rerank = report["rankers"]["rerank"]
    assert rerank["reads"] == ["rrf", "dense", "bm25"]
    assert rerank["indexes"] == ["vectors:m", "postings:plain"] and rerank["index_bytes"] == 1100
    assert rerank["models"] == ["m"] and report["rankers"]["bm25"]["models"] == []


def test_the_pareto_frontier_keeps_only_points_nothing_beats_on_both() -> None:
    points = {"fast": (1.0, 0.5), "slow-good": (10.0, 0.8), "dominated": (5.0, 0.4), "tie": (1.0, 0.5), "mid": (3, 0.6)}
    assert pareto_frontier(points) == ["fast", "tie", "mid", "slow-good"]
    assert "dominated" not in pareto_frontier(points)
    assert pareto_frontier({}) == []


def test_the_audits_exact_dot_is_bit_identical_to_sitegens() -> None:
    from sitegen.rankers.dense import fixed_order_dot

    rng = np.random.default_rng(7)
    for dim in (1, 3, 384, 768):
        docs = rng.standard_normal((5, dim)).astype(np.float32)
        query = rng.standard_normal(dim).astype(np.float32)
        assert np.array_equal(audit.exact_dot(docs, query), fixed_order_dot(docs, query))
