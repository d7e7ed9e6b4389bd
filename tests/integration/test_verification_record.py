"""The record of the last re-embedding and PostgreSQL rerun: written by ``sitegen audit --record``, copied by the
next build to the site's verification.json and shown on the Reproducibility page with whether it still applies."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from sitegen.audit import run_audit
from sitegen.errors import BuildError
from sitegen.verify.record import verification_record, write_verification
from sitegen.verify.reembed import reembed_bundle, sample_seed, sampled_rows
from tests.helpers import FakeEmbeddingModel, build, rehash_manifest, write_corpus


def built_with_record(root: Path, record: Path | None = None) -> Path:
    """``root/corpora`` built into ``root/site`` (bm25 and dense), the record ``record`` given to the build."""
    build(root / "corpora", root / "site", rankers=("bm25", "dense"), verification_file=record)
    return root / "site"


@pytest.fixture
def site(tmp_path: Path) -> Path:
    write_corpus(tmp_path / "corpora" / "tiny")
    return built_with_record(tmp_path)


def _record(site: Path, path: Path, sample: int | None = None) -> dict:
    report = run_audit(site, echo=lambda _: None)
    results = reembed_bundle(site, model=FakeEmbeddingModel(), sample=sample)
    record = verification_record(site, report, (results, sample, None), None)
    write_verification(path, record)
    return record


def test_a_record_is_shown_on_the_next_build_and_says_it_applies_to_the_same_vectors(site: Path, tmp_path) -> None:
    record = _record(site, tmp_path / "last.json")
    assert record["verdict"] == "pass" and record["reembed"]["corpora"]["tiny"]["status"] == "pass"
    assert record["reembed"]["corpora"]["tiny"]["vectors"] == 4 + 4
    rebuilt = built_with_record(tmp_path, tmp_path / "last.json")
    assert (rebuilt / "verification.json").read_bytes() == (tmp_path / "last.json").read_bytes()
    page = (rebuilt / "reproducibility.html").read_text()
    assert f"On {record['date']}, sitegen" in page and "<strong>passed</strong>" in page
    assert "no: the vectors changed since" not in page and ">yes<" in page
    assert run_audit(rebuilt, echo=lambda _: None)["verdict"] == "pass"  # verification.json is a listed served file


def test_a_record_of_other_vectors_is_shown_as_no_longer_applying(site: Path, tmp_path: Path) -> None:
    _record(site, tmp_path / "last.json")
    vectors = site / "evidence" / "tiny" / "embeddings" / "passages.npy"
    moved = np.load(vectors)
    moved[0] = -moved[0]
    np.save(vectors, moved)
    rehash_manifest(site)
    page = (built_with_record(tmp_path, tmp_path / "last.json") / "reproducibility.html").read_text()
    assert "no: the vectors changed since" in page


def test_a_file_that_is_not_a_record_fails_the_build_and_keeps_the_site(site: Path, tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text(json.dumps({"format": "something else"}))
    before = (site / "index.html").read_bytes()
    with pytest.raises(BuildError, match=r"bad\.json: not a sitegen verification record"):
        built_with_record(tmp_path, tmp_path / "bad.json")
    assert (site / "index.html").read_bytes() == before


def test_a_sample_is_drawn_by_the_manifest_and_rechecks_only_its_rows(site: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(site, tmp_path / "copy"))
    record = _record(copy, tmp_path / "sampled.json", sample=3)
    assert record["reembed"]["sample"] == 3 and record["reembed"]["corpora"]["tiny"]["vectors"] == 3
    rows = [("tiny", kind, f"{kind[0]}{i}") for kind in ("passages", "queries") for i in range(8)]
    assert sampled_rows(rows, 3, 7) == sampled_rows(rows, 3, 7) and len(sampled_rows(rows, 3, 7)) == 3
    assert sampled_rows(rows, 3, 7) != sampled_rows(rows, 3, 8) or sampled_rows(rows, 3, 9) != sampled_rows(rows, 3, 7)
    assert sample_seed("ff" * 32) == int("ff" * 32, 16) % (1 << 63)
