"""The one wording table: each note code the evidence stores, said once in words for the pages."""

from __future__ import annotations

import ast
import re

import pytest

from sitegen import wording
from tests.helpers import REPO


def test_each_note_code_reads_as_its_sentence_with_the_numbers_filled_in() -> None:
    assert wording.note("too_few_differing", differing=3, questions=60, minimum=6) == (
        "too few questions to test: 3 of 60 questions differ (minimum 6)"
    )
    assert wording.note("interval_not_corrected", tests=12, correction="Holm-Bonferroni", alpha=0.05) == (
        "the 95% interval excludes 0 but the test, corrected for 12 comparisons (Holm-Bonferroni), does not "
        "reject at 0.05: the interval is not corrected for the family"
    )
    assert wording.note("interval_includes_zero", tests=2, correction="Benjamini-Hochberg", alpha=0.05) == (
        "the test, corrected for 2 comparisons (Benjamini-Hochberg), rejects at 0.05 but the 95% interval "
        "includes 0: the interval resamples questions, the test flips signs"
    )
    assert wording.note("fold_too_small", fold="A", questions=wording.count(1, "question"), settings=5) == (
        "fold A has 1 question, fewer than the 5 settings it chooses among: the choice is not evidence"
    )


def test_a_code_the_table_lacks_is_an_error_not_a_blank() -> None:
    with pytest.raises(KeyError):
        wording.note("no_such_code")


def _string_constants(path: str) -> set[str]:
    tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def test_the_codes_sitegen_writes_and_the_audit_expects_are_the_table_s_and_no_sentence_is_repeated() -> None:
    writers = ("sitegen/scoring/experiments.py", "sitegen/scoring/significance.py")  # the held-out and the pair notes
    written = set().union(*(_string_constants(path) for path in writers))
    assert set(wording.NOTES) <= written
    for path in (*writers, "sitegen/audit.py"):
        constants = _string_constants(path)
        if path.endswith("audit.py"):
            assert set(wording.NOTES) <= constants, path
        for sentence in wording.NOTES.values():
            longest = max(re.split(r"\{[a-z]+\}", sentence), key=len).strip()
            assert len(longest) > 20 and not any(longest in text for text in constants), f"{path} repeats {longest!r}"


def test_a_page_says_a_code_in_words_and_an_older_bundle_s_sentence_as_it_is() -> None:
    from sitegen.publish.pages.corpus import _fold_note, _pair_note

    sig = {"min_differing": 10, "family": {"size": 4}, "correction_name": "Holm-Bonferroni", "alpha": 0.05}
    assert _pair_note({"note": "too_few_differing", "differing": 2}, sig, 12) == (
        "too few questions to test: 2 of 12 questions differ (minimum 10)"
    )
    assert _pair_note({"note": "interval_includes_zero", "differing": 9}, sig, 12).startswith(
        "the test, corrected for 4 comparisons"
    )
    assert _pair_note({"note": "a sentence an older bundle stored"}, sig, 12) == "a sentence an older bundle stored"
    assert _pair_note({"note": None}, sig, 12) is None
    assert _fold_note({"note": "fold_too_small", "tune_size": 3, "tune_on": "B"}, 5) == (
        "fold B has 3 questions, fewer than the 5 settings it chooses among: the choice is not evidence"
    )
