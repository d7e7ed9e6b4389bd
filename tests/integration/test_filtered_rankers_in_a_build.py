"""Every filtered ranker, PostgreSQL's included, respects the question's filter in a build."""

from __future__ import annotations

import json
from pathlib import Path

from sitegen.publish.evidence import read_run


def test_every_filtered_ranker_including_postgres_respects_the_filter_in_a_build(postgres_site: Path) -> None:
    evidence = postgres_site / "evidence" / "tenant"
    filtering = json.loads((evidence / "filtering.json").read_text())
    filtered = [r for r, row in filtering["rows"].items() if row["filtered"]]
    assert {"pg-vector-filtered", "pg-tsvector-filtered", "pg-hybrid-sql-filtered", "bm25-filtered"} <= set(filtered)
    for ranker in filtered:
        assert filtering["rows"][ranker]["failing_filter"] == 0, ranker
        run = read_run(evidence / "runs" / f"{ranker}.json")
        assert {h["doc_id"].split("-")[0] for h in run["queries"]["t1"]} <= {"acme"}, ranker
    assert filtering["rows"]["pg-vector"]["failing_filter"] > 0
