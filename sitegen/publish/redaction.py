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

The same record serves a corpus too large to copy (issue #34): a file held by reference needs only its sha256,
size and source; ``records`` is optional.

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
    "TEXT_INPUTS",
    "Placement",
    "Publication",
    "Referenced",
    "check_redaction",
    "hashed_record",
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
_SOURCE_VECTORS = (
    "withheld: an embedding leaks its text; a build with --publish-vectors publishes it, "
    "and sitegen audit --inputs re-embeds the texts instead"
)


@dataclass(frozen=True)
class Publication:
    """What a corpus's bundle and pages publish: its texts (``redacted`` False) and its vectors."""

    redacted: bool = False
    vectors: bool = True

    @property
    def mode(self) -> str:
        """``sitegen.json``'s word for it: ``full`` or ``redacted``."""
        return "redacted" if self.redacted else "full"

    def as_dict(self) -> dict[str, Any]:
        """``corpus.json``'s ``publish``: part of the corpus's recorded configuration."""
        return {"mode": self.mode, "vectors": self.vectors}


def publication(corpus: Corpus, redact: Collection[str], publish_vectors: bool) -> Publication:
    """A corpus is redacted by its ``sitegen.json`` or by ``--redact NAME``; its vectors are then withheld
    unless ``--publish-vectors``."""
    redacted = corpus.config.get("publish") == "redacted" or corpus.name in redact
    return Publication(redacted=redacted, vectors=not redacted or publish_vectors)


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


def _records_bytes(name: str, objects: Iterable[Mapping[str, Any]]) -> bytes:
    lines = (json.dumps(hashed_record(name, obj), sort_keys=True, ensure_ascii=False) for obj in objects)
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


def referenced_chunks(chunks: bytes) -> Referenced:
    """``chunks.jsonl`` (its bytes as a full build writes them) held by reference, with its records."""
    objects = (json.loads(line) for line in chunks.decode("utf-8").splitlines() if line)
    return Referenced(
        CHUNKS, hashlib.sha256(chunks).hexdigest(), len(chunks), _SOURCE_TEXTS, _records_bytes(CORPUS_FILE, objects)
    )


def referenced_vectors(name: str, data: bytes) -> Referenced:
    """A matrix of vectors (``embeddings/passages.npy``) withheld: its sha256 and size only."""
    return Referenced(name, hashlib.sha256(data).hexdigest(), len(data), _SOURCE_VECTORS)


class Placement:
    """Where one corpus's files go: into the bundle, or, what its publication withholds, held by reference. Used
    while its evidence is written; :meth:`close` writes ``referenced.json`` and the records."""

    def __init__(self, site_dir: Path, files: CorpusFiles, corpus: Corpus, published: Publication) -> None:
        self.site_dir, self.files, self.published = site_dir, files, published
        self.held = referenced_inputs(corpus) if published.redacted else []

    def copied(self, names: Iterable[str]) -> list[str]:
        """The input files (names in the corpus folder) to copy: all but the texts of a redacted corpus."""
        return [n for n in names if not (self.published.redacted and n in TEXT_INPUTS)]

    def vectors(self, rel: str, data: bytes) -> None:
        """A matrix of vectors (``rel``, a site path): written, or held by reference when withheld."""
        if not self.published.vectors:
            self.held.append(referenced_vectors(rel.removeprefix(f"{self.files.folder}/"), data))
            return
        (self.site_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (self.site_dir / rel).write_bytes(data)

    def chunks(self, data: bytes) -> None:
        """``chunks.jsonl``: written, or in a redacted bundle held by reference with its records."""
        if self.published.redacted:
            self.held.append(referenced_chunks(data))
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
        for entry in held:
            if entry.records is not None:
                target = self.site_dir / self.files.records(entry.name)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(entry.records)
        # Imported here: sitegen.publish.evidence imports this module, and JSON is written only through it.
        from sitegen.publish.evidence import write_json

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
