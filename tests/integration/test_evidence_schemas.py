"""Run schema 3 (a fusion's component ranks as a list in params.components order) and packing schema 2 (a
pack as the run ranks it sends): the audit reads them and the older schemas alike, and refuses what it cannot
match."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sitegen import audit
from sitegen.publish.evidence import RUN_SCHEMA_VERSION, read_run
from sitegen.scoring.packing import PACKING_SCHEMA_VERSION
from tests.helpers import evidence_failures, rehash_manifest

FUSION = "rrf-dense-bm25"


def _copy(dense_site: Path, tmp_path: Path) -> tuple[Path, Path]:
    site = Path(shutil.copytree(dense_site, tmp_path / "site"))
    return site, site / "evidence" / "tiny" / "runs" / f"{FUSION}.json"


def _rewrite_fusion_hits(path: Path, change: object) -> None:
    """Apply ``change(hit, params)`` to every stored hit that has component ranks; keeps the one-line layout."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    for hits in doc["queries"].values():
        for hit in hits:
            if len(hit) == 3:
                change(hit, doc["params"])  # type: ignore[operator]
    path.write_text(json.dumps(doc, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")


def test_a_fusion_run_stores_one_rank_per_component_in_params_order(dense_site: Path) -> None:
    path = dense_site / "evidence" / "tiny" / "runs" / f"{FUSION}.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert raw["schema_version"] == RUN_SCHEMA_VERSION == 3
    order = raw["params"]["components"]
    expanded = read_run(path)
    for qid, hits in raw["queries"].items():
        for position, hit in enumerate(hits):
            assert isinstance(hit[2], list) and len(hit[2]) == len(order)
            assert expanded["queries"][qid][position]["components"] == dict(zip(order, hit[2], strict=True))
    assert json.loads((dense_site / "audit.json").read_text())["verdict"] == "pass"


def test_an_older_schema_2_run_with_rank_objects_still_passes_every_evidence_check(
    dense_site: Path, tmp_path: Path
) -> None:
    site, path = _copy(dense_site, tmp_path)

    def as_object(hit: list, params: dict) -> None:
        hit[2] = dict(zip(params["components"], hit[2], strict=True))

    _rewrite_fusion_hits(path, as_object)
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["schema_version"] = 2
    path.write_text(json.dumps(doc, sort_keys=True) + "\n", encoding="utf-8")
    rehash_manifest(site)
    report = audit.run_audit(site, echo=lambda _: None)
    assert evidence_failures(report) == {}


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda hit, params: hit[2].reverse() if hit[2][0] != hit[2][1] else hit[2].__setitem__(0, 99), "swapped"),
        (lambda hit, params: hit.__setitem__(2, hit[2][:1]), "one rank short"),
        (lambda hit, params: hit.__setitem__(2, dict(zip(params["components"], hit[2], strict=True))), "an object"),
    ],
)
def test_component_ranks_the_audit_cannot_match_to_their_components_fail(
    dense_site: Path, tmp_path: Path, change: object, why: str
) -> None:
    site, path = _copy(dense_site, tmp_path)
    _rewrite_fusion_hits(path, change)
    rehash_manifest(site)
    report = audit.run_audit(site, echo=lambda _: None)
    failed = evidence_failures(report)
    assert f"run:tiny/{FUSION}" in failed, why


def test_the_audit_reads_the_schema_versions_sitegen_writes() -> None:
    assert (audit.RUN_SCHEMA_VERSION, audit.PACKING_SCHEMA_VERSION) == (RUN_SCHEMA_VERSION, PACKING_SCHEMA_VERSION)


def test_a_pack_stores_the_ranks_it_sends_and_an_older_id_pack_still_passes(dense_site: Path, tmp_path: Path) -> None:
    site, _ = _copy(dense_site, tmp_path)
    rel = site / "evidence" / "tiny" / "packing.json"
    packing = json.loads(rel.read_text(encoding="utf-8"))
    assert packing["schema_version"] == PACKING_SCHEMA_VERSION == 2
    texts = {json.loads(line)["_id"] for line in (site / "evidence/tiny/inputs/corpus.jsonl").read_text().splitlines()}
    for ranker, by_question in packing["packs"].items():
        queries = read_run(site / "evidence" / "tiny" / "runs" / f"{ranker}.json")["queries"]
        for qid, by_setting in by_question.items():
            hits = [h["doc_id"] for h in queries.get(qid, [])][: packing["candidates"]]
            for setting, pack in by_setting.items():
                assert pack["ranks"] == sorted(pack["ranks"]) and set(pack) == {"ranks", "used"}
                sent = [hits[rank - 1] for rank in pack["ranks"]]
                tried = hits[: packing["top_n"]] if setting.startswith("top") else hits
                # schema 1: the ids sent and the ids tried but skipped
                by_setting[setting] = {
                    "included": sent,
                    "skipped": [d for d in tried if d not in sent and d in texts],
                    "used": pack["used"],
                }
    rel.write_text(json.dumps({**packing, "schema_version": 1}, sort_keys=True) + "\n", encoding="utf-8")
    rehash_manifest(site)
    assert evidence_failures(audit.run_audit(site, echo=lambda _: None)) == {}
    first = next(iter(packing["packs"]["dense"].values()))
    first[packing["settings"][-1]]["skipped"].append("d1")  # a skipped id the recomputation does not give
    rel.write_text(json.dumps({**packing, "schema_version": 1}, sort_keys=True) + "\n", encoding="utf-8")
    rehash_manifest(site)
    assert "packing:tiny" in evidence_failures(audit.run_audit(site, echo=lambda _: None))
