"""sitegen init, then sitegen build in that folder: every page titled from sitegen.toml, flags overriding the file,
titles escaped."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from sitegen.cli.config import load_config
from tests.helpers import run_cli


def _titles(site: Path) -> dict[str, str]:
    return {
        p.relative_to(site).as_posix(): html.unescape(re.search(r"<title>(.*?)</title>", p.read_text()).group(1))
        for p in site.rglob("*.html")
    }


def test_init_then_build_in_an_empty_folder_titles_every_page_from_sitegen_toml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli("init")
    assert result.exit_code == 0, result.output
    config = load_config(tmp_path / "sitegen.toml")
    assert run_cli("validate", "corpora/bike-workshop").exit_code == 0
    # the starter builds every ranker; this test keeps to the quick one, through the file rather than a flag
    with (tmp_path / "sitegen.toml").open("a", encoding="utf-8") as handle:
        handle.write('rankers = ["bm25"]\n')
    result = run_cli("build", "--cache-dir", str(tmp_path / "cache"))
    assert result.exit_code == 0, result.output
    # counted nouns, and the rankers that ran (not the registry's)
    assert "bike-workshop: 8 passages, 6 questions, 5 judged pairs" in result.output
    assert "wrote site: 1 corpus x 1 ranker run (" in result.output and "embedded" not in result.output
    site = tmp_path / "site"  # sitegen.toml's out
    titles = _titles(site)
    assert len(titles) > 5 and all(config.title in t for t in titles.values()), titles
    assert html.escape(config.description, quote=False) in (site / "index.html").read_text().replace("&#39;", "'")
    manifest = json.loads((site / "evidence" / "manifest.json").read_text())
    assert manifest["report"] == {"title": config.title, "description": config.description}
    assert json.loads((site / "evidence" / "bike-workshop" / "corpus.json").read_text())["rankers"] == ["bm25"]
    assert "1 question is marked unanswerable" in (site / "corpora" / "bike-workshop" / "index.html").read_text()
    # the recorded command rebuilds the same report without the file
    assert "--title" in manifest["command"] and "--ranker bm25" in manifest["command"]


def test_flags_override_sitegen_toml_and_titles_are_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert run_cli("init").exit_code == 0
    (tmp_path / "sitegen.toml").write_text('title = "From the file"\nout = "not-here"\n', encoding="utf-8")
    result = run_cli("build", "--quiet", "--ranker", "bm25", "--out", "here", "--title", "<b>Mine</b> & co")
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "not-here").exists()
    page = (tmp_path / "here" / "index.html").read_text()
    assert "<title>&lt;b&gt;Mine&lt;/b&gt; &amp; co</title>" in page and "<b>Mine</b>" not in page
