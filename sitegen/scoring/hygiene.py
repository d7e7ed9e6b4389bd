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
compared blindly: the passages are tokenised in chunks of ``_CHUNK_PASSAGES``, each chunk at once (an ASCII
chunk without a regular expression: its separating characters become spaces), every word gets an id (a hash of
its bytes, made for the whole chunk with numpy), every window of ids is hashed, the hashes are looked up among
the questions' n-grams (and the labelled passages' shingles, and for the titles the questions' first and last
words; each lookup table is made once, for every chunk), and each hit is confirmed word by word. Only one
chunk's words stay in memory, with the labelled passages' shingle sets: memory does not grow with the corpus's
words. The hashes only propose candidates; every flag is decided on the words and Jaccard thresholds are
compared in integers, so the flags are the same on every machine and every run.

A corpus of at least ``_FORK_MIN_PASSAGES`` passages has its chunks split into runs of consecutive chunks, one
per CPU this process may use (at most ``_MOST_WORKERS``), searched side by side in forked processes
(:func:`sitegen.parallel.in_forks`); the runs' findings are merged in passage order, which is what one process
searching every chunk in turn finds.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from sitegen.inputs.corpus import Corpus, Document, passage_text
from sitegen.parallel import in_forks, workers
from sitegen.rankers.tokenize import tokenize

__all__ = ["FLAG_KINDS", "RULES", "HygieneRules", "flag_lines", "hygiene_report"]


_BASE = np.uint64(0x9E3779B97F4A7C15)  # odd, so the hash of a window mixes every word id
_MASK = (1 << 64) - 1
_FILTER_BITS = 24
_CHUNK_PASSAGES = 8192  # passages tokenised and hashed together: bounds the memory, amortises numpy calls
_FORK_MIN_PASSAGES = 50_000  # fewer passages are searched in this process: a fork would cost more than it saves
_MOST_WORKERS = 4  # each process holds a chunk's words and copies the memory pages of the passages it reads
# Every ASCII character tokenize() separates words on (all but letters and digits), as a space.
_ASCII_SEPARATORS = str.maketrans({chr(c): " " for c in range(128) if not tokenize(chr(c))})
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
    hashes = ids[:count].copy()
    for offset in range(1, length):
        hashes *= _BASE
        hashes += ids[offset : offset + count]
    return hashes


def _hash(ids: Sequence[int]) -> int:
    """:func:`_window_hashes` of one window, in Python integers."""
    value = 0
    for word_id in ids:
        value = (value * int(_BASE) + word_id) & _MASK
    return value


# The low k bytes of a little-endian 64-bit number, for k = 0 to 8.
_LOW_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [_MASK], dtype=np.uint64)


def _mix(values: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place: every bit of a value moves the low bits the lookups filter on."""
    values ^= values >> np.uint64(30)
    values *= np.uint64(0xBF58476D1CE4E5B9)
    values ^= values >> np.uint64(27)
    values *= np.uint64(0x94D049BB133111EB)
    values ^= values >> np.uint64(31)
    return values


def _spaced_words(data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The words of ``data`` (UTF-8, spaces between the words): their start and end offsets, and their ids. A
    word's id is a hash of its bytes, 8 at a time, made for every word at once with numpy (not a Python call per
    word); it is the same for the same word wherever it is, in any process."""
    text = np.frombuffer(data, dtype=np.uint8)
    inside = np.zeros(len(text) + 2, dtype=bool)
    inside[1:-1] = text != ord(" ")
    edges = np.flatnonzero(inside[1:] != inside[:-1])
    starts, ends = edges[0::2], edges[1::2]
    lengths = ends - starts
    padded = np.zeros(len(text) + 8, dtype=np.uint8)
    padded[: len(text)] = text
    blocks = sliding_window_view(padded, 8)  # the 8 bytes from each offset, as a view
    ids = blocks[starts].view("<u8")[:, 0] & _LOW_BYTES[np.minimum(lengths, 8)]
    for offset in range(8, int(lengths.max(initial=0)), 8):  # the next 8 bytes of the longer words
        longer = np.flatnonzero(lengths > offset)
        more = blocks[starts[longer] + offset].view("<u8")[:, 0] & _LOW_BYTES[np.minimum(lengths[longer] - offset, 8)]
        ids[longer] = _mix(ids[longer]) ^ more
    return starts, ends, _mix(ids)


def _word_ids(words: Sequence[str]) -> list[int]:
    """Each word's id (:func:`_spaced_words`). Ids only propose candidates; every flag is then decided on the
    words themselves."""
    return _spaced_words(" ".join(words).encode())[2].tolist()


class _Lookup:
    """A set of window hashes to look for in every chunk, made once: the sorted values, and a bitmap of their low
    bits that rules most windows out at once (a binary search in the sorted values confirms the rest)."""

    def __init__(self, wanted: Iterable[int] | np.ndarray) -> None:
        values = wanted if isinstance(wanted, np.ndarray) else np.fromiter(wanted, dtype=np.uint64)
        self.table = np.unique(values.astype(np.uint64))
        bits = min(_FILTER_BITS, max(10, len(self.table).bit_length() + 6))  # at most 1 in 64 bits set
        self.low = np.uint64((1 << bits) - 1)
        self.bitmap = np.zeros(1 << bits, dtype=bool)
        self.bitmap[(self.table & self.low).astype(np.int64)] = True

    def found(self, hashes: np.ndarray) -> np.ndarray:
        """Positions of ``hashes`` whose value is among the wanted ones."""
        if not len(self.table) or not len(hashes):
            return np.zeros(0, dtype=np.int64)
        maybe = np.flatnonzero(self.bitmap[(hashes & self.low).astype(np.int64)])
        at = np.minimum(np.searchsorted(self.table, hashes[maybe]), len(self.table) - 1)
        return maybe[self.table[at] == hashes[maybe]]


class _Passages:
    """Every passage's words (and their ids in one array), each passage after a separator word."""

    def __init__(self, texts: Sequence[str]) -> None:
        # The texts are tokenised at once (C loops, not 100,000), joined by a word none of them holds: one that
        # occurs in the lowercased whole only where it was put (it cannot straddle a text and the spaces around
        # it, nor overlap itself). Spaces delimit every text, so each lowercases as it would alone.
        for n in itertools.count():
            separator = f"sep{n}"
            joined = f"{separator} " + f" {separator} ".join(texts)
            lowered = joined.lower()
            if lowered.count(separator) == max(len(texts), 1):  # as many as were put
                break
        self.tokens: list[str] | None = None
        if lowered.isascii():  # tokenize() without a regular expression: a space for every separating character
            self.text = lowered.translate(_ASCII_SEPARATORS)
            data = self.text.encode("ascii")  # byte offsets are the text's
        else:
            self.tokens = tokenize(joined)
            data = " ".join(self.tokens).encode()
        self.at, self.to, self.ids = _spaced_words(data)
        maybe = np.flatnonzero(self.ids == np.uint64(_word_ids([separator])[0]))
        if len(maybe) != max(len(texts), 1):  # more words than the separators have its id: keep the separators
            maybe = np.array([i for i in maybe.tolist() if self.span(i, i + 1) == [separator]], dtype=np.int64)
        self.starts = maybe + 1
        self.ends = np.append(self.starts[1:] - 1, len(self.ids)).astype(np.int64)

    def span(self, start: int, stop: int) -> list[str]:
        """The words from position ``start`` to ``stop``."""
        if self.tokens is not None:
            return self.tokens[start:stop]
        at, to = self.at[start:stop].tolist(), self.to[start:stop].tolist()
        return [self.text[a:b] for a, b in zip(at, to, strict=True)]

    def passage_at(self, positions: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.starts, positions, side="right") - 1

    def words(self, index: int) -> list[str]:
        return self.span(int(self.starts[index]), int(self.ends[index]))


class _Leaks:
    """The questions' word sequences to look for in every chunk, made once: each ``leak_ngram``-gram of a long
    question, and a short question whole. A chunk's windows are looked up by the hash of a gram's first words
    (all of an n-gram's, a short question's first ``leak_min_words``); at each hit the hash is extended to the
    grams' lengths and looked up again, and only a hit on a whole gram's hash is compared word by word."""

    def __init__(self, questions: Sequence[tuple[str, list[str]]], rules: HygieneRules) -> None:
        self.grams: dict[int, dict[int, list[tuple[str, list[str]]]]] = {}  # length -> hash -> (question, words)
        firsts: dict[int, set[int]] = {}  # probe length -> hashes of the grams' first words
        self.lengths: dict[int, set[int]] = {}  # probe length -> lengths of the grams found through it
        all_ids = _word_ids([word for _, words in questions for word in words])
        ends = itertools.accumulate(len(words) for _, words in questions)
        for (qid, words), end in zip(questions, ends, strict=True):
            if len(words) < rules.leak_min_words:
                continue  # too short to say anything
            ids = all_ids[end - len(words) : end]
            if len(words) >= rules.leak_ngram:
                probe, grams = rules.leak_ngram, range(len(words) - rules.leak_ngram + 1)
            else:  # a short question: found through its first leak_min_words words, then confirmed whole
                probe, grams = rules.leak_min_words, range(1)
            length = min(len(words), rules.leak_ngram)
            for i in grams:
                key = _hash(ids[i : i + length])
                self.grams.setdefault(length, {}).setdefault(key, []).append((qid, words[i : i + length]))
                firsts.setdefault(probe, set()).add(_hash(ids[i : i + probe]))
                self.lengths.setdefault(probe, set()).add(length)
        self.probes = {probe: _Lookup(hashes) for probe, hashes in firsts.items()}
        self.whole = {length: _Lookup(grams) for length, grams in self.grams.items()}

    def add(self, passages: _Passages, offset: int, leaks: dict[str, set[int]]) -> None:
        """Adds to ``leaks`` (question id -> indexes of the passages it leaks into) the leaks into one chunk of
        passages, the first of which has index ``offset``."""
        ids = passages.ids
        for probe, lookup in sorted(self.probes.items()):
            windows = _window_hashes(ids, probe)
            at = lookup.found(windows)
            hashes, whole = windows[at], np.ones(len(at), dtype=bool)  # whole: the window is in the chunk
            for length in range(probe, max(self.lengths[probe]) + 1):
                if length > probe:  # the hash of one more word
                    word = at + length - 1
                    whole &= word < len(ids)
                    hashes = hashes * _BASE + ids[np.minimum(word, len(ids) - 1)]
                if length in self.lengths[probe]:
                    hits = np.flatnonzero(whole)[self.whole[length].found(hashes[whole])]
                    self._confirm(passages, self.grams[length], at[hits], hashes[hits], offset, leaks)

    @staticmethod
    def _confirm(
        passages: _Passages,
        grams: Mapping[int, list[tuple[str, list[str]]]],
        positions: np.ndarray,
        hashes: np.ndarray,
        offset: int,
        leaks: dict[str, set[int]],
    ) -> None:
        """Compares the ``grams`` with each hash with the words at its position, inside their passage."""
        owners = passages.passage_at(positions)
        for position, owner, key in zip(positions.tolist(), owners.tolist(), hashes.tolist(), strict=True):
            if owner < 0:
                continue  # a window from the separator before the first passage: a question holding that word
            end = int(passages.ends[owner])
            for qid, gram in grams[key]:
                stop = position + len(gram)
                if stop <= end and owner + offset not in leaks.get(qid, ()) and passages.span(position, stop) == gram:
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
    """Finds each labelled passage's near-duplicates, one chunk of passages at a time. Only passages that share a
    shingle with a labelled passage (found by hash over the chunk at once) are compared, word for word; only the
    labelled passages' shingle sets are kept."""

    def __init__(self, labelled_texts: Mapping[int, str], rules: HygieneRules) -> None:
        self.size, self.threshold = rules.passage_shingle, rules.passage_jaccard
        order = sorted(labelled_texts)
        labelled = _Passages([labelled_texts[d] for d in order]) if order else None
        self.sets = {d: _shingles(labelled.words(i), self.size) for i, d in enumerate(order)} if labelled else {}
        self.owners: dict[tuple[str, ...], list[int]] = {}
        for d, shingles in self.sets.items():
            for shingle in shingles:
                self.owners.setdefault(shingle, []).append(d)
        keys = np.zeros(0, dtype=np.uint64)
        if labelled is not None:  # the hashes of the labelled passages' windows, as a chunk's are hashed
            hashes = _window_hashes(labelled.ids, self.size)
            at = np.arange(len(hashes))
            owner = labelled.passage_at(at)
            keys = hashes[(owner >= 0) & (at >= labelled.starts[owner]) & (at + self.size <= labelled.ends[owner])]
        self.keys = _Lookup(keys)  # a shorter passage's one shingle is looked up whole, not by hash

    def add(self, passages: _Passages, offset: int, near: dict[int, list[int]]) -> None:
        """Adds to ``near`` (labelled passage index -> indexes of its near-duplicates, ascending) those in one
        chunk of passages, the first of which has index ``offset``."""
        if not self.owners:
            return
        candidates = set(passages.passage_at(self.keys.found(_window_hashes(passages.ids, self.size))).tolist())
        candidates.discard(-1)  # a window from the separator before the first passage
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
                    near.setdefault(d, []).append(other)


@dataclass
class _Found:
    """What a run of chunks finds, by passage index. Runs merged in passage order find what one run over all the
    passages finds."""

    leaks: dict[str, set[int]] = field(default_factory=dict)  # question id -> passages it leaks into
    near: dict[int, list[int]] = field(default_factory=dict)  # labelled passage -> its near-duplicates, ascending
    titles: dict[str, list[int]] = field(default_factory=dict)  # a question's words -> passages with that title

    def merge(self, other: _Found) -> None:
        """Adds the findings of the run of chunks that follows this one."""
        for qid, found in other.leaks.items():
            self.leaks.setdefault(qid, set()).update(found)
        for d, others in other.near.items():
            self.near.setdefault(d, []).extend(others)
        for text, found in other.titles.items():
            self.titles.setdefault(text, []).extend(found)


class _Search:
    """What every chunk of passages is searched for, made once: the questions' n-grams and word sequences and the
    labelled passages' shingles."""

    def __init__(
        self,
        documents: Sequence[Document],
        questions: Sequence[tuple[str, list[str]]],
        labelled: Iterable[int],
        rules: HygieneRules,
    ) -> None:
        self.documents = documents
        self.leaks = _Leaks(questions, rules)
        self.near = _NearDuplicates({d: passage_text(documents[d]) for d in labelled}, rules)
        self.texts = {" ".join(words) for _, words in questions if words}
        said = [words for _, words in questions if words]
        ids = np.array(_word_ids([word for words in said for word in words]), dtype=np.uint64)
        lengths = np.array([len(words) for words in said], dtype=np.int64)
        ends = np.cumsum(lengths)
        self.title_keys = _Lookup(_ends_key(ids, ends - lengths, ends))

    def scan(self, passages: range) -> _Found:
        """The findings in one run of passages, chunk by chunk (a chunk starts at a multiple of
        ``_CHUNK_PASSAGES``, so the chunks are those of one run over every passage)."""
        found = _Found()
        for start in range(passages.start, passages.stop, _CHUNK_PASSAGES):
            documents = self.documents[start : min(start + _CHUNK_PASSAGES, passages.stop)]
            chunk = _Passages([passage_text(d) for d in documents])
            self.leaks.add(chunk, start, found.leaks)
            self.near.add(chunk, start, found.near)
            del chunk  # one chunk's words at a time
            if self.texts and any(d.title for d in documents):
                self._titles(_Passages([d.title for d in documents]), start, found.titles)
        return found

    def _titles(self, titles: _Passages, offset: int, found: dict[str, list[int]]) -> None:
        """Adds to ``found`` the chunk's passages whose title is a question's words. Only titles with a question's
        first and last words and number of words (by id) are compared whole."""
        said = np.flatnonzero(titles.ends > titles.starts)
        maybe = said[self.title_keys.found(_ends_key(titles.ids, titles.starts[said], titles.ends[said]))]
        for index in maybe.tolist():
            if (text := " ".join(titles.words(index))) in self.texts:
                found.setdefault(text, []).append(offset + index)


def _ends_key(ids: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """A key of each word sequence from ``starts`` to ``ends`` (not empty): its first and last words' ids and its
    number of words."""
    return (ids[starts] * _BASE + ids[ends - 1]) * _BASE + (ends - starts).astype(np.uint64)


def _runs(passages: int) -> list[range]:
    """The passages split into runs of whole chunks, one per process (one when forking would not pay)."""
    chunks = -(-passages // _CHUNK_PASSAGES)
    count = min(workers(_MOST_WORKERS), chunks) if passages >= _FORK_MIN_PASSAGES else 1
    bounds = [chunks * i // count * _CHUNK_PASSAGES for i in range(count)] + [passages]
    return [range(a, b) for a, b in itertools.pairwise(bounds)]


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
    documents = corpus.documents
    doc_ids = [d.doc_id for d in documents]
    position = {d: i for i, d in enumerate(doc_ids)}
    labelled = {position[d] for grades in corpus.qrels.values() for d, g in grades.items() if g > 0 and d in position}

    found = _Found()
    search = _Search(documents, questions, labelled, rules)
    for part in in_forks(search.scan, _runs(len(documents))):  # each run of chunks, in passage order
        found.merge(part)
    leaks, near = found.leaks, found.near
    leakage = [
        {"query_id": qid, "doc_ids": [doc_ids[i] for i in sorted(leaks[qid])]} for qid, _ in questions if qid in leaks
    ]

    by_text: dict[tuple[str, str], list[str]] = {}
    for qid, words in questions:
        if words:
            by_text.setdefault((filters[qid], " ".join(words)), []).append(qid)
    duplicates = [{"query_ids": ids, "text": text} for (_, text), ids in by_text.items() if len(ids) > 1]

    title_questions = [
        {"query_id": qid, "doc_ids": [doc_ids[i] for i in found.titles[text]]}
        for qid, words in questions
        if (text := " ".join(words)) in found.titles
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
