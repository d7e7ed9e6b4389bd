"""`sitegen audit --pages`: the pages and plots a site carries are exactly a re-render of its evidence."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitegen.cli import cli
from sitegen.verify.pages import EXCERPT_CHARS, compare_pages
from tests.helpers import REPO, SharedBuild, copy_site, shared_build, unchanged, write_corpus

COMMITTED = REPO / "site"
PAGE = "corpora/tiny/index.html"
PLOT = "corpora/tiny/hit-at-1-by-kind.svg"


@pytest.fixture(scope="module")
def pages_build(tmp_path_factory: pytest.TempPathFactory) -> SharedBuild:
    """The smallest site with every kind of output: bm25 over tiny, with a Performance page (so timings/ is an
    input of the render too). Each comparison re-renders the whole site, so the smaller the better."""
    root = tmp_path_factory.mktemp("pages")
    write_corpus(root / "corpora" / "tiny")
    (root / "bench").mkdir()
    shutil.copyfile(REPO / "bench" / "results.json", root / "bench" / "results.json")
    return shared_build(root, rankers=("bm25",))


@pytest.fixture
def pages_site(pages_build: SharedBuild) -> Iterator[Path]:
    yield from unchanged(pages_build)


@pytest.fixture
def site(pages_site: Path, tmp_path: Path) -> Path:
    return copy_site(pages_site, tmp_path / "site")


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {p.relative_to(root).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


@pytest.mark.slow
def test_the_committed_site_is_a_re_render_of_its_evidence_and_is_left_untouched() -> None:
    before = _snapshot(COMMITTED)
    result = compare_pages(COMMITTED)
    assert _snapshot(COMMITTED) == before, "compare_pages wrote into the site"
    assert result.ok, result.details()
    assert result.compared == result.identical > 100
    assert {"index.html", "reproducibility.html", "performance.html", ".nojekyll"} <= set(
        p.relative_to(COMMITTED).as_posix() for p in COMMITTED.iterdir()
    )


def test_a_small_built_site_passes_with_every_page_plot_and_nojekyll_compared(pages_site: Path) -> None:
    site = pages_site  # compare_pages only reads
    result = compare_pages(site)
    assert result.ok, result.details()
    outputs = [
        p.relative_to(site).as_posix()
        for p in site.rglob("*")
        if p.is_file() and p.relative_to(site).parts[0] not in ("evidence", "timings")
    ]
    outputs = [p for p in outputs if p not in ("audit.py", "audit.json", "pages.json")]
    assert result.compared == result.identical == len(outputs)
    assert {PAGE, PLOT, ".nojekyll", "performance.html"} <= set(outputs)


def test_one_changed_number_fails_naming_the_page_and_line(site: Path) -> None:
    lines = (site / PAGE).read_text(encoding="utf-8").split("\n")
    number, match = next((n, m) for n, line in enumerate(lines, 1) if (m := re.search(r"\d\.\d{3}", line)))
    original = match.group()
    changed = "9.999" if original != "9.999" else "8.888"
    lines[number - 1] = lines[number - 1][: match.start()] + changed + lines[number - 1][match.end() :]
    (site / PAGE).write_text("\n".join(lines), encoding="utf-8")

    result = compare_pages(site)
    assert not result.ok
    assert result.differing_paths == (PAGE,)
    difference = result.differing[0]
    assert difference.line == number
    assert changed in difference.site and original in difference.rendered
    assert len(difference.site) <= EXCERPT_CHARS + 6 and len(difference.rendered) <= EXCERPT_CHARS + 6
    assert result.only_in_site == result.only_in_render == ()
    assert result.identical == result.compared - 1
    assert f"differs: {PAGE} line {number}" in result.details()


def test_an_extra_page_fails_as_only_in_the_site(site: Path) -> None:
    (site / "corpora" / "tiny" / "extra.html").write_text("<p>not from the evidence</p>\n", encoding="utf-8")
    result = compare_pages(site)
    assert not result.ok
    assert result.only_in_site == ("corpora/tiny/extra.html",)
    assert result.differing == () and result.only_in_render == ()
    assert "only in the site: corpora/tiny/extra.html" in result.details()


def test_a_deleted_plot_fails_as_missing_from_the_site(site: Path) -> None:
    (site / PLOT).unlink()
    result = compare_pages(site)
    assert not result.ok
    assert result.only_in_render == (PLOT,)
    assert result.differing == () and result.only_in_site == ()
    assert f"missing from the site: {PLOT}" in result.details()


def test_files_that_are_not_pages_are_not_compared(site: Path) -> None:
    (site / "pages.json").write_text("{}\n", encoding="utf-8")
    (site / "timings" / "notes.txt").write_text("not rendered\n", encoding="utf-8")
    assert compare_pages(site).ok


def test_a_truncated_page_reports_the_end_of_file(site: Path) -> None:
    text = (site / PAGE).read_bytes()
    (site / PAGE).write_bytes(text[: text.index(b"\n") + 1])
    difference = compare_pages(site).differing[0]
    assert difference.line == 2
    assert difference.site == "" and difference.rendered != "(end of file)"
    (site / PAGE).write_bytes(text.rstrip(b"\n"))
    difference = compare_pages(site).differing[0]
    assert difference.site == "(end of file)" and difference.rendered == ""


def test_cli_audit_pages_exit_codes(site: Path) -> None:
    runner = CliRunner()
    without = runner.invoke(cli, ["audit", str(site)])
    assert without.exit_code == 0 and "a re-render from the evidence" not in without.output
    passed = runner.invoke(cli, ["audit", "--pages", str(site)])
    assert passed.exit_code == 0, passed.output
    assert re.search(r"^PASS re-render: \d+ files identical to a re-render from the evidence$", passed.output, re.M)

    (site / PLOT).unlink()
    (site / "extra.html").write_text("<p>extra</p>\n", encoding="utf-8")
    failed = runner.invoke(cli, ["audit", "--pages", str(site)])
    assert failed.exit_code == 1, failed.output
    # the standalone audit now fails too, so audit.json and with it every page's audit badge differ as well
    assert "FAIL re-render: " in failed.output and "1 only in the site, 1 rendered but missing" in failed.output
    assert f"missing from the site: {PLOT}" in failed.output
    assert "only in the site: extra.html" in failed.output


def test_cli_refuses_to_compare_pages_of_a_bundle_that_fails_its_manifest_check(site: Path) -> None:
    corpus_json = site / "evidence" / "tiny" / "corpus.json"
    corpus_json.write_bytes(corpus_json.read_bytes() + b" ")
    result = CliRunner().invoke(cli, ["audit", "--pages", str(site)])
    assert result.exit_code == 1
    assert "cannot compare pages: the bundle failed its manifest check" in result.output
    assert "PASS pages" not in result.output and "Traceback" not in result.output
