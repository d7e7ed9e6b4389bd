"""Check a bundle's stored embeddings against the model itself (``sitegen audit --reembed``).

The standalone audit recomputes every ranking from the stored vectors but cannot
run the model; this check re-embeds the bundled input copies with the packaged
model and compares each vector with the stored one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sitegen.inputs.corpus import Document, json_lines, passage_text
from sitegen.publish.bundle import REEMBED_TOLERANCE
from sitegen.publish.evidence import passages_file
from sitegen.rankers.embeddings import EmbeddingModel

__all__ = ["ReembedResult", "reembed_bundle"]


@dataclass(frozen=True)
class ReembedResult:
    corpus: str
    vectors: int
    max_abs_diff: float
    worst: str
    weights_match: bool

    @property
    def ok(self) -> bool:
        return self.weights_match and self.max_abs_diff <= REEMBED_TOLERANCE


def _texts(base: Path) -> dict[str, dict[str, str]]:
    passages, queries = {}, {}
    for _, doc in json_lines(passages_file(base)):
        passages[doc["_id"]] = passage_text(Document(doc["_id"], doc.get("title") or "", doc["text"]))
    for _, query in json_lines(base / "inputs" / "queries.jsonl"):
        queries[query["_id"]] = query["text"]
    return {"passages": passages, "queries": queries}


def reembed_bundle(site_dir: Path, model: EmbeddingModel | None = None) -> list[ReembedResult]:
    """Re-embed every corpus in the bundle that carries embeddings."""
    model = model or EmbeddingModel()
    manifest = json.loads((site_dir / "evidence" / "manifest.json").read_text(encoding="utf-8"))
    results = []
    for corpus in manifest["corpora"]:
        base = site_dir / "evidence" / corpus
        if not (base / "embeddings" / "index.json").is_file():
            continue
        index = json.loads((base / "embeddings" / "index.json").read_text(encoding="utf-8"))
        texts = _texts(base)
        worst, worst_where, count = 0.0, "", 0
        for name in ("passages", "queries"):
            stored = np.load(base / "embeddings" / f"{name}.npy")
            fresh = model.encode([texts[name][i] for i in index[name]])
            diff = np.abs(fresh.astype(np.float64) - stored.astype(np.float64)).max(axis=1)
            count += len(diff)
            if len(diff) and diff.max() > worst:
                worst = float(diff.max())
                worst_where = f"{name} {index[name][int(diff.argmax())]}"
        results.append(
            ReembedResult(corpus, count, worst, worst_where, index.get("weights_sha256") == model.weights_sha256)
        )
    return results
