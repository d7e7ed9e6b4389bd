#!/usr/bin/env python
"""A deterministic synthetic corpus of any size, for timing sitegen at scale.

    .venv/bin/python bench/scale_corpus.py OUT --passages 100000 --questions 1000 [--vectors]

Writes OUT/corpus.jsonl, queries.jsonl, qrels/test.tsv and README.md (the seed and the
command), and with ``--vectors`` an ``embeddings/`` folder of supplied vectors. The text is
original: made-up words built from syllables, drawn with Zipf probabilities, so no
collection's text is copied and the term statistics look like a natural language's.

Questions are drawn from one passage each (3-8 of its words in random order, plus one word drawn
from the vocabulary), and that passage is judged relevant (grade 1); every tenth question is
``unanswerable``: words drawn from the vocabulary alone, with no judgement. The same
arguments give the same bytes on any machine: numpy's ``default_rng(SEED)`` (PCG64) draws
everything, vectors are summed in float64 in a fixed order and rounded once to float32.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

SEED = 20261201
VOCABULARY = 30_000
ZIPF_EXPONENT = 1.0  # P(word of rank r) proportional to 1 / r
PASSAGE_WORDS = (40, 110)  # uniform, inclusive
TITLE_WORDS = (2, 5)
QUESTION_WORDS = (4, 9)
UNANSWERABLE_EVERY = 10
DIMENSIONS = 64
_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st", "tr", "kl")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")


def vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    """``size`` distinct made-up words of 1-4 syllables, in a seeded order (rank 1 first)."""
    syllables = [o + v for o in _ONSETS for v in _VOWELS]
    words: dict[str, None] = {}
    while len(words) < size:
        count = int(rng.integers(1, 5))
        picks = rng.integers(0, len(syllables), size=count)
        words.setdefault("".join(syllables[i] for i in picks), None)
    return list(words)


def zipf_draw(rng: np.random.Generator, size: int, vocab: int) -> np.ndarray:
    """Word ranks (0-based) drawn with P(rank r) proportional to 1 / r**ZIPF_EXPONENT."""
    weights = 1.0 / np.arange(1, vocab + 1, dtype=np.float64) ** ZIPF_EXPONENT
    cumulative = np.cumsum(weights)
    cumulative /= cumulative[-1]
    return np.minimum(np.searchsorted(cumulative, rng.random(size), side="right"), vocab - 1)


def _sentence(words: np.ndarray, ids: np.ndarray) -> str:
    text = " ".join(words[ids].tolist())
    return text[:1].upper() + text[1:] + "."


def generate(out: Path, passages: int, questions: int, vectors: bool) -> dict[str, int]:
    """Write the corpus folder; returns counts for the caller to print."""
    rng = np.random.default_rng(SEED)
    words = np.array(vocabulary(VOCABULARY, rng), dtype=object)
    lengths = rng.integers(PASSAGE_WORDS[0], PASSAGE_WORDS[1] + 1, size=passages)
    title_lengths = rng.integers(TITLE_WORDS[0], TITLE_WORDS[1] + 1, size=passages)
    body = zipf_draw(rng, int(lengths.sum()), VOCABULARY)
    titles = zipf_draw(rng, int(title_lengths.sum()), VOCABULARY)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    title_starts = np.concatenate([[0], np.cumsum(title_lengths)])
    width = len(str(passages - 1))
    doc_ids = [f"p{i:0{width}d}" for i in range(passages)]

    out.mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8", newline="\n") as f:
        for i, doc in enumerate(doc_ids):
            title = " ".join(words[titles[title_starts[i] : title_starts[i + 1]]].tolist()).capitalize()
            text = _sentence(words, body[starts[i] : starts[i + 1]])
            f.write(json.dumps({"_id": doc, "title": title, "text": text}, ensure_ascii=False) + "\n")

    targets = rng.integers(0, passages, size=questions)
    q_lengths = rng.integers(QUESTION_WORDS[0], QUESTION_WORDS[1] + 1, size=questions)
    qwidth = len(str(questions - 1))
    query_ids, query_words, qrels = [], [], []
    for j in range(questions):
        qid = f"q{j:0{qwidth}d}"
        n = int(q_lengths[j])
        if j % UNANSWERABLE_EVERY == UNANSWERABLE_EVERY - 1:
            ids, kind = zipf_draw(rng, n, VOCABULARY), "unanswerable"
        else:
            own = body[starts[targets[j]] : starts[targets[j] + 1]]
            ids = np.concatenate([rng.choice(own, size=n - 1, replace=False), zipf_draw(rng, 1, VOCABULARY)])
            kind = "from-passage"
            qrels.append(f"{qid}\t{doc_ids[targets[j]]}\t1")
        query_ids.append(qid)
        query_words.append((ids, kind))
    with (out / "queries.jsonl").open("w", encoding="utf-8", newline="\n") as f:
        for qid, (ids, kind) in zip(query_ids, query_words, strict=True):
            text = " ".join(words[ids].tolist()).capitalize() + "?"
            row = {"_id": qid, "text": text, "kind": kind, "answerable": kind != "unanswerable"}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    (out / "qrels").mkdir(exist_ok=True)
    (out / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(r + "\n" for r in qrels))

    if vectors:
        _write_vectors(out, rng, body, starts, doc_ids, [ids for ids, _ in query_words], query_ids)
    (out / "README.md").write_text(_readme(passages, questions, vectors), encoding="utf-8")
    return {"passages": passages, "questions": questions, "judged": len(qrels)}


def _write_vectors(
    out: Path,
    rng: np.random.Generator,
    body: np.ndarray,
    starts: np.ndarray,
    doc_ids: list[str],
    query_words: list[np.ndarray],
    query_ids: list[str],
) -> None:
    """Supplied vectors: each word a seeded Gaussian direction, a text the normalised weighted sum of its
    words' (a cheap bag-of-words projection, so dense retrieval finds the source passage)."""
    # float64; rarer words weigh more (ln(rank + 1)), as idf would, so common words do not swamp a text
    word_vectors = rng.standard_normal((VOCABULARY, DIMENSIONS)) * np.log(np.arange(2, VOCABULARY + 2))[:, None]
    folder = out / "embeddings"
    folder.mkdir(exist_ok=True)
    rows = np.empty((len(doc_ids), DIMENSIONS), dtype=np.float32)
    block = 5_000
    for lo in range(0, len(doc_ids), block):
        hi = min(lo + block, len(doc_ids))
        sums = np.add.reduceat(word_vectors[body[starts[lo] : starts[hi]]], starts[lo:hi] - starts[lo], axis=0)
        rows[lo:hi] = _unit(sums)
    np.save(folder / "passages.npy", rows, allow_pickle=False)
    queries = np.stack([word_vectors[ids].sum(axis=0) for ids in query_words])
    np.save(folder / "queries.npy", _unit(queries))
    index = {
        "model": "scale-corpus-bag-of-words",
        "provenance": f"bench/scale_corpus.py seed {SEED}: normalised ln(rank + 1)-weighted sum of seeded "
        "Gaussian word vectors",
        "dimensions": DIMENSIONS,
        "dtype": "float32",
        "normalised": True,
        "passages": doc_ids,
        "queries": query_ids,
    }
    (folder / "index.json").write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")


def _unit(rows: np.ndarray) -> np.ndarray:
    """float64 rows scaled to unit length as float32; squares summed column by column (one IEEE addition a
    step, no SIMD-dependent reduction), so the bytes are the same on every machine."""
    total = np.zeros(rows.shape[0])
    for column in range(rows.shape[1]):
        total += rows[:, column] * rows[:, column]
    return (rows / np.sqrt(total)[:, None]).astype(np.float32)


def _readme(passages: int, questions: int, vectors: bool) -> str:
    command = f"bench/scale_corpus.py OUT --passages {passages} --questions {questions}" + (
        " --vectors" if vectors else ""
    )
    return (
        "# Synthetic scale corpus\n\n"
        f"Generated by `{command}` with `numpy.random.default_rng({SEED})`: {passages:,} passages and "
        f"{questions:,} questions in made-up words ({VOCABULARY:,}-word vocabulary, Zipf exponent "
        f"{ZIPF_EXPONENT}). Original synthetic text, for benchmarks only; no licence restrictions.\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--questions", type=int, default=1_000)
    parser.add_argument("--vectors", action="store_true", help="write supplied vectors in embeddings/")
    args = parser.parse_args(argv)
    if args.passages < 1 or args.questions < 1:
        parser.error("--passages and --questions must be at least 1")
    counts = generate(args.out, args.passages, args.questions, args.vectors)
    print(json.dumps(counts), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
