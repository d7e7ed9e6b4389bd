"""Read one corpus's evidence back, typed: the one reader that render, compare, verify and build share.

Every consumer of a bundle reads a corpus through :class:`CorpusReader`, from a site folder as it lies
(:class:`SiteFolder`: the build's staging folder, a site being rendered) or from a bundle verified against its
manifest (:class:`sitegen.publish.bundle.Bundle`, which refuses a file the manifest does not list). Paths come
from :mod:`sitegen.publish.layout`; the rules of reading live here once: a chunked corpus is ranked, labelled
and shown as its chunks (``chunks.jsonl``, ``chunking.json``'s ``qrels``), every other corpus as its inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sitegen.errors import BundleError
from sitegen.inputs.corpus import json_lines
from sitegen.publish.bundle import load_json
from sitegen.publish.evidence import expand_run
from sitegen.publish.layout import CorpusFiles, input_of

__all__ = [
    "CorpusEvidence",
    "CorpusReader",
    "CorpusSummary",
    "SiteFolder",
    "Source",
    "SuppliedVectorsNote",
    "qrels_grades",
]


class Source(Protocol):
    """Where evidence files are read from: site paths (``evidence/<corpus>/...``) to files."""

    def path(self, rel: str) -> Path: ...

    def has(self, rel: str) -> bool: ...

    def require(self, rel: str) -> Path:
        """The file of a path that must be there; a source that knows its files refuses one it lacks."""
        ...


@dataclass(frozen=True)
class SiteFolder:
    """A site folder read as it lies: a file is there when it exists; a missing one is the reader's error."""

    root: Path

    def path(self, rel: str) -> Path:
        return self.root / rel

    def has(self, rel: str) -> bool:
        return (self.root / rel).is_file()

    def require(self, rel: str) -> Path:
        return self.root / rel


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
    #: The input copies, as names inside the corpus folder (``inputs/qrels/test.tsv``).
    inputs: tuple[str, ...]
    embeddings: bool
    inputs_date: str | None
    #: ``{"date", "edited_files"}`` from the corpus's FROZEN.json; None for a corpus never frozen.
    frozen: Mapping[str, Any] | None
    #: The sha256 of every input copy by its name in the corpus folder, and the question set's one hash
    #: (sitegen.inputs.binding); empty and None in a bundle written before they were recorded.
    input_sha256: Mapping[str, str]
    question_set_sha256: str | None
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
        written before they were recorded lacks (external runs, inputs date, freezing) read as absent."""
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
            embeddings=bool(doc.get("embeddings")),
            inputs_date=doc.get("inputs_date"),
            frozen=doc.get("frozen"),
            input_sha256=doc.get("input_sha256") or {},
            question_set_sha256=doc.get("question_set_sha256"),
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
    #: Every run, expanded to ``{"queries": {qid: [{"doc_id", "rank", "score", "components"?}]}, ...}``.
    runs: Mapping[str, Mapping[str, Any]]
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

    @property
    def files(self) -> CorpusFiles:
        return CorpusFiles(self.corpus)

    def json(self, rel: str) -> Any:
        """A JSON file that must be there."""
        return self.mark(load_json(self.source.require(rel)), rel)

    def optional(self, rel: str) -> Any | None:
        """A JSON file the corpus's build may not have written: None when absent."""
        return self.json(rel) if self.source.has(rel) else None

    def summary(self) -> CorpusSummary:
        return CorpusSummary.from_json(self.json(self.files.summary))

    def run(self, ranker: str) -> dict[str, Any]:
        """``runs/<ranker>.json`` expanded (:func:`sitegen.publish.evidence.expand_run`); a BundleError names a
        bad file."""
        rel = self.files.run(ranker)
        try:
            return expand_run(self.json(rel))
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
        return [obj for _, obj in json_lines(self.source.require(rel))]

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
        )
