"""The build's side of ``cost.json``: each ranker's own indexes measured from what it ranks with (the stored
vectors, the BM25 postings built again from the passages) and the packaged model's size
(:func:`corpus_cost`); :mod:`sitegen.scoring.cost` defines the sizes and assembles the file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sitegen.embedding.vectors import CorpusEmbeddings
from sitegen.inputs.corpus import Corpus, passage_text
from sitegen.rankers.base import Basis, Family, Run
from sitegen.rankers.bm25 import build_bm25_index
from sitegen.rankers.tokenize import tokenize, tokenize_stemmed
from sitegen.scoring.cost import cost_report, postings_bytes, safetensors_parameters

__all__ = ["corpus_cost"]


def _packaged_model() -> dict[str, Any] | None:
    """The packaged model's size, None where its package is not installed (vectors then came from elsewhere)."""
    from sitegen.embedding.model import MODEL_NAME, model_folder
    from sitegen.errors import SitegenError

    try:
        weights = model_folder() / "model.safetensors"
    except SitegenError:
        return None
    return {"name": MODEL_NAME, "parameters": safetensors_parameters(weights), "weights_bytes": weights.stat().st_size}


def corpus_cost(corpus: Corpus, runs: Mapping[str, Run], embeddings: CorpusEmbeddings | None) -> dict[str, Any]:
    """``cost.json`` for one corpus (:mod:`sitegen.scoring.cost`)."""
    own: dict[str, list[str]] = {}
    indexes: dict[str, int] = {}
    models: dict[str, dict[str, Any]] = {}
    for name, run in runs.items():
        if Basis.VECTORS in run.contract.basis and embeddings is not None:
            model = str(run.params.get("model") or embeddings.model)
            key = f"vectors:{model}"
            indexes[key] = int(len(embeddings.doc_ids) * embeddings.doc_vectors.shape[1] * 4)
            own[name] = [key]
            packaged = _packaged_model() if embeddings.supplied is None else None
            if packaged is not None and packaged["name"] == model:
                models[model] = {"parameters": packaged["parameters"], "weights_bytes": packaged["weights_bytes"]}
                models[model]["index"] = key
        elif run.contract.family is Family.LEXICAL and "stemmed" in run.params:
            stemmed = bool(run.params["stemmed"])
            key = f"postings:{'stemmed' if stemmed else 'plain'}"
            if key not in indexes:
                tokenizer = tokenize_stemmed if stemmed else tokenize
                index = build_bm25_index([tokenizer(passage_text(d)) for d in corpus.documents])
                indexes[key] = postings_bytes(index.starts, index.doc_indices, index.weights)
            own[name] = [key]
    return cost_report(runs, len(corpus.documents), own, indexes, models)
