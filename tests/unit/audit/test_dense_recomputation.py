"""The dense checks recompute the ranking a run stores whatever BLAS the auditing machine has: the float32
products only narrow the candidates, and the candidates are scored as the build scores them."""

from __future__ import annotations

import numpy as np

from sitegen import audit
from sitegen.rankers.dense import fixed_order_dot

DEPTH = 10


def _embeddings(rng: np.random.Generator, passages: int, dims: int) -> audit.Embeddings:
    def unit(rows: int) -> np.ndarray:
        m = rng.standard_normal((rows, dims)).astype(np.float32)
        return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)

    doc, query = unit(passages), unit(1)
    doc[1::2] = doc[0::2]  # every passage has a twin: exact ties, decided by doc id
    ids = [f"d{i:04d}" for i in range(passages)]
    return audit.Embeddings(index={"passages": ids, "queries": ["q"]}, passages=doc, queries=query)


def _ranking(scores: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:DEPTH]


def test_another_cpus_blas_bits_give_the_same_exact_top_scores_as_the_build() -> None:
    rng = np.random.default_rng(7)
    emb = _embeddings(rng, 400, 64)
    exact = fixed_order_dot(emb.passages, emb.queries[0])
    want = _ranking({d: float(v) for d, v in zip(emb.index["passages"], exact, strict=True)})
    keep = np.ones(400, dtype=bool)
    bound = 64 * float(np.finfo(np.float32).eps)  # how far a float32 sum in any order may stand from the exact one
    for seed in range(20):  # each a CPU whose BLAS rounds its own way, within the bound
        blas = exact + np.random.default_rng(seed).uniform(-bound, bound, 400)
        got = audit.exact_top_scores(emb, 0, blas, keep, DEPTH, [])
        assert _ranking(got) == want


def test_without_the_margin_a_perturbed_blas_would_lose_a_candidate() -> None:
    """The test above can fail: ranking by the BLAS values alone, one of these perturbations reorders the top."""
    rng = np.random.default_rng(7)
    emb = _embeddings(rng, 400, 64)
    exact = fixed_order_dot(emb.passages, emb.queries[0])
    ids = emb.index["passages"]
    want = _ranking({d: float(v) for d, v in zip(ids, exact, strict=True)})
    bound = 64 * float(np.finfo(np.float32).eps)
    moved = 0
    for seed in range(20):
        blas = exact + np.random.default_rng(seed).uniform(-bound, bound, 400)
        moved += [d for d, _ in _ranking({d: float(v) for d, v in zip(ids, blas, strict=True)})] != [d for d, _ in want]
    assert moved > 0


def test_the_stored_hits_outside_the_candidates_are_scored_too() -> None:
    rng = np.random.default_rng(3)
    emb = _embeddings(rng, 100, 32)
    exact = fixed_order_dot(emb.passages, emb.queries[0])
    last = int(np.argmin(exact))
    got = audit.exact_top_scores(emb, 0, exact.astype(np.float32), np.ones(100, dtype=bool), 5, [last])
    assert got[emb.index["passages"][last]] == float(exact[last])
    assert len(got) < 100
