"""Read one corpus's evidence back, typed: the one reader that render, compare, verify and build share.

Every consumer of a bundle reads a corpus through :class:`CorpusReader`, from a site folder as it lies
(:class:`SiteFolder`: the build's staging folder, a site being rendered) or from a bundle verified against its
manifest (:class:`sitegen.publish.bundle.Bundle`, which refuses a file the manifest does not list). Paths come
from :mod:`sitegen.publish.layout`; the rules of reading live here once: a chunked corpus is ranked, labelled
and shown as its chunks (``chunks.jsonl``, ``chunking.json``'s ``qrels``), every other corpus as its inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from sitegen.errors import BundleError
from sitegen.inputs.corpus import json_lines
from sitegen.inputs.vectors import SUPPLIED_DIR
from sitegen.publish.bundle import Bundle, load_json, read_stored
from sitegen.publish.evidence import expand_run
from sitegen.publish.layout import (
    GZIP_SUFFIX,
    METRICS,
    CorpusFiles,
    corpus_file,
    gzipped_name,
    input_of,
    run_ranker,
    vector_rows,
)

__all__ = [
    "BundlePair",
    "CorpusEvidence",
    "CorpusReader",
    "CorpusSummary",
    "SiteFolder",
    "Source",
    "SuppliedVectorsNote",
    "VectorPair",
    "is_finite_number",
    "qrels_grades",
]


class Source(Protocol):
    """Where evidence files are read from: site paths (``evidence/<corpus>/...``) to files."""

    def path(self, rel: str) -> Path: ...

    def has(self, rel: str) -> bool:
        """Whether the file is there, plain or stored compressed (``rel.gz``)."""
        ...

    def stored(self, rel: str) -> str:
        """The path the file is stored under: ``rel``, or ``rel.gz`` when it is stored compressed."""
        ...

    def require(self, rel: str) -> Path:
        """The file of a path that must be there (plain or ``.gz``); a source that knows its files refuses one it
        lacks."""
        ...


@dataclass(frozen=True)
class SiteFolder:
    """A site folder read as it lies: a file is there when it exists; a missing one is the reader's error."""

    root: Path

    def path(self, rel: str) -> Path:
        return self.root / rel

    def stored(self, rel: str) -> str:
        compressed = gzipped_name(rel)
        return compressed if not (self.root / rel).is_file() and (self.root / compressed).is_file() else rel

    def has(self, rel: str) -> bool:
        return (self.root / self.stored(rel)).is_file()

    def require(self, rel: str) -> Path:
        return self.root / self.stored(rel)


@dataclass(frozen=True)
class CorpusSummary:
    """``corpus.json``: what one corpus's build holds (written by
    :func:`sitegen.publish.evidence.write_corpus_evidence`)."""

    name: str
    documents: int
    queries: int
    answerable_queries: int
    judged_pairs: int
    #: Answerable questions per kind, and the kinds in the order the pages show them.
    kinds: Mapping[str, int]
    kind_order: tuple[str, ...]
    #: Every ranker with a run, in build order; those among them that are runs from another system.
    rankers: tuple[str, ...]
    external_rankers: tuple[str, ...]
    metrics: tuple[str, ...]
    depth: int
    #: The input copies, as names inside the corpus folder (``inputs/qrels/test.tsv``), and their sha256 by
    #: name under ``inputs/`` (none in a bundle written before they were recorded).
    inputs: tuple[str, ...]
    input_sha256: Mapping[str, str]
    question_set_sha256: str | None
    embeddings: bool
    inputs_date: str | None
    #: ``{"date", "edited_files"}`` from the corpus's FROZEN.json; None for a corpus never frozen.
    frozen: Mapping[str, Any] | None
    #: Where the corpus folder comes from in git (``{"commit", "tree", "date", "uncommitted_changes"}``), or None.
    source: Mapping[str, Any] | None
    #: What the bundle publishes (``{"mode": "full" | "redacted", "vectors": bool}``, sitegen.publish.redaction);
    #: a bundle written before it was recorded published everything.
    publish: Mapping[str, Any]

    @property
    def redacted(self) -> bool:
        """Whether the corpus is published without its texts: each passage and question by id and sha256."""
        return self.publish.get("mode") == "redacted"

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> CorpusSummary:
        """The summary of a ``corpus.json`` document; a missing required key raises KeyError. Fields a bundle
        written before they were recorded lacks (external runs, input hashes, date, freezing, source) read as
        absent."""
        return cls(
            name=doc["name"],
            documents=doc["documents"],
            queries=doc["queries"],
            answerable_queries=doc["answerable_queries"],
            judged_pairs=doc["judged_pairs"],
            kinds=doc["kinds"],
            kind_order=tuple(doc["kind_order"]),
            rankers=tuple(doc["rankers"]),
            external_rankers=tuple(doc.get("external_rankers", ())),
            metrics=tuple(doc["metrics"]),
            depth=doc["depth"],
            inputs=tuple(doc["inputs"]),
            input_sha256=doc.get("input_sha256") or {},
            question_set_sha256=doc.get("question_set_sha256"),
            embeddings=bool(doc.get("embeddings")),
            inputs_date=doc.get("inputs_date"),
            frozen=doc.get("frozen"),
            source=doc.get("source"),
            publish=doc.get("publish") or {"mode": "full", "vectors": True},
        )


@dataclass(frozen=True)
class SuppliedVectorsNote:
    """Vectors a corpus brought (``supplied`` in ``embeddings/index.json``): who made them, for the pages' note."""

    model: str | None
    weights_sha256: str | None
    provenance: str | None
    normalised_by_sitegen: bool


@dataclass(frozen=True)
class CorpusEvidence:
    """One corpus's evidence, read back whole: what its pages show. JSON documents keep the shapes their
    writers document; a file the corpus's build did not write is None."""

    name: str
    files: CorpusFiles
    summary: CorpusSummary
    metrics: Mapping[str, Any]
    report: Mapping[str, Any]
    #: The passages the corpus was ranked as (its chunks when chunked), by id in file order.
    passages: Mapping[str, Mapping[str, Any]]
    queries: Sequence[Mapping[str, Any]]
    #: Relevance grades by question and passage: the chunks' when chunked, else ``inputs/qrels/test.tsv``'s.
    grades: Mapping[str, Mapping[str, int]]
    #: Every run, expanded to ``{"queries": {qid: [{"doc_id", "rank", "score", "components"?}]}, ...}`` (each
    #: question's first :attr:`CorpusReader.top` hits when the reader cuts them).
    runs: Mapping[str, Mapping[str, Any]]
    #: Where each run's JSON is stored, by ranker: ``runs/<ranker>.json``, or ``.json.gz`` when large (what a page
    #: links to and points into).
    run_files: Mapping[str, str]
    experiments: Mapping[str, Any] | None
    packing: Mapping[str, Any] | None
    postgres: Mapping[str, Any] | None
    chunking: Mapping[str, Any] | None
    filtering: Mapping[str, Any] | None
    ties: Mapping[str, Any] | None
    hygiene: Mapping[str, Any] | None
    changes: Mapping[str, Any] | None
    trec_eval: Mapping[str, Any] | None
    supplied_vectors: SuppliedVectorsNote | None
    #: The corpus's README.md copy ("" when it has none).
    readme: str
    #: The corpus's own settings, its ``sitegen.json`` copy ({} when it has none): every one a choice made for it.
    config: Mapping[str, Any]
    #: ``referenced.json``: the files a redacted bundle holds by reference (sitegen.publish.redaction); None when
    #: the bundle copies them all.
    referenced: Mapping[str, Any] | None
    #: ``rerank.json``: the depth sweep of the bi-encoder rerank stages (sitegen.scoring.rerank_sweep); None: none.
    rerank: Mapping[str, Any] | None
    #: ``cost.json``: each ranker's index and model sizes (sitegen.scoring.cost); None in a bundle from before it.
    cost: Mapping[str, Any] | None

    @property
    def rankers(self) -> tuple[str, ...]:
        return self.summary.rankers

    @property
    def external(self) -> frozenset[str]:
        return frozenset(self.summary.external_rankers)


def qrels_grades(text: str | None, source: str) -> dict[str, dict[str, int]]:
    """Grades per question from a ``qrels/test.tsv`` text (header line, then query-id TAB corpus-id TAB integer
    grade); ``source`` names the file in errors."""
    grades: dict[str, dict[str, int]] = {}
    # Lines end at "\n" only, as sitegen's reader splits them: a U+2028 in an id is not a line break.
    for number, line in enumerate((text or "").removeprefix("\ufeff").split("\n"), start=1):
        line = line.removesuffix("\r")
        if number == 1 or not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != 3:
            raise BundleError(f"{source}:{number}", "expected query-id TAB corpus-id TAB grade")
        qid, doc_id, grade = (c.strip() for c in cells)
        try:
            grades.setdefault(qid, {})[doc_id] = int(grade)
        except ValueError:
            raise BundleError(f"{source}:{number}", f"grade {grade!r} is not an integer") from None
    return grades


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _chunk_grades(chunking: Mapping[str, Any], source: str) -> dict[str, dict[str, int]]:
    grades: dict[str, dict[str, int]] = {}
    for qid, judged in chunking["qrels"].items():
        if not isinstance(judged, Mapping) or not all(_is_int(g) for g in judged.values()):
            raise BundleError(source, f"qrels of query {qid!r} are not {{chunk_id: integer grade}}")
        grades[qid] = dict(judged)
    return grades


def _unmarked(value: Any, rel: str) -> Any:
    return value


@dataclass(frozen=True)
class CorpusReader:
    """Reads one corpus of a site or bundle, file by file or whole (:meth:`read`)."""

    source: Source
    corpus: str
    #: Applied to every JSON document read, with its site path (render marks each number with its source).
    mark: Callable[[Any, str], Any] = _unmarked
    #: How many hits of each question a run keeps (the pages print at most 10); None keeps them all.
    top: int | None = None

    @property
    def files(self) -> CorpusFiles:
        return CorpusFiles(self.corpus)

    def json(self, rel: str) -> Any:
        """A JSON file that must be there."""
        return self.mark(load_json(self.source.require(rel)), self.source.stored(rel))

    def optional(self, rel: str) -> Any | None:
        """A JSON file the corpus's build may not have written: None when absent."""
        return self.json(rel) if self.source.has(rel) else None

    def summary(self) -> CorpusSummary:
        return CorpusSummary.from_json(self.json(self.files.summary))

    def run(self, ranker: str) -> dict[str, Any]:
        """``runs/<ranker>.json`` expanded (:func:`sitegen.publish.evidence.expand_run`), each question's hits cut
        to the first :attr:`top` when set (every hit is still checked); a BundleError names a bad file. Only the hits
        kept are marked: a run holds many more hits than a page prints."""
        rel = self.files.run(ranker)
        doc = load_json(self.source.require(rel))
        try:
            if self.top is not None:
                expand_run(doc)  # every hit checked, kept or not
                doc = {**doc, "queries": {q: hits[: self.top] for q, hits in doc["queries"].items()}}
            return expand_run(self.mark(doc, self.source.stored(rel)))
        except ValueError as exc:
            raise BundleError(self.source.path(rel), str(exc)) from None

    def grades(self, chunking: Mapping[str, Any] | None = None) -> dict[str, dict[str, int]]:
        """Relevance grades as the metrics used them: a chunked corpus is ranked as chunks, so its labels are
        ``chunking.json``'s per-chunk ``qrels`` (``chunking`` when already read); any other corpus's are its
        ``inputs/qrels/test.tsv`` copy (none when the bundle lacks it)."""
        if chunking is None:
            chunking = self.optional(self.files.chunking)
        if isinstance(chunking, Mapping) and isinstance(chunking.get("qrels"), Mapping):
            return _chunk_grades(chunking, str(self.source.path(self.files.chunking)))
        rel = self.files.qrels_input
        text = None
        if self.source.has(rel):
            try:
                text = self.source.path(rel).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise BundleError(self.source.path(rel), f"cannot read: {exc}") from None
        return qrels_grades(text, str(self.source.path(rel)))

    def passages(self) -> list[dict[str, Any]]:
        """The passages the corpus was ranked as: its chunks when chunked, else the input copy of corpus.jsonl. In a
        redacted bundle, their records (:mod:`sitegen.publish.redaction`): ids, ``text_sha256`` and the other
        fields, no ``text``."""
        chunks = self.files.chunks
        return self._records(chunks if self.source.has(chunks) or self._held(chunks) else self.files.passages_input)

    def queries(self) -> list[dict[str, Any]]:
        """The questions, or in a redacted bundle their records (``text_sha256`` instead of ``text``)."""
        return self._records(self.files.queries_input)

    def _held(self, rel: str) -> bool:
        return self.source.has(self.files.records(rel.removeprefix(f"{self.files.folder}/")))

    def _records(self, rel: str) -> list[dict[str, Any]]:
        """A JSONL file of the bundle, or the records standing in for it when it is held by reference."""
        if not self.source.has(rel) and self._held(rel):
            rel = self.files.records(rel.removeprefix(f"{self.files.folder}/"))
        path = self.source.require(rel)
        if path.name.endswith(GZIP_SUFFIX):  # records stored compressed: numbered lines of the content
            lines = enumerate(read_stored(path).decode("utf-8").split("\n"), start=1)
            return [obj for _, obj in json_lines(path, lines)]
        return [obj for _, obj in json_lines(path)]

    def inputs(self, summary: CorpusSummary) -> dict[str, Path]:
        """Each input copy the summary lists, by its name in the corpus folder (``qrels/test.tsv``)."""
        return {input_of(name): self.source.require(self.files.at(name)) for name in summary.inputs}

    def readme(self) -> str:
        rel = self.files.readme_input
        return self.source.path(rel).read_text(encoding="utf-8") if self.source.has(rel) else ""

    def supplied_vectors(self) -> SuppliedVectorsNote | None:
        """Who made the vectors the corpus brought; None when sitegen embedded them (or nothing was embedded)."""
        index = self.optional(self.files.vector_index) or {}
        supplied = index.get("supplied")
        if not isinstance(supplied, dict):
            return None
        return SuppliedVectorsNote(
            model=index.get("model"),
            weights_sha256=index.get("weights_sha256"),
            provenance=supplied.get("provenance"),
            normalised_by_sitegen=bool(supplied.get("normalised_by_sitegen")),
        )

    def read(self) -> CorpusEvidence:
        """Everything the corpus's pages show."""
        files = self.files
        summary = self.summary()
        chunking = self.optional(files.chunking)
        return CorpusEvidence(
            name=self.corpus,
            files=files,
            summary=summary,
            metrics=self.json(files.metrics),
            report=self.json(files.report),
            passages={d["_id"]: d for d in self.passages()},
            queries=self.queries(),
            grades=self.grades(chunking),
            runs={r: self.run(r) for r in summary.rankers},
            run_files={r: self.source.stored(files.run(r)) for r in summary.rankers},
            experiments=self.optional(files.experiments),
            packing=self.optional(files.packing),
            postgres=self.optional(files.postgres),
            chunking=chunking,
            filtering=self.optional(files.filtering),
            ties=self.optional(files.ties),
            hygiene=self.optional(files.hygiene),
            changes=self.optional(files.changes),
            trec_eval=self.optional(files.trec_eval),
            supplied_vectors=self.supplied_vectors(),
            readme=self.readme(),
            config=self.optional(files.config_input) or {},
            referenced=self.optional(files.referenced),
            rerank=self.optional(files.rerank),
            cost=self.optional(files.cost),
        )


# ------------------------------------------------------------------------------- two bundles side by side


def is_finite_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _corpus_files(files: Iterable[str], kind: Callable[[str], str | None]) -> dict[tuple[str, str], str]:
    """The manifest paths of one kind of corpus file, by (corpus, what ``kind`` names it: a ranker for a run,
    the name inside the corpus folder for any other file); ``kind`` gives None for a file of another kind."""
    found = {}
    for rel in files:
        place = corpus_file(rel)
        name = kind(place[1]) if place is not None else None
        if place is not None and name is not None:
            found[place[0], name] = rel
    return found


def _metrics_file(name: str) -> str | None:
    return name if name == METRICS else None


def _vector_file(name: str) -> str | None:
    return name if vector_rows(name) is not None else None


def _checked_metrics(bundle: Bundle, rel: str) -> dict[str, Any]:
    """``metrics.json``, its shape checked so a comparison can index it freely."""
    path = bundle.path(rel)
    doc = load_json(path)
    if not isinstance(doc, dict):
        raise BundleError(path, 'not a {ranker: {"overall": ...}} object')
    for ranker, scored in doc.items():
        overall = scored.get("overall") if isinstance(scored, dict) else None
        if not isinstance(overall, dict) or not all(v is None or is_finite_number(v) for v in overall.values()):
            raise BundleError(path, f'ranker {ranker!r}: "overall" is not {{metric: number}}')
        per_query = scored.get("per_query", {})
        if not isinstance(per_query, dict) or not all(
            isinstance(s, dict) and all(v is None or is_finite_number(v) for v in s.values())
            for s in per_query.values()
        ):
            raise BundleError(path, f'ranker {ranker!r}: "per_query" is not {{query_id: {{metric: number}}}}')
    return doc


def _matrix(bundle: Bundle, rel: str) -> np.ndarray:
    path = bundle.path(rel)
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise BundleError(path, f"not a readable .npy array: {exc}") from None


def _vector_ids(bundle: Bundle, corpus: str, name: str) -> list[str] | None:
    """Row ids of a matrix of vectors (``name`` inside the corpus folder), from the index file that names its
    rows (:func:`sitegen.publish.layout.vector_rows`); None when the bundle has no usable list of them."""
    rows = vector_rows(name)
    if rows is None or not bundle.has(CorpusFiles(corpus).at(rows[0])):
        return None
    index = load_json(bundle.path(CorpusFiles(corpus).at(rows[0])))
    ids = index.get(rows[1]) if isinstance(index, Mapping) else None
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return None
    return ids


@dataclass(frozen=True)
class VectorPair:
    """One matrix of vectors in both bundles: the corpus, the file's name, and each side's row ids (None when its
    index does not name them) and rows."""

    corpus: str
    file: str
    ids_a: list[str] | None
    a: np.ndarray
    ids_b: list[str] | None
    b: np.ndarray


@dataclass(frozen=True)
class BundlePair:
    """Two bundles verified against their manifests (A and B), read side by side through the layout, one file at
    a time: a large bundle holds many runs, and a comparison keeps one pair of them in memory."""

    a: Bundle
    b: Bundle

    def runs(self) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
        """The (corpus, ranker) of every run in A and in B."""
        runs_a, runs_b = _corpus_files(self.a.files, run_ranker), _corpus_files(self.b.files, run_ranker)
        return set(runs_a), set(runs_b)

    def run(self, corpus: str, ranker: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """One ranker's run on one corpus in A and in B."""
        return CorpusReader(self.a, corpus).run(ranker), CorpusReader(self.b, corpus).run(ranker)

    def grades(self, corpus: str) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
        """Each side's relevance grades for one corpus (:meth:`CorpusReader.grades`)."""
        return CorpusReader(self.a, corpus).grades(), CorpusReader(self.b, corpus).grades()

    def metrics(self) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
        """``(corpus, A's metrics.json, B's)`` for every corpus with one on either side (``{}`` where absent),
        each checked to be ``{ranker: {"overall": {metric: number}, "per_query": {qid: {metric: number}}}}``;
        one corpus read at a time."""
        found_a, found_b = _corpus_files(self.a.files, _metrics_file), _corpus_files(self.b.files, _metrics_file)
        for corpus, name in sorted(found_a.keys() | found_b.keys()):
            yield (
                corpus,
                _checked_metrics(self.a, found_a[corpus, name]) if (corpus, name) in found_a else {},
                _checked_metrics(self.b, found_b[corpus, name]) if (corpus, name) in found_b else {},
            )

    def vectors(self) -> Iterator[VectorPair]:
        """Every matrix of vectors both bundles hold, in (corpus, file) order, one pair read at a time."""
        found_a, found_b = _corpus_files(self.a.files, _vector_file), _corpus_files(self.b.files, _vector_file)
        for corpus, name in sorted(found_a.keys() & found_b.keys()):
            yield VectorPair(
                corpus,
                name.removeprefix(f"{SUPPLIED_DIR}/"),  # passages.npy, or dense-mpnet/passages.npy: a model's own
                _vector_ids(self.a, corpus, name),
                _matrix(self.a, found_a[corpus, name]),
                _vector_ids(self.b, corpus, name),
                _matrix(self.b, found_b[corpus, name]),
            )
