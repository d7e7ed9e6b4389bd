"""Pages that fit their corpus: a corpus page opens with a forest plot whose printed numbers the audit checks; a
corpus with one question kind has no per-kind table, plot or heading; the packing table has no column that repeats
another or counts what the corpus has none of; the question index carries the hooks its filter reads (kind,
failure class, disagreement) and splits into pages past QUESTIONS_PER_PAGE; the home page speaks to readers, and
each of its cards opens with a picture of the rank groups whose printed numbers the audit checks."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from sitegen import audit
from sitegen.publish.pages import corpus as corpus_pages
from sitegen.publish.pages import write_page_listing
from tests.helpers import TINY_DOCS, TINY_QRELS, TINY_QUERIES, build, write_corpus

RANKERS = ("bm25", "dense", "rrf-dense-bm25")
ONE_KIND = [{**q, "kind": "paraphrase"} for q in TINY_QUERIES if q.get("answerable", True)]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``tiny`` (three kinds, one unanswerable question) and ``single`` (one kind, every question answerable), with
    the question index cut to two questions a page."""
    root = tmp_path_factory.mktemp("shapes")
    write_corpus(root / "corpora" / "tiny")
    write_corpus(root / "corpora" / "single", docs=TINY_DOCS, queries=ONE_KIND, qrels=TINY_QRELS)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(corpus_pages, "QUESTIONS_PER_PAGE", 2)
        build(root / "corpora", root / "site", rankers=RANKERS)
    return root / "site"


def test_a_one_kind_corpus_page_has_no_per_kind_table_plot_or_heading(site: Path) -> None:
    single = (site / "corpora" / "single" / "index.html").read_text(encoding="utf-8")
    assert 'id="by-kind"' not in single and "By question kind" not in single
    assert "hit-at-1-by-kind.svg" not in single and not (site / "corpora" / "single" / "hit-at-1-by-kind.svg").exists()
    assert "per question kind" not in single and "paraphrase (" not in single
    assert '<th scope="col" class="text">kind</th>' not in (site / "corpora" / "single" / "ranks.html").read_text()
    tiny = (site / "corpora" / "tiny" / "index.html").read_text(encoding="utf-8")
    assert 'id="by-kind"' in tiny and "hit-at-1-by-kind.svg" in tiny and "per question kind:" in tiny
    assert (site / "corpora" / "tiny" / "hit-at-1-by-kind.svg").is_file()


def _packing_header(page: str) -> list[str]:
    table = re.search(
        r'<caption class="sr">Answer passage reached the prompt, per ranker and packing.*?</thead>', page, re.S
    )
    assert table is not None
    return [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<th scope=\"col\">(.*?)</th>", table.group(0))]


def test_the_packing_table_repeats_no_column_and_counts_unanswerable_questions_only_where_there_are_some(
    site: Path,
) -> None:
    packing = json.loads((site / "evidence" / "tiny" / "packing.json").read_text())
    assert packing["top_n"] == 3 and "top3" in packing["settings"]  # the pack of the top 3 is a column of its own
    tiny = _packing_header((site / "corpora" / "tiny" / "index.html").read_text(encoding="utf-8"))
    assert "in top 3" not in tiny and "answer reached the prompt: top 3 passages, no budget" in tiny
    assert "unanswerable questions that still got candidates" in tiny  # tiny has one
    single = _packing_header((site / "corpora" / "single" / "index.html").read_text(encoding="utf-8"))
    assert "unanswerable questions that still got candidates" not in single and "0/0" not in "".join(single)


def test_the_question_index_splits_into_pages_and_marks_each_row_for_the_filter(site: Path) -> None:
    folder = site / "corpora" / "tiny"
    assert sorted(p.name for p in folder.glob("ranks*.html")) == ["ranks-2.html", "ranks.html"]
    rows = [
        re.findall(
            r'<tr data-kind="([^"]*)" data-disagree="(true|false)" data-failure="[^"]*"><th scope="row">'
            r'<a href="questions/([^.]+)',
            p.read_text(),
        )
        for p in (folder / "ranks.html", folder / "ranks-2.html")
    ]
    assert [[qid for _, _, qid in page] for page in rows] == [["q1", "q2"], ["q3", "q4"]]
    report = json.loads((site / "evidence" / "tiny" / "report.json").read_text())
    depth = json.loads((site / "evidence" / "tiny" / "corpus.json").read_text())["depth"]
    for kind, disagree, qid in rows[0] + rows[1]:
        assert kind == next(q.get("kind") for q in TINY_QUERIES if q["_id"] == qid)
        ranks = report["first_relevant_rank"].get(qid)
        found = [depth + 1 if r is None else r for r in (ranks or {}).values()]
        assert (disagree == "true") == (bool(found) and max(found) - min(found) > corpus_pages.DISAGREE_BY)


def test_the_home_page_speaks_to_readers_not_to_the_build(site: Path) -> None:
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "every frozen corpus" not in home and "SOURCE_DATE_EPOCH" not in home
    assert "every corpus below" in home


def test_a_corpus_page_opens_with_a_forest_plot_of_each_ranker_minus_the_best_with_its_numbers_sourced(
    site: Path,
) -> None:
    page = (site / "corpora" / "tiny" / "index.html").read_text(encoding="utf-8")
    assert page.index('id="forest-heading"') < page.index("<table")  # the picture comes before the tables
    experiments = json.loads((site / "evidence" / "tiny" / "experiments.json").read_text())
    best = json.loads((site / "evidence" / "tiny" / "report.json").read_text())["best"]["overall"]["ndcg@10"][0]
    svg = (site / "corpora" / "tiny" / "forest-ndcg-at-10.svg").read_text(encoding="utf-8")
    labels = re.findall(r'<g id="row-\d+">\s*<text[^>]*>([^<]*)</text>', svg)
    parser = audit._PlotRows()
    parser.feed(page)
    assert parser.plots == [("forest-ndcg-at-10.svg", "forest-numbers")]
    rows = parser.rows["forest-numbers"]
    merged = experiments["significance"]["identical"]["ndcg@10"]  # identical rankers are one row
    distinct = len(RANKERS) - sum(len(members) - 1 for members in merged)
    assert len(labels) == len(rows) == distinct - 1 and f"minus {best}" in svg
    pairs = [p for p in experiments["significance"]["pairs"] if p["metric"] == "ndcg@10" and best in (p["a"], p["b"])]
    for label, numbers in zip(labels, rows, strict=True):
        difference = float(numbers[0])
        pair = next(p for p in pairs if abs(abs(p["difference"]) - abs(difference)) < 5e-4)
        assert difference == pytest.approx(pair["difference"] if pair["a"] != best else -pair["difference"], abs=5e-4)
        if pair["ci_low"] is None:  # fewer than 20 questions: no interval, the difference alone
            assert label.startswith(f"{numbers[0]} ") and "[" not in label
        else:
            assert label.startswith(f"{numbers[0]} [{numbers[1]}, {numbers[2]}] ")
    assert json.loads((site / "audit.json").read_text())["verdict"] == "pass"


def test_a_forest_plot_printing_a_number_the_page_does_not_source_fails_the_pages_check(
    site: Path, tmp_path: Path
) -> None:
    copy = Path(shutil.copytree(site, tmp_path / "site"))
    plot = copy / "corpora" / "tiny" / "forest-ndcg-at-10.svg"
    svg = plot.read_text(encoding="utf-8")
    first = re.search(r'<g id="row-1">\s*<text[^>]*>([+-]\d\.\d{3})', svg)
    assert first is not None
    forged = "+0.999" if first.group(1) != "+0.999" else "+0.998"
    plot.write_text(svg[: first.start(1)] + forged + svg[first.end(1) :], encoding="utf-8")
    write_page_listing(copy)  # the listing agrees with the forged plot: only its numbers give it away
    report = audit.run_audit(copy, echo=lambda _: None)
    pages = next(c for c in report["checks"] if c["name"] == "pages")
    assert pages["status"] == "fail"
    assert any(m.startswith("corpora/tiny/forest-ndcg-at-10.svg: row 1 prints '+0.99") for m in pages["mismatches"])


def test_each_question_index_row_carries_its_failure_class_and_the_filter_offers_the_classes_present(
    site: Path,
) -> None:
    failures = json.loads((site / "evidence" / "tiny" / "report.json").read_text())["failures"]
    rows, offered = [], []
    for page in ("ranks.html", "ranks-2.html"):
        text = (site / "corpora" / "tiny" / page).read_text(encoding="utf-8")
        rows += re.findall(r'data-failure="([^"]*)"><th scope="row"><a href="questions/([^.]+)', text)
        select = re.search(r'<select data-filter-facet="failure">(.*?)</select>', text, re.S)
        assert select is not None
        offered.append(re.findall(r"<option>([^<]+)</option>", select.group(1)))
    assert [qid for _, qid in rows] == [q["_id"] for q in TINY_QUERIES]
    for code, qid in rows:  # the unanswerable question has no class, and its row no value
        assert code == failures["questions"].get(qid, "")
    present = [c for c in failures["classes"] if c in failures["questions"].values()]
    assert offered == [present, present] and present


def test_each_home_card_opens_with_the_rank_groups_of_ndcg_with_the_numbers_the_audit_checks(site: Path) -> None:
    home = (site / "index.html").read_text(encoding="utf-8")
    parser = audit._PlotRows()
    parser.feed(home)
    assert {src for src, _ in parser.plots} == {f"corpora/{c}/groups-ndcg-at-10.svg" for c in ("tiny", "single")}
    assert [table for _, table in parser.plots] == ["groups-1", "groups-2"]
    cards = home.split('<section class="card"')[1:]
    for (src, table), card in zip(parser.plots, cards, strict=True):
        corpus = src.split("/")[1]
        assert card.index(src) < card.index('class="headline"')  # the picture opens the card
        groups = json.loads((site / "evidence" / corpus / "experiments.json").read_text())["significance"]["groups"]
        rows = groups["ndcg@10"]["rows"]
        svg = (site / src).read_text(encoding="utf-8")
        labels = re.findall(r'<g id="row-\d+">\s*<text[^>]*>([^<]*)</text>', svg)
        assert len(labels) == len(rows) == len(parser.rows[table])
        for label, row, numbers in zip(labels, rows, parser.rows[table], strict=True):
            assert numbers[0] == f"{row['mean']:.3f}" and label == f"{numbers[0]} {row['letters']}"  # < 20 questions
        for letter in {c for row in rows for c in row["letters"]}:
            assert f">{letter}</text>" in svg  # each group's bracket is named by its letter
    assert json.loads((site / "audit.json").read_text())["verdict"] == "pass"


def test_a_home_picture_printing_a_number_the_page_does_not_source_fails_the_pages_check(
    site: Path, tmp_path: Path
) -> None:
    copy = Path(shutil.copytree(site, tmp_path / "site"))
    plot = copy / "corpora" / "tiny" / "groups-ndcg-at-10.svg"
    svg = plot.read_text(encoding="utf-8")
    first = re.search(r'<g id="row-1">\s*<text[^>]*>(\d\.\d{3})', svg)
    assert first is not None
    forged = "0.123" if first.group(1) != "0.123" else "0.124"
    plot.write_text(svg[: first.start(1)] + forged + svg[first.end(1) :], encoding="utf-8")
    write_page_listing(copy)  # the listing agrees with the forged plot: only its numbers give it away
    report = audit.run_audit(copy, echo=lambda _: None)
    pages = next(c for c in report["checks"] if c["name"] == "pages")
    assert pages["status"] == "fail"
    assert any(m.startswith("corpora/tiny/groups-ndcg-at-10.svg: row 1 prints '0.12") for m in pages["mismatches"])
