"""Question-set hygiene: flags on the questions and labels of a corpus that make its metrics say less.

Five flags, computed from the inputs alone (``hygiene.json``; the audit recomputes them its own way):

- **leakage**: a question of at least ``leak_min_words`` words whose whole word sequence, or any
  ``leak_ngram``-word n-gram of it, appears verbatim (as consecutive words) in a passage's title and text;
- **duplicate questions**: questions with the same word sequence and the same metadata filter (one question
  asked of two tenants is two questions); **near-duplicates**: two questions under the same filter whose
  word sets have a Jaccard similarity of at least ``question_jaccard`` (and differ as sequences);
- **title questions**: a question whose word sequence is a passage's title;
- **unlabelled near-duplicate passages**: a passage labelled relevant (grade > 0) for a question has a
  near-duplicate passage (Jaccard of their sets of ``passage_shingle``-word shingles at least
  ``passage_jaccard``) that the question's labels do not mention at all.

Words are :func:`sitegen.rankers.tokenize.tokenize`'s (lowercased runs of letters and digits). It must scale
to 100,000 passages and 1,000 questions in seconds (``bench/hygiene_scale.py``), so no pair of passages is
compared blindly: the passages are tokenised in chunks of ``_CHUNK_PASSAGES``, each chunk at once into one
word list, every window of it is hashed with numpy, the hashes are looked up among the questions' n-grams
(and the labelled passages' shingles), and each hit is confirmed word by word. Only one chunk's words stay in
memory, with the labelled passages' shingle sets: memory does not grow with the corpus's words. The hashes
only propose candidates (Python's string hash, which changes between processes); every flag is decided on the
words and Jaccard thresholds are compared in integers, so the flags are the same on every machine and every
run.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from sitegen.inputs.corpus import Corpus, passage_text
from sitegen.rankers.tokenize import tokenize

__all__ = ["FLAG_KINDS", "RULES", "HygieneRules", "flag_lines", "hygiene_report"]


_BASE = np.uint64(0x9E3779B97F4A7C15)  # odd, so the hash of a window mixes every word id
_MASK = (1 << 64) - 1
_FILTER_BITS = 24
_CHUNK_PASSAGES = 8192  # passages tokenised and hashed together: bounds the memory, amortises numpy calls
FLAG_KINDS = (
    "leakage",
    "duplicate_questions",
    "near_duplicate_questions",
    "title_questions",
    "unlabelled_near_duplicates",
)


@dataclass(frozen=True)
class HygieneRules:
    """The thresholds, stated on the corpus page and in ``hygiene.json``."""

    leak_ngram: int = 8
    leak_min_words: int = 3
    question_jaccard: Fraction = Fraction(4, 5)
    passage_shingle: int = 5
    passage_jaccard: Fraction = Fraction(4, 5)

    def as_dict(self) -> dict[str, Any]:
        return {
            "words": "lowercased runs of Unicode letters and digits; everything else separates",
            "leakage": {
                "ngram_words": self.leak_ngram,
                "min_question_words": self.leak_min_words,
                "rule": f"the question's whole word sequence (if it has at least {self.leak_min_words} words) or "
                f"any {self.leak_ngram}-word n-gram of it appears as consecutive words in a passage's title and text",
            },
            "duplicate_questions": {"rule": "the same words in the same order, under the same metadata filter"},
            "near_duplicate_questions": {
                "measure": "Jaccard similarity of the two questions' sets of words (same metadata filter only)",
                "at_least": float(self.question_jaccard),
            },
            "title_questions": {"rule": "the question's word sequence equals a passage title's"},
            "unlabelled_near_duplicates": {
                "measure": f"Jaccard similarity of the two passages' sets of {self.passage_shingle}-word shingles "
                "(a shorter passage is one shingle)",
                "at_least": float(self.passage_jaccard),
                "rule": "a passage labelled relevant for the question has a near-duplicate passage the question's "
                "labels do not mention",
            },
        }


RULES = HygieneRules()


def _window_hashes(ids: np.ndarray, length: int) -> np.ndarray:
    """The hash of every window of ``length`` ids (uint64 arithmetic wraps: modulo 2**64)."""
    count = len(ids) - length + 1
    if count <= 0:
        return np.zeros(0, dtype=np.uint64)
    hashes = np.zeros(count, dtype=np.uint64)
    for offset in range(length):
        hashes = hashes * _BASE + ids[offset : offset + count]
    return hashes


def _hash(ids: Sequence[int]) -> int:
    """:func:`_window_hashes` of one window, in Python integers."""
    value = 0
    for word_id in ids:
        value = (value * int(_BASE) + word_id) & _MASK
    return value


def _word_ids(words: Iterable[str]) -> list[int]:
    """Each word's id: Python's string hash as an unsigned 64-bit number. It differs between processes, so it
    only proposes candidates; every flag is then decided on the words themselves, the same on every run."""
    return [hash(w) & _MASK for w in words]


def _found(hashes: np.ndarray, wanted: Iterable[int]) -> np.ndarray:
    """Positions of ``hashes`` whose value is among ``wanted``: a bitmap of the low ``_FILTER_BITS`` bits
    rules most windows out at once, then a binary search in the sorted wanted values confirms the rest."""
    table = np.unique(np.fromiter(wanted, dtype=np.uint64))
    if not len(table) or not len(hashes):
        return np.zeros(0, dtype=np.int64)
    low = np.uint64((1 << _FILTER_BITS) - 1)
    bitmap = np.zeros(1 << _FILTER_BITS, dtype=bool)
    bitmap[(table & low).astype(np.int64)] = True
    maybe = np.flatnonzero(bitmap[(hashes & low).astype(np.int64)])
    at = np.minimum(np.searchsorted(table, hashes[maybe]), len(table) - 1)
    return maybe[table[at] == hashes[maybe]]


class _Passages:
    """Every passage's words in one list (and their ids in one array), each passage after a separator word."""

    def __init__(self, texts: Sequence[str]) -> None:
        # One tokenize() call over all the texts, joined by a word none of them holds (a C loop, not 100,000).
        lowered = "\n".join(texts).lower()
        separator = next(f"sep{n}" for n in itertools.count() if f"sep{n}" not in lowered)
        self.tokens = tokenize(f"{separator} " + f" {separator} ".join(texts))
        self.ids = np.fromiter(map(hash, self.tokens), np.int64, len(self.tokens)).view(np.uint64)  # = _word_ids
        maybe = np.flatnonzero(self.ids == np.uint64(_word_ids([separator])[0])).tolist()
        self.starts = np.array([i + 1 for i in maybe if self.tokens[i] == separator], dtype=np.int64)
        self.ends = np.append(self.starts[1:] - 1, len(self.tokens)).astype(np.int64)

    def passage_at(self, positions: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.starts, positions, side="right") - 1

    def words(self, index: int) -> list[str]:
        return self.tokens[self.starts[index] : self.ends[index]]


_Grams = dict[int, dict[int, list[tuple[str, list[str]]]]]  # window length -> first-window hash -> grams


def _leak_grams(questions: Sequence[tuple[str, list[str]]], rules: HygieneRules) -> _Grams:
    """The questions' n-grams to look for, by window length and hash."""
    grams: _Grams = {}
    for qid, words in questions:
        if len(words) < rules.leak_min_words:
            continue  # too short to say anything
        ids = _word_ids(words)
        if len(words) >= rules.leak_ngram:
            for i in range(len(words) - rules.leak_ngram + 1):
                key = _hash(ids[i : i + rules.leak_ngram])
                grams.setdefault(rules.leak_ngram, {}).setdefault(key, []).append(
                    (qid, words[i : i + rules.leak_ngram])
                )
        else:  # a short question: found through its first leak_min_words words, then confirmed whole
            key = _hash(ids[: rules.leak_min_words])
            grams.setdefault(rules.leak_min_words, {}).setdefault(key, []).append((qid, words))
    return grams


def _leaks(grams: _Grams, passages: _Passages, offset: int, leaks: dict[str, set[int]]) -> None:
    """Adds to ``leaks`` (question id -> indexes of the passages it leaks into) the leaks into one chunk of
    passages, the first of which has index ``offset``."""
    for length, table in sorted(grams.items()):
        hashes = _window_hashes(passages.ids, length)
        positions = _found(hashes, table)
        owners = passages.passage_at(positions)
        for position, owner in zip(positions.tolist(), owners.tolist(), strict=True):
            end = int(passages.ends[owner])
            for qid, gram in table[int(hashes[position])]:
                stop = position + len(gram)
                if stop <= end and owner + offset not in leaks.get(qid, ()) and passages.tokens[position:stop] == gram:
                    leaks.setdefault(qid, set()).add(owner + offset)


def _shingles(words: list[str], size: int) -> set[tuple[str, ...]]:
    """A passage's word ``size``-grams; a shorter passage is one shingle, an empty one has none."""
    if len(words) < size:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def _at_least(shared: int, union: int, threshold: Fraction) -> bool:
    """``shared / union >= threshold`` in integers: no float rounding decides a flag."""
    return union > 0 and shared * threshold.denominator >= threshold.numerator * union


class _NearDuplicates:
    """Labelled passage index -> indexes of its near-duplicates, filled one chunk of passages at a time. Only
    passages that share a shingle with a labelled passage (found by hash over the chunk at once) are compared,
    word for word; only the labelled passages' shingle sets are kept."""

    def __init__(self, labelled_words: Mapping[int, list[str]], rules: HygieneRules) -> None:
        self.size, self.threshold = rules.passage_shingle, rules.passage_jaccard
        self.sets = {d: _shingles(labelled_words[d], self.size) for d in sorted(labelled_words)}
        self.owners: dict[tuple[str, ...], list[int]] = {}
        for d, shingles in self.sets.items():
            for shingle in shingles:
                self.owners.setdefault(shingle, []).append(d)
        self.keys = {_hash(_word_ids(shingle)) for shingle in self.owners}
        self.near: dict[int, list[int]] = {}

    def add(self, passages: _Passages, offset: int) -> None:
        """Compares the chunk's passages (the first has index ``offset``) with the labelled ones."""
        if not self.owners:
            return
        candidates = set(passages.passage_at(_found(_window_hashes(passages.ids, self.size), self.keys)).tolist())
        lengths = passages.ends - passages.starts
        for index in np.flatnonzero((lengths > 0) & (lengths < self.size)).tolist():  # a short passage: one shingle
            if tuple(passages.words(index)) in self.owners:
                candidates.add(index)
        for local in sorted(candidates):
            other = local + offset
            theirs = self.sets[other] if other in self.sets else _shingles(passages.words(local), self.size)
            shared_with: dict[int, int] = {}
            for shingle in theirs:
                for d in self.owners.get(shingle, ()):
                    shared_with[d] = shared_with.get(d, 0) + 1
            for d, shared in shared_with.items():
                if d != other and _at_least(shared, len(self.sets[d]) + len(theirs) - shared, self.threshold):
                    self.near.setdefault(d, []).append(other)


def _near_duplicate_questions(
    questions: Sequence[tuple[str, list[str]]], filters: Mapping[str, str], rules: HygieneRules
) -> list[dict[str, Any]]:
    """Pairs of questions with the same filter whose word sets are similar enough but whose word sequences differ.
    Candidates come from an index of each set's rarest words (prefix filtering): two sets at or over the
    threshold share one."""
    sets = [(qid, frozenset(words), " ".join(words)) for qid, words in questions if words]
    frequency: dict[str, int] = {}
    for _, words, _ in sets:
        for word in words:
            frequency[word] = frequency.get(word, 0) + 1
    t = rules.question_jaccard
    index: dict[tuple[str, str], list[int]] = {}  # (filter, word) -> questions
    pairs: list[dict[str, Any]] = []
    for i, (qid, words, text) in enumerate(sets):
        ordered = sorted(words, key=lambda w: (frequency[w], w))
        needed = -(-len(ordered) * t.numerator // t.denominator)  # ceil(t * size): the fewest words to share
        prefix = ordered[: len(ordered) - needed + 1]
        seen: set[int] = set()
        for word in prefix:
            for j in index.get((filters[qid], word), ()):
                if j in seen:
                    continue
                seen.add(j)
                other_id, other, other_text = sets[j]
                shared = len(words & other)
                if other_text != text and _at_least(shared, len(words | other), t):
                    pairs.append(
                        (
                            j,
                            i,
                            {"query_ids": [other_id, qid], "shared_words": shared, "union_words": len(words | other)},
                        )
                    )
        for word in prefix:
            index.setdefault((filters[qid], word), []).append(i)
    return [pair for _, _, pair in sorted(pairs, key=lambda p: (p[0], p[1]))]


def hygiene_report(corpus: Corpus, rules: HygieneRules = RULES) -> dict[str, Any]:
    """``hygiene.json`` for one corpus: the rules, the flags (ids sorted in input order) and their counts."""
    questions = [(q.query_id, tokenize(q.text)) for q in corpus.queries]
    # Questions under different metadata filters (another tenant, say) ask different things: never duplicates.
    filters = {q.query_id: json.dumps(_plain(q.filter), sort_keys=True) for q in corpus.queries}
    documents = list(corpus.documents)
    doc_ids = [d.doc_id for d in documents]
    position = {d: i for i, d in enumerate(doc_ids)}
    labelled = {position[d] for grades in corpus.qrels.values() for d, g in grades.items() if g > 0 and d in position}

    grams = _leak_grams(questions, rules)
    leaks: dict[str, set[int]] = {}
    near_duplicates = _NearDuplicates({d: tokenize(passage_text(documents[d])) for d in labelled}, rules)
    for start in range(0, len(documents), _CHUNK_PASSAGES):
        chunk = _Passages([passage_text(d) for d in documents[start : start + _CHUNK_PASSAGES]])
        _leaks(grams, chunk, start, leaks)
        near_duplicates.add(chunk, start)
        del chunk  # one chunk's words at a time
    near = near_duplicates.near
    leakage = [
        {"query_id": qid, "doc_ids": [doc_ids[i] for i in sorted(leaks[qid])]} for qid, _ in questions if qid in leaks
    ]

    by_text: dict[tuple[str, str], list[str]] = {}
    for qid, words in questions:
        if words:
            by_text.setdefault((filters[qid], " ".join(words)), []).append(qid)
    duplicates = [{"query_ids": ids, "text": text} for (_, text), ids in by_text.items() if len(ids) > 1]

    titles: dict[str, list[str]] = {}
    for d in documents:
        if words := tokenize(d.title):
            titles.setdefault(" ".join(words), []).append(d.doc_id)
    title_questions = [
        {"query_id": qid, "doc_ids": titles[" ".join(words)]} for qid, words in questions if " ".join(words) in titles
    ]

    unlabelled = []
    for qid, _ in questions:
        grades = corpus.qrels.get(qid, {})
        for d in sorted((position[d] for d, g in grades.items() if g > 0 and d in position)):
            missed = [doc_ids[o] for o in near.get(d, []) if doc_ids[o] not in grades]
            if missed:
                unlabelled.append({"query_id": qid, "doc_id": doc_ids[d], "near_duplicates": missed})

    flags = {
        "leakage": leakage,
        "duplicate_questions": duplicates,
        "near_duplicate_questions": _near_duplicate_questions(questions, filters, rules),
        "title_questions": title_questions,
        "unlabelled_near_duplicates": unlabelled,
    }
    flagged = {qid for kind in FLAG_KINDS for qid in _flagged_ids(kind, flags[kind])}
    return {
        "schema_version": 1,
        "rules": rules.as_dict(),
        "questions": len(questions),
        "passages": len(documents),
        "counts": {kind: len(flags[kind]) for kind in FLAG_KINDS}
        | {"flagged_questions": len(flagged), "labelled_passages": len(labelled)},
        "flags": flags,
    }


def _plain(value: Any) -> Any:
    """A question's filter as plain JSON values (the loader keeps it read-only)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _flagged_ids(kind: str, entries: Sequence[Mapping[str, Any]]) -> list[str]:
    ids = [qid for e in entries for qid in (e["query_ids"] if "query_ids" in e else [e["query_id"]])]
    return list(dict.fromkeys(ids))


_TITLES = {
    "leakage": "question text found verbatim in a passage",
    "duplicate_questions": "exact duplicate questions",
    "near_duplicate_questions": "near-duplicate questions",
    "title_questions": "question equal to a passage title",
    "unlabelled_near_duplicates": "labelled passage with an unlabelled near-duplicate",
}


def flag_lines(corpus: str, report: Mapping[str, Any], shown: int = 20) -> list[str]:
    """One line per flag kind raised, naming the corpus, the flag and the question ids (the first ``shown``)."""
    lines = []
    for kind in FLAG_KINDS:
        ids = _flagged_ids(kind, report["flags"][kind])
        if ids:
            more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
            lines.append(f"{corpus}: {_TITLES[kind]} ({kind}): questions {', '.join(ids[:shown])}{more}")
    return lines
