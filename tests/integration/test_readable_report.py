"""A report a newcomer can read: definitions linked from every page, corpus pages that adapt to what
the corpus has, and the command that built the report on the reproducibility page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import build, write_corpus

ONE_KIND_QUERIES = [
    {"_id": "q1", "text": "refund a card payment", "kind": "lookup"},
    {"_id": "q2", "text": "payout schedule", "kind": "lookup"},
    {"_id": "q3", "text": "reset the terminal", "kind": "lookup"},
]


@pytest.fixture(scope="module")
def one_kind_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One question kind and no fusion ranker: the sections about kinds and fusion have nothing to say."""
    root = tmp_path_factory.mktemp("readable")
    write_corpus(
        root / "corpora" / "plain", queries=ONE_KIND_QUERIES, qrels=[("q1", "d1", 1), ("q2", "d2", 1), ("q3", "d3", 1)]
    )
    build(root / "corpora", root / "site", rankers=("bm25", "bm25-stem"))
    return root / "site"


def test_every_page_links_to_the_metric_definitions(one_kind_site: Path) -> None:
    pages = sorted(one_kind_site.rglob("*.html"))
    assert (one_kind_site / "metrics.html").is_file() and len(pages) > 3
    for page in pages:
        assert re.search(r'href="(\.\./)*metrics\.html"', page.read_text(encoding="utf-8")), page
    definitions = (one_kind_site / "metrics.html").read_text(encoding="utf-8")
    for anchor in ("hit", "recall", "precision", "mrr", "ndcg", "significance"):
        assert f'id="{anchor}"' in definitions
    corpus_page = (one_kind_site / "corpora" / "plain" / "index.html").read_text(encoding="utf-8")
    assert 'href="../../metrics.html#ndcg"' in corpus_page  # column headers link to their definition


def test_a_one_kind_no_fusion_corpus_page_has_a_contents_list_and_no_empty_or_repeated_section(
    one_kind_site: Path,
) -> None:
    page = (one_kind_site / "corpora" / "plain" / "index.html").read_text(encoding="utf-8")
    assert '<nav class="toc"' in page
    assert "By question kind" not in page  # one kind: the overall table already says it all
    headings = re.findall(r"<h2[^>]*>(.*?)</h2>", page)
    assert len(headings) == len(set(headings)), headings
    sweeps = page[page.index('id="sweeps"') :]
    assert "No fusion of two rankers was built for this corpus, so there is nothing to sweep." in sweeps
    assert "<h3>" not in sweeps.split("<h2", 1)[0]  # no sweep subsections under the heading
    for anchor in re.findall(r'<nav class="toc".*?</nav>', page, flags=re.S)[0].split('href="#')[1:]:
        assert f'id="{anchor.split(chr(34))[0]}"' in page  # every contents link has its section


def test_the_reproducibility_page_shows_the_command_that_built_the_report(one_kind_site: Path) -> None:
    page = (one_kind_site / "reproducibility.html").read_text(encoding="utf-8")
    command = re.search(r"\.venv/bin/(sitegen build[^<]*)</code>", page)
    assert command is not None
    assert "--ranker bm25 --ranker bm25-stem" in command.group(1)
    assert "--corpora " in command.group(1) and "--cache-dir" not in command.group(1)
