"""Metadata filters: which passages a question may see, decided before ranking.

A question's ``filter`` is an object of conditions, all of which must hold. What each
key means is declared per corpus in ``sitegen.json`` under ``"filters"``; without a
declaration a key names a metadata field and means ``equals`` (a string value) or
``one-of`` (a list value). Operators:

- ``equals``:   the passage's field equals the value (a string);
- ``one-of``:   the passage's field is one of the values (a list of strings);
- ``on-or-after``: the passage's field, an ISO date ``YYYY-MM-DD``, is on or after the
  value, compared as dates (``"2025-02-01" >= "2025-1-31"`` would be wrong as strings,
  so both sides are parsed).

Example declaration (tenant-handbook)::

    "filters": {"tenant_id": {"field": "tenant_id", "op": "equals"},
                "published_after": {"field": "published_date", "op": "on-or-after"},
                "access_level": {"field": "access_level", "op": "one-of"}}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

__all__ = ["OPERATORS", "Condition", "FilterError", "compile_filter", "parse_vocabulary", "passes"]

OPERATORS = ("equals", "one-of", "on-or-after")


class FilterError(ValueError):
    """A filter or filter declaration that cannot be applied; the message says why."""


@dataclass(frozen=True)
class Condition:
    """One compiled condition: metadata ``field`` compared with ``value`` by ``op``."""

    key: str
    field: str
    op: str
    value: Any


def _iso_date(value: Any, what: str) -> date:
    if not isinstance(value, str):
        raise FilterError(f"{what} must be an ISO date string YYYY-MM-DD, got {value!r}")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise FilterError(f"{what} must be an ISO date YYYY-MM-DD, got {value!r}") from None


def parse_vocabulary(declared: Any) -> dict[str, tuple[str, str]]:
    """Validate a ``"filters"`` declaration: ``{key: {"field": str, "op": one of OPERATORS}}``."""
    if not isinstance(declared, dict):
        raise FilterError('"filters" must be an object of {key: {"field": ..., "op": ...}}')
    vocabulary = {}
    for key, spec in declared.items():
        if not isinstance(spec, dict) or set(spec) != {"field", "op"} or not isinstance(spec["field"], str):
            raise FilterError(f'filter key {key!r} must be declared as {{"field": NAME, "op": OPERATOR}}')
        if spec["op"] not in OPERATORS:
            raise FilterError(f"filter key {key!r}: unknown op {spec['op']!r}; known: {', '.join(OPERATORS)}")
        vocabulary[key] = (spec["field"], spec["op"])
    return vocabulary


def compile_filter(query_filter: Mapping[str, Any], vocabulary: Mapping[str, tuple[str, str]]) -> tuple[Condition, ...]:
    """Check a question's filter against the vocabulary and turn it into conditions."""
    conditions = []
    for key, value in query_filter.items():
        if vocabulary:
            if key not in vocabulary:
                raise FilterError(f"unknown filter field {key!r}; this corpus declares: {', '.join(vocabulary)}")
            field, op = vocabulary[key]
        else:
            field, op = key, "one-of" if isinstance(value, list) else "equals"
        if op == "equals" and not isinstance(value, str):
            raise FilterError(f"filter {key!r} takes a string, got {type(value).__name__}")
        if op == "one-of" and not (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
            raise FilterError(f"filter {key!r} takes a nonempty list of strings, got {value!r}")
        if op == "on-or-after":
            value = _iso_date(value, f"filter {key!r}")
        conditions.append(Condition(key=key, field=field, op=op, value=value))
    return tuple(conditions)


def passes(metadata: Mapping[str, Any], conditions: Sequence[Condition]) -> bool:
    """True when a passage's metadata meets every condition; a missing field fails."""
    for condition in conditions:
        actual = metadata.get(condition.field)
        if actual is None:
            return False
        if condition.op == "equals" and actual != condition.value:
            return False
        if condition.op == "one-of" and actual not in condition.value:
            return False
        if condition.op == "on-or-after" and _iso_date(actual, f"metadata {condition.field!r}") < condition.value:
            return False
    return True
