#!/usr/bin/env python
"""Embedding throughput of the shipped models, side by side: a measurement, not a test.

    .venv/bin/python bench/embed_models.py [--corpus payments-support] [--threads 2] [--out FILE.json]

Every passage and question of one committed corpus is embedded with ``dense``'s all-MiniLM-L6-v2 and
``dense-mpnet``'s all-mpnet-base-v2 (sitegen[mpnet]) as a build embeds them (one text per forward pass), after a
warm-up of 8 texts, and timed. Also timed: ``SentenceTransformer.encode(batch_size=32)`` on the same texts, what
a batched encoder would reach. Texts/s depend on the machine; the output names it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sitegen.embedding.model import EmbeddingModel  # noqa: E402
from sitegen.embedding.models import DEFAULT_SPEC, MPNET_SPEC  # noqa: E402
from sitegen.inputs.corpus import load_corpus, passage_text  # noqa: E402


def _rate(encode, texts: list[str]) -> float:
    encode(texts[:8])  # warm-up: the first pass allocates
    start = time.perf_counter()
    encode(texts)
    return len(texts) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="payments-support")
    parser.add_argument("--threads", type=int, default=None, help="torch threads [default: torch's]")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    corpus = load_corpus(REPO / "corpora" / args.corpus)
    texts = [passage_text(d) for d in corpus.documents] + [q.text for q in corpus.queries]
    rows = {}
    for spec in (DEFAULT_SPEC, MPNET_SPEC):
        model = EmbeddingModel(spec=spec)
        one = _rate(model.encode, texts)
        loaded = model._load()
        batched = _rate(lambda t, m=loaded: m.encode(t, batch_size=32, normalize_embeddings=True), texts)
        rows[spec.name] = {
            "model": model.name,
            "texts_per_pass": spec.batch_size,
            "texts_per_s_as_built": one,
            "texts_per_s_batch_32": batched,
        }
        print(
            f"{spec.name:<12} {model.name:<42} {one:7.1f} texts/s as a build embeds ({spec.batch_size} per pass), "
            f"{batched:7.1f} by SentenceTransformer.encode(batch_size=32), ratio {one / batched:.2f}"
        )
    ratio = rows["dense"]["texts_per_s_batch_32"] / rows["dense-mpnet"]["texts_per_s_batch_32"]
    print(f"all-MiniLM-L6-v2 is {ratio:.1f}x faster than all-mpnet-base-v2 batched by 32")
    result = {
        "corpus": args.corpus,
        "texts": len(texts),
        "threads": torch.get_num_threads(),
        "machine": {"cpu": platform.processor() or platform.machine(), "logical_cpus": os.cpu_count()},
        "rows": rows,
        "minilm_over_mpnet": ratio,
    }
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
