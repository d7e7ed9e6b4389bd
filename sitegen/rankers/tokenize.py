"""Tokenisers for the lexical rankers; the audit reimplements these rules on its own.

``tokenize``: lowercase (``str.lower``), then every maximal run of Unicode letters
and digits is a token; everything else (punctuation, ``_``, ``.``, spaces) separates.

``tokenize_stemmed``: the same tokens, minus a small English stop list, each
passed through :func:`strip_plural`.
"""

from __future__ import annotations

import functools
import re

__all__ = ["STOP_WORDS", "strip_plural", "tokenize", "tokenize_stemmed"]

_TOKEN = re.compile(r"[^\W_]+")

STOP_WORDS: frozenset[str] = frozenset(
    """a about after all also an and any are as at be because been before being but by can
    could did do does doing for from had has have having he her here hers him his how i if in
    into is it its itself just me more most my no nor not of off on once only or other our ours
    out over own same she should so some such than that the their theirs them then there these
    they this those through to too under until up very was we were what when where which while
    who whom why will with would you your yours""".split()
)


def tokenize(text: str) -> list[str]:
    """Lowercased runs of letters and digits, in order, repeats kept."""
    return _TOKEN.findall(text.lower())


@functools.lru_cache(maxsize=1 << 20)  # a corpus repeats its words: stem each once
def strip_plural(token: str) -> str:
    """Strip an English plural ending from an alphabetic token longer than three letters.

    Rules, first match wins: ``-ies`` -> ``-y``; ``-sses``/``-xes``/``-zes``/``-ches``/``-shes``
    lose ``-es``; ``-ss``/``-us``/``-is`` stay; any other ``-s`` is dropped.
    """
    if len(token) <= 3 or not token.isalpha():
        return token
    if token.endswith("ies") and len(token) > 4:
        return token[:-3] + "y"
    if token.endswith(("sses", "xes", "zes", "ches", "shes")):
        return token[:-2]
    if token.endswith(("ss", "us", "is")):
        return token
    if token.endswith("s"):
        return token[:-1]
    return token


def tokenize_stemmed(text: str) -> list[str]:
    """Tokens without stop words, plurals stripped."""
    return [strip_plural(t) for t in tokenize(text) if t not in STOP_WORDS]
