"""Consistent lies: a publisher edits an input, a stored vector, a setting or one line of sitegen, lets sitegen
rebuild a self-consistent bundle, and publishes it. Each test tells one such lie through sitegen itself and
shows which audit catches it: the site's own, unmodified audit.py; audit.py with --corpora given a trusted
checkout; or, for the vectors and PostgreSQL rows, the checks the Pages workflow runs (--reembed, --postgres).

A lie that changes sitegen's code also changes the audit the build runs on itself; the publisher who tells it
silences that in-build audit (:func:`lying`), and the site ships the true audit.py all the same.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sitegen import audit
from sitegen.builder import BuildResult
from sitegen.inputs.freeze import freeze_corpus
from sitegen.rankers import RANKERS
from sitegen.rankers.bm25 import BM25Params, BM25Ranker
from sitegen.rankers.fusion import RRFRanker, RRFSettings
from tests.helpers import TINY_QRELS, TINY_QUERIES, FakeEmbeddingModel, build, rehash_manifest, write_corpus

# Slow: several builds and audits in each test
pytestmark = pytest.mark.slow

RANKERS_BUILT = ("bm25", "bm25-stem", "dense", "rrf-dense-bm25")
QUERIES = [
    *TINY_QUERIES,
    {"_id": "q5", "text": "card expired error", "kind": "exact-code"},
    {"_id": "q6", "text": "money back please", "kind": "paraphrase"},  # no word in common with its label, d4
]
QRELS = [*TINY_QRELS, ("q5", "d3", 1), ("q6", "d4", 1)]


def fresh_build(root: Path, corpora: Path, site: str, **options: Any) -> BuildResult:
    """``corpora`` built into ``root/site`` with RANKERS_BUILT unless ``rankers`` is given, and a fresh step cache
    (a patched sitegen must not reuse honest results)."""
    options.setdefault("rankers", RANKERS_BUILT)
    return build(corpora, root / site, cache=root / f"cache-{site}", **options)


@contextmanager
def silenced_build_audit(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """While it lasts, the build's audit of itself reports every check as passing (what a publisher who
    patched sitegen would do); the pages then claim a pass, and the shipped audit.py is still the true one."""
    with monkeypatch.context() as patch:
        real = audit.evidence_checks
        patch.setattr(
            audit, "evidence_checks", lambda bundle: [audit.Check(c.name, [], c.detail) for c in real(bundle)]
        )
        patch.setattr(audit, "pages_check", lambda bundle, earlier: audit.expected_pages_check())
        yield


@contextmanager
def lying(monkeypatch: pytest.MonkeyPatch, patch: Callable[[pytest.MonkeyPatch], None]) -> Iterator[None]:
    """While it lasts, one line of sitegen is changed (``patch``) and the in-build audit silenced."""
    with monkeypatch.context() as lie, silenced_build_audit(monkeypatch):
        patch(lie)
        yield


def shipped_audit(site: Path, *extra: str) -> tuple[int, str]:
    """The site's own audit.py, run as a reader would: a separate Python, sitegen not imported."""
    done = subprocess.run(
        [sys.executable, str(site / "audit.py"), str(site), *extra], capture_output=True, text=True, check=False
    )
    return done.returncode, done.stdout


def failed_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith(("FAIL", "    "))]


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(corpora folder, site): a frozen corpus built honestly; its corpora folder is the trusted checkout."""
    root = tmp_path_factory.mktemp("honest")
    folder = write_corpus(root / "corpora" / "tiny", queries=QUERIES, qrels=QRELS)
    freeze_corpus(folder, "2026-12-01")
    fresh_build(root, root / "corpora", "site")
    return root / "corpora", root / "site"


@pytest.fixture
def edited(honest: tuple[Path, Path], tmp_path: Path) -> Path:
    """A publisher's copy of the corpora, to edit."""
    return Path(shutil.copytree(honest[0], tmp_path / "corpora"))


def test_an_honest_build_passes_the_shipped_audit_with_and_without_the_trusted_checkout(honest) -> None:
    corpora, site = honest
    code, output = shipped_audit(site)
    assert code == 0, failed_lines(output)
    code, output = shipped_audit(site, "--corpora", str(corpora))
    assert code == 0, failed_lines(output)
    assert "PASS trusted-inputs: 5 input files of 1 corpora equal the trusted checkout" in output, output


def test_nudged_vectors_pass_the_standalone_audit_and_fail_the_reembed_check(honest, tmp_path: Path) -> None:
    """Row 1: 2 stored passage vectors moved towards a question (cosine to the originals stays high), the
    dense run rebuilt from them as frozen inputs. Only re-embedding can tell."""
    from sitegen.verify.reembed import reembed_bundle

    corpora, site = honest
    nudged = Path(shutil.copytree(site, tmp_path / "nudged"))
    vectors = np.load(nudged / "evidence" / "tiny" / "embeddings" / "passages.npy")
    target = np.load(nudged / "evidence" / "tiny" / "embeddings" / "queries.npy")[0]
    for row in (1, 2):
        moved = vectors[row] + np.float32(0.3) * target
        vectors[row] = moved / np.linalg.norm(moved)
    np.save(nudged / "evidence" / "tiny" / "embeddings" / "passages.npy", vectors.astype(np.float32))
    rehash_manifest(nudged)
    rebuilt = tmp_path / "rebuilt"
    fresh_build(tmp_path, corpora, "rebuilt", vectors_from=nudged)
    assert shipped_audit(rebuilt)[0] == 0  # self-consistent: the standalone audit cannot know the model
    results = {r.corpus: r for r in reembed_bundle(rebuilt, model=FakeEmbeddingModel())}
    assert not results["tiny"].ok and results["tiny"].worst.startswith("passages d")
    assert results["tiny"].max_abs_diff > 1e-2


def test_dropped_questions_refrozen_pass_alone_and_fail_against_the_trusted_checkout(honest, edited, tmp_path):
    """Row 2: the hardest question dropped from the inputs and the corpus frozen again."""
    folder = edited / "tiny"
    write_corpus(folder, queries=[q for q in QUERIES if q["_id"] != "q5"], qrels=[r for r in QRELS if r[0] != "q5"])
    freeze_corpus(folder, "2026-12-01")
    fresh_build(tmp_path, edited, "site")
    site = tmp_path / "site"
    assert shipped_audit(site)[0] == 0
    code, output = shipped_audit(site, "--corpora", str(honest[0]))
    assert code == 1
    lines = failed_lines(output)
    for name in ("queries.jsonl", "qrels/test.tsv", "FROZEN.json"):
        assert any(f"evidence/tiny/inputs/{name}: differs from {honest[0] / 'tiny' / name}" in line for line in lines)


def test_moved_labels_fail_against_the_trusted_checkout_naming_the_qrels(honest, edited, tmp_path) -> None:
    """Row 3: labels moved to the passage dense ranks first (frozen corpus: the build needs --allow-edited,
    and corpus.json says the qrels were edited; refreezing is row 2)."""
    folder = edited / "tiny"
    write_corpus(folder, queries=QUERIES, qrels=[("q1", "d4", 1), *QRELS[1:]])
    fresh_build(tmp_path, edited, "site", allow_edited=True)
    site = tmp_path / "site"
    summary = json.loads((site / "evidence" / "tiny" / "corpus.json").read_text())
    assert summary["frozen"] == {"date": "2026-12-01", "edited_files": ["qrels/test.tsv"]}
    assert shipped_audit(site)[0] == 0
    code, output = shipped_audit(site, "--corpora", str(honest[0]))
    assert code == 1
    trusted = honest[0] / "tiny" / "qrels" / "test.tsv"
    assert [line for line in failed_lines(output) if "differs from" in line] == [
        f"FAIL trusted-inputs: 1 mismatch; first: evidence/tiny/inputs/qrels/test.tsv: differs from "
        f"{trusted} (sha256 {audit._sha256(trusted)})"
    ]


def test_an_edited_frozen_record_is_recomputed_by_the_standalone_audit(honest, tmp_path: Path) -> None:
    """corpus.json's ``frozen`` claims nothing was edited; the bundled FROZEN.json and the copies say otherwise."""
    site = Path(shutil.copytree(honest[1], tmp_path / "site"))
    queries = site / "evidence" / "tiny" / "inputs" / "queries.jsonl"
    queries.write_text(queries.read_text().replace("refund a payment", "refund a card payment"))
    summary_path = site / "evidence" / "tiny" / "corpus.json"
    summary = json.loads(summary_path.read_text())
    summary["input_sha256"]["queries.jsonl"] = audit._sha256(queries)
    summary_path.write_text(json.dumps(summary))
    rehash_manifest(site)
    lines = failed_lines(shipped_audit(site)[1])
    assert any(
        "frozen is {'date': '2026-12-01', 'edited_files': []}" in line and "queries.jsonl" in line for line in lines
    )


@pytest.mark.parametrize(
    ("setting", "value", "named"),
    [("seed", 45, "significance.seed"), ("min_differing", 25, "significance.min_differing")],
)
def test_a_shopped_significance_setting_fails_the_shipped_audit(
    honest, tmp_path: Path, monkeypatch, setting: str, value: int, named: str
) -> None:
    """Rows 4 and 5: the paired tests' seed (or minimum) changed in sitegen, the bundle rebuilt."""
    import sitegen.builder.corpus
    from sitegen.scoring.experiments import ExperimentSettings, run_experiments

    def patch(lie: pytest.MonkeyPatch) -> None:
        shopped = ExperimentSettings(**{setting: value})
        lie.setattr(sitegen.builder.corpus, "run_experiments", lambda *args: run_experiments(*args, settings=shopped))

    with lying(monkeypatch, patch):
        fresh_build(tmp_path, honest[0], "site")
    code, output = shipped_audit(tmp_path / "site")
    assert code == 1
    experiments = output.split("FAIL experiments:tiny")[1].split("\nPASS")[0].split("\nFAIL")[0]
    assert f"{named}: stored {value}, recomputed" in experiments, output


@pytest.mark.parametrize(
    ("ranker", "factory", "named"),
    [
        ("bm25", lambda: BM25Ranker("bm25", stemmed=True), "ranker bm25: stemmed is True, the shipped bm25 has False"),
        (
            "bm25",
            lambda: BM25Ranker("bm25", stemmed=False, bm25=BM25Params(3.0, 0.2)),
            "k1 is 3.0, the shipped bm25 has 1.2",
        ),
        (
            "rrf-dense-bm25",
            lambda: RRFRanker("rrf-dense-bm25", ("dense", "bm25"), RRFSettings(k=2)),
            "k is 2, the shipped rrf-dense-bm25 has 60.0",
        ),
    ],
    ids=["names-traded", "bm25-tuned", "rrf-tuned"],
)
def test_a_shipped_name_with_other_parameters_fails_the_shipped_audit(
    honest, tmp_path: Path, monkeypatch, ranker: str, factory: Callable[[], Any], named: str
) -> None:
    """Rows 6 and 7: bm25 run with bm25-stem's stemming (names traded), bm25's k1 and b and RRF's k tuned
    on the test questions, each published under the shipped name."""
    with lying(monkeypatch, lambda lie: lie.setitem(RANKERS, ranker, factory)):
        fresh_build(tmp_path, honest[0], "site")
    code, output = shipped_audit(tmp_path / "site")
    assert code == 1
    assert any(line.startswith(f"FAIL run:tiny/{ranker}") and named in line for line in output.splitlines()), output


def test_rankers_left_out_under_a_rewritten_command_fail_the_shipped_audit(honest, tmp_path, monkeypatch) -> None:
    """Row 8: two rankers left out, the recorded command rewritten to a plain ``sitegen build``."""
    import sitegen.builder.site

    with lying(monkeypatch, lambda lie: lie.setattr(sitegen.builder.site, "build_command", lambda _: "sitegen build")):
        fresh_build(tmp_path, honest[0], "site", rankers=("bm25", "dense", "rrf-dense-bm25"))
    code, output = shipped_audit(tmp_path / "site")
    assert code == 1
    missing = "missing, and the recorded command runs every ranker"
    choices = [line for line in output.splitlines() if "choices:tiny" in line or missing in line]
    assert any("runs/bm25-stem.json: missing" in line for line in choices)
    assert any("runs/rrf-dense-bm25-stem.json: missing" in line for line in choices)


def test_rankers_left_out_with_the_command_saying_so_pass(honest, tmp_path: Path) -> None:
    fresh_build(tmp_path, honest[0], "site", rankers=("rrf-dense-bm25",))
    manifest = json.loads((tmp_path / "site" / "evidence" / "manifest.json").read_text())
    assert manifest["command"].startswith("sitegen build --corpora ")
    assert manifest["command"].endswith(" --ranker rrf-dense-bm25")
    code, output = shipped_audit(tmp_path / "site")
    assert code == 0, failed_lines(output)
    assert "PASS choices:tiny: 3 runs, as the recorded command and the inputs call for" in output


PG_RANKERS = ("dense", "pg-vector", "pg-tsvector", "rrf-pgvector-tsvector", "pg-hybrid-sql")


def _fabricated(real: Any, corpus: Any) -> Any:
    """``real`` with every question's labelled passages moved to the top and fresh descending scores."""
    from dataclasses import replace

    from sitegen.rankers.base import Hit

    hits = {}
    for qid, found in real.hits.items():
        relevant = sorted(corpus.qrels.get(qid, {}), key=lambda d: -corpus.qrels[qid][d])
        order = [*relevant, *(h.doc_id for h in found if h.doc_id not in relevant)]
        hits[qid] = tuple(Hit(doc, rank, float(len(order) - rank + 1)) for rank, doc in enumerate(order, start=1))
    return replace(real, hits=hits)


@pytest.mark.postgres
def test_a_fabricated_postgres_run_passes_alone_and_fails_the_postgres_rerun(honest, tmp_path, monkeypatch) -> None:
    """Row 9: the shipped pg-tsvector run fabricated (the labelled passages first) and pg-hybrid-sql rebuilt
    to match it. The server-less checks hold; rerunning PostgreSQL, as the Pages workflow does, does not."""
    pytest.importorskip("psycopg")
    from sitegen.rankers.fusion import reciprocal_rank_fusion
    from sitegen.rankers.pg import PgHybridRanker, PgTsvectorRanker
    from sitegen.verify.postgres import rerun_postgres

    real_keyword, real_hybrid = PgTsvectorRanker.rank, PgHybridRanker.rank

    def keyword(self, inputs, depth):
        return _fabricated(real_keyword(self, inputs, depth), inputs.corpus)

    def hybrid(self, inputs, depth):  # the fusion of the fabricated list, as the one SQL statement would give
        from dataclasses import replace

        from sitegen.rankers.base import Hit

        real = real_hybrid(self, inputs, depth)
        names = list(self.contract.components)
        hits = {}
        for qid in real.hits:
            lists = [[h.doc_id for h in inputs.runs[name].hits.get(qid, ())] for name in names]
            fused = reciprocal_rank_fusion(lists, 60.0, (1.0, 1.0), 20)[:depth]
            hits[qid] = tuple(
                Hit(item.doc_id, rank, item.score, tuple(zip(names, item.component_ranks, strict=True)))
                for rank, item in enumerate(fused, start=1)
            )
        return replace(real, hits=hits)

    def patch(lie: pytest.MonkeyPatch) -> None:
        lie.setattr(PgTsvectorRanker, "rank", keyword)
        lie.setattr(PgHybridRanker, "rank", hybrid)

    with lying(monkeypatch, patch):
        fresh_build(tmp_path, honest[0], "site", rankers=PG_RANKERS)
    site = tmp_path / "site"
    code, output = shipped_audit(site)
    assert code == 0, failed_lines(output)  # consistent: the standalone audit has no PostgreSQL
    reruns = {r.ranker: r for r in rerun_postgres(site)}
    assert not reruns["pg-tsvector"].ok and reruns["pg-tsvector"].ids_differ > 0
    assert not reruns["pg-hybrid-sql"].ok
    assert reruns["pg-vector"].ok


def test_a_fabricated_run_and_a_retriever_reading_the_labels_never_take_a_best_mark(honest, edited, tmp_path) -> None:
    """Row 10: an external run and a retriever plugin that both read the qrels score 1.000 everywhere. They pass
    by design (their rankings cannot be reproduced), but never take a best mark from a verified ranker, and
    every page that shows them says so."""
    import re

    answers = {q: [d for qq, d, _ in QRELS if qq == q] for q in {qq for qq, _, _ in QRELS}}
    text_to_id = {q["text"]: q["_id"] for q in QUERIES}
    (edited / "tiny" / "runs").mkdir()
    (edited / "tiny" / "runs" / "oracle.trec").write_text(
        "".join(f"{q} Q0 {d} {n} {10 - n} oracle\n" for q, docs in answers.items() for n, d in enumerate(docs, 1))
    )
    freeze_corpus(edited / "tiny", "2026-12-01")

    def peeking(question: str, k: int, filter: Any) -> list[tuple[str, float]]:
        return [(d, 1.0 / n) for n, d in enumerate(answers.get(text_to_id[question], []), 1)]

    fresh_build(tmp_path, edited, "site", retrievers=(("peek", peeking),))
    site = tmp_path / "site"
    metrics = json.loads((site / "evidence" / "tiny" / "metrics.json").read_text())
    assert metrics["oracle"]["overall"]["ndcg@10"] == metrics["peek"]["overall"]["ndcg@10"] == 1.0
    assert max(metrics[r]["overall"]["ndcg@10"] for r in RANKERS_BUILT) < 1.0
    report = json.loads((site / "evidence" / "tiny" / "report.json").read_text())
    assert report["unverified"] == {"oracle": ["oracle"], "peek": ["peek"]}
    assert all("oracle" not in best and "peek" not in best for best in report["best"]["overall"].values())
    home = (site / "index.html").read_text()
    for name in ("oracle", "peek"):  # the two score alike on every question: one row, "oracle ≡ peek"
        row = re.search(rf'<tr><th scope="row">((?:(?!</tr>).)*?<span class="id">{name}</span>.*?)</tr>', home, re.S)
        assert (
            row and 'class="best"' not in row.group(1) and "(ranking not reproducible from the bundle)" in row.group(1)
        )
    bm25_row = re.search(r'<tr><th scope="row"><span class="id">bm25</span>(.*?)</tr>', home, re.S)
    assert bm25_row and "ranking not reproducible" not in bm25_row.group(1)
    for page in ("corpora/tiny/index.html", "corpora/tiny/questions/q1.html", "corpora/tiny/ranks.html"):
        text = (site / page).read_text()
        assert text.count("(ranking not reproducible from the bundle)") >= 2, page
    reproducibility = (site / "reproducibility.html").read_text()
    row = re.search(r'<td class="id">oracle</td><td class="text">(.*?)</td>', reproducibility)
    assert row and "its ranking is not reproducible from the bundle" in row.group(1)
    row = re.search(r'<td class="id">dense</td><td class="text">(.*?)</td>', reproducibility)
    assert row and "recomputed from the stored vectors" in row.group(1) and "--reembed" in row.group(1)
    assert shipped_audit(site, "--corpora", str(edited))[0] == 0  # honest about what they are: they pass


def test_the_gate_fails_on_a_build_of_another_question_set_naming_the_files(honest, edited, tmp_path) -> None:
    """A question reworded and a label moved, the corpus rebuilt (--allow-edited): every metric may still pass,
    but the gate recorded the question set, and names both files."""
    from sitegen.compare.gate import check_gate, record_gate

    gate = tmp_path / "gate.json"
    recorded = record_gate(honest[1], gate)
    reworded = [{**q, "text": "refund a card payment"} if q["_id"] == "q1" else q for q in QUERIES]
    write_corpus(edited / "tiny", queries=reworded, qrels=[*QRELS[:-1], ("q6", "d3", 1)])
    fresh_build(tmp_path, edited, "site", allow_edited=True)
    outcome = check_gate(gate, tmp_path / "site")
    assert outcome.failed
    named = [line.split(":")[1].strip() for line in outcome.changed_inputs]
    # the reworded question's vector changed too: the gate records the stored vectors beside the question set
    assert named == ["embeddings/index.json", "embeddings/queries.npy", "qrels/test.tsv", "queries.jsonl"]
    assert all(
        f"the gate recorded {recorded.inputs['tiny'][line.split(':')[1].strip()]}" in line
        for line in outcome.changed_inputs
    )
    allowed = check_gate(gate, tmp_path / "site", allow_changed_inputs=True)
    assert allowed.changed_inputs == outcome.changed_inputs and allowed.inputs_allowed
    assert allowed.failed == any(r.status == "FAIL" for r in allowed.results)  # only the metrics can fail it now
