"""A real collection end to end: graded Cranfield imported, built, and scored like trec_eval.

The parity tests run on ``tests/fixtures/cranfield-graded`` (a committed subset, see its README); the tests that
need the whole collection read ``corpora/cranfield``, imported from ../shared/collections/cranfield byte for byte.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from itertools import groupby, pairwise, permutations, product
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitegen.cli import cli
from sitegen.publish.evidence import read_run
from sitegen.publish.pages.corpus import QUESTIONS_PER_PAGE
from sitegen.scoring.metrics import CUTOFFS, metric_names
from sitegen.scoring.ties import TIE_MEASURES, score_query
from tests.helpers import (
    REPO,
    assert_metrics_match_trec_eval,
    build,
    read_qrels,
    read_trec_run,
)

# Slow: an import and build of 238 Cranfield passages
pytestmark = pytest.mark.slow

SHALLOW = tuple(k for k in CUTOFFS if k <= 20)
CRANFIELD = REPO / "corpora" / "cranfield"  # ../shared/collections/cranfield imported: the same bytes
FIXTURE = REPO / "tests" / "fixtures" / "cranfield-graded"
RANKERS = ("bm25", "bm25-stem", "dense", "rrf-dense-bm25", "rrf-dense-bm25-stem")
FUSED = ("rrf-dense-bm25", "rrf-dense-bm25-stem")
FIXTURE_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")


def select_cranfield_fixture(source: Path, queries: int = 25, min_relevant: int = 3, distractors: int = 50) -> dict:
    """The fixture's selection rule (tests/fixtures/cranfield-graded/README.md), applied to a BEIR folder;
    returns each file's bytes, lines copied unchanged and in source order."""
    query_lines = (source / "queries.jsonl").read_bytes().splitlines(keepends=True)
    qrel_lines = (source / "qrels" / "test.tsv").read_bytes().splitlines(keepends=True)
    doc_lines = (source / "corpus.jsonl").read_bytes().splitlines(keepends=True)
    relevant: Counter[str] = Counter()
    for line in qrel_lines[1:]:
        qid, _, grade = line.decode().rstrip("\r\n").split("\t")
        relevant[qid] += int(grade) > 0
    chosen = [line for line in query_lines if relevant[json.loads(line)["_id"]] >= min_relevant][:queries]
    chosen_ids = {json.loads(line)["_id"] for line in chosen}
    qrels = [line for line in qrel_lines[1:] if line.decode().split("\t")[0] in chosen_ids]
    judged = {line.decode().split("\t")[1] for line in qrels}
    unjudged = [line for line in doc_lines if json.loads(line)["_id"] not in judged]
    empty_text = [line for line in unjudged if not json.loads(line)["text"]]
    keep = judged | {json.loads(line)["_id"] for line in unjudged[:distractors] + empty_text}
    return {
        "corpus.jsonl": b"".join(line for line in doc_lines if json.loads(line)["_id"] in keep),
        "queries.jsonl": b"".join(chosen),
        "qrels/test.tsv": qrel_lines[0] + b"".join(qrels),
    }


def _import_and_build(source: Path, root: Path, expected_counts: str) -> Path:
    result = CliRunner().invoke(
        cli, ["import", "beir", str(source), "--to", str(root / "corpora"), "--name", "cranfield",
              "--license", "research use (test)"]
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert expected_counts in result.output
    build(root / "corpora", root / "site", rankers=RANKERS)
    return root / "site"


@pytest.fixture(scope="module")
def fixture_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _import_and_build(
        FIXTURE, tmp_path_factory.mktemp("cranfield-graded"), "238 documents, 25 queries, 214 judged pairs"
    )


def test_the_whole_collection_imports_with_its_counts(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["import", "beir", str(CRANFIELD), "--to", str(tmp_path / "corpora"), "--name", "cranfield",
              "--license", "research use (test)"]
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "1400 documents, 225 queries, 1612 judged pairs" in result.output


def test_fixture_has_every_grade_and_several_relevant_passages_per_question() -> None:
    qrels = read_qrels(FIXTURE / "qrels" / "test.tsv")
    assert len(qrels) == 25
    assert min(sum(g > 0 for g in judged.values()) for judged in qrels.values()) >= 3
    assert Counter(g for judged in qrels.values() for g in judged.values()) == {4: 14, 3: 70, 2: 101, 1: 29}


def test_fixture_files_match_the_checksums_in_its_readme() -> None:
    readme = (FIXTURE / "README.md").read_text()
    for name in FIXTURE_FILES:
        digest = hashlib.sha256((FIXTURE / name).read_bytes()).hexdigest()
        assert f"| `{name}` |" in readme and digest in readme, name


def test_every_metric_on_graded_cranfield_equals_trec_eval(fixture_site: Path) -> None:
    compared = assert_metrics_match_trec_eval(fixture_site, "cranfield")
    names = metric_names()  # MAP, R-precision and recall@100 among them, each at trec_eval's -M k
    assert {"map@100", "rprec@100", "recall@100"} <= set(names)
    assert compared == len(RANKERS) * len(names) * 25


def test_graded_cranfield_runs_retrieve_several_relevant_passages_at_several_grades(fixture_site: Path) -> None:
    """The parity above is only worth something if the runs exercise grades and multiple hits per query."""
    qrels = read_qrels(fixture_site / "evidence" / "cranfield" / "inputs" / "qrels" / "test.tsv")
    for ranker in RANKERS:
        run = read_trec_run(fixture_site / "evidence" / "cranfield" / "runs" / f"{ranker}.trec")
        found = [[qrels[q].get(d, 0) for d, _ in hits[:10] if qrels[q].get(d, 0) > 0] for q, hits in run.items()]
        assert sum(len(grades) >= 2 for grades in found) >= 5, ranker
        assert len({g for grades in found for g in grades}) >= 3, ranker


def test_fused_graded_cranfield_runs_have_score_ties_within_the_cut_offs(fixture_site: Path) -> None:
    """RRF gives equal scores to passages at mirrored component ranks. The .trec files encode sitegen's tie
    order in a strictly decreasing score column, so the parity test above covers these ties only if they
    occur within the deepest cut-off (20): they do, in many questions."""
    for ranker in FUSED:
        runs = read_run(fixture_site / "evidence" / "cranfield" / "runs" / f"{ranker}.json")
        tied = [
            (qid, a["rank"])
            for qid, hits in runs["queries"].items()
            for a, b in pairwise(hits[:20])
            if a["score"] == b["score"]
        ]
        assert len(tied) >= 20 and len({qid for qid, _ in tied}) >= 10, (ranker, tied)


def _depends_on_tie_order_by_brute_force(hits: list[dict], grades: dict[str, int]) -> bool:
    """Score every order of the tied groups reaching the top 20 with every metric ties.json covers up to 20
    (the orders of ties reaching 100 are too many to list); True when some metric takes two values."""
    names = metric_names(SHALLOW, TIE_MEASURES)
    groups = [list(g) for _, g in groupby(hits, key=lambda h: h["score"])]
    parts, start = [], 0
    for group in groups:
        ids = [h["doc_id"] for h in group]
        parts.append(list(permutations(ids)) if start < max(SHALLOW) else [tuple(ids)])
        start += len(group)
    orders = list(product(*parts))
    assert len(orders) <= 100_000, "tied groups too large to enumerate"
    seen = {tuple(round(v, 12) for v in score_query([d for p in o for d in p], grades, names).values()) for o in orders}
    return len(seen) > 1


def test_graded_cranfield_ties_json_counts_the_questions_whose_metrics_depend_on_tie_order(fixture_site: Path) -> None:
    """ties.json names, per fused ranker, the questions where some metric moves with the order of tied
    RRF scores; the count must be positive and equal a brute-force count over every order of the ties."""
    evidence = fixture_site / "evidence" / "cranfield"
    ties = json.loads((evidence / "ties.json").read_text())
    qrels = read_qrels(evidence / "inputs" / "qrels" / "test.tsv")
    for ranker in FUSED:
        run = read_run(evidence / "runs" / f"{ranker}.json")["queries"]
        scored = [q for q, grades in qrels.items() if any(g > 0 for g in grades.values())]
        brute = {q for q in scored if _depends_on_tie_order_by_brute_force(run.get(q, []), qrels[q])}
        entries = ties["rankers"][ranker]["metrics"]
        listed = {
            q for name, entry in entries.items() if int(name.split("@")[1]) in SHALLOW for q in entry["questions"]
        }
        assert listed == brute and len(brute) > 0, ranker
        assert ties["rankers"][ranker]["depending"] >= len(brute), ranker  # @100 may add questions


def test_graded_cranfield_audit_passes(fixture_site: Path) -> None:
    verdict = json.loads((fixture_site / "audit.json").read_text())
    assert verdict["verdict"] == "pass", [c for c in verdict["checks"] if c["status"] != "pass"]


def test_fixture_is_the_stated_subset_of_the_shared_collection() -> None:
    selected = select_cranfield_fixture(CRANFIELD)
    for name in FIXTURE_FILES:
        assert (FIXTURE / name).read_bytes() == selected[name], name
    readme = (FIXTURE / "README.md").read_text()
    for name in FIXTURE_FILES:
        assert hashlib.sha256((CRANFIELD / name).read_bytes()).hexdigest() in readme, name


def test_the_question_index_of_225_questions_is_one_page_the_filter_covers_whole() -> None:
    """On the committed site, which tests/integration/test_committed_site.py proves a fresh build writes."""
    corpus_dir = REPO / "site" / "corpora" / "cranfield"
    assert QUESTIONS_PER_PAGE >= 225
    assert sorted(p.name for p in corpus_dir.glob("ranks*.html")) == ["ranks.html"]
    assert (corpus_dir / "ranks.html").read_text().count('"><th scope="row"><a href="questions/') == 225
    assert len(list((corpus_dir / "questions").glob("*.html"))) == 225
