"""The audit's forked workers give what one process gives, in the same order, and survive a child that dies."""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np
import pytest

from sitegen import audit
from tests.unit.audit.test_bm25_recomputation import WORDS, reference_bm25

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the audit forks workers on Linux only")


@pytest.mark.parametrize("workers", [2, 3, 4])
@pytest.mark.parametrize("items", [0, 1, 5, 7, 8, 23])
def test_workers_return_each_item_s_result_in_order(workers: int, items: int) -> None:
    parent = os.getpid()
    results = audit.in_workers(lambda i: (i * i, os.getpid() != parent), list(range(items)), workers)
    assert [r for r, _ in results] == [i * i for i in range(items)]
    if items >= 2 * workers:  # the later runs of items were computed in children
        assert any(forked for _, forked in results)
        assert not results[0][1]


def test_a_child_that_dies_has_its_items_computed_again_in_the_parent() -> None:
    parent = os.getpid()

    def work(i: int) -> int:
        if os.getpid() != parent and i == 9:
            os._exit(3)  # as if the kernel had killed the child
        return -i

    assert audit.in_workers(work, list(range(12)), 2) == [-i for i in range(12)]


def test_an_error_in_a_child_s_items_is_raised_as_without_workers() -> None:
    def work(i: int) -> int:
        if i == 10:
            raise audit.AuditError("item 10 is unreadable")
        return i

    with pytest.raises(audit.AuditError, match="item 10 is unreadable"):
        audit.in_workers(work, list(range(12)), 2)


def bm25_many(questions: int) -> tuple[object, dict]:
    """A fake bundle and a BM25 run of many questions, with two of them tampered with (one in each half)."""
    from types import SimpleNamespace

    rng = np.random.default_rng(11)
    text = {f"d{i:03d}": " ".join(rng.choice(WORDS, size=int(rng.integers(3, 12)))) for i in range(120)}
    asked = {f"q{i:02d}": {"text": " ".join(rng.choice(WORDS, size=3))} for i in range(questions)}
    inputs = SimpleNamespace(doc_text=text, queries=asked, texts=True)
    bundle = SimpleNamespace(inputs=lambda corpus: inputs, words=lambda corpus: audit.words_of(text.values()))
    docs = {d: audit.tokens(t) for d, t in text.items()}
    run_queries = {}
    for q, scores in reference_bm25(docs, {q: audit.tokens(v["text"]) for q, v in asked.items()}, 1.2, 0.75):
        ranked = sorted(scores, key=lambda d: (-scores[d], d))[:5]
        run_queries[q] = [{"doc_id": d, "rank": r, "score": scores[d]} for r, d in enumerate(ranked, start=1)]
    for q in ("q03", f"q{questions - 2:02d}"):
        run_queries[q][1]["score"] *= 1 + 1e-6
    run = {"params": {"k1": 1.2, "b": 0.75, "stemmed": False, "stop_words": []}, "queries": run_queries, "depth": 5}
    return bundle, run


def test_the_bm25_check_split_between_workers_reports_what_one_process_reports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reports = []
    for parallel_from, workers in ((10**18, 1), (0, 2), (0, 3)):
        monkeypatch.setattr(audit, "PARALLEL_FROM", parallel_from)
        monkeypatch.setattr(audit, "_workers", lambda n=workers: n)
        bundle, run = bm25_many(40)
        check = audit.Check("run")
        detail = audit._verify_bm25(check, bundle, "c", run, "runs/bm25.json")
        reports.append((detail, check.mismatches))
    assert len(reports[0][1]) == 2 and "query q03" in reports[0][1][0] and "query q38" in reports[0][1][1]
    assert reports[1] == reports[0] and reports[2] == reports[0]


@pytest.mark.parametrize("workers", [2, 3])
@pytest.mark.parametrize("seed", range(5))
def test_texts_tokenised_by_workers_give_the_words_one_process_gives(
    monkeypatch: pytest.MonkeyPatch, workers: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    vocab = [*WORDS, "Über", "naïve", "e4_012", ""]
    texts = {
        f"d{i}": " ".join(rng.choice(vocab, size=int(rng.integers(0, 9)))) + rng.choice([".", "", "!?"])
        for i in range(int(rng.integers(7, 60)))
    }
    monkeypatch.setattr(audit, "WORDS_PARALLEL_FROM", 0)
    monkeypatch.setattr(audit, "_workers", lambda: workers)
    split, whole = audit.words_in_workers(texts), audit.words_of(texts.values())
    assert split.vocab == whole.vocab
    assert split.ids.dtype == whole.ids.dtype and np.array_equal(split.ids, whole.ids)
    assert split.starts.dtype == whole.starts.dtype and np.array_equal(split.starts, whole.starts)


def test_an_error_in_this_process_s_items_leaves_no_child_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    parent, forked = os.getpid(), []
    child_results = audit._child_results

    def recorded(work: Any, part: Any) -> tuple[int, int]:
        pid, read = child_results(work, part)
        forked.append(pid)
        return pid, read

    monkeypatch.setattr(audit, "_child_results", recorded)

    def work(i: int) -> bytes:
        if os.getpid() == parent and i == 1:
            raise audit.AuditError("item 1 is unreadable")
        return b"x" * 200_000  # more than a pipe holds: a child left alone would wait on its write for ever

    with pytest.raises(audit.AuditError, match="item 1 is unreadable"):
        audit.in_workers(work, list(range(8)), 2)
    assert forked
    for pid in forked:
        with pytest.raises(ChildProcessError):  # reaped already
            os.waitpid(pid, os.WNOHANG)
