"""Counts in words: the one plural helper every message and page uses, so "1 question" and "2 questions"
cannot drift apart from one place to the next; and a value's type with its article, for messages."""

from __future__ import annotations

__all__ = ["a_type", "count"]


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
