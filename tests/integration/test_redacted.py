"""A report for a collection the publisher may not publish: an imported collection built redacted.

The collection is the committed Cranfield subset (tests/fixtures/cranfield-graded), imported with sitegen's BEIR
importer and given a citation fixture, built once in full and once with ``--redact``. The redacted site must hold
no passage, question or quote text anywhere (every file searched, binary ones included); its own audit.py must
pass and say what needs the collection; ``audit.py --inputs DIR`` must check the files brought, name a passage
changed by one byte, and recompute every ranking.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sitegen.cli import cli
from sitegen.errors import SitegenError
from sitegen.inputs.importers import ImportOptions, import_beir
from sitegen.rankers import RANKERS
from sitegen.rankers.bm25 import BM25Params, BM25Ranker
from sitegen.verify.held import prepare_inputs
from tests.helpers import REPO, FakeEmbeddingModel, build, write_corpus

# Slow: a full and a redacted build of the Cranfield fixture, audited with and without it
pytestmark = pytest.mark.slow

FIXTURE = REPO / "tests" / "fixtures" / "cranfield-graded"
RANKERS_BUILT = ("bm25", "bm25-stem", "dense", "rrf-dense-bm25")
WINDOW = 30  # the bound: no run of this many characters of any text may appear in the site
ANCHOR = WINDOW // 2


def texts_of(folder: Path) -> list[str]:
    """Every passage title and text, question text and cited quote of a corpus folder."""
    found = []
    for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        found += [record.get("title") or "", record["text"]]
    found += [json.loads(line)["text"] for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    if (folder / "citations.jsonl").is_file():
        for line in (folder / "citations.jsonl").read_text(encoding="utf-8").splitlines():
            found += [c["quote"] for c in json.loads(line)["citations"]]
    return found


def _folded(text: str) -> str:
    return " ".join(text.split()).lower()


def leaked_texts(site: Path, texts: list[str]) -> list[tuple[str, str]]:
    """Each file of the site (every file, read as bytes) holding a run of WINDOW characters of one of ``texts``:
    compared with whitespace collapsed and case folded, as the file is and with HTML entities decoded; the first
    such run of a file is named."""
    folded_texts = [_folded(text) for text in texts]
    windows = {folded[i : i + WINDOW] for folded in folded_texts for i in range(len(folded) - WINDOW + 1)}
    # Any WINDOW-character run starting at i holds the ANCHOR characters starting at the next multiple of ANCHOR
    # (at most i + ANCHOR), so only those positions are looked up; each hit is then widened back to the runs
    # around it, earliest first, which finds the same first run as trying every position.
    anchors = {folded[i : i + ANCHOR] for folded in folded_texts for i in range(len(folded) - ANCHOR + 1)}
    found = []
    for path in sorted(p for p in site.rglob("*") if p.is_file()):
        raw = path.read_bytes().decode("utf-8", errors="replace")
        for content in {raw.lower(), _folded(html.unescape(raw))}:
            hit = next(
                (
                    content[i : i + WINDOW]
                    for at in range(0, len(content) - ANCHOR + 1, ANCHOR)
                    if content[at : at + ANCHOR] in anchors
                    for i in range(max(0, at - ANCHOR), min(at, len(content) - WINDOW) + 1)
                    if content[i : i + WINDOW] in windows
                ),
                None,
            )
            if hit is not None:
                found.append((path.relative_to(site).as_posix(), hit))
                break
    return found


def shipped_audit(site: Path, *extra: str) -> tuple[int, str]:
    """The site's own audit.py in a separate Python, sitegen not imported."""
    done = subprocess.run(
        [sys.executable, str(site / "audit.py"), str(site), *extra], capture_output=True, text=True, check=False
    )
    return done.returncode, done.stdout


def _line(output: str, start: str) -> str:
    return next(line for line in output.splitlines() if line.startswith(start))


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpora folder: the fixture imported as ``cranfield``, with a citation fixture quoting a passage."""
    corpora = tmp_path_factory.mktemp("collection") / "corpora"
    import_beir(FIXTURE, ImportOptions("cranfield", "research use (test)", to=corpora))
    folder = corpora / "cranfield"
    first = json.loads((folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[0])
    citations = {
        "query_id": json.loads((folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()[0])["_id"],
        "citations": [{"kind": "exact", "doc_id": first["_id"], "quote": first["text"][:60]}],
    }
    (folder / "citations.jsonl").write_text(json.dumps(citations) + "\n", encoding="utf-8")
    return corpora


@pytest.fixture(scope="module")
def sites(collection: Path) -> dict[str, Path]:
    """The same collection built in full and redacted (``--redact cranfield``)."""
    root = collection.parent
    build(collection, root / "full", rankers=RANKERS_BUILT)
    build(collection, root / "redacted", rankers=RANKERS_BUILT, redact=("cranfield",))
    return {"full": root / "full", "redacted": root / "redacted"}


def test_a_redacted_site_holds_no_30_characters_of_any_text_in_any_file(collection, sites) -> None:
    texts = texts_of(collection / "cranfield")
    assert leaked_texts(sites["redacted"], texts) == []
    # the search can fail: the same collection built in full shows its texts
    leaked = dict(leaked_texts(sites["full"], texts))
    assert {"evidence/cranfield/inputs/corpus.jsonl", "evidence/cranfield/packing.json"} <= set(leaked)
    assert any(path.startswith("corpora/cranfield/questions/") for path in leaked)


def test_the_shipped_audit_passes_a_redacted_site_and_says_what_needs_the_collection(sites) -> None:
    code, output = shipped_audit(sites["redacted"])
    assert code == 0, output
    assert "the BM25 scores and order: not recomputed, the bundle withholds the texts" in _line(
        output, "PASS run:cranfield/bm25:"
    )
    assert "the bundle withholds the vectors" in _line(output, "PASS run:cranfield/dense:")
    assert "RRF of dense, bm25" in _line(output, "PASS run:cranfield/rrf-dense-bm25:")  # recomputed without text
    pending = _line(output, "NOT RECOMPUTED:")
    for check in ("run:cranfield/bm25", "run:cranfield/dense", "packing:cranfield", "hygiene:cranfield"):
        assert check in pending
    assert "metrics:" not in pending and "report:" not in pending
    report = json.loads((sites["redacted"] / "audit.json").read_text())
    assert "run:cranfield/bm25" in report["needs_inputs"]


def test_the_audit_with_the_collection_checks_its_hashes_and_recomputes_every_ranking(collection, sites, tmp_path):
    site = sites["redacted"]
    code, output = shipped_audit(site, "--inputs", str(collection))  # the texts alone: no vectors brought
    assert code == 0, output
    assert "inputs/corpus.jsonl matches; inputs/queries.jsonl matches" in _line(output, "PASS held:cranfield:")
    assert "k1=1.2 b=0.75" in _line(output, "PASS held:run:cranfield/bm25:")
    packs = _line(output, "PASS held:packing:cranfield:")
    assert packs.endswith("citation verdicts recomputed") and " 0 citation verdicts" not in packs
    assert "held:run:cranfield/dense" in _line(output, "NOT RECOMPUTED:")
    # the vectors made again from the texts (sitegen audit --inputs does this with the packaged model)
    made = prepare_inputs(site, collection, tmp_path / "brought", model=FakeEmbeddingModel(), cache_dir=tmp_path)
    assert [(m.corpus, m.passages, m.queries) for m in made] == [("cranfield", 238, 25)]
    code, output = shipped_audit(site, "--inputs", str(tmp_path / "brought"))
    assert code == 0, output
    assert "cosine over 238 stored vectors" in _line(output, "PASS held:run:cranfield/dense:")
    assert "NOT RECOMPUTED" not in output


def test_the_trusted_checkout_binds_the_inputs_a_redacted_bundle_holds_by_reference(collection, sites, tmp_path):
    code, output = shipped_audit(sites["redacted"], "--corpora", str(collection))
    assert code == 0, output
    edited = Path(shutil.copytree(collection, tmp_path / "corpora"))
    with (edited / "cranfield" / "queries.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"_id": "extra", "text": "an edited question set"}\n')
    code, output = shipped_audit(sites["redacted"], "--corpora", str(edited))
    assert code == 1
    assert "evidence/cranfield/inputs/queries.jsonl: differs from" in _line(output, "FAIL trusted-inputs:")


def test_one_byte_changed_in_one_passage_fails_naming_that_passage(collection, sites, tmp_path) -> None:
    edited = Path(shutil.copytree(collection, tmp_path / "corpora"))
    lines = (edited / "cranfield" / "corpus.jsonl").read_bytes().splitlines(keepends=True)
    record = json.loads(lines[6])
    at = lines[6].index(b"the")
    lines[6] = lines[6][:at] + b"thE" + lines[6][at + 3 :]
    (edited / "cranfield" / "corpus.jsonl").write_bytes(b"".join(lines))
    code, output = shipped_audit(sites["redacted"], "--inputs", str(edited))
    assert code == 1
    first = _line(output, "FAIL held:cranfield:")
    assert f"line 7: passage {record['_id']} differs from its record" in first
    assert "held:run:" not in output  # nothing is recomputed from files that are not the ones held


def test_a_bm25_tuned_behind_redaction_passes_alone_and_fails_with_the_collection(collection, tmp_path, monkeypatch):
    """A publisher ranks bm25 with k1 3.0 and b 0.2 tuned on the questions, states the shipped 1.2 and 0.75, and
    redacts the corpus so that the site alone cannot tell."""

    class Tuned(BM25Ranker):
        def params(self) -> dict[str, Any]:
            return {**super().params(), "k1": 1.2, "b": 0.75}

    monkeypatch.setitem(RANKERS, "bm25", lambda: Tuned("bm25", stemmed=False, bm25=BM25Params(3.0, 0.2)))
    build(collection, tmp_path / "site", rankers=("bm25",), redact=("cranfield",))
    code, output = shipped_audit(tmp_path / "site")
    assert code == 0, output
    code, output = shipped_audit(tmp_path / "site", "--inputs", str(collection))
    assert code == 1
    assert "recomputed" in _line(output, "FAIL held:run:cranfield/bm25:")


def test_the_pages_say_what_is_withheld_and_how_a_holder_checks_it(collection, sites) -> None:
    site = sites["redacted"]
    page = (site / "corpora" / "cranfield" / "index.html").read_text(encoding="utf-8")
    held = json.loads((site / "evidence" / "cranfield" / "referenced.json").read_text())["files"]
    assert "Published redacted: what is withheld, and how to check it" in page
    assert "python audit.py SITE --inputs DIR" in page and "sitegen audit --inputs DIR SITE" in page
    for name in ("inputs/corpus.jsonl", "inputs/queries.jsonl", "inputs/citations.jsonl", "embeddings/passages.npy"):
        assert name in page and held[name]["sha256"] in page
    query = json.loads((collection / "cranfield" / "queries.jsonl").read_text().splitlines()[0])
    question = (site / "corpora" / "cranfield" / "questions" / f"{query['_id']}.html").read_text(encoding="utf-8")
    records = (site / "evidence" / "cranfield" / "referenced" / "inputs" / "queries.jsonl").read_text()
    assert "Question text withheld" in question and json.loads(records.splitlines()[0])["text_sha256"] in question
    assert "text withheld, sha256" in question
    assert not (site / "corpora" / "cranfield" / "passages").exists()
    assert (sites["full"] / "corpora" / "cranfield" / "passages").is_dir()
    # where the collection came from, as the import recorded it: shown above the collapsed README, hashes in it
    lead = page.split('<div class="readme-lead">', 1)[1].split("</div>", 1)[0]
    shown = (
        r"Imported from <code>(tests/fixtures/)?cranfield-graded</code> \(BEIR\) by <code>sitegen import beir</code>"
    )
    assert re.search(shown, lead), lead  # the path relative to the folder pytest runs in, else its name
    for name in ("corpus.jsonl", "queries.jsonl", "README.md"):
        digest = hashlib.sha256((FIXTURE / name).read_bytes()).hexdigest()
        assert digest in page.split('<div class="readme">', 1)[1], name


def test_the_mode_is_recorded_and_diff_and_gate_compare_it_with_a_full_build(sites, tmp_path) -> None:
    summaries = {k: json.loads((v / "evidence/cranfield/corpus.json").read_text()) for k, v in sites.items()}
    assert summaries["redacted"]["publish"] == {"mode": "redacted", "vectors": False}
    assert summaries["full"]["publish"] == {"mode": "full", "vectors": True}
    for key in ("input_sha256", "question_set_sha256"):  # the originals' hashes, held by reference or copied
        assert summaries["redacted"][key] == summaries["full"][key]
    manifest = json.loads((sites["redacted"] / "evidence/manifest.json").read_text())
    assert manifest["command"].endswith("--redact cranfield")
    runner = CliRunner()
    gate = tmp_path / "gate.json"
    assert runner.invoke(cli, ["gate", "record", str(sites["full"]), "--out", str(gate)]).exit_code == 0
    checked = runner.invoke(cli, ["gate", "check", str(gate), str(sites["redacted"])])
    assert checked.exit_code == 0, checked.output
    diffed = runner.invoke(cli, ["diff", str(sites["full"]), str(sites["redacted"])])
    assert diffed.exit_code == 0, diffed.output  # the same rankings and metrics; only the files differ


def test_published_vectors_are_checked_without_the_collection_and_the_page_says_so(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "corpora" / "tiny")
    (folder / "sitegen.json").write_text('{"publish": "redacted"}\n', encoding="utf-8")
    build(tmp_path / "corpora", tmp_path / "site", rankers=("bm25", "dense"), publish_vectors=True)
    code, output = shipped_audit(tmp_path / "site")
    assert code == 0, output
    assert "cosine over 4 stored vectors" in _line(output, "PASS run:tiny/dense:")
    assert "run:tiny/dense" not in _line(output, "NOT RECOMPUTED:")
    page = (tmp_path / "site" / "corpora" / "tiny" / "index.html").read_text(encoding="utf-8")
    assert "The vectors are published (<code>--publish-vectors</code>)" in page
    assert json.loads((tmp_path / "site/evidence/manifest.json").read_text())["command"].endswith("--publish-vectors")


@pytest.mark.parametrize(
    ("options", "config", "message"),
    [
        ({"redact": ("nope",)}, None, "--redact nope: not a corpus of this build"),
        ({"publish_vectors": True}, None, "--publish-vectors applies to redacted corpora"),
        ({"redact": ("tiny",), "baseline": "site"}, None, "--baseline compares inputs line by line"),
        ({}, '{"publish": "secret"}', '"publish" must be "full" or "redacted"'),
    ],
    ids=["unknown-corpus", "vectors-alone", "with-baseline", "unknown-mode"],
)
def test_a_redaction_the_build_cannot_honour_is_refused_before_any_work(tmp_path, options, config, message) -> None:
    folder = write_corpus(tmp_path / "corpora" / "tiny")
    if config is not None:
        (folder / "sitegen.json").write_text(config, encoding="utf-8")
    if "baseline" in options:
        build(tmp_path / "corpora", tmp_path / "site", rankers=("bm25",))
        options = {**options, "baseline": tmp_path / "site"}
    with pytest.raises(SitegenError, match=message):
        build(tmp_path / "corpora", tmp_path / "out", rankers=("bm25",), **options)
    assert not (tmp_path / "out").exists()


def test_a_readme_quoting_a_text_is_refused_for_a_redacted_corpus(tmp_path: Path) -> None:
    readme = "# tiny\n\nFor example: How to refund a card payment in full or in part.\n"
    write_corpus(tmp_path / "corpora" / "tiny", readme=readme)
    with pytest.raises(SitegenError, match=r"README.md: .* quotes 30 characters or more of passage d1"):
        build(tmp_path / "corpora", tmp_path / "out", rankers=("bm25",), redact=("tiny",))


@pytest.mark.slow
def test_a_chunked_corpus_and_a_citation_fixture_redacted_pass_and_recompute_with_the_collection(tmp_path) -> None:
    """tenant-handbook (chunked, metadata filters) and llm-reliability (citations), their READMEs replaced (theirs
    quote passages), built redacted: nothing leaks, and with the collection every chunk, citation verdict and
    ranking is recomputed (the chunking sweep's dense columns aside: sitegen does not make the sweep's vectors
    again)."""
    corpora = tmp_path / "corpora"
    for name in ("tenant-handbook", "llm-reliability"):
        shutil.copytree(REPO / "corpora" / name, corpora / name)
        (corpora / name / "README.md").write_text(f"# {name}\n\nA test corpus, published redacted.\n")
        (corpora / name / "FROZEN.json").unlink()
    rankers = ("bm25", "dense", "rrf-dense-bm25", "bm25-filtered", "dense-filtered", "rrf-dense-bm25-filtered")
    build(corpora, tmp_path / "site", rankers=rankers, redact=("tenant-handbook", "llm-reliability"))
    texts = texts_of(corpora / "tenant-handbook") + texts_of(corpora / "llm-reliability")
    assert leaked_texts(tmp_path / "site", texts) == []
    prepare_inputs(tmp_path / "site", corpora, tmp_path / "brought", model=FakeEmbeddingModel(), cache_dir=tmp_path)
    code, output = shipped_audit(tmp_path / "site", "--inputs", str(tmp_path / "brought"))
    assert code == 0, output
    assert "chunks and their labels re-derived" in _line(output, "PASS held:chunking:tenant-handbook:")
    assert "citation verdicts recomputed" in _line(output, "PASS held:packing:llm-reliability:")
    assert _line(output, "NOT RECOMPUTED:").count("held:") == 1  # the sweep's dense columns
