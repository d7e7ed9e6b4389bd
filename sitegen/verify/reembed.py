"""Check a bundle's stored embeddings against the model itself (``sitegen audit --reembed``).

The standalone audit recomputes every ranking from the stored vectors but cannot
run the model; this check re-embeds the bundled input copies with the packaged
model and compares each vector with the stored one; each other model entry's vectors
(``embeddings/<entry>/``, listed in the manifest's ``models``) are re-embedded with that entry's model, each
text behind the entry's prefix.

Vectors a corpus supplied (``"supplied"`` in ``embeddings/index.json``) were made by
another model, which sitegen does not have: they are re-embedded only when they name the
packaged model and its weights sha256; otherwise the result says why they were not checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sitegen.embedding.model import MODEL_NAME, EmbeddingModel
from sitegen.embedding.models import ModelEntryError, parse_model_entries
from sitegen.errors import SitegenError
from sitegen.hashing import sha256_file
from sitegen.inputs.corpus import Document, passage_text
from sitegen.publish.bundle import REEMBED_TOLERANCE, load_json
from sitegen.publish.layout import MANIFEST
from sitegen.publish.reader import CorpusReader, SiteFolder

__all__ = ["ReembedResult", "reembed_bundle", "sample_seed", "sampled_rows"]


@dataclass(frozen=True)
class ReembedResult:
    corpus: str
    vectors: int
    max_abs_diff: float
    worst: str
    weights_match: bool
    #: Why the vectors were not re-embedded (supplied by the corpus, made by a model sitegen lacks); None: checked.
    not_checked: str | None = None
    #: The model entry whose vectors these are (``embeddings/<model>/``); None: ``dense``'s.
    model: str | None = None

    @property
    def label(self) -> str:
        """``corpus``, or ``corpus/entry`` for a model entry's own vectors."""
        return self.corpus if self.model is None else f"{self.corpus}/{self.model}"

    @property
    def ok(self) -> bool:
        """Checked and within tolerance, or not checkable (which :attr:`not_checked` states)."""
        return self.not_checked is not None or (self.weights_match and self.max_abs_diff <= REEMBED_TOLERANCE)


def _not_rederivable(index: dict, model: EmbeddingModel) -> str | None:
    """Why supplied vectors cannot be re-derived here, or None when they name the packaged model and weights."""
    supplied = index.get("supplied")
    if not isinstance(supplied, dict):
        return None
    if index.get("model") == MODEL_NAME and index.get("weights_sha256") == model.weights_sha256:
        return None
    made_by = f"model {index.get('model')!r}, " + (
        f"weights sha256 {index['weights_sha256']}"
        if index.get("weights_sha256")
        else f"provenance: {supplied.get('provenance')}"
    )
    return (
        f"vectors supplied by the corpus ({made_by}); sitegen can re-derive them only with that model, and the "
        f"packaged one is {MODEL_NAME} with weights sha256 {model.weights_sha256}"
    )


def _withheld(reader: CorpusReader) -> str | None:
    """Why a redacted corpus's vectors cannot be re-embedded from the bundle, or None for any other corpus."""
    if not reader.summary().redacted:
        return None
    return (
        "the corpus is published redacted: its texts (and, unless published, its vectors) are withheld; "
        "sitegen audit --inputs DIR re-embeds the texts brought and recomputes its dense rankings"
    )


def _texts(reader: CorpusReader) -> dict[str, dict[str, str]]:
    passages, queries = {}, {}
    for doc in reader.passages():
        passages[doc["_id"]] = passage_text(Document(doc["_id"], doc.get("title") or "", doc["text"]))
    for query in reader.queries():
        queries[query["_id"]] = query["text"]
    return {"passages": passages, "queries": queries}


def _vector_index(site_dir: Path, corpus: str, model: str | None = None) -> dict | None:
    """The corpus's ``embeddings/index.json`` (or a model entry's ``embeddings/<model>/index.json``); None when
    it carries no such vectors."""
    reader = CorpusReader(SiteFolder(site_dir), corpus)
    return reader.optional(reader.files.model_vectors(model)[0])


def _entry_models(manifest: dict, given: Mapping[str, EmbeddingModel] | None) -> dict[str, EmbeddingModel]:
    """Each model entry the manifest lists (``models``), with its model: the one given by entry name, else the
    entry's own (which must then be installed)."""
    found = {}
    for name, record in sorted((manifest.get("models") or {}).items()):
        if given is not None and name in given:
            found[name] = given[name]
            continue
        try:
            (spec,) = parse_model_entries([record.get("entry")])
        except ModelEntryError as exc:
            raise SitegenError(f"{MANIFEST}: models entry {name}: {exc}") from None
        found[name] = EmbeddingModel(spec=spec)
    return found


def sample_seed(manifest_sha256: str) -> int:
    """The sample's seed: the manifest's sha256 read as a number, so nobody who publishes a bundle can choose
    which vectors a ``--sample`` check re-embeds, and anyone can draw the same sample again."""
    return int(manifest_sha256, 16) % (1 << 63)


def sampled_rows(rows: Sequence[tuple[str, str, str]], size: int, seed: int) -> set[tuple[str, str, str]]:
    """``size`` of the (corpus, passages|queries, id) rows, drawn without replacement by numpy's PCG64 with
    ``seed`` from the rows in bundle order (corpora in manifest order, passages then questions, row order)."""
    if size >= len(rows):
        return set(rows)
    chosen = np.random.default_rng(seed).choice(len(rows), size=size, replace=False)
    return {rows[int(i)] for i in chosen}


def reembed_bundle(
    site_dir: Path,
    model: EmbeddingModel | None = None,
    sample: int | None = None,
    models: Mapping[str, EmbeddingModel] | None = None,
) -> list[ReembedResult]:
    """Re-embed every corpus in the bundle that carries embeddings, ``dense``'s with ``model`` (the packaged one
    by default) and each model entry's with its own (``models`` by entry name, else the entry's); with ``sample``,
    only that many rows of each model, drawn by :func:`sampled_rows` with the seed :func:`sample_seed` derives
    from the manifest."""
    manifest = load_json(site_dir / MANIFEST)
    models_by_entry: dict[str | None, EmbeddingModel | None] = {None: model}
    if models is None and model is not None and not hasattr(model, "spec"):
        models = dict.fromkeys(manifest.get("models") or {}, model)  # a stand-in (a test's fake) for every entry
    models_by_entry.update(_entry_models(manifest, models))
    if model is None and any(_vector_index(site_dir, corpus) is not None for corpus in manifest["corpora"]):
        models_by_entry[None] = EmbeddingModel()
    results = []
    for entry, entry_model in models_by_entry.items():
        if entry_model is not None:
            results += _reembed_model(site_dir, manifest, entry_model, entry, sample)
    return results


def _reembed_model(
    site_dir: Path, manifest: dict, model: EmbeddingModel, entry: str | None, sample: int | None
) -> list[ReembedResult]:
    """One model's re-embedding over every corpus (``entry``: a model entry's name; None: ``dense``'s)."""
    config = model.config
    prefixes = {"passages": config.passage_prefix, "queries": config.query_prefix}
    chosen = None
    if sample is not None:
        rows = [
            (corpus, name, row)
            for corpus in manifest["corpora"]
            for index in [_vector_index(site_dir, corpus, entry)]
            if index is not None and _not_rederivable(index, model) is None
            for name in ("passages", "queries")
            for row in index[name]
        ]
        chosen = sampled_rows(rows, sample, sample_seed(sha256_file(site_dir / MANIFEST)))
    results = []
    for corpus in manifest["corpora"]:
        reader = CorpusReader(SiteFolder(site_dir), corpus)
        index = _vector_index(site_dir, corpus, entry)
        if index is None:
            continue
        reason = _not_rederivable(index, model) or _withheld(reader)
        if reason is not None:
            rows = len(index.get("passages", [])) + len(index.get("queries", []))
            results.append(ReembedResult(corpus, rows, 0.0, "", False, not_checked=reason, model=entry))
            continue
        texts = _texts(reader)
        _, passages_rel, queries_rel = reader.files.model_vectors(entry)
        worst, worst_where, count = 0.0, "", 0
        for name, rel in (("passages", passages_rel), ("queries", queries_rel)):
            rows = [n for n, i in enumerate(index[name]) if chosen is None or (corpus, name, i) in chosen]
            if not rows:
                continue
            stored = np.load(site_dir / rel)[rows]
            fresh = model.encode([prefixes[name] + texts[name][index[name][n]] for n in rows])
            if fresh.shape != stored.shape:  # another model altogether: every vector differs
                worst, worst_where, count = (
                    float("inf"),
                    f"{name}: {fresh.shape[1]} dimensions, stored {stored.shape[1]}",
                    count + len(rows),
                )
                continue
            diff = np.abs(fresh.astype(np.float64) - stored.astype(np.float64)).max(axis=1)
            count += len(diff)
            if len(diff) and diff.max() > worst:
                worst = float(diff.max())
                worst_where = f"{name} {index[name][rows[int(diff.argmax())]]}"
        weights_match = index.get("weights_sha256") == model.weights_sha256
        results.append(ReembedResult(corpus, count, worst, worst_where, weights_match, model=entry))
    return results
