"""The build's side of ``cost.json``: each ranker's own indexes measured from what it ranks with (the stored
vectors, the BM25 postings the ranker measured) and the packaged models' pinned sizes
(:func:`corpus_cost`); :mod:`sitegen.scoring.cost` defines the sizes and assembles the file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sitegen.rankers.base import Basis, Family, RankInputs, Run
from sitegen.rankers.bm25 import passage_index
from sitegen.scoring.cost import cost_report

__all__ = ["corpus_cost"]


# The packaged models' sizes (parameters from the safetensors header, the weights file's bytes), pinned so
# that a machine without a model's package (a rebuild from frozen vectors) writes the same cost.json;
# tests/unit/builder/test_cost_pins.py reads them again from the installed files.
PACKAGED_MODEL_SIZES: dict[str, dict[str, int]] = {
    "sentence-transformers/all-MiniLM-L6-v2": {"parameters": 22_713_728, "weights_bytes": 90_868_376},
    "sentence-transformers/all-mpnet-base-v2": {"parameters": 109_486_978, "weights_bytes": 437_971_872},
}


def corpus_cost(inputs: RankInputs, runs: Mapping[str, Run]) -> dict[str, Any]:
    """``cost.json`` for one corpus (:mod:`sitegen.scoring.cost`): ``inputs`` holds each model's vectors."""
    corpus = inputs.corpus
    own: dict[str, list[str]] = {}
    indexes: dict[str, int] = {}
    models: dict[str, dict[str, Any]] = {}
    for name, run in runs.items():
        embeddings = inputs.embeddings_for(run.contract.model)
        if Basis.VECTORS in run.contract.basis and embeddings is not None:
            model = str(run.params.get("model") or embeddings.model)
            key = f"vectors:{model}"
            indexes[key] = int(len(embeddings.doc_ids) * embeddings.doc_vectors.shape[1] * 4)
            own[name] = [key]
            if embeddings.supplied is None and model in PACKAGED_MODEL_SIZES:
                models[model] = {**PACKAGED_MODEL_SIZES[model], "index": key}
        elif run.contract.family is Family.LEXICAL and "stemmed" in run.params:
            stemmed = bool(run.params["stemmed"])
            key = f"postings:{'stemmed' if stemmed else 'plain'}"
            if key not in indexes:  # the size the ranker measured, else its index built again to measure it
                measured = run.index_bytes
                indexes[key] = passage_index(corpus.documents, stemmed).postings_bytes if measured is None else measured
            own[name] = [key]
    return cost_report(runs, len(corpus.documents), own, indexes, models)
