"""A corpus's ``sitegen.json`` may fuse a retriever's or a TREC file's run with a built-in ranker (RRF), and the
audit recomputes that fusion; a retriever's latency (p50/p95) is shown on the Performance page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitegen.audit import run_audit
from sitegen.errors import SitegenError
from sitegen.rankers.fusion import reciprocal_rank_fusion
from tests.helpers import (
    build,
    copy_site,
    evidence_failures,
    read_trec_run,
    rehash_manifest,
    write_corpus,
)


def _answers(question: str, k: int, filter: dict | None) -> list[tuple[str, float]]:
    """A fixed retriever over the tiny corpus: the passages in reverse id order, scored by position."""
    ids = ["d4", "d3", "d2", "d1"] if "E4012" not in question else ["d3", "d1"]
    return [(d, float(len(ids) - i)) for i, d in enumerate(ids[:k])]


def _config(folder: Path, fusions: object) -> None:
    (folder / "sitegen.json").write_text(json.dumps({"fusions": fusions}), encoding="utf-8")


#: bm25 and the retriever ``mine``: what every build here runs.
WITH_MINE = {"rankers": ("bm25",), "retrievers": (("mine", _answers),)}


FUSION = {"name": "rrf-bm25-mine", "components": ["bm25", "mine"], "k": 10, "candidates": 3, "weights": [1, 2]}


@pytest.fixture(scope="module")
def fused_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bm25, the retriever ``mine`` and their fusion configured in sitegen.json, over tiny; read by copies."""
    root = tmp_path_factory.mktemp("fused")
    corpus = write_corpus(root / "corpora" / "tiny")
    _config(corpus, [FUSION])
    build(corpus.parent, root / "site", **WITH_MINE)
    return root / "site"


def test_a_configured_fusion_of_a_builtin_ranker_and_a_retriever_is_built_and_audited(
    fused_site: Path, tmp_path: Path
) -> None:
    site = copy_site(fused_site, tmp_path / "site")  # the audit writes audit.json
    runs = site / "evidence" / "tiny" / "runs"
    fused = json.loads((runs / "rrf-bm25-mine.json").read_text())
    assert fused["contract"]["components"] == ["bm25", "mine"]
    assert fused["params"]["weights"] == {"bm25": 1.0, "mine": 2.0}
    trec = {n: read_trec_run(runs / f"{n}.trec") for n in ("rrf-bm25-mine", "bm25", "mine")}
    assert set(trec["mine"]) == {"q1", "q2", "q3", "q4"}
    for qid in trec["mine"]:
        lists = [[d for d, _ in trec[n].get(qid, [])] for n in ("bm25", "mine")]
        want = reciprocal_rank_fusion(lists, 10, (1.0, 2.0), 3)
        assert [d for d, _ in trec["rrf-bm25-mine"][qid]] == [item.doc_id for item in want]
    report = run_audit(site, echo=lambda _: None)
    assert report["verdict"] == "pass", evidence_failures(report)
    checks = {c["name"]: c for c in report["checks"]}
    assert "RRF of bm25, mine" in checks["run:tiny/rrf-bm25-mine"]["detail"]


def test_the_audit_fails_a_configured_fusion_whose_hits_were_changed(fused_site: Path, tmp_path: Path) -> None:
    site = copy_site(fused_site, tmp_path / "site")
    path = site / "evidence" / "tiny" / "runs" / "rrf-bm25-mine.json"
    run = json.loads(path.read_text())
    hits = run["queries"]["q1"]
    key = 0 if isinstance(hits[0], list) else "doc_id"  # compact [doc_id, score, ...] rows, or objects
    hits[0][key], hits[1][key] = hits[1][key], hits[0][key]
    path.write_text(json.dumps(run), encoding="utf-8")
    rehash_manifest(site)
    failures = evidence_failures(run_audit(site, echo=lambda _: None))
    assert any("rank 1 is doc" in line for line in failures.get("run:tiny/rrf-bm25-mine", []))


@pytest.mark.parametrize(
    ("fusions", "message"),
    [
        ([{"name": "f", "components": ["bm25", "ghost"]}], r"fusion 'f': component\(s\) ghost are not rankers or runs"),
        ([{"name": "mine", "components": ["bm25", "dense"]}], r"fusion 'mine': the name is already a ranker or run"),
        ([{"name": "f", "components": ["bm25"]}], r"components must be two or more different"),
        ([{"name": "f", "components": ["bm25", "mine"], "weights": [1]}], r"weights must be 2 non-negative numbers"),
        ([{"name": "f", "components": ["bm25", "mine"], "k": -1}], r"k must be a non-negative number"),
        ([{"name": "F!", "components": ["bm25", "mine"]}], r"name 'F!' must be lowercase"),
        ({"name": "f"}, r'"fusions" must be a list'),
    ],
)
def test_a_bad_fusion_config_fails_the_build_naming_the_file_and_the_problem(
    tmp_path: Path, tiny_corpus: Path, fusions: object, message: str
) -> None:
    _config(tiny_corpus, fusions)
    with pytest.raises(SitegenError, match=message) as caught:
        build(tiny_corpus.parent, tmp_path / "site", **WITH_MINE)
    assert "sitegen.json" in str(caught.value)
    assert not (tmp_path / "site").exists()


def _shown(ms: float) -> str:
    """A latency as the Performance page writes it, whatever the machine measured: two decimals, scientific
    notation below 0.01 ms, no decimals from 100 ms."""
    if ms != 0 and abs(ms) < 0.01:
        return f"{ms:.2e}"
    return f"{ms:,.2f}" if abs(ms) < 100 else f"{ms:,.0f}"


def test_retriever_latency_p50_and_p95_are_on_the_performance_page(fused_site: Path, tmp_path: Path) -> None:
    site = copy_site(fused_site, tmp_path / "site")  # built without a bench folder: the retriever's timings only
    timing = json.loads((site / "timings" / "retrievers-mine.json").read_text())
    page = (site / "performance.html").read_text()
    assert "Retriever <code>mine</code>: latency per question" in page
    assert 'href="timings/retrievers-mine.json"' in page
    row = timing["corpora"][0]
    assert row["corpus"] == "tiny"
    cells = f"<td>{row['questions']:,}</td><td>{_shown(row['p50_ms'])}</td><td>{_shown(row['p95_ms'])}</td>"
    assert cells in page
    assert "performance.html" in (site / "index.html").read_text()
    assert run_audit(site, echo=lambda _: None)["verdict"] == "pass"


def test_a_configured_fusion_may_fuse_a_trec_run_file(tmp_path: Path, tiny_corpus: Path) -> None:
    (tiny_corpus / "runs").mkdir()
    lines = ["q1 Q0 d2 1 2.0 ext", "q1 Q0 d1 2 1.0 ext", "q2 Q0 d4 1 1.0 ext", "q3 Q0 d2 1 1.0 ext"]
    (tiny_corpus / "runs" / "ext.trec").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _config(tiny_corpus, [{"name": "rrf-bm25-ext", "components": ["bm25", "ext"]}])
    site = tmp_path / "site"
    build(tiny_corpus.parent, site, rankers=("bm25",))
    runs = site / "evidence" / "tiny" / "runs"
    trec = {n: read_trec_run(runs / f"{n}.trec") for n in ("rrf-bm25-ext", "bm25", "ext")}
    lists = [[d for d, _ in trec[n].get("q1", [])] for n in ("bm25", "ext")]
    assert [d for d, _ in trec["rrf-bm25-ext"]["q1"]] == [i.doc_id for i in reciprocal_rank_fusion(lists)]
    report = run_audit(site, echo=lambda _: None)
    assert report["verdict"] == "pass", evidence_failures(report)
