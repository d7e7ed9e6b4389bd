"""The pages check's reader of sourced numbers finds exactly what html.parser finds: on hand-written corner cases, on
the committed site's pages, and on any mix of them."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitegen import audit
from tests.helpers import REPO, examples


def _html_parser_numbers(text: str) -> list[tuple[str, str, str]]:
    parser = audit._SourcedNumbers()
    parser.feed(text)
    return parser.numbers


SPAN = '<span data-ev="evidence/c/metrics.json#/a/0" data-fmt="score">0.500</span>'


PAGES = [
    f"<!DOCTYPE html><html><head><title>t</title><style>p > a {{ x: 1 }}</style></head><body>{SPAN}</body></html>",
    f"<p>{SPAN}<!-- {SPAN.replace('0.500', '9')} --></p>",  # a comment: html.parser's
    f"<script>let s = '{SPAN.replace('0.500', '9')}';</script>{SPAN}",  # script content is text
    "<SCRIPT>x</SCRIPT ><SPAN DATA-EV='evidence/x.json#/b' data-fmt=raw>1</SPAN>",
    '<table data-ev-base="evidence/c/runs/bm25.json#/queries" data-ev-fmt="score6"><tr><td>'
    '<span data-ev="q1/0/score">1.250000</span></td><td><span data-ev="evidence/o.json#/x">2</span></td></tr></table>'
    '<span data-ev="q1/0/score">3</span>',
    '<span data-ev="evidence/a.json#/x" data-fmt="raw">1 &amp; 2 &lt;3&gt; &#x41;&ampx</span>',
    '<span data-ev="evidence/a.json#/x&amp;y">1</span><span data-ev="">2</span><span data-ev>3</span>',
    '<span data-ev="evidence/a.json#/x"><b>1</b>2</span>',  # a tag inside a number
    '<span data-ev="evidence/a.json#/x"><span data-ev="evidence/b.json#/y">1</span>2</span>',
    '<span data-ev="evidence/a.json#/x"/>after</span><table data-ev-base="evidence/t.json#"/>'
    '<span data-ev="z">4</span>',
    '<details open class="x"><summary>s</summary><span data-ev="evidence/a.json#/x">5</span></details>',
    '<title><span data-ev="evidence/a.json#/x">6</span></title>',
    f"<p>a < b {SPAN}</p>",
    f'<a href="x?a=1&b=2" title="a > b">{SPAN}</a>',
    f"<style>{SPAN}",  # unclosed style: html.parser waits for its end and sees nothing
    f"{SPAN}<span data-ev='evidence/a.json#/q' data-fmt=\"raw\">7",
    f'<div\nclass="a"\n>{SPAN}</div\n><br/><img src="x" />',
]


@pytest.mark.parametrize("page", PAGES)
def test_the_pages_check_finds_the_numbers_html_parser_finds(page: str) -> None:
    assert audit._sourced_numbers(page) == _html_parser_numbers(page)


@pytest.mark.slow
def test_the_pages_check_finds_the_numbers_html_parser_finds_on_built_pages(built_site_pages: list[Path]) -> None:
    for path in built_site_pages:
        text = path.read_text(encoding="utf-8")
        numbers = audit._sourced_numbers(text)
        assert numbers == _html_parser_numbers(text), path
        mangled = text.replace('data-fmt="score"', 'data-fmt="raw"', 1)
        assert audit._sourced_numbers(mangled) == _html_parser_numbers(mangled), path


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(st.sampled_from([*PAGES, SPAN, "<p>", "</p>", "&amp;", "<", "<!-- x -->", "</span>", "<b>"]), max_size=8)
)
def test_the_pages_check_finds_the_numbers_html_parser_finds_in_any_mix(parts: list[str]) -> None:
    page = "".join(parts)
    assert audit._sourced_numbers(page) == _html_parser_numbers(page)


#: A folder of more pages than this (the question pages) is represented by this many, drawn by a fixed seed: they
#: share one template, and reading every one twice with both readers took half a minute.
PAGES_PER_FOLDER = 10


@pytest.fixture(scope="module")
def built_site_pages() -> list[Path]:
    """The committed site's pages (what sitegen writes), read only: every page of each template, and a seeded
    sample of the folders of many pages."""
    folders: dict[Path, list[Path]] = {}
    for page in sorted((REPO / "site").rglob("*.html")):
        folders.setdefault(page.parent, []).append(page)
    draw = random.Random(20261203)
    pages = [p for found in folders.values() for p in sorted(draw.sample(found, min(len(found), PAGES_PER_FOLDER)))]
    assert len(folders) > 5 and len(pages) > 50
    return pages
