"""The audit's closed world, tried as a sceptical reviewer would, on copies of the committed site (the edits of
pages, which the pages check finds by reading every page, on copies of a small shared build).

Each test makes a *consistent* change: the evidence is edited and the manifest's sha256 and sizes
recomputed (and ``pages.json`` too), so that only a check that knows what must be there can fail.
Each asserts the check that catches it by name. Running one check family is enough to show which
check catches a forgery; the badge test (in test_audit.py) runs the whole audit, on a smaller build.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from sitegen import audit
from sitegen.publish.evidence import write_run
from sitegen.publish.pages import write_page_listing
from tests.helpers import REPO, copy_site, read_evidence, rehash_manifest

# Slow: each test reads a copy of the committed site
pytestmark = pytest.mark.slow

COMMITTED = REPO / "site"


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return copy_site(COMMITTED, tmp_path / "site")


@pytest.fixture
def small_site(dense_site: Path, tmp_path: Path) -> Path:
    """A copy of the shared build of ``tiny``: the pages check reads every page, and the committed site's 400
    take it 15 seconds, where what a page edit shows does not depend on the site's size."""
    return copy_site(dense_site, tmp_path / "site")


def _consistent(site: Path) -> None:
    """Recompute every checksum the bundle carries, as a forger would."""
    rehash_manifest(site)
    write_page_listing(site)


def _save(site: Path, rel: str, data: Any) -> None:
    if "/runs/" in rel and rel.endswith(".json"):
        write_run(site / rel, data)
    else:
        (site / rel).write_text(json.dumps(data), encoding="utf-8")


def _corpus_check(site: Path, prefix: str, corpus: str) -> list[str]:
    """The mismatches of one corpus check, by its registry name."""
    body = dict(audit.CORPUS_CHECKS)[prefix]
    return audit._run_check(f"{prefix}:{corpus}", body, audit.Bundle(site), corpus).mismatches


def _drop_from_manifest(site: Path, corpus: str) -> None:
    manifest = read_evidence(site, "evidence/manifest.json")
    manifest["corpora"] = [c for c in manifest["corpora"] if c != corpus]
    _save(site, "evidence/manifest.json", manifest)


# ----------------------------------------------------------------- 1. the bundle does not pick its verifier


def test_a_bm25_run_relabelled_as_tsvector_is_still_checked_as_bm25(site: Path) -> None:
    rel = "evidence/payments-support/runs/bm25.json"
    run = read_evidence(site, rel)
    run["params"]["method"] = run["contract"]["verifier"] = "postgres-tsvector"
    run["contract"]["family"] = "postgres"
    hits = run["queries"]["q01"]
    hits[0]["doc_id"], hits[1]["doc_id"] = hits[1]["doc_id"], hits[0]["doc_id"]  # a lie the order check misses
    hits[0]["score"], hits[1]["score"] = hits[1]["score"], hits[0]["score"]
    _save(site, rel, run)
    _consistent(site)
    check = audit._run_check(
        "run:payments-support/bm25", audit.check_run, audit.Bundle(site), "payments-support", "bm25"
    )
    assert any("family is 'postgres', expected 'lexical'" in m for m in check.mismatches)
    assert any("query q01" in m and "recomputed" in m for m in check.mismatches), check.mismatches


# ----------------------------------------------------------------- 2. missing evidence does not pass


def test_a_corpus_removed_from_the_bundle_but_still_shown_fails(site: Path) -> None:
    shutil.rmtree(site / "evidence" / "llm-reliability")
    _drop_from_manifest(site, "llm-reliability")
    _consistent(site)
    bundle = audit.Bundle(site)
    assert "llm-reliability" in bundle.corpora()  # its pages keep it in the audit's world
    manifest = audit._run_check("manifest", audit.check_manifest, bundle)
    assert any("llm-reliability/: a corpus the site holds or shows" in m for m in manifest.mismatches)
    assert any("inputs/corpus.jsonl" in m for m in _corpus_check(site, "presence", "llm-reliability"))


def test_a_corpus_removed_with_its_pages_and_summary_still_fails_through_its_folder(site: Path) -> None:
    (site / "evidence" / "tenant-handbook" / "corpus.json").unlink()
    _drop_from_manifest(site, "tenant-handbook")
    _consistent(site)
    assert "tenant-handbook" in audit.Bundle(site).corpora()
    assert any("corpus.json: missing" in m for m in _corpus_check(site, "presence", "tenant-handbook"))


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("filtering.json", "carry a metadata filter"),
        ("postgres.json", "ran in PostgreSQL"),
        ("experiments.json", "every corpus has it"),
        ("packing.json", "every corpus has it"),
        ("hygiene.json", "every corpus has it"),
        ("chunking.json", "asks for chunking"),
    ],
)
def test_a_file_the_inputs_call_for_cannot_be_removed(site: Path, name: str, why: str) -> None:
    (site / "evidence" / "tenant-handbook" / name).unlink()
    _consistent(site)
    mismatches = _corpus_check(site, "presence", "tenant-handbook")
    assert mismatches == [f"evidence/tenant-handbook/{name}: missing, and required: " + mismatches[0].split(": ")[-1]]
    assert why in mismatches[0]


def test_a_run_the_pages_show_cannot_be_removed(site: Path) -> None:
    for suffix in (".json", ".trec"):
        (site / "evidence" / "payments-support" / "runs" / f"bm25-stem{suffix}").unlink()
    summary = read_evidence(site, "evidence/payments-support/corpus.json")
    summary["rankers"].remove("bm25-stem")
    _save(site, "evidence/payments-support/corpus.json", summary)
    _consistent(site)
    assert "bm25-stem" in audit.Bundle(site).rankers("payments-support")
    mismatches = _corpus_check(site, "presence", "payments-support")
    assert "evidence/payments-support/runs/bm25-stem.json: missing, and required: " in mismatches[0]


def test_a_bundle_with_nothing_in_it_does_not_pass(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "evidence").mkdir(parents=True)
    _save(site, "evidence/manifest.json", {"schema_version": audit.SCHEMA_VERSION, "corpora": [], "files": {}})
    report = audit.run_audit(site, echo=lambda line: None)
    assert report["verdict"] == "fail"
    manifest = next(c for c in report["checks"] if c["name"] == "manifest")
    assert "holds no corpus" in manifest["detail"]


# ----------------------------------------------------------------- 5. numbers that had no check


def test_the_filtering_tables_precision_is_checked(site: Path) -> None:
    rel = "evidence/tenant-handbook/filtering.json"
    table = read_evidence(site, rel)
    table["rows"]["bm25"]["precision@5"] = 0.999
    _save(site, rel, table)
    _consistent(site)
    assert any("bm25: precision@5 is 0.999" in m for m in _corpus_check(site, "filtering", "tenant-handbook"))


def test_the_chunking_sweeps_characters_and_labels_are_checked(site: Path) -> None:
    rel = "evidence/tenant-handbook/chunking.json"
    chunking = read_evidence(site, rel)
    chunking["sweep"]["rows"][0]["characters_embedded"] += 1
    chunking["sweep"]["rows"][1]["setting"]["label"] = "fixed-999w-0pct"
    _save(site, rel, chunking)
    _consistent(site)
    mismatches = _corpus_check(site, "chunking", "tenant-handbook")
    assert any("sweep row 0" in m and "characters_embedded" in m for m in mismatches)
    assert any("the grid inputs/sitegen.json declares" in m for m in mismatches)


def test_the_sweeps_dense_columns_need_their_vectors(site: Path) -> None:
    for name in ("sweep-index.json", "sweep-passages.npy"):
        (site / "evidence" / "tenant-handbook" / "embeddings" / name).unlink()
    _consistent(site)
    mismatches = _corpus_check(site, "chunking", "tenant-handbook")
    assert any("dense and RRF columns cannot be recomputed" in m for m in mismatches)


# ----------------------------------------------------------------- 6. the pages are covered


def test_a_page_changed_after_the_build_fails_the_pages_check(small_site: Path) -> None:
    page = small_site / "corpora" / "tiny" / "index.html"
    text = page.read_text(encoding="utf-8")
    assert "</h1>" in text
    page.write_text(text.replace("</h1>", " (edited)</h1>", 1), encoding="utf-8")
    bundle = audit.Bundle(small_site)
    check = audit.pages_check(bundle, [audit.Check("manifest")])
    assert any(m.startswith("corpora/tiny/index.html: ") and "pages.json says" in m for m in check.mismatches)
    same_size = text.replace("</h1>", "</H1>", 1)  # the same bytes count: only the sha256 can tell
    page.write_text(same_size, encoding="utf-8")
    check = audit.pages_check(bundle, [audit.Check("manifest")])
    assert any(m.startswith("corpora/tiny/index.html: sha256 ") for m in check.mismatches)


def test_a_number_changed_on_a_page_fails_even_with_pages_json_recomputed(small_site: Path) -> None:
    page = small_site / "corpora" / "tiny" / "index.html"
    text = page.read_text(encoding="utf-8")
    shown = '<span data-ev="evidence/tiny/report.json#/hit_counts/overall/bm25/hit@1">'
    start = text.index(shown) + len(shown)
    end = text.index("</span>", start)
    true_value = text[start:end]
    page.write_text(text[:start] + str(int(true_value) + 1) + text[end:], encoding="utf-8")
    write_page_listing(small_site)
    check = audit.pages_check(audit.Bundle(small_site), [])
    want = (
        f"corpora/tiny/index.html: shows '{int(true_value) + 1}' for "
        f"evidence/tiny/report.json#/hit_counts/overall/bm25/hit@1, the evidence gives '{true_value}'"
    )
    assert want in check.mismatches


def test_an_extra_page_or_a_missing_corpus_page_fails(small_site: Path) -> None:
    (small_site / "injected.html").write_text("<p>Audit: passed (1/1 checks)</p>", encoding="utf-8")
    shutil.rmtree(small_site / "corpora" / "tiny")
    check = audit.pages_check(audit.Bundle(small_site), [])
    assert "injected.html: served by the site but not listed in pages.json" in check.mismatches
    assert "corpora/tiny/index.html: the corpus has evidence but no page" in check.mismatches


# ----------------------------------------------------------------- 7. a verifier you can trust


def test_the_committed_site_ships_this_audit_and_its_page_states_the_sha256() -> None:
    shipped = audit._sha256(COMMITTED / "audit.py")
    assert shipped == audit._sha256(Path(audit.__file__))  # the committed site ships this very file
    assert shipped in (COMMITTED / "reproducibility.html").read_text(encoding="utf-8")


def test_a_tampered_shipped_audit_no_longer_matches_the_sha256_the_page_states(small_site: Path) -> None:
    script = small_site / "audit.py"
    script.write_text(script.read_text(encoding="utf-8") + "\n# accept anything\n", encoding="utf-8")
    write_page_listing(small_site)  # even with the page listing recomputed
    check = audit.pages_check(audit.Bundle(small_site), [])
    assert "reproducibility.html: does not state the sha256 of the audit.py it ships" in check.mismatches
