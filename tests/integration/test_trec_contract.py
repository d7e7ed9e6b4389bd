"""trec_eval is the contract, shipped (DESIGN rule 8): the bundle's qrels.trec and runs/*.trec, fed to
trec_eval's code (pytrec_eval) exactly as trec_eval.json and the reproducibility page say, give every
number in metrics.json; and each policy the page states about trec_eval is checked here on a tiny case."""

from __future__ import annotations

import hashlib
import json
import math
import shlex
import shutil
from pathlib import Path
from urllib.parse import unquote

import pytest
import pytrec_eval

from sitegen import audit
from sitegen.inputs.corpus import load_corpus
from sitegen.publish.evidence import write_trec_eval_contract
from sitegen.scoring.metrics import metric_names
from tests.helpers import REPO, build, evidence_failures, write_corpus

#: The committed site: its bundle must carry the contract (rebuild site/ after changing the evidence).
SITE = REPO / "site"
TOLERANCE = 1e-9


def _committed_corpora() -> list:
    """The committed bundle's corpora; Cranfield's 225 questions by 21 rankers (three seconds) in the full run only."""
    manifest = SITE / "evidence" / "manifest.json"
    names = json.loads(manifest.read_text())["corpora"] if manifest.is_file() else []
    return [pytest.param(n, marks=pytest.mark.slow) if n == "cranfield" else n for n in names]


def parse_command(command: str) -> tuple[int, list[str], str, str]:
    """(-M value, -m measures, qrels file, run file) of one shipped command; any other flag is refused,
    so the test runs exactly what the page prints: ``trec_eval -c -q -M k -m ... QRELS RUN``."""
    argv = shlex.split(command)
    assert argv[0] == "trec_eval", command
    flags, measures, max_docs, files = set(), [], None, []
    args = iter(argv[1:])
    for arg in args:
        if arg in ("-c", "-q"):
            flags.add(arg)
        elif arg == "-M":
            max_docs = int(next(args))
        elif arg == "-m":
            measures.append(next(args))
        else:
            assert not arg.startswith("-"), f"unexpected flag {arg} in {command}"
            files.append(arg)
    assert flags == {"-c", "-q"} and max_docs is not None and len(files) == 2, command
    return max_docs, measures, files[0], files[1]


def cut_like_trec_eval(run: dict[str, dict[str, float]], max_docs: int) -> dict[str, dict[str, float]]:
    """trec_eval's -M (pytrec_eval has none): order by score descending, ties by doc id descending, keep the first."""
    kept = {}
    for qid, scores in run.items():
        ranked = sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)[:max_docs]
        kept[qid] = dict(ranked)
    return kept


def trec_eval_values(corpus_dir: Path) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, dict[str, int]]]:
    """Run every command of ``trec_eval.json`` through pytrec_eval on the shipped files as they are:
    {ranker: {metric: {qid: value}}} for every question in qrels.trec (-c: one the run lacks is 0), and the qrels."""
    contract = json.loads((corpus_dir / "trec_eval.json").read_text(encoding="utf-8"))
    with (corpus_dir / contract["qrels"]["file"]).open(encoding="utf-8") as handle:
        qrels = pytrec_eval.parse_qrel(handle)  # as trec_eval reads it: whitespace-separated, nothing dropped
    values: dict[str, dict[str, dict[str, float]]] = {}
    for ranker, commands in contract["commands"].items():
        per_metric: dict[str, dict[str, float]] = {}
        for command in commands:
            max_docs, measures, qrels_file, run_file = parse_command(command)
            assert qrels_file == contract["qrels"]["file"], command
            with (corpus_dir / run_file).open(encoding="utf-8") as handle:
                run = pytrec_eval.parse_run(handle)
            # relevance_level=1 is trec_eval's default -l 1.
            scored = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(cut_like_trec_eval(run, max_docs))
            for metric, mapping in contract["measures"].items():
                if mapping["max_docs"] == max_docs:
                    per_metric[metric] = {q: scored.get(q, {}).get(mapping["trec_eval"], 0.0) for q in qrels}
        values[ranker] = per_metric
    return values, qrels


def assert_bundle_matches_trec_eval(corpus_dir: Path) -> int:
    """Every overall, per-kind and per-question value of metrics.json equals trec_eval's under the
    page's averaging policy; returns the number of values compared."""
    metrics = json.loads((corpus_dir / "metrics.json").read_text(encoding="utf-8"))
    summary = json.loads((corpus_dir / "corpus.json").read_text(encoding="utf-8"))
    contract = json.loads((corpus_dir / "trec_eval.json").read_text(encoding="utf-8"))
    kinds = {
        q["_id"]: q.get("kind", "unlabelled")
        for q in map(json.loads, (corpus_dir / "inputs" / "queries.jsonl").read_text(encoding="utf-8").splitlines())
    }
    values, qrels = trec_eval_values(corpus_dir)
    # The policy: average over the questions in qrels.trec with a grade of 1 or more; the others in it
    # (judged only with grade 0) are in trec_eval's num_q but in none of sitegen's averages.
    averaged = [q for q, grades in qrels.items() if any(g >= 1 for g in grades.values())]
    assert sum(len(g) for g in qrels.values()) == summary["judged_pairs"] == contract["qrels"]["pairs"]
    assert len(averaged) == summary["answerable_queries"] == contract["questions"]["averaged"]
    assert len(qrels) == contract["questions"]["in_qrels"]
    assert sorted(values) == sorted(metrics) == sorted(summary["rankers"])
    compared = 0
    for ranker, scored in metrics.items():
        assert sorted(values[ranker]) == sorted(scored["overall"]) == sorted(summary["metrics"]), ranker
        assert sorted(unquote(q) for q in averaged) == sorted(scored["per_query"]), ranker
        for metric, per_query in values[ranker].items():
            mean = math.fsum(per_query[q] for q in averaged) / len(averaged)
            assert abs(scored["overall"][metric] - mean) <= TOLERANCE, (ranker, metric)
            trec_all = math.fsum(per_query.values()) / len(qrels)  # trec_eval -c's "all" line
            assert abs(scored["overall"][metric] - trec_all * len(qrels) / len(averaged)) <= TOLERANCE
            for kind, by_kind in scored["by_kind"].items():
                members = [q for q in averaged if kinds[unquote(q)] == kind]
                assert abs(by_kind[metric] - math.fsum(per_query[q] for q in members) / len(members)) <= TOLERANCE
            for q in averaged:
                assert abs(scored["per_query"][unquote(q)][metric] - per_query[q]) <= TOLERANCE, (ranker, q, metric)
            compared += 1 + len(scored["by_kind"]) + len(averaged)
    return compared


def assert_script_is_the_commands(corpus_dir: Path) -> None:
    """The shell loop the page shows expands to exactly the per-ranker commands the test runs."""
    contract = json.loads((corpus_dir / "trec_eval.json").read_text(encoding="utf-8"))
    lines = contract["script"].splitlines()
    assert lines[0] == f"cd {contract['directory']}" and lines[-1] == "done"
    words = shlex.split(lines[1].removeprefix("for ranker in ").removesuffix("; do"))
    assert sorted(words) == sorted(contract["commands"])  # the JSON keeps its keys sorted
    for ranker in words:
        expanded = [
            line.strip().replace('"runs/$ranker.trec"', shlex.quote(f"runs/{ranker}.trec")) for line in lines[2:-1]
        ]
        assert expanded == contract["commands"][ranker]


@pytest.mark.parametrize("corpus", _committed_corpora())
def test_committed_bundle_reproduces_with_the_trec_eval_commands_on_the_page(corpus: str) -> None:
    corpus_dir = SITE / "evidence" / corpus
    assert (corpus_dir / "qrels.trec").is_file(), "site/ predates the trec_eval contract: rebuild it"
    assert_script_is_the_commands(corpus_dir)
    assert assert_bundle_matches_trec_eval(corpus_dir) > 0
    page = (SITE / "reproducibility.html").read_text(encoding="utf-8")
    contract = json.loads((corpus_dir / "trec_eval.json").read_text(encoding="utf-8"))
    assert all(command in page for commands in contract["commands"].values() for command in commands)


EDGE_DOCS = [
    {"_id": "d1", "title": "Refunds", "text": "Refund a card payment."},
    {"_id": "d 2", "title": "Payouts", "text": "Payouts arrive two days later."},
    {"_id": "d%3", "title": "Expired", "text": "Error E4012 means the card has expired."},
    {"_id": "d4", "title": "Fees", "text": "Fee tables update nightly."},
]
EDGE_QUERIES = [
    {"_id": "q1", "text": "refund payment", "kind": "a"},
    {"_id": "q 2", "text": "payouts days", "kind": "b"},
    {"_id": "q3", "text": "zebra xylophone", "kind": "a"},  # no word in the corpus: bm25 returns nothing
    {"_id": "q4", "text": "fee tables", "kind": "u", "answerable": False},  # judged, grade 0 only
    {"_id": "q5", "text": "weather", "kind": "u", "answerable": False},  # not judged at all
]
# Rows deliberately out of corpus order: qrels.trec follows queries.jsonl, then passage order.
EDGE_QRELS = [("q1", "d4", 0), ("q1", "d%3", 1), ("q1", "d1", 2), ("q 2", "d 2", 1), ("q3", "d4", 1), ("q4", "d4", 0)]


def test_qrels_trec_bytes_for_a_hand_written_corpus(tmp_path: Path) -> None:
    corpus = load_corpus(write_corpus(tmp_path / "corpora" / "edge", EDGE_DOCS, EDGE_QUERIES, EDGE_QRELS))
    out = tmp_path / "out"
    out.mkdir()
    write_trec_eval_contract(out, corpus, ["bm25"], metric_names(), chunked=False)
    assert (out / "qrels.trec").read_bytes() == (
        b"q1 0 d1 2\nq1 0 d%253 1\nq1 0 d4 0\nq%202 0 d%202 1\nq3 0 d4 1\nq4 0 d4 0\n"
    )
    contract = json.loads((out / "trec_eval.json").read_text())
    assert contract["commands"]["bm25"] == [
        f"trec_eval -c -q -M {k} -m success.{k} -m recall.{k} -m P.{k} -m recip_rank -m ndcg_cut.{k} -m map -m Rprec "
        f"qrels.trec runs/bm25.trec"
        for k in (1, 3, 5, 10, 20, 100)
    ]
    assert contract["measures"]["map@100"] == {"trec_eval": "map", "max_docs": 100}
    assert contract["measures"]["rprec@100"] == {"trec_eval": "Rprec", "max_docs": 100}
    assert contract["measures"]["mrr@10"] == {"trec_eval": "recip_rank", "max_docs": 10}
    assert contract["measures"]["hit@1"] == {"trec_eval": "success_1", "max_docs": 1}
    assert contract["questions"] == {
        "total": 5,
        "in_qrels": 4,
        "averaged": 3,
        "judged_only_grade_0": 1,
        "without_judgments": 1,
    }
    assert "x 4 / 3" in contract["reading"]


@pytest.fixture(scope="module")
def edge_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh build of the edge corpus; lexical rankers only, since the contract does not depend on the model."""
    root = tmp_path_factory.mktemp("trec-contract")
    write_corpus(root / "corpora" / "edge", EDGE_DOCS, EDGE_QUERIES, EDGE_QRELS)
    build(root / "corpora", root / "site", rankers=("bm25", "bm25-stem"))
    return root / "site"


def test_a_fresh_build_with_every_edge_case_reproduces_with_trec_eval(edge_site: Path) -> None:
    """Grade-0 pairs, a question judged only with grade 0, one never judged, one with no bm25 hit, ids
    that need percent-encoding: the documented averaging over trec_eval's own values gives metrics.json."""
    corpus_dir = edge_site / "evidence" / "edge"
    assert "q3 " not in (corpus_dir / "runs" / "bm25.trec").read_text()  # the no-hit case is exercised
    assert_script_is_the_commands(corpus_dir)
    assert assert_bundle_matches_trec_eval(corpus_dir) > 0
    page = (edge_site / "reproducibility.html").read_text(encoding="utf-8")
    contract = json.loads((corpus_dir / "trec_eval.json").read_text(encoding="utf-8"))
    assert all(command in page for commands in contract["commands"].values() for command in commands)
    assert "x 4 / 3" in page


def _audit_failures(site: Path) -> dict[str, list[str]]:
    return evidence_failures(audit.run_audit(site, echo=lambda _: None))


def _rewrite(site: Path, rel: str, old: str, new: str) -> None:
    """Tamper with one evidence file and give it its new checksum, so only a recomputation can catch it."""
    path = site / rel
    path.write_text(path.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")
    manifest = json.loads((site / "evidence" / "manifest.json").read_text())
    data = path.read_bytes()
    manifest["files"][rel] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    (site / "evidence" / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def test_the_audit_rederives_qrels_trec_and_the_commands(edge_site: Path, tmp_path: Path) -> None:
    site = Path(shutil.copytree(edge_site, tmp_path / "site"))
    assert _audit_failures(site) == {}
    _rewrite(site, "evidence/edge/qrels.trec", "q1 0 d4 0\n", "")  # a dropped grade-0 judgment
    assert _audit_failures(site) == {
        "corpus:edge": [
            "evidence/edge/qrels.trec: line 3 is 'q%202 0 d%202 1', the inputs give 'q1 0 d4 0'",
        ]
    }
    site = Path(shutil.copytree(edge_site, tmp_path / "site2"))
    _rewrite(site, "evidence/edge/trec_eval.json", "-M 10 ", "-M 100 ")  # MRR@10 from the wrong depth
    assert _audit_failures(site) == {
        "corpus:edge": ["evidence/edge/trec_eval.json: commands is not what corpus.json's metrics and rankers call for"]
    }


# ---- each claim the page makes about trec_eval, shown on trec_eval's own code (pytrec_eval)


def _evaluate(qrels: dict, run: dict, measures: set[str]) -> dict:
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


def test_a_query_without_qrels_is_ignored_even_when_the_run_has_hits() -> None:
    assert set(_evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 1.0}, "u": {"d1": 1.0}}, {"recip_rank"})) == {"q1"}


def test_a_query_judged_only_with_grade_0_is_counted_with_zeros() -> None:
    result = _evaluate({"q1": {"d1": 1}, "z": {"d1": 0}}, {"q1": {"d1": 1.0}, "z": {"d1": 1.0}}, {"success.1", "P.1"})
    assert result["z"] == {"success_1": 0.0, "P_1": 0.0}


def test_a_query_absent_from_the_run_gets_no_value_so_minus_c_counts_it_as_0() -> None:
    assert set(_evaluate({"q1": {"d1": 1}, "q2": {"d2": 1}}, {"q1": {"d1": 1.0}}, {"recip_rank"})) == {"q1"}


def test_recip_rank_ignores_a_cut_off_so_the_run_must_be_cut_with_minus_m() -> None:
    qrels, run = {"q": {"rel": 1}}, {"q": {"other": 2.0, "rel": 1.0}}
    assert _evaluate(qrels, run, {"recip_rank.1"})["q"]["recip_rank"] == 0.5
    assert _evaluate(qrels, cut_like_trec_eval(run, 1), {"recip_rank"})["q"]["recip_rank"] == 0.0
    ir_measures = pytest.importorskip("ir_measures")
    assert ir_measures.pytrec_eval.calc_aggregate([ir_measures.RR @ 1], qrels, run)[ir_measures.RR @ 1] == 0.5


def test_minus_m_changes_no_other_measure_at_its_own_cut_off() -> None:
    qrels = {"q": {"a": 2, "b": 1, "c": 0, "never": 3}}
    run = {"q": {"c": 5.0, "b": 4.0, "x": 3.0, "a": 2.0}}
    measures = {"success.2", "recall.2", "P.2", "ndcg_cut.2"}
    assert _evaluate(qrels, cut_like_trec_eval(run, 2), measures) == _evaluate(qrels, run, measures)


def test_score_ties_go_to_the_larger_doc_id_and_the_rank_column_is_ignored() -> None:
    assert _evaluate({"q": {"a": 1}}, {"q": {"a": 1.0, "b": 1.0}}, {"recip_rank"})["q"]["recip_rank"] == 0.5
    run = pytrec_eval.parse_run(["q Q0 a 1 1 t", "q Q0 b 2 2 t"])  # ranks say a first, scores say b
    assert _evaluate({"q": {"a": 1}}, run, {"recip_rank"})["q"]["recip_rank"] == 0.5


def test_configured_cutoffs_and_measures_are_built_shipped_to_trec_eval_and_held_by_the_audit(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "corpora" / "tiny")
    (folder / "sitegen.json").write_text(json.dumps({"metrics": {"cutoffs": [100, 5], "measures": ["recall", "map"]}}))
    build(tmp_path / "corpora", tmp_path / "site", rankers=("bm25",))
    summary_path = tmp_path / "site" / "evidence" / "tiny" / "corpus.json"
    # the configured ones, and those the pages always read (hit@1, 3, 5, 10, recall@10, precision@5, ...)
    assert json.loads(summary_path.read_text())["metrics"] == [
        *("hit@1", "hit@3", "hit@5", "hit@10", "recall@5", "recall@10", "recall@100", "precision@5"),
        *("mrr@10", "ndcg@10", "map@5", "map@100"),
    ]
    contract = json.loads((tmp_path / "site" / "evidence" / "tiny" / "trec_eval.json").read_text())
    assert contract["commands"]["bm25"][-1] == "trec_eval -c -q -M 100 -m recall.100 -m map qrels.trec runs/bm25.trec"
    summary = json.loads(summary_path.read_text())
    summary["metrics"] = [m for m in summary["metrics"] if not m.startswith("map")]  # MAP dropped from the record
    summary_path.write_text(json.dumps(summary))
    from tests.helpers import rehash_manifest

    rehash_manifest(tmp_path / "site")
    report = audit.run_audit(tmp_path / "site", echo=lambda _: None)
    failed = [m for ms in evidence_failures(report).values() for m in ms]
    assert any(m.startswith("evidence/tiny/corpus.json: metrics is [") for m in failed), failed
