"""Question-set hygiene at scale: 100,000 passages x 1,000 questions, made from a fixed seed.

    python bench/hygiene_scale.py [--passages 100000] [--questions 1000]

Prints the seconds (wall and CPU; the CPU figure is the one to compare on a busy machine)
``sitegen.scoring.hygiene.hygiene_report`` takes and the flag counts. Some questions are
planted inside passages (leakage) and some passages are copied with one word changed (near-duplicates).
"""

from __future__ import annotations

import argparse
import os
import random
import time
from pathlib import Path

from sitegen.inputs.corpus import Corpus, Document, Query
from sitegen.scoring.hygiene import hygiene_report

SEED = 20261201


def synthetic(passages: int, questions: int, seed: int = SEED) -> Corpus:
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(20000)]
    texts = [" ".join(rng.choices(vocabulary, k=rng.randint(40, 160))) for _ in range(passages)]
    queries, qrels = [], {}
    for i in range(questions):
        words = rng.choices(vocabulary, k=rng.randint(4, 14))
        if i % 50 == 0:  # planted leak: the question's words inside a passage
            target = rng.randrange(passages)
            texts[target] = texts[target] + " " + " ".join(words)
        queries.append(Query(f"q{i}", " ".join(words)))
        qrels[f"q{i}"] = {f"d{rng.randrange(passages)}": 1}
    for i in range(0, passages, 1000):  # planted near-duplicates of labelled passages
        label = next(iter(qrels[f"q{i // 1000 % questions}"]))
        source = texts[int(label[1:])].split()
        source[len(source) // 2] = "changed"
        texts[i] = " ".join(source)
    documents = tuple(Document(f"d{i}", "", text) for i, text in enumerate(texts))
    return Corpus("synthetic", Path("synthetic"), documents, tuple(queries), qrels, readme="", input_files=())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--questions", type=int, default=1_000)
    args = parser.parse_args()
    corpus = synthetic(args.passages, args.questions)
    words = sum(len(d.text.split()) for d in corpus.documents)
    clock, cpu = time.perf_counter(), time.process_time()
    report = hygiene_report(corpus)
    seconds, cpu = time.perf_counter() - clock, time.process_time() - cpu
    print(
        f"{args.passages:,} passages ({words:,} words) x {args.questions:,} questions: "
        f"{seconds:.2f} s wall, {cpu:.2f} s CPU (os.getloadavg() {os.getloadavg()[0]:.1f})"
    )
    print(report["counts"])


if __name__ == "__main__":
    main()
