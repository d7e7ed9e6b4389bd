"""Publish a corpus without its texts: files held by reference, each text by its id and the sha256 of its bytes.

A corpus is published redacted when its ``sitegen.json`` says ``"publish": "redacted"`` or the build names it with
``--redact NAME``. Its bundle then holds no passage, question or quote text, and by default none of its vectors
(an embedding leaks its text; ``--publish-vectors`` publishes them). Whatever the bundle would copy and may not
is *held by reference*: ``referenced.json`` records each such file's sha256, size and where it comes from, and a
file of texts is replaced by its records, each text field swapped for the sha256 of its exact UTF-8 bytes::

    evidence/<corpus>/referenced.json
        {"schema_version": 1,
         "files": {NAME: {"sha256", "bytes", "source", "records"?: "referenced/NAME"}}}
    evidence/<corpus>/referenced/inputs/corpus.jsonl    {"_id", "title_sha256", "text_sha256", "metadata"?}
    evidence/<corpus>/referenced/inputs/queries.jsonl   {"_id", "text_sha256", "kind"?, "answerable"?, ...}
    evidence/<corpus>/referenced/inputs/citations.jsonl {"query_id", "citations": [{"kind", "doc_id", "quote_sha256"}]}
    evidence/<corpus>/referenced/chunks.jsonl           the chunks, as corpus.jsonl's records

``NAME`` is the file's place in the corpus's evidence folder (``inputs/corpus.jsonl``, ``chunks.jsonl``,
``embeddings/passages.npy``): where a copy would lie. A record keeps every field that is not text (ids,
metadata, kinds, filters, answer spans) as the file has it, so the audit recomputes every metric, table and
fusion from the bundle alone. ``audit.py SITE --inputs DIR`` brings the files back (``DIR/<corpus>/corpus.jsonl``,
``DIR/<corpus>/embeddings/passages.npy``, the layout of a corpus folder), checks each against its sha256, names the
record that differs when one does, and then recomputes what needs the texts: BM25 and text search, packing and
citations, hygiene, chunking, and the dense rankings from the vectors.

The same record serves a corpus too large to copy (issue #34). Any corpus, redacted or not, holds by reference
each text input (``corpus.jsonl``, ``queries.jsonl``, ``citations.jsonl``), its ``chunks.jsonl`` and each matrix of
vectors whose bytes exceed ``--reference-above`` (default :data:`REFERENCE_ABOVE`, 50,000,000: half git's
100 MB file limit, so no copy in a bundle can reach it), and every one of them when the build names it with
``--reference NAME``. Such a file's records keep every field but the texts, which are neither copied nor hashed
(the file's sha256 binds them): ``{"_id", "metadata"?}`` a passage. Records larger than 1 MiB are stored
gzip-compressed (``referenced/inputs/corpus.jsonl.gz``, sitegen.publish.evidence.write_stored). Its pages show each
passage by id, the text "held by reference". ``audit.py SITE --inputs DIR`` checks the files brought against
their sha256 and recomputes from them; without them, the audit names the checks it could not recompute.

A sha256 binds a text, it does not hide it from someone who can guess it: a short title or question can be
confirmed by hashing guesses. What is published besides the hashes (ids, metadata, filters, grades, answer
spans, ranks and scores) is the publisher's to keep free of secrets.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from sitegen.embedding.vectors import text_sha256  # the sha256 of a text's UTF-8 bytes, as the vectors key it
from sitegen.errors import BuildError, CorpusError
from sitegen.hashing import sha256_file
from sitegen.inputs.corpus import CITATIONS_FILE, CORPUS_FILE, QUERIES_FILE, README_FILE, Corpus, json_lines
from sitegen.publish.layout import CHUNKS, CorpusFiles, input_name, input_of, records_name

__all__ = [
    "QUOTE_LIMIT",
    "REFERENCED_SCHEMA_VERSION",
    "REFERENCE_ABOVE",
    "TEXT_INPUTS",
    "Placement",
    "Publication",
    "Referenced",
    "check_redaction",
    "hashed_record",
    "plain_record",
    "publication",
    "quoted_texts",
    "redact_tables",
    "referenced_chunks",
    "referenced_inputs",
    "referenced_vectors",
]

T = TypeVar("T")
REFERENCED_SCHEMA_VERSION = 1
#: The inputs that hold texts, and the fields of each record that are text (citations: of each citation).
TEXT_INPUTS: Mapping[str, tuple[str, ...]] = {
    CORPUS_FILE: ("title", "text"),
    QUERIES_FILE: ("text",),
    CITATIONS_FILE: ("quote",),
}
_SOURCE_TEXTS = (
    "withheld by the publisher: the corpus is published redacted (its texts are not published); "
    "a holder of the collection brings this file to the audit with --inputs"
)
_SOURCE_LARGE = (
    "held by reference: {size:,} bytes, {why}; the corpus folder {corpus}/ the build read holds it, "
    "and a holder of that folder brings it to audit.py --inputs DIR (DIR/{corpus}/{name})"
)
_SOURCE_EMBEDDED = (
    "held by reference: {size:,} bytes of vectors the build embedded with the packaged model, too large to copy; "
    "sitegen audit --inputs DIR makes them again from the texts brought"
)
_SOURCE_VECTORS = (
    "withheld: an embedding leaks its text; a build with --publish-vectors publishes it, "
    "and sitegen audit --inputs re-embeds the texts instead"
)


#: A text input or matrix of vectors above this many bytes is held by reference, not copied (``--reference-above``):
#: half of git's 100 MB limit on one file, so a copy never comes near it.
REFERENCE_ABOVE = 50_000_000


@dataclass(frozen=True)
class Publication:
    """What a corpus's bundle and pages publish: its texts (``redacted`` False) and its vectors; and which of its
    large files it holds by reference instead of a copy."""

    redacted: bool = False
    vectors: bool = True
    #: ``--reference NAME``: every text input, chunk file and matrix of vectors held by reference, whatever its size.
    referenced: bool = False
    #: ``--reference-above BYTES``: a text input, chunk file or matrix of vectors larger than this is held by reference.
    reference_above: int = REFERENCE_ABOVE

    @property
    def mode(self) -> str:
        """``sitegen.json``'s word for it: ``full`` or ``redacted``."""
        return "redacted" if self.redacted else "full"

    def held(self, size: int) -> bool:
        """Whether a file of ``size`` bytes (a text input, the chunks, a matrix of vectors) is held by reference."""
        return self.referenced or size > self.reference_above

    def held_because(self, size: int) -> str:
        if self.referenced:
            return "the build names the corpus with --reference"
        return f"above the build's --reference-above of {self.reference_above:,} bytes"

    def as_dict(self) -> dict[str, Any]:
        """``corpus.json``'s ``publish``: part of the corpus's recorded configuration (``referenced`` only when
        the build asks for it)."""
        return {"mode": self.mode, "vectors": self.vectors} | ({"referenced": True} if self.referenced else {})


def publication(
    corpus: Corpus,
    redact: Collection[str],
    publish_vectors: bool,
    reference: Collection[str] = (),
    reference_above: int = REFERENCE_ABOVE,
) -> Publication:
    """A corpus is redacted by its ``sitegen.json`` or by ``--redact NAME``; its vectors are then withheld
    unless ``--publish-vectors``. ``--reference NAME`` holds all its large-file candidates by reference, and
    ``--reference-above`` those above a size."""
    redacted = corpus.config.get("publish") == "redacted" or corpus.name in redact
    return Publication(
        redacted=redacted,
        vectors=not redacted or publish_vectors,
        referenced=corpus.name in reference,
        reference_above=reference_above,
    )


#: A README of a redacted corpus may not share this many characters in a row with any of its texts.
QUOTE_LIMIT = 30


def _folded(text: str) -> str:
    return " ".join(text.split()).lower()


def quoted_texts(corpus: Corpus, limit: int = QUOTE_LIMIT) -> list[str]:
    """The passages, questions and quotes a redacted corpus's README quotes: a run of ``limit`` characters it
    shares with one of their texts (whitespace collapsed, case folded), each named by id. A README is published
    with its corpus, redacted or not, so this is the one place a text could slip into a redacted site.

    Any shared run of ``limit`` characters holds a text's piece of ``limit // 2`` characters that starts at a
    multiple of ``limit // 2``: those pieces alone are looked up among the README's, then the match is extended."""
    readme = _folded(corpus.readme)
    step = limit // 2
    pieces = {readme[i : i + step] for i in range(len(readme) - step + 1)}
    texts = [(f"passage {d.doc_id}", d.title) for d in corpus.documents] + [
        (f"passage {d.doc_id}", d.text) for d in corpus.documents
    ]
    texts += [(f"question {q.query_id}", q.text) for q in corpus.queries]
    texts += [(f"a quote cited for question {q}", c["quote"]) for q, cited in corpus.citations.items() for c in cited]
    found: list[str] = []
    for name, text in texts:
        folded = _folded(text)
        for k in range(0, max(len(folded) - step + 1, 0), step):
            if folded[k : k + step] not in pieces:
                continue
            start = max(0, k - step)
            if any(folded[i : i + limit] in readme for i in range(start, min(k, len(folded) - limit) + 1)):
                found.append(name)
                break
    return list(dict.fromkeys(found))


def check_redaction(
    corpora: Sequence[Corpus], redact: Collection[str], publish_vectors: bool, baseline: bool
) -> list[str]:
    """Refuse, before a build does any work, a ``--redact`` naming no corpus of it, ``--publish-vectors`` with
    nothing redacted, a redacted corpus with ``--baseline`` (its Changes page would diff the texts) and one whose
    README quotes its texts; return a line for the build's log per corpus published redacted."""
    names = {c.name for c in corpora}
    unknown = sorted(set(redact) - names)
    if unknown:
        raise BuildError(f"--redact {', '.join(unknown)}: not a corpus of this build ({', '.join(sorted(names))})")
    redacted = [c for c in corpora if publication(c, redact, publish_vectors).redacted]
    if publish_vectors and not redacted:
        raise BuildError("--publish-vectors applies to redacted corpora, and this build redacts none (--redact NAME)")
    if redacted and baseline:
        raise BuildError(
            f"--baseline compares inputs line by line, texts included, and {', '.join(c.name for c in redacted)} "
            "is published redacted: build it without --baseline"
        )
    lines = []
    for corpus in redacted:
        if quoted := quoted_texts(corpus):
            raise CorpusError(
                corpus.root / README_FILE,
                f"the corpus is published redacted, and its README (which is published) quotes {QUOTE_LIMIT} "
                f"characters or more of {', '.join(quoted[:5])}{' and more' if len(quoted) > 5 else ''}: take them out",
            )
        vectors = "published (--publish-vectors)" if publish_vectors else "withheld"
        lines.append(f"{corpus.name}: published redacted: no passage or question text in the site; vectors {vectors}")
    return lines


def _hash_fields(obj: Mapping[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    return {
        (f"{key}_sha256" if key in fields and isinstance(value, str) else key): (
            text_sha256(value) if key in fields and isinstance(value, str) else value
        )
        for key, value in obj.items()
    }


def hashed_record(name: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """One line of a text input (``name``: corpus.jsonl, queries.jsonl, citations.jsonl) with each text field
    replaced by ``<field>_sha256``; every other field as the line has it."""
    fields = TEXT_INPUTS[name]
    if name == CITATIONS_FILE:
        items = obj.get("citations")
        cited = [_hash_fields(c, fields) if isinstance(c, Mapping) else c for c in items or []]
        return {**obj, "citations": cited} if isinstance(items, list) else dict(obj)
    return _hash_fields(obj, fields)


def plain_record(name: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """One line of a text input held by reference because it is large: every field but the texts (``name``:
    corpus.jsonl, queries.jsonl, citations.jsonl), which the file's sha256 binds."""
    fields = TEXT_INPUTS[name]
    if name == CITATIONS_FILE:
        items = obj.get("citations")
        kept = [{k: v for k, v in c.items() if k not in fields} if isinstance(c, Mapping) else c for c in items or []]
        return {**obj, "citations": kept} if isinstance(items, list) else dict(obj)
    return {k: v for k, v in obj.items() if k not in fields}


def _records_bytes(name: str, objects: Iterable[Mapping[str, Any]], hashed: bool = True) -> bytes:
    record = hashed_record if hashed else plain_record
    lines = (json.dumps(record(name, obj), sort_keys=True, ensure_ascii=False) for obj in objects)
    return "".join(line + "\n" for line in lines).encode("utf-8")


@dataclass(frozen=True)
class Referenced:
    """One file the bundle holds by reference: where a copy would lie, its bytes' sha256 and size, its records."""

    name: str
    sha256: str
    size: int
    source: str
    records: bytes | None = None

    def as_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"sha256": self.sha256, "bytes": self.size, "source": self.source}
        if self.records is not None:
            entry["records"] = records_name(self.name)
        return entry


def referenced_inputs(corpus: Corpus) -> list[Referenced]:
    """The corpus's text inputs (those it has), each held by reference with its records."""
    found = []
    for name in TEXT_INPUTS:
        if name not in corpus.input_files:
            continue
        path = corpus.root / name
        records = _records_bytes(name, (obj for _, obj in json_lines(path)))
        found.append(Referenced(input_name(name), sha256_file(path), path.stat().st_size, _SOURCE_TEXTS, records))
    return found


def large_inputs(corpus: Corpus, published: Publication) -> list[Referenced]:
    """The text inputs of a corpus that is not redacted held by reference for their size (or ``--reference``),
    each with records of its fields but the texts."""
    found = []
    for name in TEXT_INPUTS:
        if name not in corpus.input_files:
            continue
        path = corpus.root / name
        size = path.stat().st_size
        if not published.held(size):
            continue
        records = _records_bytes(name, (obj for _, obj in json_lines(path)), hashed=False)
        why = published.held_because(size)
        source = _SOURCE_LARGE.format(size=size, why=why, corpus=corpus.name, name=name)
        found.append(Referenced(input_name(name), sha256_file(path), size, source, records))
    return found


def referenced_chunks(chunks: bytes, source: str = _SOURCE_TEXTS, hashed: bool = True) -> Referenced:
    """``chunks.jsonl`` (its bytes as a full build writes them) held by reference, with its records (text fields
    by their sha256 for a redacted corpus, left out for a large one)."""
    objects = (json.loads(line) for line in chunks.decode("utf-8").splitlines() if line)
    records = _records_bytes(CORPUS_FILE, objects, hashed)
    return Referenced(CHUNKS, hashlib.sha256(chunks).hexdigest(), len(chunks), source, records)


def referenced_vectors(name: str, data: bytes, source: str = _SOURCE_VECTORS) -> Referenced:
    """A matrix of vectors (``embeddings/passages.npy``) withheld or too large to copy: its sha256 and size only."""
    return Referenced(name, hashlib.sha256(data).hexdigest(), len(data), source)


class Placement:
    """Where one corpus's files go: into the bundle, or, what its publication withholds, held by reference. Used
    while its evidence is written; :meth:`close` writes ``referenced.json`` and the records."""

    def __init__(self, site_dir: Path, files: CorpusFiles, corpus: Corpus, published: Publication) -> None:
        self.site_dir, self.files, self.published = site_dir, files, published
        self.corpus = corpus.name
        self.held = referenced_inputs(corpus) if published.redacted else large_inputs(corpus, published)

    def copied(self, names: Iterable[str]) -> list[str]:
        """The input files (names in the corpus folder) to copy: all but those held by reference."""
        held = {input_of(e.name) for e in self.held}
        return [n for n in names if not (self.published.redacted and n in TEXT_INPUTS) and n not in held]

    def _large(self, name: str, size: int) -> str:
        why = self.published.held_because(size)
        return _SOURCE_LARGE.format(size=size, why=why, corpus=self.corpus, name=name)

    def vectors(self, rel: str, data: bytes, supplied: bool = False) -> None:
        """A matrix of vectors (``rel``, a site path): written, or held by reference when withheld or large (the
        source then says where it comes from: the corpus folder that ``supplied`` it, else the packaged model)."""
        name = rel.removeprefix(f"{self.files.folder}/")
        if not self.published.vectors:
            self.held.append(referenced_vectors(name, data))
            return
        if self.published.held(len(data)):
            source = self._large(name, len(data)) if supplied else _SOURCE_EMBEDDED.format(size=len(data))
            self.held.append(referenced_vectors(name, data, source))
            return
        (self.site_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (self.site_dir / rel).write_bytes(data)

    def chunks(self, data: bytes) -> None:
        """``chunks.jsonl``: written, or in a redacted bundle held by reference with its records."""
        if self.published.redacted:
            self.held.append(referenced_chunks(data))
        elif self.published.held(len(data)):
            self.held.append(referenced_chunks(data, self._large(CHUNKS, len(data)), hashed=False))
        else:
            (self.site_dir / self.files.chunks).write_bytes(data)

    def input_sha256(self) -> dict[str, str]:
        """The sha256 of each input held by reference, by its name in the corpus folder."""
        return {input_of(e.name): e.sha256 for e in self.held if input_of(e.name) != e.name}

    def close(self) -> None:
        """``referenced.json`` and each file's records, when anything is held by reference."""
        held = sorted(self.held, key=lambda entry: entry.name)
        if not held:
            return
        # Imported here: sitegen.publish.evidence imports this module, and JSON is written only through it.
        from sitegen.publish.evidence import write_json, write_stored

        for entry in held:
            if entry.records is not None:
                write_stored(self.site_dir / self.files.records(entry.name), entry.records)

        document = {"schema_version": REFERENCED_SCHEMA_VERSION, "files": {e.name: e.as_dict() for e in held}}
        write_json(self.site_dir / self.files.referenced, document)


def redact_tables(tables: T) -> T:
    """A corpus's derived tables (:class:`sitegen.publish.evidence.DerivedTables`) without text: in
    ``hygiene.json`` a duplicate question group's words, in ``packing.json`` each citation's quote, become their
    sha256 (``text_sha256``, ``quote_sha256``); everything else is kept."""
    hygiene, packing = tables.hygiene, tables.packing
    flags = {**hygiene["flags"]}
    flags["duplicate_questions"] = [_hash_fields(e, ("text",)) for e in flags["duplicate_questions"]]
    citations = {
        qid: [_hash_fields(c, ("quote",)) for c in items] for qid, items in (packing.get("citations") or {}).items()
    }
    return replace(tables, hygiene={**hygiene, "flags": flags}, packing={**packing, "citations": citations})
