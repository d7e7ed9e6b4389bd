"""Write one corpus's part of the bundle: its input copies, runs, metrics, derived tables, vectors and chunks,
each at the path :mod:`sitegen.publish.layout` gives it, in the formats of :mod:`sitegen.publish.evidence`."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from sitegen.embedding.vectors import CorpusEmbeddings, text_sha256
from sitegen.inputs.binding import file_hashes, question_set_sha256
from sitegen.inputs.corpus import Corpus, Document, passage_text
from sitegen.inputs.freeze import FROZEN_FILE
from sitegen.parallel import in_forks, processes_for
from sitegen.publish import redaction
from sitegen.publish.evidence import (
    SCHEMA_VERSION,
    run_document,
    run_trec,
    write_json,
    write_run,
    write_trec_eval_contract,
)
from sitegen.publish.layout import CorpusFiles, input_name
from sitegen.publish.redaction import Publication
from sitegen.rankers.base import Family, Run
from sitegen.scoring.chunking_sweep import SweepVectors

__all__ = ["CorpusResults", "DerivedTables", "InputCopy", "Provenance", "write_corpus_evidence"]


def _npy_bytes(matrix: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(matrix, dtype="<f4"), allow_pickle=False)
    return buffer.getvalue()


@dataclass(frozen=True)
class DerivedTables:
    """The tables derived from one corpus's runs, each written to its own file; None: not derived for it."""

    #: sitegen.scoring.report.derive_report
    report: Mapping[str, Any]
    #: sitegen.scoring.experiments.run_experiments
    experiments: Mapping[str, Any]
    #: sitegen.scoring.ties.ties_report
    ties: Mapping[str, Any]
    #: sitegen.scoring.packing.packing_report
    packing: Mapping[str, Any]
    #: sitegen.scoring.hygiene.hygiene_report, computed while loading
    hygiene: Mapping[str, Any]
    #: sitegen.scoring.report.filtering_report, for a corpus with metadata filters
    filtering: Mapping[str, Any] | None = None
    #: the default chunking, its labels and the sweep, for a chunked corpus
    chunking: Mapping[str, Any] | None = None
    #: sitegen.scoring.postgres_report.postgres_report, when PostgreSQL rankers were asked for
    postgres: Mapping[str, Any] | None = None
    #: sitegen.scoring.rerank_sweep.rerank_sweep, when a bi-encoder rerank stage ran
    rerank: Mapping[str, Any] | None = None
    #: sitegen.scoring.cost: index and model sizes per ranker
    cost: Mapping[str, Any] | None = None

    def by_file(self, files: CorpusFiles) -> dict[str, Mapping[str, Any]]:
        """Each table that was derived, by its site path."""
        tables = {
            files.report: self.report,
            files.experiments: self.experiments,
            files.ties: self.ties,
            files.packing: self.packing,
            files.hygiene: self.hygiene,
            files.filtering: self.filtering,
            files.chunking: self.chunking,
            files.postgres: self.postgres,
            files.rerank: self.rerank,
            files.cost: self.cost,
        }
        return {path: table for path, table in tables.items() if table is not None}


@dataclass(frozen=True)
class Provenance:
    """Where one corpus's inputs come from, as ``corpus.json`` records it."""

    #: the inputs' date (sitegen.inputs.dates.inputs_date); None when nothing dates them
    inputs_date: str | None = None
    #: ``{"date", "edited_files"}`` of a frozen corpus (sitegen.inputs.freeze.frozen_summary)
    frozen: Mapping[str, Any] | None = None
    #: the git commit and tree of the corpus folder (sitegen.inputs.binding.GitSource.as_dict)
    source: Mapping[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The date always (null when unknown); the freeze and the source only when known."""
        known = {"frozen": self.frozen, "source": self.source}
        return {"inputs_date": self.inputs_date} | {k: dict(v) for k, v in known.items() if v is not None}


class InputCopy(Protocol):
    """A run from another system whose file the bundle's inputs hold (sitegen.rankers.external)."""

    #: its name inside the corpus folder (``inputs/runs/NAME.trec``), as its run's params name it
    input_copy: str

    def write_input(self, target: Path) -> None: ...


@dataclass(frozen=True)
class CorpusResults:
    """Everything one corpus's build puts into the bundle: its inputs (as ranked: the chunks of a chunked
    corpus), runs, metrics, derived tables and vectors."""

    corpus: Corpus
    runs: Mapping[str, Run]
    #: ``{ranker: {"overall", "by_kind", "per_query"}}`` and the metric names, in the order computed
    metrics: Mapping[str, Any]
    metric_list: tuple[str, ...]
    depth: int
    tables: DerivedTables
    embeddings: CorpusEmbeddings | None = None
    #: each other model entry's vectors, by entry name (``embeddings/<name>/``)
    model_embeddings: Mapping[str, CorpusEmbeddings] = field(default_factory=dict)
    #: the vectors of every chunk the chunking sweep ranked (chunked corpora)
    sweep_vectors: SweepVectors | None = None
    #: where the inputs come from, for ``corpus.json``
    provenance: Provenance = Provenance()
    #: runs from other systems (a TREC file, a retriever's answers), copied among the inputs
    external_inputs: Sequence[InputCopy] = ()
    #: what the bundle and pages publish: every text, or none (sitegen.publish.redaction)
    publication: Publication = field(default_factory=Publication)


def write_corpus_evidence(site_dir: Path, results: CorpusResults) -> None:
    """Write one corpus's part of the bundle under ``site_dir/evidence/<corpus>/``.

    The inputs are copied first, the external runs' among them and the corpus's FROZEN.json included:
    ``corpus.json`` records the sha256 of every file under ``inputs/``, so the audit can recompute which
    inputs were edited since the freeze."""
    corpus, runs = results.corpus, results.runs
    files = CorpusFiles(corpus.name)
    base = site_dir / files.folder
    for external in results.external_inputs:
        target = site_dir / files.at(external.input_copy)
        target.parent.mkdir(parents=True, exist_ok=True)
        external.write_input(target)  # a run file is copied and checked; a retriever's run is written
    place = redaction.Placement(site_dir, files, corpus, results.publication)
    for name in place.copied((*corpus.input_files, *([FROZEN_FILE] if (corpus.root / FROZEN_FILE).is_file() else []))):
        target = site_dir / files.input(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus.root / name, target)
    _write_runs(site_dir, files, results)
    write_json(site_dir / files.metrics, {r: results.metrics[r] for r in runs})
    chunked = results.tables.chunking is not None
    write_trec_eval_contract(base, corpus, list(runs), list(results.metric_list), chunked=chunked)
    tables = redaction.redact_tables(results.tables) if results.publication.redacted else results.tables
    for path, table in tables.by_file(files).items():
        write_json(site_dir / path, table)
    if results.embeddings is not None:
        _write_embeddings(place, corpus, results.embeddings)
    for model, vectors in sorted(results.model_embeddings.items()):
        _write_embeddings(place, corpus, vectors, model)
    if results.sweep_vectors is not None and results.sweep_vectors.ids:
        _write_sweep_vectors(place, results.sweep_vectors)
    if chunked:
        place.chunks(_chunks_bytes(corpus.documents))
    place.close()
    copies = file_hashes(site_dir / files.inputs)
    write_json(site_dir / files.summary, _summary(results, copies, place.input_sha256()))


def _write_runs(site_dir: Path, files: CorpusFiles, results: CorpusResults) -> None:
    """Each run's JSON (compressed when large) and TREC file. A large corpus's runs are shared out between
    forked processes (:mod:`sitegen.parallel`), the most hits first to the least loaded: each file is written
    whole by one process, the same bytes as one process writes."""
    runs, corpus = results.runs, results.corpus
    query_order = [q.query_id for q in corpus.queries]

    def write(rankers: Sequence[str]) -> None:
        for ranker in rankers:
            run = runs[ranker]
            write_run(site_dir / files.run(ranker), run_document(run, corpus.name, results.depth))
            (site_dir / files.trec_run(ranker)).write_text(run_trec(run, query_order), encoding="utf-8")

    hits = {ranker: sum(len(h) for h in run.hits.values()) for ranker, run in runs.items()}
    count = processes_for(sum(hits.values()))
    parts: list[list[str]] = [[] for _ in range(count)]
    load = [0] * count
    for ranker in sorted(hits, key=lambda r: -hits[r]):
        least = load.index(min(load))
        parts[least].append(ranker)
        load[least] += hits[ranker]
    in_forks(write, [part for part in parts if part])


def _summary(results: CorpusResults, copies: Mapping[str, str], held: Mapping[str, str]) -> dict[str, Any]:
    """``corpus.json`` (read back as :class:`sitegen.publish.reader.CorpusSummary`); ``copies`` are the input
    copies' sha256 by their name under ``inputs/``, ``held`` those of the inputs held by reference."""
    corpus, runs = results.corpus, results.runs
    kinds = corpus.kinds
    hashes = dict(sorted({**copies, **held}.items()))
    return {
        "schema_version": SCHEMA_VERSION,
        "name": corpus.name,
        "documents": len(corpus.documents),
        "queries": len(corpus.queries),
        "answerable_queries": sum(1 for q in corpus.queries if q.answerable),
        "judged_pairs": sum(len(j) for j in corpus.qrels.values()),
        "kinds": {k: sum(1 for q in corpus.queries if q.kind == k and q.answerable) for k in kinds},
        "kind_order": list(kinds),
        "rankers": list(runs),
        "external_rankers": [r for r, run in runs.items() if run.contract.family is Family.EXTERNAL],
        "metrics": list(results.metric_list),
        "depth": results.depth,
        "inputs": [input_name(n) for n in copies],
        "input_sha256": hashes,
        "question_set_sha256": question_set_sha256(hashes),
        "embeddings": results.embeddings is not None,
        "publish": results.publication.as_dict(),
        **results.provenance.as_dict(),
    }


def _write_embeddings(
    place: redaction.Placement, corpus: Corpus, embeddings: CorpusEmbeddings, model: str | None = None
) -> None:
    """The vectors (or, withheld, their sha256) and their index: ids and text hashes, always published; ``dense``'s
    in ``embeddings/``, another model entry's in ``embeddings/<model>/``."""
    index_path, passages_path, queries_path = place.files.model_vectors(model)
    passage_prefix = embeddings.passage_prefix
    supplied = embeddings.supplied is not None
    place.vectors(passages_path, _npy_bytes(embeddings.doc_vectors), supplied)
    place.vectors(queries_path, _npy_bytes(embeddings.query_vectors), supplied)
    (place.site_dir / index_path).parent.mkdir(parents=True, exist_ok=True)
    write_json(
        place.site_dir / index_path,
        {
            "model": embeddings.model,
            "weights_sha256": embeddings.weights_sha256,
            "config_sha256": embeddings.config_sha256,
            "dtype": "float32",
            "dimensions": int(embeddings.doc_vectors.shape[1]),
            "normalised": True,
            "passages": list(embeddings.doc_ids),
            "queries": list(embeddings.query_ids),
            # Each row's text sha256, what a later build reuses a row by (with config_sha256). Vectors the
            # corpus brought (sitegen.inputs.vectors) are never reused from a bundle (config_sha256 null;
            # each build reads them from the corpus), so they record their files' sha256 and provenance
            # instead: 6.8 MB of hashes saved at 100,000 passages.
            **(
                {"supplied": dict(embeddings.supplied)}
                if embeddings.supplied is not None
                else {
                    "text_sha256": {
                        "passages": [text_sha256(passage_prefix + passage_text(d)) for d in corpus.documents],
                        "queries": [text_sha256(embeddings.query_prefix + q.text) for q in corpus.queries],
                    }
                }
            ),
        },
    )


def _write_sweep_vectors(place: redaction.Placement, vectors: SweepVectors) -> None:
    """The vectors of every chunk the chunking sweep ranked, so the sweep can be checked and rebuilt
    without the model: ``embeddings/sweep-passages.npy`` rows in ``sweep-index.json`` order, with
    each chunk text's sha256 so a later build can reuse them as frozen inputs."""
    place.vectors(place.files.sweep_vectors, _npy_bytes(vectors.matrix))
    write_json(
        place.site_dir / place.files.sweep_index,
        {
            "config_sha256": vectors.config_sha256,
            "dtype": "float32",
            "passages": list(vectors.ids),
            "text_sha256": list(vectors.hashes),
        },
    )


def _chunks_bytes(documents: tuple[Document, ...]) -> bytes:
    """``chunks.jsonl``: the chunks a chunked corpus was ranked as, one corpus.jsonl record a line."""
    records = ({"_id": d.doc_id, "title": d.title, "text": d.text, "metadata": dict(d.metadata)} for d in documents)
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
