"""Words shared by messages, pages and evidence: the one plural helper (so "1 question" and "2 questions" cannot
drift apart from one place to the next), a value's type with its article, for messages, and the one table of
what each note code in the evidence says.

The evidence stores a note as a short code (``experiments.json``: a paired test's ``note``, a held-out fold's);
the page says it in the sentence :data:`NOTES` gives, filled in from the numbers beside the code. The audit
recomputes the codes, never the sentences, so a change of wording is made here alone.
"""

from __future__ import annotations

__all__ = ["NOTES", "a_type", "count", "note"]

#: Note code -> its sentence, with the fields :func:`note` fills in.
NOTES = {
    # a paired test with fewer differing questions than the minimum: left out of the family
    "too_few_differing": "too few questions to test: {differing} of {questions} questions differ (minimum {minimum})",
    # the interval excludes 0, the corrected test does not reject
    "interval_not_corrected": "the 95% interval excludes 0 but the test, corrected for {tests} comparisons "
    "({correction}), does not reject at {alpha}: the interval is not corrected for the family",
    # the corrected test rejects, the interval includes 0
    "interval_includes_zero": "the test, corrected for {tests} comparisons ({correction}), rejects at {alpha} but "
    "the 95% interval includes 0: the interval resamples questions, the test flips signs",
    # a held-out fold with fewer questions than the settings it chooses among
    "fold_too_small": "fold {fold} has {questions}, fewer than the {settings} settings it chooses among: the choice "
    "is not evidence",
}


def count(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` and the noun that agrees with it: ``count(1, "question")`` is "1 question", ``count(0, "corpus",
    "corpora")`` is "0 corpora"; without ``plural`` an "s" is added."""
    return f"{n} {singular if n == 1 else (plural if plural is not None else singular + 's')}"


def a_type(value: object) -> str:
    """What a value is, with the article that agrees: "an int", "a dict", "None" (never "a int", "a NoneType")."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def note(code: str, **values: object) -> str:
    """The sentence of a note code, filled in with ``values``; a code :data:`NOTES` lacks is a KeyError."""
    return NOTES[code].format(**values)
