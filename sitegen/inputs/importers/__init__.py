"""Import an existing test collection (BEIR, TREC, SMART) into a corpus folder in sitegen's layout.

Each importer streams its inputs line by line (plain or gzip, detected from the file's first bytes), writes
``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv`` and a ``README.md`` recording provenance into a
temporary sibling of ``<to>/<name>/``, checks the result with :func:`sitegen.inputs.corpus.load_corpus`, and only then
renames it into place, so a failed import leaves nothing behind.

Rules shared by every importer:

* ids are stripped; text and titles have their whitespace collapsed to single spaces;
* a query is kept only if the qrels judge at least one document relevant to it (grade > 0); the others are
  dropped and counted, and so are their qrels rows. With ``keep_unanswerable=True`` a query that is judged but has
  no relevant document is kept with ``"answerable": false``; a query the qrels never mention is always dropped
  (unjudged is not the same as unanswerable);
* a negative grade (TREC's "junk", Cranfield's "no relevance") is not a grade sitegen accepts: the row is dropped
  and counted; grade 0 rows (judged not relevant) are kept; a grade is ASCII digits with an optional leading ``-``
  (``+1``, ``1_0``, ``1.0`` are refused), at most :data:`sitegen.inputs.corpus.MAX_GRADE` either way;
* every input is read by :func:`sitegen.inputs.corpus.text_lines`, the reader ``load_corpus`` uses: lines end at
  ``\\n``, a UTF-8 byte-order mark on line 1 is skipped, NUL bytes are refused;
* the README records the command with each path relative to the current folder, or as its file name alone
  when it lies outside, so an import never publishes a home or workspace path;
* bad input is refused with a :class:`CorpusError` naming the file and line: a malformed qrels line, a SMART
  record without ``.I``, an unclosed SGML element, a duplicate id, a pair judged twice with different grades (an
  exact repeat is dropped and counted), an empty document file, a byte sequence that is not UTF-8, and (unless
  ``skip_unknown=True``, which drops and counts them) qrels rows naming a query or document that does not exist.
  Every input is read to its end and every problem found is raised together as one
  :class:`~sitegen.errors.CorpusProblems`; a reference to a record already reported is not reported again.

The package: :mod:`.beir`, :mod:`.trec` and :mod:`.smart` parse their formats into a :class:`~.plan.Plan`
(:mod:`.plan` holds the record types and the readers the formats share), :mod:`.writer` checks, grades, writes and
swaps the result into place, and :mod:`.readme` writes its README.
"""

from sitegen.inputs.importers.beir import import_beir
from sitegen.inputs.importers.plan import DEFAULT_TO, ImportOptions, ImportResult, SourceFile
from sitegen.inputs.importers.smart import import_smart
from sitegen.inputs.importers.trec import import_trec

__all__ = [
    "DEFAULT_TO",
    "ImportOptions",
    "ImportResult",
    "SourceFile",
    "import_beir",
    "import_smart",
    "import_trec",
]
