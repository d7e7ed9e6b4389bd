"""The committed site/ is exactly what a fresh build of corpora/ produces."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

from sitegen.build import BuildOptions, build_site
from sitegen.embeddings import EmbeddingCache, EmbeddingModel
from sitegen.evidence import passages_file

SITE = REPO / "site"


def _seed_cache_from_bundle(site: Path, cache_dir: Path, weights_sha256: str) -> int:
    """Put the committed embeddings in a fresh cache, so the rebuild compares everything downstream
    of the model bit for bit (the model's own float output may differ in the last bits on another CPU;
    `sitegen audit --reembed` checks that part with a tolerance)."""
    cache = EmbeddingCache(cache_dir, weights_sha256)
    seeded = 0
    for corpus in json.loads((site / "evidence" / "manifest.json").read_text())["corpora"]:
        base = site / "evidence" / corpus
        index = json.loads((base / "embeddings" / "index.json").read_text())
        docs = {}
        for line in passages_file(base).read_text(encoding="utf-8").splitlines():
            if line.strip():
                doc = json.loads(line)
                docs[doc["_id"]] = f"{doc['title']}\n{doc['text']}" if doc.get("title") else doc["text"]
        queries = {}
        for line in (base / "inputs" / "queries.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                query = json.loads(line)
                queries[query["_id"]] = query["text"]
        sources = [(index["passages"], docs, "passages"), (index["queries"], queries, "queries")]
        sweep_index = base / "embeddings" / "sweep-index.json"
        if sweep_index.is_file():  # chunks of the chunking sweep: "<doc>@<start>:<end>" of the input documents
            originals = {}
            for line in (base / "inputs" / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
                if line.strip():
                    doc = json.loads(line)
                    originals[doc["_id"]] = doc
            sweep_texts = {}
            for chunk_id in json.loads(sweep_index.read_text())["passages"]:
                doc_id, _, span = chunk_id.rpartition("@")
                start, end = (int(x) for x in span.split(":"))
                doc = originals[doc_id]
                piece = doc["text"][start:end]
                sweep_texts[chunk_id] = f"{doc['title']}\n{piece}" if doc.get("title") else piece
            sources.append((json.loads(sweep_index.read_text())["passages"], sweep_texts, "sweep-passages"))
        for ids, texts, name in sources:
            vectors = np.load(base / "embeddings" / f"{name}.npy")
            cache.put_many(
                [(hashlib.sha256(texts[i].encode("utf-8")).hexdigest(), vectors[row]) for row, i in enumerate(ids)]
            )
            seeded += len(ids)
    cache.close()
    return seeded


def test_committed_site_equals_a_fresh_build(tmp_path: Path) -> None:
    if not (SITE / "evidence" / "manifest.json").is_file():
        pytest.fail("site/ is not committed: run `sitegen build` and commit site/")
    model = EmbeddingModel()
    assert _seed_cache_from_bundle(SITE, tmp_path / "cache", model.weights_sha256) > 0
    build_site(
        BuildOptions(corpora_dir=REPO / "corpora", out_dir=tmp_path / "fresh", cache_dir=tmp_path / "cache"),
        model=model,
    )
    fresh = tmp_path / "fresh"
    committed = sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob("*") if p.is_file())
    rebuilt = sorted(p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file())
    assert committed == rebuilt
    stale = [rel for rel in committed if (SITE / rel).read_bytes() != (fresh / rel).read_bytes()]
    assert stale == [], f"site/ is stale, rebuild and commit it: {stale[:10]}"
