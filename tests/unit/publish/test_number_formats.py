"""How a page prints a number, and the audit's own copy of each format: the two must agree on every value, or the
pages check fails an honest page (or passes a dishonest one)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitegen import audit
from sitegen.publish.pages.base import environment, format_delta, format_short


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0.0004, "+0.0004"), (-0.0004, "-0.0004"), (0.0125, "+0.013"), (0.0, "+0.000"), (3e-8, "+0.000000")],
)
def test_a_difference_shows_the_decimals_it_needs_not_plus_zero(value: float, shown: str) -> None:
    assert format_delta(value) == shown


def test_a_change_between_0_2874_and_0_2878_reads_as_a_change() -> None:
    assert format_delta(0.2878 - 0.2874) == "+0.0004"  # shown beside 0.287 and 0.288, never +0.000


@pytest.mark.parametrize(
    ("value", "shown"),
    [(15.234567, "15.23"), (0.543219, "0.5432"), (0.032787, "0.03279"), (1523.4, "1523"), (1e-7, "0.000000"), (0, "0")],
)
def test_a_short_score_keeps_about_four_significant_digits(value: float, shown: str) -> None:
    assert format_short(value) == shown


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@given(finite)
def test_the_audit_prints_delta_and_short_as_the_pages_do(value: float) -> None:
    assert audit.SHOWN_FORMATS["delta"](value) == format_delta(value)
    assert audit.SHOWN_FORMATS["short"](value) == format_short(value)


def test_a_short_number_carries_its_full_value_in_its_title_and_the_audit_reads_both() -> None:
    env = environment()
    table = {"base": "evidence/c/runs/bm25.json#/queries/q1", "fmt": "short"}

    class Sourced(float):
        src = "evidence/c/runs/bm25.json#/queries/q1/0/1"
        _plain = float

    html = env.from_string("<table>{{ v | ev_in(t) }}</table>").render(v=Sourced(15.234567), t=table)
    assert html == '<table><span data-ev="0/1" title="15.234567">15.23</span></table>'
    page = html.replace("<table>", f'<table data-ev-base="{table["base"]}" data-ev-fmt="short">')
    found = audit._sourced_numbers(page)
    assert found == [(Sourced.src, "short", "15.23"), (Sourced.src, "score6", "15.234567")]
    # a span that drops its title is a number the audit cannot match: an empty full value
    assert audit._sourced_numbers(page.replace(' title="15.234567"', ""))[-1] == (Sourced.src, "score6", "")
