"""The rendered site: every link resolves under a sub-path, hostile text stays text, pages load cleanly."""

from __future__ import annotations

import ast
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from sitegen.publish.layout import page_name
from sitegen.publish.pages.base import render_markdown
from sitegen.rankers import DEFAULT_RANKERS
from tests.helpers import PG_RANKERS, REPO, build, write_corpus

HOSTILE_DOCS = [
    {"_id": "a/b", "title": "<script>alert(1)</script>", "text": "Template {{ 7*7 }} and {% raw %} stay text."},
    {"_id": "../x", "title": "Dots", "text": "**not bold** <b>not a tag</b> &amp; E4012"},
    {"_id": "Ünïcode id", "title": "Unicode", "text": "Ünïcode passage about E4012 refunds."},
    {"_id": "plain", "title": "Plain", "text": "A plain passage about payouts."},
]
HOSTILE_QUERIES = [
    {"_id": "q/1", "text": "<img src=x onerror=alert(2)> E4012", "kind": "<i>kind</i>"},
    {"_id": "../../etc/passwd", "text": "{{ 7*7 }} refunds", "kind": "exact-code"},
    {"_id": "Ünïcode q", "text": "{% raw %} payouts", "kind": "exact-code"},
]
HOSTILE_QRELS = [("q/1", "a/b", 1), ("../../etc/passwd", "Ünïcode id", 2), ("Ünïcode q", "plain", 1)]
HOSTILE_README = "# Hostile\n\n<script>alert(3)</script>\n\n{{ 7*7 }} and a [link](https://example.org/x).\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    write_corpus(root / "corpora" / "tiny")
    write_corpus(
        root / "corpora" / "hostile",
        docs=HOSTILE_DOCS,
        queries=HOSTILE_QUERIES,
        qrels=HOSTILE_QRELS,
        readme=HOSTILE_README,
    )
    (root / "bench").mkdir()
    shutil.copyfile(REPO / "bench" / "results.json", root / "bench" / "results.json")
    # every ranker but PostgreSQL's: each kind of page and link, without a server
    build(root / "corpora", root / "site", rankers=tuple(r for r in DEFAULT_RANKERS if r not in PG_RANKERS))
    return root / "site"


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src") and value is not None:
                self.links.append(value)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(html: str) -> _Links:
    parser = _Links()
    parser.feed(html)
    return parser


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The site served at http://127.0.0.1:PORT/project/sub/, as GitHub Pages serves a project site."""
    prefix = "/project/sub/"

    class Handler(http.server.SimpleHTTPRequestHandler):
        def translate_path(self, path: str) -> str:
            path = urlsplit(path).path
            if not path.startswith(prefix):
                return str(site / "__outside_the_sub_path__")
            return super().translate_path("/" + path[len(prefix) :])

        def log_message(self, *args) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}{prefix}"
    server.shutdown()
    server.server_close()


def _fetch(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=120) as response:  # a guard against a hang, not a measure
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, b""


def test_every_internal_link_resolves_when_served_from_a_sub_path(site: Path, served: str) -> None:
    seen: set[str] = set()
    queue = [served + "index.html"]
    broken = []
    pages = 0
    while queue:
        url = queue.pop()
        if url in seen:
            continue
        seen.add(url)
        status, body = _fetch(url)
        if status != 200:
            broken.append(url)
            continue
        if not url.endswith(".html"):
            continue
        pages += 1
        for link in _parse(body.decode("utf-8")).links:
            assert not link.startswith(("/", "//")), f"absolute link {link!r} in {url}"
            if re.match(r"[a-z][a-z0-9+.-]*:", link):
                continue  # an external link written in a corpus README; never fetched
            target = urljoin(url, link).split("#")[0]
            assert target.startswith(served), f"{link!r} in {url} escapes the sub-path"
            queue.append(target)
    assert broken == []
    html_files = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    crawled = {unquote(u[len(served) :]) for u in seen if u.endswith(".html")}
    assert html_files <= crawled, html_files - crawled
    assert pages == len(html_files) > 10


def test_no_external_resources_are_loaded(site: Path) -> None:
    stylesheet = (site / "style.css").read_text()
    assert "@import" not in stylesheet and "url(" not in stylesheet
    code = re.sub(r"/\*.*?\*/|//[^\n]*", "", (site / "site.js").read_text(), flags=re.S)  # without comments
    assert not re.search(r"\b(?:fetch|XMLHttpRequest|eval|import|innerHTML)\b|https?:", code)
    listed = json.loads((site / "pages.json").read_text())["files"]
    assert "style.css" in listed and "site.js" in listed  # the audit checks their sha256
    for page in site.rglob("*.html"):
        html = page.read_text()
        # the one <link> of a page is the site's own stylesheet and its one script the site's own site.js, by a
        # relative path to the site's root: no inline script or style, so a strict Content-Security-Policy holds
        up = "../" * (len(page.relative_to(site).parts) - 1)
        assert re.findall(r"<link [^>]*>", html) == [f'<link rel="stylesheet" href="{up}style.css">'], page
        assert re.findall(r"<script[^>]*>.*?</script>", html.replace("&lt;script", ""), flags=re.S) == [
            f'<script src="{up}site.js" defer></script>'
        ], page
        assert "<style" not in html and "@import" not in html and " style=" not in html and " on" + "click" not in html
        for link in _parse(html).links:
            if link.startswith("http"):
                # Only a link written in a corpus README may point outside, never a src.
                assert page.name == "index.html" and "corpora" in page.parts, (page, link)


def test_hostile_text_is_shown_literally_and_never_executed(site: Path) -> None:
    corpus_dir = site / "corpora" / "hostile"
    question = (corpus_dir / "questions" / f"{page_name('q/1')}.html").read_text()
    assert "&lt;img src=x onerror=alert(2)&gt; E4012" in question
    assert "<img src=x" not in question
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in question
    assert "<script>" not in question
    other = (corpus_dir / "questions" / f"{page_name('../../etc/passwd')}.html").read_text()
    assert "{{ 7*7 }} refunds" in other and "49 refunds" not in other
    assert "{% raw %}" in (corpus_dir / "questions" / f"{page_name('Ünïcode q')}.html").read_text()
    index = (corpus_dir / "index.html").read_text()
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in index and "<script>" not in index
    assert "{{ 7*7 }} and a" in index
    assert "&lt;i&gt;kind&lt;/i&gt;" in index
    text = "".join(_parse(question).text)
    assert "Template {{ 7*7 }} and {% raw %} stay text." in text


def test_unsafe_ids_get_unique_safe_page_names(site: Path) -> None:
    ids = [q["_id"] for q in HOSTILE_QUERIES] + ["a/b", "a-b", "A-B", "a_b", "Ünïcode id", "../x", "plain"]
    names = [page_name(i) for i in ids]
    assert len(set(names)) == len(names)
    for name in names:
        assert re.fullmatch(r"[a-z0-9][a-z0-9_-]*", name), name
    for qid in [q["_id"] for q in HOSTILE_QUERIES]:
        assert (site / "corpora" / "hostile" / "questions" / f"{page_name(qid)}.html").is_file()
    assert not (site.parent / "etc").exists()


def test_readme_markdown_keeps_raw_html_as_text() -> None:
    html = render_markdown("# T\n\n<div onclick=x>hi</div> and <b>b</b>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    assert "<div" not in html and "&lt;div onclick=x&gt;" in html and "<table>" in html


def test_question_page_shows_top_hits_grades_and_raw_run_links(site: Path) -> None:
    page = (site / "corpora" / "tiny" / "questions" / "q2.html").read_text()
    assert 'href="../../../evidence/tiny/runs/rrf-dense-bm25.json"' in page
    assert '<td class="relevant">' in page  # a labelled hit
    assert re.search(
        r'<tr id="[A-Z]+" class="relevant"><th scope="row">[A-Z]+<td><a href="[^"]+">[^<]+</a><td>1<td>', page
    )


def test_pages_only_show_numbers_from_the_evidence(site: Path) -> None:
    report = json.loads((site / "evidence" / "tiny" / "report.json").read_text())
    metrics = json.loads((site / "evidence" / "tiny" / "metrics.json").read_text())
    page = (site / "corpora" / "tiny" / "index.html").read_text()
    # every number read from the evidence is printed inside a span that names its source
    shown = re.sub(r'<span data-ev="[^"]*"(?: data-fmt="[^"]*")?>([^<]*)</span>', r"\1", page)
    n = report["questions"]["overall"]
    merged = 0
    for ranker, counts in report["hit_counts"]["overall"].items():
        assert f'{counts["hit@1"]}/{n} <span class="count">({metrics[ranker]["overall"]["hit@1"]:.3f})' in shown
        source = f"evidence/tiny/report.json#/hit_counts/overall/{ranker}/hit@1"
        if f'<span data-ev="{source}">' not in page:  # identical to an earlier ranker: one row, named with it
            assert f'&equiv; <span class="id">{ranker}</span>' in page
            merged += 1
            continue
        assert f'<span data-ev="{source}">{counts["hit@1"]}</span>' in page
    assert merged < len(report["hit_counts"]["overall"])
    assert report["sample_rule"] in page


def test_render_and_plots_never_import_rankers_or_metrics() -> None:
    publish = REPO / "sitegen" / "publish"
    modules = [*sorted((publish / "pages").glob("*.py")), publish / "plots.py"]
    assert len(modules) > 2
    for module in modules:
        tree = ast.parse(module.read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module} | {
            alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
        }
        assert not {
            m
            for m in imported
            if m.startswith(("sitegen.rankers", "sitegen.scoring.metrics", "sitegen.scoring.report"))
        }


def test_plots_are_deterministic_svg_with_titles_and_alt_text(site: Path, tmp_path: Path) -> None:
    svg = (site / "corpora" / "tiny" / "hit-at-1-by-kind.svg").read_text()
    assert "<dc:date>" not in svg and "hit@1 per question kind" in svg
    assert 'alt="Bar chart of hit@1 per question kind' in (site / "corpora" / "tiny" / "index.html").read_text()


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize(
    "page", ["index.html", "corpora/tiny/index.html", "corpora/hostile/index.html", "performance.html"]
)
def test_pages_load_in_headless_chromium_without_console_errors(served: str, page: str) -> None:
    browser = _chromium()
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; the test set-up installs Debian's chromium")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    artifacts = REPO / "tests" / "artifacts"
    artifacts.mkdir(exist_ok=True)
    shot = artifacts / (page.replace("/", "_").removesuffix(".html") + ".png")
    with tempfile.TemporaryDirectory() as profile:
        result = subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                "--enable-logging=stderr",
                "--v=0",
                "--window-size=1200,1600",
                f"--screenshot={shot}",
                served + page,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    assert shot.is_file() and shot.stat().st_size > 5000
