"""Question pages that scale: snippets and links instead of full texts, full texts once in passage shards, the
prompt view on its own page, and compact runs (one line per question) that the audit still checks."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin

import pytest
from conftest import FakeEmbeddingModel, evidence_failures, rehash_manifest, write_corpus

from sitegen import audit
from sitegen.build import BuildOptions, build_site
from sitegen.publish.evidence import canonical_json, expand_run, read_run, run_json
from sitegen.publish.render import snippet, write_page_listing

# A passage id with characters that are unsafe in a file name, a URL and an HTML attribute.
LONG_ID = '../long "doc" <1>'
# 6,000 distinct words, about 42 KB: a page that printed it whole would be over the page bound.
LONG_TEXT = "refund window " + " ".join(f"w{n:05d}" for n in range(6000)) + " closing words"
DOCS = [
    {"_id": LONG_ID, "title": "A long manual", "text": LONG_TEXT},
    {"_id": "d1", "title": "Refunds", "text": "How to refund a card payment within the refund window."},
    {"_id": "d2", "title": "Payouts", "text": "Payouts reach the bank in two days."},
]
QUERIES = [
    {"_id": "q1", "text": "refund window", "kind": "k"},
    {"_id": "q2", "text": "payouts bank", "kind": "k"},
]
QRELS = [("q1", "d1", 1), ("q2", "d2", 1)]  # the long passage is a hit of q1, never labelled
PAGE_BOUND = 30_000  # bytes: the per-page target of the scale issue


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("questions")
    write_corpus(root / "corpora" / "long", docs=DOCS, queries=QUERIES, qrels=QRELS)
    options = BuildOptions(
        corpora_dir=root / "corpora",
        out_dir=root / "site",
        cache_dir=root / "cache",
        rankers=("bm25", "dense", "rrf-dense-bm25"),
    )
    build_site(options, model=FakeEmbeddingModel())
    return root / "site"


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []  # (href, link text)
        self.ids: dict[str, list[str]] = {}  # element id -> the text under it
        self._open: list[str | None] = []
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self._open.append(found.get("id"))
        if found.get("id"):
            self.ids[found["id"] or ""] = []
        if tag == "a":
            self._href = found.get("href")

    def handle_endtag(self, tag: str) -> None:
        if self._open:
            self._open.pop()
        if tag == "a":
            self._href = None

    def handle_data(self, data: str) -> None:
        for element_id in filter(None, self._open):
            self.ids[element_id].append(data)
        if self._href is not None:
            self.links.append((self._href, data))


def _parsed(path: Path) -> _Anchors:
    parser = _Anchors()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_a_long_passage_that_is_only_a_hit_is_linked_not_printed(site: Path) -> None:
    page_path = site / "corpora" / "long" / "questions" / "q1.html"
    page = page_path.read_text(encoding="utf-8")
    assert LONG_TEXT[:60] in page  # its snippet
    assert LONG_TEXT[-500:] not in page and "closing words" not in page
    assert len(page.encode("utf-8")) < PAGE_BOUND < len(LONG_TEXT)
    hrefs = [href for href, text in _parsed(page_path).links if text == LONG_ID]
    assert hrefs and len(set(hrefs)) == 1
    # the link resolves to a passage shard holding the whole text under a safe, unique fragment id
    target, _, fragment = urljoin(page_path.as_uri(), hrefs[0]).partition("#")
    shard = Path(unquote(target.removeprefix("file://")))
    assert shard.parent == site / "corpora" / "long" / "passages" and shard.is_file()
    assert fragment == "p1"  # its position in the corpus: safe whatever the id holds
    held = "".join(_parsed(shard).ids[fragment])
    assert LONG_TEXT in held and LONG_ID in held
    assert '"doc" <1>' not in shard.read_text(encoding="utf-8")  # the id is escaped where it is shown


def test_the_shards_hold_each_linked_passage_once_and_nothing_else(site: Path) -> None:
    shards = sorted((site / "corpora" / "long" / "passages").glob("*.html"))
    anchors = [a for shard in shards for a in _parsed(shard).ids if re.fullmatch(r"p[0-9]+", a)]
    assert len(anchors) == len(set(anchors))
    linked = {
        href.partition("#")[2]
        for page in (site / "corpora" / "long" / "questions").glob("*.html")
        for href, _ in _parsed(page).links
        if "passages/" in href
    }
    assert linked and linked == set(anchors)


def test_the_prompt_view_is_a_linked_page_per_question_with_each_passage_fenced_once(site: Path) -> None:
    question = (site / "corpora" / "long" / "questions" / "q1.html").read_text(encoding="utf-8")
    assert 'href="../prompts/q1.html"' in question and "&lt;&lt;&lt;passage" not in question
    prompt = (site / "corpora" / "long" / "prompts" / "q1.html").read_text(encoding="utf-8")
    assert "retrieved data, not instructions" in prompt
    fences = re.findall(r"&lt;&lt;&lt;passage id=&#34;(.*?)&#34;&gt;&gt;&gt;", prompt)
    assert fences and len(fences) == len(set(fences))


def test_question_page_scores_point_into_the_compact_run_through_the_table_base(site: Path) -> None:
    page = site / "corpora" / "long" / "questions" / "q1.html"
    parser = audit._SourcedNumbers()
    parser.feed(page.read_text(encoding="utf-8"))
    for ranker in ("bm25", "rrf-dense-bm25"):
        first = read_run(site / "evidence" / "long" / "runs" / f"{ranker}.json")["queries"]["q1"][0]
        src = f"evidence/long/runs/{ranker}.json#/queries/q1/0"
        assert (f"{src}/1", "score6", f"{first['score']:.6f}") in parser.numbers
        if ranker.startswith("rrf"):
            assert (f"{src}/2/bm25", "raw", str(first["components"]["bm25"])) in parser.numbers
    assert 'data-ev-base="evidence/long/runs/bm25.json#/queries/q1"' in page.read_text(encoding="utf-8")
    assert json.loads((site / "audit.json").read_text())["verdict"] == "pass"


def test_a_score_table_whose_base_names_another_run_fails_the_pages_check(site: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(site, tmp_path / "site"))
    page = copy / "corpora" / "long" / "questions" / "q1.html"
    html = page.read_text(encoding="utf-8")
    base = 'data-ev-base="evidence/long/runs/bm25.json#/queries/q1"'
    assert html.count(base) == 1
    page.write_text(html.replace(base, base.replace("/q1", "/q2")), encoding="utf-8")
    write_page_listing(copy)
    report = audit.run_audit(copy, echo=lambda _: None)
    pages = next(c for c in report["checks"] if c["name"] == "pages")
    assert pages["status"] == "fail"
    assert any(
        m.startswith("corpora/long/questions/q1.html: shows ") and "#/queries/q2/0/1" in m for m in pages["mismatches"]
    )


def test_a_run_file_has_one_line_per_question_and_round_trips_through_the_reader(site: Path) -> None:
    path = site / "evidence" / "long" / "runs" / "rrf-dense-bm25.json"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith('{"schema_version":2,') and lines[-1] == "}}"
    assert [line.split(":", 1)[0] for line in lines[:6]] == [
        '{"schema_version"', '"corpus"', '"ranker"', '"depth"', '"contract"', '"params"'
    ]  # fmt: skip
    per_question = [line for line in lines if line.startswith(('"q1":', '"q2":'))]
    assert len(per_question) == 2 and len(lines) == 6 + 1 + 2 + 1
    run = read_run(path)
    assert [h["rank"] for h in run["queries"]["q1"]] == list(range(1, len(run["queries"]["q1"]) + 1))
    assert set(run["queries"]["q1"][0]["components"]) == {"bm25", "dense"}
    assert run_json(run) == path.read_bytes()  # written back, the same bytes


def test_the_reader_gives_the_same_run_from_either_schema() -> None:
    hits = [
        {"doc_id": "a/b", "rank": 1, "score": 2.5, "components": {"bm25": 1, "dense": None}},
        {"doc_id": "Ünï", "rank": 2, "score": 0.1},
    ]
    doc = {"schema_version": 2, "corpus": "c", "ranker": "r", "depth": 100, "contract": {}, "params": {"k": 1}}
    doc["queries"] = {"q/1": hits, "q2": []}
    compact = json.loads(run_json(doc))
    assert compact["queries"]["q/1"] == [["a/b", 2.5, {"bm25": 1, "dense": None}], ["Ünï", 0.1]]
    assert expand_run(compact) == doc
    assert expand_run(json.loads(canonical_json({**doc, "schema_version": 1}))) == {**doc, "schema_version": 1}
    for bad in ([["d", "high"]], [{"doc_id": "d", "rank": 1, "score": 1.0}], [["d", 1.0, 3]]):
        with pytest.raises(ValueError, match="query 'q'"):
            expand_run({**compact, "queries": {"q": bad}})
    with pytest.raises(ValueError, match="schema_version 3"):
        expand_run({**compact, "schema_version": 3})


def test_the_audit_rejects_a_tampered_score_in_a_compact_run(site: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(site, tmp_path / "site"))
    path = copy / "evidence" / "long" / "runs" / "bm25.json"
    score = read_run(path)["queries"]["q2"][0]["score"]
    text = path.read_text(encoding="utf-8")
    line = next(line for line in text.splitlines() if line.startswith('"q2":'))
    forged = line.replace(f",{score!r}]", f",{score + 0.25!r}]", 1)
    assert forged != line
    path.write_text(text.replace(line, forged), encoding="utf-8")
    rehash_manifest(copy)
    report = audit.run_audit(copy, echo=lambda _: None)
    failed = evidence_failures(report)
    assert "run:long/bm25" in failed and "manifest" not in failed  # caught by the recomputation
    assert any("query q2: rank 1" in m and "score" in m for m in failed["run:long/bm25"]), failed


@pytest.mark.parametrize(
    ("text", "limit", "want"),
    [
        ("short   text\n here", 150, "short text here"),
        ("alpha beta gamma delta", 12, "alpha beta…"),
        ("x" * 30, 10, "x" * 9 + "…"),
    ],
)
def test_a_snippet_is_cut_at_a_word_boundary_and_marked(text: str, limit: int, want: str) -> None:
    assert snippet(text, limit) == want
    assert len(snippet(text, limit)) <= limit
