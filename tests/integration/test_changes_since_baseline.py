"""Changes since a baseline (``sitegen build --baseline``): the page lists exactly what moved and what changed, the
audit recomputes it from the copy the bundle keeps, and a baseline failing its checksums is refused.

Built from a temporary copy of the payments-support corpus with the fake embedding model and no PostgreSQL ranker.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sitegen import audit
from sitegen.cli import cli
from tests.helpers import REPO, build, file_tree, rehash_manifest

# Slow: three builds of the shipped payments-support corpus
pytestmark = pytest.mark.slow

CORPUS = "payments-support"
RANKERS = ("bm25", "dense", "rrf-dense-bm25")
EDITED_PASSAGE = "err-e4021"
RELABELLED = ("q02", "err-e4012", "howto-refund-partial-amount")  # question, old passage, new passage
TUNED = "rrf-tuned"  # the corpus's own fusion, from its sitegen.json; the second build changes its k


def _fusion_config(k: int) -> str:
    return json.dumps({"fusions": [{"name": TUNED, "components": ["dense", "bm25"], "k": k, "candidates": 20}]})


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _edit(corpus: Path) -> None:
    """One RRF parameter in ``sitegen.json``, one question's label and one passage's text: the second build's change."""
    (corpus / "sitegen.json").write_text(_fusion_config(2), encoding="utf-8")
    qid, old, new = RELABELLED
    qrels = corpus / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text(encoding="utf-8").replace(f"{qid}\t{old}\t", f"{qid}\t{new}\t"), encoding="utf-8")
    lines = (corpus / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines):
        doc = json.loads(line)
        if doc["_id"] == EDITED_PASSAGE:
            doc["text"] += " Refunds for a shirt returned out of three items go back as money for that item."
            lines[n] = json.dumps(doc)
    (corpus / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A baseline site, then a site rebuilt after :func:`_edit` with ``--baseline``."""
    root = tmp_path_factory.mktemp("changes")
    corpora = root / "corpora"
    shutil.copytree(REPO / "corpora" / CORPUS, corpora / CORPUS)
    (corpora / CORPUS / "sitegen.json").write_text(_fusion_config(60), encoding="utf-8")
    build(corpora, root / "before", cache=root / "cache", rankers=RANKERS, allow_edited=True)
    _edit(corpora / CORPUS)
    build(corpora, root / "after", cache=root / "cache", rankers=RANKERS, allow_edited=True, baseline=root / "before")
    return {"root": root, "corpora": corpora, "before": root / "before", "after": root / "after"}


def _expected_moves(before: Path, after: Path) -> set[tuple[str, str]]:
    """(question, ranker) whose first relevant rank differs, read from each build's own report.json."""
    a = _load(before / "evidence" / CORPUS / "report.json")["first_relevant_rank"]
    b = _load(after / "evidence" / CORPUS / "report.json")["first_relevant_rank"]
    moves = set()
    for qid in a.keys() | b.keys():
        for ranker in (*RANKERS, TUNED):
            if (a.get(qid) or {}).get(ranker) != (b.get(qid) or {}).get(ranker):
                moves.add((qid, ranker))
    return moves


def test_the_changes_page_lists_exactly_the_questions_that_moved_and_the_changed_label(sites: dict[str, Path]) -> None:
    after = sites["after"]
    changes = _load(after / "evidence" / CORPUS / "changes.json")
    expected = _expected_moves(sites["before"], after)
    assert expected, "the edit must move at least one question for this test to say anything"
    assert {(m["query_id"], m["ranker"]) for m in changes["moved"]} == expected
    assert changes["moved_questions"] == sorted({q for q, _ in expected}, key=lambda q: int(q[1:]))
    distances = [m["distance"] for m in changes["moved"]]
    assert distances == sorted(distances, reverse=True)
    qid, old, new = RELABELLED
    assert changes["inputs"]["labels"] == {
        "added": [{"query_id": qid, "doc_id": new, "grade": 1}],
        "removed": [{"query_id": qid, "doc_id": old, "grade": 1}],
        "edited": [],
    }
    assert [e["id"] for e in changes["inputs"]["passages"]["edited"]] == [EDITED_PASSAGE]
    assert changes["inputs"]["questions"] == {"added": [], "removed": [], "edited": []}
    assert [f["file"] for f in changes["inputs"]["files"]["edited"]] == ["sitegen.json"]
    assert any(TUNED in m["ranker"] for m in changes["moved"]), "the changed k must move some of the fusion's questions"
    page = (after / "corpora" / CORPUS / "changes.html").read_text(encoding="utf-8")
    for q in changes["moved_questions"]:
        assert f'href="questions/{q}.html"' in page
    assert f"{len(changes['moved_questions'])} questions moved" in page
    assert 'href="changes.html"' in (after / "corpora" / CORPUS / "index.html").read_text(encoding="utf-8")


def test_every_number_on_the_changes_page_points_into_changes_json_and_the_audit_passes(
    sites: dict[str, Path], tmp_path: Path
) -> None:
    site = Path(shutil.copytree(sites["after"], tmp_path / "site"))
    report = audit.run_audit(site, echo=lambda _: None)
    assert report["verdict"] == "pass", [c for c in report["checks"] if c["status"] == "fail"]
    check = next(c for c in report["checks"] if c["name"] == f"changes:{CORPUS}")
    assert "follows from the baseline copy" in check["detail"]
    page = (site / "corpora" / CORPUS / "changes.html").read_text(encoding="utf-8")
    sourced = page.count(f'data-ev="evidence/{CORPUS}/changes.json#')
    assert sourced >= 5 * len(_load(site / "evidence" / CORPUS / "changes.json")["metrics"])


def _changes_check(site: Path) -> list[str]:
    return audit._run_check(f"changes:{CORPUS}", audit.check_changes, audit.Bundle(site), CORPUS).mismatches


@pytest.mark.parametrize(
    ("tamper", "named"),
    [
        (lambda c: c["moved"].pop(), "/moved"),
        (lambda c: c["inputs"]["labels"]["added"].clear(), "/inputs/labels/added"),
        (lambda c: c["metrics"][0].update(difference=0.5), "/metrics/0/difference"),
        (lambda c: c["moved"].reverse(), "/moved/0"),
    ],
)
def test_a_tampered_changes_json_fails_the_audit(
    sites: dict[str, Path], tmp_path: Path, tamper: Any, named: str
) -> None:
    site = Path(shutil.copytree(sites["after"], tmp_path / "site"))
    rel = site / "evidence" / CORPUS / "changes.json"
    changes = _load(rel)
    assert not _changes_check(site)
    tamper(changes)
    rel.write_text(json.dumps(changes), encoding="utf-8")
    rehash_manifest(site)
    mismatches = _changes_check(site)
    assert mismatches and any(named in m for m in mismatches), mismatches


def test_a_changes_json_removed_with_its_baseline_copy_kept_fails_the_presence_check(
    sites: dict[str, Path], tmp_path: Path
) -> None:
    site = Path(shutil.copytree(sites["after"], tmp_path / "site"))
    (site / "evidence" / CORPUS / "changes.json").unlink()
    rehash_manifest(site)
    body = dict(audit.CORPUS_CHECKS)["presence"]
    mismatches = audit._run_check(f"presence:{CORPUS}", body, audit.Bundle(site), CORPUS).mismatches
    assert any(f"evidence/{CORPUS}/changes.json: missing" in m for m in mismatches), mismatches


def test_a_baseline_that_fails_its_checksums_is_refused_and_the_output_left_untouched(
    sites: dict[str, Path], tmp_path: Path
) -> None:
    baseline = Path(shutil.copytree(sites["before"], tmp_path / "baseline"))
    metrics = baseline / "evidence" / CORPUS / "metrics.json"
    metrics.write_text(metrics.read_text(encoding="utf-8").replace("0.", "0.9", 1), encoding="utf-8")
    out = Path(shutil.copytree(sites["after"], tmp_path / "out"))
    before = file_tree(out)
    with pytest.raises(Exception) as refused:
        build(
            sites["corpora"], out, cache=sites["root"] / "cache", rankers=RANKERS, allow_edited=True, baseline=baseline
        )
    message = str(refused.value)
    assert f"--baseline {baseline} is refused" in message
    assert "metrics.json: sha256 does not match" in message
    assert file_tree(out) == before


def test_a_folder_that_is_not_a_sitegen_bundle_is_refused_as_a_baseline(sites: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("hello", encoding="utf-8")
    args = ["build", "--corpora", str(sites["corpora"]), "--out", str(tmp_path / "out"), "--ranker", "bm25"]
    result = CliRunner().invoke(cli, [*args, "--allow-edited", "--baseline", str(tmp_path / "notes"), "--quiet"])
    assert result.exit_code != 0
    assert "--baseline" in result.output and "not a site or evidence folder" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_tested_differences_carry_the_corpus_pages_p_values_and_the_audit_recomputes_them(
    sites: dict[str, Path], tmp_path: Path
) -> None:
    """Every question's text changed: the dense ranker moves on most questions, so the paired tests run."""
    corpora = Path(shutil.copytree(sites["corpora"], tmp_path / "corpora"))
    queries = corpora / CORPUS / "queries.jsonl"
    rows = [json.loads(line) for line in queries.read_text(encoding="utf-8").splitlines() if line.strip()]
    queries.write_text("".join(json.dumps({**q, "text": q["text"] + " please"}) + "\n" for q in rows), encoding="utf-8")
    out = tmp_path / "site"
    build(corpora, out, cache=sites["root"] / "cache", rankers=RANKERS, allow_edited=True, baseline=sites["before"])
    changes = _load(out / "evidence" / CORPUS / "changes.json")
    tested = [row for row in changes["metrics"] if row["tested"]]
    assert tested and all(0 < row["p_value"] <= row["p_adjusted"] <= 1 for row in tested)
    assert changes["family"]["size"] == len(tested)
    assert len(changes["inputs"]["questions"]["edited"]) == len(rows)
    assert not _changes_check(out)
    tested[0]["p_adjusted"] = min(1.0, tested[0]["p_adjusted"] + 0.01) if tested[0]["p_adjusted"] < 1 else 0.5
    (out / "evidence" / CORPUS / "changes.json").write_text(json.dumps(changes), encoding="utf-8")
    rehash_manifest(out)
    assert any("p_adjusted" in m for m in _changes_check(out))
