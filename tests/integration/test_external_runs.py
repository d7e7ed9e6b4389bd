"""Runs from other systems: no mistake in a run file or a --run option is swallowed.

A --run naming a corpus that is not built, a run whose ids mostly miss the corpus, and a
malformed line all fail before any ranker runs, with the old site untouched; ids that miss a
little are warned about on the console and shown on the corpus page, from the run's evidence.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitegen.errors import SitegenError
from sitegen.inputs.corpus import load_corpus
from sitegen.publish.evidence import read_run, write_run
from sitegen.rankers import RankInputs, external
from tests.helpers import build, cli_build, evidence_failures, file_tree, write_corpus

# tiny's queries are q1..q4, its documents d1..d4 (conftest.TINY_*).
SOME_UNKNOWN = (
    "q1 Q0 d2 1 3.0 vendor\n"
    "q1 Q0 d1 2 3.0 vendor\n"
    "q1 Q0 ghost 3 2.5 vendor\n"
    "q2 Q0 d3 1 9.0 vendor\n"
    "q9 Q0 d1 1 1.0 vendor\n"
)
MOSTLY_UNKNOWN_DOCS = "q1 Q0 DOC-1 1 3.0 x\nq1 Q0 DOC-2 2 2.0 x\nq2 Q0 DOC-3 1 1.0 x\nq2 Q0 d3 2 0.5 x\n"


# ------------------------------------------------------------------- --run naming a corpus not built


def test_run_naming_a_corpus_that_is_not_there_fails_before_any_work_listing_the_corpora(
    tmp_path: Path, tiny_corpus: Path, ranked: list[str]
) -> None:
    write_corpus(tiny_corpus.parent / "bike-repair")
    run_file = tmp_path / "mysys.trec"
    run_file.write_text(SOME_UNKNOWN)
    out = tmp_path / "site"
    result = cli_build(tiny_corpus.parent, out, "--run", f"mine=bike:{run_file}")
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines() == [
        f"error: build failed: --run mine=bike:{run_file}: no corpus named bike in {tiny_corpus.parent}; "
        "the corpora there are: bike-repair, tiny"
    ]
    assert ranked == [] and not out.exists()


def test_run_for_a_corpus_that_only_leaves_out_says_so(tmp_path: Path, tiny_corpus: Path, ranked: list[str]) -> None:
    write_corpus(tiny_corpus.parent / "bike-repair")
    run_file = tmp_path / "mysys.trec"
    run_file.write_text(SOME_UNKNOWN)
    with pytest.raises(SitegenError) as info:
        build(
            tiny_corpus.parent,
            tmp_path / "site",
            only=("bike-repair",),
            external_runs=(("mine", "tiny", run_file),),
            rankers=("bm25",),
        )
    assert str(info.value) == (
        f"--run mine=tiny:{run_file}: corpus tiny is not being built (--only bike-repair); "
        "add --only tiny or leave this --run out"
    )
    assert ranked == []


# ------------------------------------------------------------------- unknown ids: warned, shown, or fatal


def test_unknown_documents_and_queries_are_warned_with_counts_and_examples(tmp_path: Path, tiny_corpus: Path) -> None:
    run_file = tmp_path / "vendor.trec"
    run_file.write_text(SOME_UNKNOWN)
    log: list[str] = []
    build(
        tiny_corpus.parent, tmp_path / "site", log=log, external_runs=(("vendor", "tiny", run_file),), rankers=("bm25",)
    )
    warnings = [line for line in log if line.startswith("warning:")]
    assert warnings == [
        "warning: tiny: run vendor: 1 of 5 hits (20%) name documents not in the corpus, e.g. ghost; "
        "they count as not relevant",
        "warning: tiny: run vendor: 1 of 3 queries (33%) are not in the corpus, e.g. q9; their hits are left out",
    ]


def test_the_corpus_page_shows_a_runs_unknown_ids_read_from_its_evidence(tmp_path: Path, tiny_corpus: Path) -> None:
    run_file = tmp_path / "vendor.trec"
    run_file.write_text(SOME_UNKNOWN)
    out = tmp_path / "site"
    build(tiny_corpus.parent, out, external_runs=(("vendor", "tiny", run_file),), rankers=("bm25",))
    params = json.loads((out / "evidence" / "tiny" / "runs" / "vendor.json").read_text())["params"]
    assert (params["hits_in_file"], params["unknown_document_hits"], params["queries_in_file"]) == (5, 1, 3)
    assert params["unknown_documents"] == ["ghost"] and params["unknown_queries"] == ["q9"]
    page = (out / "corpora" / "tiny" / "index.html").read_text()
    assert "1 of 5 hits (20%) name documents not in the corpus, e.g. ghost; they count as not relevant" in page
    assert "1 of 3 queries (33%) are not in the corpus, e.g. q9; their hits are left out" in page
    assert "2 of 4 questions have no hit in this run" in page
    assert 'href="../../evidence/tiny/inputs/runs/vendor.trec"' in page


def test_a_run_whose_hits_mostly_name_unknown_documents_fails_asking_whether_the_ids_match(
    tmp_path: Path, tiny_corpus: Path, ranked: list[str]
) -> None:
    out = tmp_path / "site"
    build(tiny_corpus.parent, out, rankers=("bm25",))
    before = file_tree(out)
    ranked.clear()
    run_file = tmp_path / "mysys.trec"
    run_file.write_text(MOSTLY_UNKNOWN_DOCS)
    result = cli_build(tiny_corpus.parent, out, "--run", f"mine=tiny:{run_file}")
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"error: build failed: {run_file}: run mine: 3 of 4 hits (75%) name documents not in corpus tiny, "
        "e.g. DOC-1, DOC-2, DOC-3; do the ids match the corpus?"
    ]
    assert ranked == [] and file_tree(out) == before


def test_a_run_whose_queries_are_mostly_unknown_fails_too(tmp_path: Path, tiny_corpus: Path) -> None:
    run_file = tmp_path / "mysys.trec"
    run_file.write_text("1 Q0 d1 1 3.0 x\n2 Q0 d2 1 2.0 x\nq1 Q0 d1 1 1.0 x\n")
    with pytest.raises(
        SitegenError,
        match=r"run mine: 2 of 3 queries \(67%\) are not in corpus tiny, e.g. 1, 2; "
        r"do the ids match the corpus\?",
    ):
        build(tiny_corpus.parent, tmp_path / "site", external_runs=(("mine", "tiny", run_file),), rankers=("bm25",))


def test_exactly_half_unknown_is_still_built_with_a_warning(tmp_path: Path, tiny_corpus: Path) -> None:
    assert external.MAX_UNKNOWN_SHARE == 0.5
    run_file = tmp_path / "half.trec"
    run_file.write_text("q1 Q0 d1 1 3.0 x\nq1 Q0 DOC-1 2 2.0 x\n")
    log: list[str] = []
    build(
        tiny_corpus.parent, tmp_path / "site", log=log, external_runs=(("half", "tiny", run_file),), rankers=("bm25",)
    )
    assert (
        "warning: tiny: run half: 1 of 2 hits (50%) name documents not in the corpus, e.g. DOC-1; "
        "they count as not relevant" in log
    )


def test_a_chunked_corpus_checks_run_ids_against_its_chunks(tmp_path: Path) -> None:
    """A chunked corpus is ranked as its chunks, so whole-document ids miss every one of them."""
    text = "Intro words here.\n\nThe limit is 75 dollars.\n\nOther text."
    start = text.index("The limit")
    folder = write_corpus(
        tmp_path / "corpora" / "chunky",
        docs=[{"_id": "p", "title": "Policy", "text": text}],
        queries=[
            {"_id": "q", "text": "limit?", "spans": [{"doc_id": "p", "start": start, "end": start + 24, "grade": 1}]}
        ],
        qrels=[("q", "p", 1)],
    )
    (folder / "sitegen.json").write_text(
        json.dumps({"chunking": {"default": {"method": "paragraph", "size": 50}, "sweep": {"sizes": [50]}}})
    )
    run_file = tmp_path / "docs.trec"
    run_file.write_text("q Q0 p 1 3.0 x\n")
    with pytest.raises(SitegenError, match=r"1 of 1 hits \(100%\) name documents not in corpus chunky"):
        build(folder.parent, tmp_path / "site", external_runs=(("docs", "chunky", run_file),), rankers=("bm25",))


# ------------------------------------------------------------------- validated before any ranker runs


def test_a_malformed_run_line_fails_before_any_ranker_runs_and_keeps_the_old_site(
    tmp_path: Path, tiny_corpus: Path, ranked: list[str]
) -> None:
    write_corpus(tiny_corpus.parent / "zeta")  # sorted after tiny: its run is found only after tiny is ranked today
    out = tmp_path / "site"
    build(tiny_corpus.parent, out, rankers=("bm25",))
    before = file_tree(out)
    ranked.clear()
    bad = tiny_corpus.parent / "zeta" / "runs" / "vendor.trec"
    bad.parent.mkdir()
    bad.write_text("q1 Q0 d1 1 2.0 x\nq1 Q0 d2 2 x\n")
    result = cli_build(tiny_corpus.parent, out)
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"error: build failed: {bad}:2: expected 6 columns (qid Q0 docid rank score tag), found 5"
    ]
    assert ranked == [] and file_tree(out) == before


def test_a_missing_run_file_fails_before_any_ranker_runs(tmp_path: Path, tiny_corpus: Path, ranked: list[str]) -> None:
    write_corpus(tiny_corpus.parent / "zeta")
    with pytest.raises(SitegenError, match=r"nope\.trec: external run file does not exist"):
        build(
            tiny_corpus.parent,
            tmp_path / "site",
            external_runs=(("v", "zeta", tmp_path / "nope.trec"),),
            rankers=("bm25",),
        )
    assert ranked == []


def test_a_run_path_that_is_a_folder_is_refused_as_not_a_file(tmp_path: Path, tiny_corpus: Path) -> None:
    folder = tmp_path / "runs.trec"
    folder.mkdir()
    with pytest.raises(SitegenError, match=r"runs\.trec: external run path is not a file"):
        build(tiny_corpus.parent, tmp_path / "site", external_runs=(("v", "tiny", folder),), rankers=("bm25",))


def test_the_external_ranker_ranks_from_the_parsed_run_without_reading_the_file_again(
    tmp_path: Path, tiny_corpus: Path
) -> None:
    run_file = tmp_path / "vendor.trec"
    run_file.write_text(SOME_UNKNOWN)
    ranker = external.ExternalRunRanker("vendor", run_file, "inputs/runs/vendor.trec", external.read_trec_run(run_file))
    run_file.unlink()
    run = ranker.rank(RankInputs(corpus=load_corpus(tiny_corpus)), 100)
    assert [h.doc_id for h in run.hits["q1"]] == ["d2", "d1", "ghost"]


def test_a_run_file_changed_during_the_build_is_refused(
    tmp_path: Path, tiny_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bundle must hold the bytes that were scored, not a later edit of the file."""
    from sitegen.rankers.bm25 import BM25Ranker

    run_file = tmp_path / "vendor.trec"
    run_file.write_text(SOME_UNKNOWN)
    real = BM25Ranker.rank

    def edit_then_rank(self, inputs, depth):
        run_file.write_text(SOME_UNKNOWN + "q3 Q0 d2 1 1.0 vendor\n")
        return real(self, inputs, depth)

    monkeypatch.setattr(BM25Ranker, "rank", edit_then_rank)
    with pytest.raises(SitegenError, match=r"vendor\.trec: changed while the build ran"):
        build(tiny_corpus.parent, tmp_path / "site", external_runs=(("vendor", "tiny", run_file),), rankers=("bm25",))


def test_the_audit_catches_a_changed_unknown_hit_count_on_the_page(tmp_path: Path, tiny_corpus: Path) -> None:
    import hashlib

    from sitegen import audit

    run_file = tmp_path / "vendor.trec"
    run_file.write_text(SOME_UNKNOWN)
    out = tmp_path / "site"
    build(tiny_corpus.parent, out, external_runs=(("vendor", "tiny", run_file),), rankers=("bm25",))
    rel = "evidence/tiny/runs/vendor.json"
    run_doc = read_run(out / rel)
    run_doc["params"]["unknown_document_hits"] = 0  # what the page would then hide
    write_run(out / rel, run_doc)
    manifest = json.loads((out / "evidence" / "manifest.json").read_text())
    data = (out / rel).read_bytes()
    manifest["files"][rel] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    (out / "evidence" / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    report = audit.run_audit(out, echo=lambda _: None)
    assert evidence_failures(report) == {"run:tiny/vendor": [f"{rel}: unknown_document_hits 0, the file gives 1"]}
