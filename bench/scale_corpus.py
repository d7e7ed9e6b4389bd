#!/usr/bin/env python
"""A deterministic synthetic corpus of any size, for timing sitegen at scale.

    .venv/bin/python bench/scale_corpus.py OUT --passages 100000 --questions 1000 [--vectors]
    .venv/bin/python bench/scale_corpus.py /tmp/corpora/million --passages 1000000 --questions 5000 --vectors

Writes OUT/corpus.jsonl, queries.jsonl, qrels/test.tsv and README.md (the seed and the
command), and with ``--vectors`` an ``embeddings/`` folder of supplied vectors. The text is
original: made-up words built from syllables, drawn with Zipf probabilities, so no
collection's text is copied and the term statistics look like a natural language's.

Questions are drawn from one passage each (3-8 of its words in random order, plus one word drawn
from the vocabulary), and that passage is judged relevant (grade 1); every tenth question is
``unanswerable``: words drawn from the vocabulary alone, with no judgement. The same
arguments give the same bytes on any machine: numpy's ``default_rng(SEED)`` (PCG64) draws
everything, vectors are summed in float64 in a fixed order and rounded once to float32.

It streams: passages are drawn and written a block at a time, and a passage's words are drawn again
when a question or a vector needs them, from the PCG64 position where they were drawn (each uniform
draw is one step, so ``advance`` finds it). The numbers drawn, and so the bytes, are those of drawing
every passage's words at once in one sequence; the memory is a few arrays of one number per passage
(a million passages, 5,000 questions: under 200 MB).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
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


# Passages drawn and written per block; their vectors are normalised per block of the same size.
BLOCK = 5_000
SUM_PASSAGES = 64


def generate(out: Path, passages: int, questions: int, vectors: bool) -> dict[str, int]:
    """Write the corpus folder; returns counts for the caller to print."""
    rng = np.random.default_rng(SEED)
    words = np.array(vocabulary(VOCABULARY, rng), dtype=object)
    lengths = rng.integers(PASSAGE_WORDS[0], PASSAGE_WORDS[1] + 1, size=passages)
    title_lengths = rng.integers(TITLE_WORDS[0], TITLE_WORDS[1] + 1, size=passages)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    title_starts = np.concatenate([[0], np.cumsum(title_lengths)])
    # The passages' words are the next starts[-1] draws, the titles' the title_starts[-1] after them.
    body = _Draws(rng.bit_generator.state, starts)
    width = len(str(passages - 1))
    doc_ids = [f"p{i:0{width}d}" for i in range(passages)]

    out.mkdir(parents=True, exist_ok=True)
    titles = _stream(body.state, int(starts[-1]))
    passage_words = body.blocks()
    with (out / "corpus.jsonl").open("w", encoding="utf-8", newline="\n") as f:
        for lo in range(0, passages, BLOCK):
            hi = min(lo + BLOCK, passages)
            block = next(passage_words)
            title_block = zipf_draw(titles, int(title_starts[hi] - title_starts[lo]), VOCABULARY)
            for i in range(lo, hi):
                own = block[starts[i] - starts[lo] : starts[i + 1] - starts[lo]]
                title_ids = title_block[title_starts[i] - title_starts[lo] : title_starts[i + 1] - title_starts[lo]]
                title = " ".join(words[title_ids].tolist()).capitalize()
                f.write(
                    json.dumps({"_id": doc_ids[i], "title": title, "text": _sentence(words, own)}, ensure_ascii=False)
                    + "\n"
                )
    rng.bit_generator.state = _advanced(body.state, int(starts[-1] + title_starts[-1]))

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
            own = body.passage(int(targets[j]))
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
        _write_vectors(out, rng, body, doc_ids, [ids for ids, _ in query_words], query_ids)
    (out / "README.md").write_text(_readme(passages, questions, vectors), encoding="utf-8")
    return {"passages": passages, "questions": questions, "judged": len(qrels)}


def _advanced(state: dict, steps: int) -> dict:
    """PCG64 ``state`` moved ``steps`` draws on, keeping its buffered 32-bit half (``integers`` may have
    left one; uniform draws neither use nor change it)."""
    bit_generator = np.random.PCG64()
    bit_generator.state = state
    bit_generator.advance(steps)
    moved = bit_generator.state
    moved["has_uint32"], moved["uinteger"] = state["has_uint32"], state["uinteger"]
    return moved


def _stream(state: dict, steps: int) -> np.random.Generator:
    """A generator whose draws are those ``steps`` draws after ``state``."""
    bit_generator = np.random.PCG64()
    bit_generator.state = _advanced(state, steps)
    return np.random.Generator(bit_generator)


class _Draws:
    """The passages' words, drawn from PCG64 ``state`` on (passage i: the draws starts[i] to starts[i + 1]),
    as often as they are needed, never all at once."""

    def __init__(self, state: dict, starts: np.ndarray) -> None:
        self.state = state
        self.starts = starts

    def passage(self, i: int) -> np.ndarray:
        start, stop = int(self.starts[i]), int(self.starts[i + 1])
        return zipf_draw(_stream(self.state, start), stop - start, VOCABULARY)

    def blocks(self) -> Iterator[np.ndarray]:
        """Passages ``BLOCK`` at a time, in order: each block's words, one passage after another."""
        draws = _stream(self.state, 0)
        for lo in range(0, self.starts.size - 1, BLOCK):
            hi = min(lo + BLOCK, self.starts.size - 1)
            yield zipf_draw(draws, int(self.starts[hi] - self.starts[lo]), VOCABULARY)


def _write_vectors(
    out: Path,
    rng: np.random.Generator,
    body: _Draws,
    doc_ids: list[str],
    query_words: list[np.ndarray],
    query_ids: list[str],
) -> None:
    """Supplied vectors: each word a seeded Gaussian direction, a text the normalised weighted sum of its
    words' (a cheap bag-of-words projection, so dense retrieval finds the source passage). The passages'
    matrix is written to its .npy file a block at a time."""
    # float64; rarer words weigh more (ln(rank + 1)), as idf would, so common words do not swamp a text
    word_vectors = rng.standard_normal((VOCABULARY, DIMENSIONS)) * np.log(np.arange(2, VOCABULARY + 2))[:, None]
    folder = out / "embeddings"
    folder.mkdir(exist_ok=True)
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)), "fortran_order": False}
    starts = body.starts
    with (folder / "passages.npy").open("wb") as f:  # the bytes np.save writes, a block at a time
        np.lib.format.write_array_header_1_0(f, {**header, "shape": (len(doc_ids), DIMENSIONS)})
        for lo, block in zip(range(0, len(doc_ids), BLOCK), body.blocks(), strict=True):
            hi = min(lo + BLOCK, len(doc_ids))
            offsets = starts[lo : hi + 1] - starts[lo]
            sums = np.empty((hi - lo, DIMENSIONS))
            # Each passage's sum is its own words' rows reduced (np.add.reduceat, a fixed order); a few
            # dozen passages per call keep the gathered rows in cache (18x faster than 5,000, same bytes).
            for a in range(0, hi - lo, SUM_PASSAGES):
                b = min(a + SUM_PASSAGES, hi - lo)
                own = word_vectors[block[offsets[a] : offsets[b]]]
                sums[a:b] = np.add.reduceat(own, offsets[a:b] - offsets[a], axis=0)
            f.write(_unit(sums).tobytes())
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
