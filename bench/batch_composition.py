#!/usr/bin/env python
"""Does batching change a vector? A measurement, not a test.

    .venv/bin/python bench/batch_composition.py [--device cpu|cuda] [--threads 1] [--out FILE.json]

sitegen embeds one text per forward pass (``BATCH_SIZE = 1``) so that a vector depends only on its text.
This script embeds every passage and question of the committed corpora one at a time (the reference),
then again in batches, and reports the largest component difference from the reference:

- ``same length``: texts of exactly the same token count batched together, in three compositions
  (sorted, shuffled with a fixed seed into batches of 8, reversed into batches of 4): no padding at all;
- ``bucket of 8 tokens``: texts whose token counts fall in the same 8-token bucket, batches of 16 (a little
  padding), the scheme a length-bucketed encoder would use;
- ``mixed``: the library's own batching (batch size 32, sorted by length over the whole list).

For each scheme it ranks every question of each corpus by the fixed-order exact cosine sitegen uses
(:func:`sitegen.rankers.dense.dense_top_k`, depth 10) and counts the questions whose top 10 (ids and order)
differ from the reference ranking, and it times texts/s for batch size 1 against the bucketed scheme.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sitegen.embedding.model import EmbeddingModel  # noqa: E402
from sitegen.inputs.corpus import load_corpus, passage_text  # noqa: E402
from sitegen.rankers.base import doc_id_order  # noqa: E402
from sitegen.rankers.dense import dense_top_k  # noqa: E402

SEED = 20261201
DEPTH = 10
CORPORA = ("llm-reliability", "payments-support", "tenant-handbook")


def _encode_batches(st_model: object, texts: Sequence[str], batches: Sequence[Sequence[int]]) -> np.ndarray:
    """Embed ``texts`` so that exactly the rows in each batch share one forward pass."""
    dimension = getattr(st_model, "get_embedding_dimension", None) or st_model.get_sentence_embedding_dimension  # type: ignore[attr-defined]
    out = np.zeros((len(texts), dimension()), dtype=np.float32)
    for batch in batches:
        vectors = st_model.encode(  # type: ignore[attr-defined]
            [texts[i] for i in batch],
            batch_size=len(batch),
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        out[list(batch)] = vectors
    return out


def _chunks(rows: Sequence[int], size: int) -> list[list[int]]:
    return [list(rows[i : i + size]) for i in range(0, len(rows), size)]


def _rankings(vectors: np.ndarray, layout: list[tuple[str, list[int], list[str], list[int]]]) -> dict[str, list[str]]:
    """Top ``DEPTH`` ids per question of every corpus, by sitegen's exact fixed-order cosine."""
    ranked = {}
    for name, doc_rows, doc_ids, query_rows in layout:
        docs = vectors[doc_rows]
        key = doc_id_order(doc_ids)
        for row in query_rows:
            best, _ = dense_top_k(docs, vectors[row], key, DEPTH)
            ranked[f"{name}/{row}"] = [doc_ids[i] for i in best]
    return ranked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1: a shared machine)")
    parser.add_argument("--out", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    texts: list[str] = []
    layout = []
    for name in CORPORA:
        corpus = load_corpus(REPO / "corpora" / name)
        start = len(texts)
        texts += [passage_text(d) for d in corpus.documents]
        middle = len(texts)
        texts += [q.text for q in corpus.queries]
        layout.append(
            (name, list(range(start, middle)), [d.doc_id for d in corpus.documents], list(range(middle, len(texts))))
        )
    model = EmbeddingModel(device=args.device)
    st_model = model._load()
    tokens = [
        len(ids) for ids in st_model.tokenizer(texts, truncation=True, max_length=st_model.max_seq_length)["input_ids"]
    ]

    timed: dict[str, float] = {}

    def run(label: str, batches: list[list[int]]) -> np.ndarray:
        clock = time.perf_counter()
        vectors = _encode_batches(st_model, texts, batches)
        timed[label] = len(texts) / (time.perf_counter() - clock)
        return vectors

    reference = run("one text per pass", [[i] for i in range(len(texts))])
    by_length: dict[int, list[int]] = defaultdict(list)
    by_bucket: dict[int, list[int]] = defaultdict(list)
    for i, n in enumerate(tokens):
        by_length[n].append(i)
        by_bucket[n // 8].append(i)
    rng = np.random.default_rng(SEED)
    schemes: dict[str, Callable[[], list[list[int]]]] = {
        "same length, sorted, one batch per length": lambda: [rows for rows in by_length.values()],
        "same length, shuffled, batches of 8": lambda: [
            b for rows in by_length.values() for b in _chunks(list(rng.permutation(rows)), 8)
        ],
        "same length, reversed, batches of 4": lambda: [
            b for rows in by_length.values() for b in _chunks(rows[::-1], 4)
        ],
        "bucket of 8 tokens, batches of 16": lambda: [b for rows in by_bucket.values() for b in _chunks(rows, 16)],
        "mixed lengths, the library's batches of 32": lambda: _chunks(
            sorted(range(len(texts)), key=lambda i: -tokens[i]), 32
        ),
    }
    base_rank = _rankings(reference, layout)
    results = []
    made: dict[str, np.ndarray] = {}
    for label, make in schemes.items():
        batches = make()
        vectors = made[label] = run(label, batches)
        diff = np.abs(vectors.astype(np.float64) - reference.astype(np.float64))
        changed_rows = int(np.count_nonzero(diff.max(axis=1) > 0))
        ranks = _rankings(vectors, layout)
        moved = sum(1 for q in base_rank if ranks[q] != base_rank[q])
        results.append(
            {
                "scheme": label,
                "batches": len(batches),
                "largest_batch": max(len(b) for b in batches),
                "max_abs_diff": float(diff.max()),
                "rows_changed": changed_rows,
                "questions_with_another_top10": moved,
                "texts_per_s": round(timed[label], 1),
            }
        )
    # Composition alone: the same texts, each in a batch of same-length texts, with other neighbours.
    a, b = made["same length, shuffled, batches of 8"], made["same length, reversed, batches of 4"]
    composition = np.abs(a.astype(np.float64) - b.astype(np.float64))
    summary_composition = {
        "max_abs_diff": float(composition.max()),
        "rows_changed": int(np.count_nonzero(composition.max(axis=1) > 0)),
    }
    summary = {
        "same_length_shuffled_8_vs_reversed_4": summary_composition,
        "texts": len(texts),
        "questions": sum(len(q) for *_, q in layout),
        "distinct_token_lengths": len(by_length),
        "device": args.device,
        "torch_threads": args.threads,
        "torch": torch.__version__,
        "machine": platform.processor() or platform.machine(),
        "one_text_per_pass_texts_per_s": round(timed["one text per pass"], 1),
        "schemes": results,
    }
    print(
        f"{len(texts)} texts ({summary['questions']} questions), {len(by_length)} distinct token lengths, "
        f"device {args.device}, {args.threads} torch thread(s), torch {torch.__version__}"
    )
    print(f"reference: one text per pass, {timed['one text per pass']:.1f} texts/s")
    print(f"{'scheme':<46} {'batches':>7} {'max |diff|':>11} {'rows moved':>10} {'top-10 changed':>14} {'texts/s':>8}")
    for r in results:
        print(
            f"{r['scheme']:<46} {r['batches']:>7} {r['max_abs_diff']:>11.3g} {r['rows_changed']:>10} "
            f"{r['questions_with_another_top10']:>14} {r['texts_per_s']:>8.1f}"
        )
    print(
        "same length, shuffled batches of 8 against reversed batches of 4 (composition alone): largest "
        f"difference {summary_composition['max_abs_diff']:.3g} in {summary_composition['rows_changed']} rows"
    )
    if args.out:
        args.out.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
