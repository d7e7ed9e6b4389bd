"""The render stage's shortcuts print what the slower ways printed: sourced spans joined as strings (not by
``Markup.format``), dict fields read as keys at once, links remembered, and runs cut to the hits a page shows."""

from __future__ import annotations

import json
import posixpath
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from jinja2 import Environment, StrictUndefined, UndefinedError
from markupsafe import Markup

from sitegen.errors import BundleError
from sitegen.publish.layout import CorpusFiles
from sitegen.publish.pages.base import environment, pointer_part, url_for, with_sources
from sitegen.publish.reader import CorpusReader, SiteFolder

#: A source and a question id that hold every character HTML escapes: they are corpus text, never markup.
UNSAFE = '<b>"it\'s" & co</b>'


def _render(template: str, **context: Any) -> str:
    return environment().from_string(template).render(context)


def _sourced(value: float | int, pointer: str) -> Any:
    return with_sources({"v": value}, f"evidence/c/{pointer}")["v"]


def test_a_sourced_number_prints_the_span_markup_format_printed_with_its_source_escaped() -> None:
    value = _sourced(0.1234567, UNSAFE)
    src = f"evidence/c/{UNSAFE}#/v"
    assert _render("{{ v }}", v=value) == Markup('<span data-ev="{}">{}</span>').format(src, "0.1234567")
    for name, text in (("score", "0.123"), ("pvalue", "0.12")):
        expected = Markup('<span data-ev="{}" data-fmt="{}">{}</span>').format(src, name, text)
        assert _render(f"{{{{ v | {name} }}}}", v=value) == expected
    small = _sourced(0.001, "p.json")
    expected = Markup('<span data-ev="{}" data-fmt="{}">{}</span>').format("evidence/c/p.json#/v", "pvalue", "< 0.01")
    assert _render("{{ v | pvalue }}", v=small) == expected


@pytest.mark.parametrize("fmt", [None, "short", "raw", "score6"])
def test_a_number_in_a_table_prints_the_span_markup_format_printed(fmt: str | None) -> None:
    run = with_sources({"queries": {UNSAFE: [["d", 15.234567, [3]]]}}, "evidence/c/runs/r.json")
    hit = run["queries"][UNSAFE][0]
    table = {"base": "evidence/c/runs/r.json#/queries", "fmt": "short"}
    value = hit[2][0] if fmt == "raw" else hit[1]
    args = "" if fmt is None else f', "{fmt}"'
    shown = _render(f"{{{{ v | ev_in(t{args}) }}}}", v=value, t=table)
    name = fmt or "short"
    text = {"short": "15.23", "raw": "3", "score6": "15.234567"}[name]
    stated = Markup("") if name == "short" else Markup(' data-fmt="{}"').format(name)
    if name == "short":
        stated += Markup(' title="{}"').format("15.234567")
    rest = pointer_part(UNSAFE) + ("/0/2/0" if fmt == "raw" else "/0/1")
    assert shown == Markup('<span data-ev="{}"{}>{}</span>').format(rest, stated, text)


def test_a_number_outside_its_tables_base_is_still_refused() -> None:
    value = _sourced(1.0, "metrics.json")
    with pytest.raises(ValueError, match="not under the table's evidence base"):
        _render("{{ v | ev_in(t) }}", v=value, t={"base": "evidence/c/other.json#", "fmt": "score"})


def test_a_dict_field_reads_as_jinjas_own_lookup_reads_it() -> None:
    plain = Environment(autoescape=True, undefined=StrictUndefined)
    fields = {"items": 5, "name": UNSAFE, "nested": {"get": 1}}
    template = "{{ d.name }} {{ d.items() | list | length }} {{ d.nested.get('get') }} {{ d.get('items') }}"
    assert _render(template, d=fields) == plain.from_string(template).render(d=fields)
    for env in (environment(), plain):
        with pytest.raises(UndefinedError):
            env.from_string("{{ d.missing }}").render(d=fields)


@pytest.mark.parametrize(
    ("page", "target"),
    [
        ("corpora/c/questions/q.html", "corpora/c/passages/1.html#p3"),
        ("corpora/c/questions/q.html", "corpora/c/"),
        ("corpora/c/index.html", "#failures"),
        ("index.html", "corpora/c/a b.html"),
        ("corpora/c/index.html", "index.html"),
    ],
)
def test_a_link_is_the_relative_path_from_its_page_however_often_it_is_asked_for(page: str, target: str) -> None:
    path, _, fragment = target.partition("#")
    relative = posixpath.relpath(path, posixpath.dirname(page) or ".") if path else posixpath.basename(page)
    if path.endswith("/") and not relative.endswith("/"):
        relative += "/"
    expected = quote(relative) + (f"#{fragment}" if "#" in target else "")
    assert url_for(page)(target) == url_for(page)(target) == expected


def _run_site(tmp_path: Path, hits: list[Any]) -> SiteFolder:
    rel = tmp_path / CorpusFiles("c").run("r")
    rel.parent.mkdir(parents=True)
    doc = {"schema_version": 3, "params": {"components": ["a"]}, "queries": {"q/1": hits, "q2": hits[:1]}}
    rel.write_text(json.dumps(doc), encoding="utf-8")
    return SiteFolder(tmp_path)


def test_a_reader_that_cuts_runs_keeps_each_questions_first_hits_with_the_sources_of_the_whole_run(
    tmp_path: Path,
) -> None:
    source = _run_site(tmp_path, [["d1", 0.9, [1]], ["d2", 0.5, [3]], ["d3", 0.1, [2]]])
    whole = CorpusReader(source, "c", with_sources).run("r")
    cut = CorpusReader(source, "c", with_sources, top=2).run("r")
    assert {q: len(h) for q, h in cut["queries"].items()} == {"q/1": 2, "q2": 1}
    assert cut["queries"]["q/1"] == whole["queries"]["q/1"][:2]
    sources = [(h["score"].src, h["components"]["a"].src) for h in cut["queries"]["q/1"]]
    assert sources == [(h["score"].src, h["components"]["a"].src) for h in whole["queries"]["q/1"][:2]]
    assert sources[1] == ("evidence/c/runs/r.json#/queries/q~11/1/1", "evidence/c/runs/r.json#/queries/q~11/1/2/0")
    assert cut["params"] == whole["params"] and cut["params"]["components"] == ["a"]


def test_a_reader_that_cuts_runs_still_refuses_a_bad_hit_it_would_not_keep(tmp_path: Path) -> None:
    source = _run_site(tmp_path, [["d1", 0.9, [1]], ["d2", 0.5, [3]], ["d3", "high", [2]]])
    with pytest.raises(BundleError, match="hit 3"):
        CorpusReader(source, "c", with_sources, top=2).run("r")
