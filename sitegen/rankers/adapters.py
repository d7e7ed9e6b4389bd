"""LangChain and LlamaIndex retrievers as ``--retriever`` callables.

Each adapter returns ``retrieve(question, k, filter) -> [(doc_id, score), ...]``, the signature
``sitegen build --retriever NAME=module:callable`` calls, reading the corpus id of every result from its
metadata key ``id_key`` (``"id"`` unless told otherwise): index each corpus passage with its ``_id`` there.
A result without that key is an error naming the key and the keys it has. At most ``k`` results are kept.

* LangChain (``pip install 'sitegen[langchain]'``): a retriever returns Documents without scores, so the
  scores are rank-derived, ``k - rank + 1`` (rank 1 first); the run's params say so. A retriever with
  ``search_kwargs`` (a vector store's ``as_retriever()``) is asked for ``k`` results per call; another
  returns what it is configured to.
* LlamaIndex (``pip install 'sitegen[llamaindex]'``): ``NodeWithScore.score`` is the score; when a
  retriever gives no scores at all (``None``), they are rank-derived as for LangChain. Set the
  retriever's ``similarity_top_k`` to the build's depth (100) for full-depth runs.

The question's metadata filter is not passed on unless ``filter_kwargs`` turns it into the retriever's
own form (the keyword arguments of ``invoke`` for LangChain; for LlamaIndex, a retriever to use for that
question, since its filters are set when a retriever is made).

Neither library is imported here: the adapters only call ``retriever.invoke`` / ``retriever.retrieve``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sitegen.errors import SitegenError
from sitegen.rankers.retriever import SCORES_ATTRIBUTE

__all__ = ["RANK_DERIVED", "from_langchain", "from_llamaindex"]

RANK_DERIVED = "rank-derived: k - rank + 1 (the retriever returns no scores)"

#: ``(question, k, filter) -> [(doc_id, score), ...]``
Retrieve = Callable[[str, int, "dict[str, Any] | None"], list[tuple[str, float]]]


def _doc_id(metadata: Any, id_key: str, library: str, position: int) -> str:
    if not isinstance(metadata, Mapping) or id_key not in metadata:
        keys = ", ".join(sorted(map(str, metadata))) if isinstance(metadata, Mapping) and metadata else "none"
        raise SitegenError(
            f"{library} result {position} has no metadata key {id_key!r} holding the corpus id "
            f"(its keys: {keys}); store each passage's _id there, or pass id_key="
        )
    return str(metadata[id_key])


def from_langchain(
    retriever: Any,
    id_key: str = "id",
    filter_kwargs: Callable[[dict[str, Any]], Mapping[str, Any]] | None = None,
) -> Retrieve:
    """A LangChain ``BaseRetriever`` as a ``--retriever`` callable, with rank-derived scores ``k - rank + 1``."""

    def retrieve(question: str, k: int, filter: dict[str, Any] | None = None) -> list[tuple[str, float]]:
        kwargs: dict[str, Any] = {"k": k} if isinstance(getattr(retriever, "search_kwargs", None), dict) else {}
        if filter and filter_kwargs is not None:
            kwargs.update(filter_kwargs(filter))
        documents = list(retriever.invoke(question, **kwargs))[:k]
        return [
            (_doc_id(getattr(doc, "metadata", None), id_key, "LangChain", rank), float(k - rank + 1))
            for rank, doc in enumerate(documents, 1)
        ]

    setattr(retrieve, SCORES_ATTRIBUTE, RANK_DERIVED)
    return retrieve


def from_llamaindex(
    retriever: Any,
    id_key: str = "id",
    filter_kwargs: Callable[[dict[str, Any]], Any] | None = None,
) -> Retrieve:
    """A LlamaIndex ``BaseRetriever`` as a ``--retriever`` callable, scored by ``NodeWithScore.score``.

    ``filter_kwargs``, when given, maps a question's filter to the retriever to use for that question."""

    def retrieve(question: str, k: int, filter: dict[str, Any] | None = None) -> list[tuple[str, float]]:
        source = filter_kwargs(filter) if filter and filter_kwargs is not None else retriever
        results = list(source.retrieve(question))[:k]
        scores = [getattr(result, "score", None) for result in results]
        if all(score is None for score in scores):
            scores = [float(k - rank + 1) for rank in range(1, len(results) + 1)]
        elif any(score is None for score in scores):
            missing = scores.index(None) + 1
            raise SitegenError(f"LlamaIndex result {missing} has no score while others have one")
        return [
            (_doc_id(getattr(getattr(result, "node", None), "metadata", None), id_key, "LlamaIndex", rank), score)
            for rank, (result, score) in enumerate(zip(results, scores, strict=True), 1)
        ]

    setattr(
        retrieve, SCORES_ATTRIBUTE, "NodeWithScore.score (rank-derived, k - rank + 1, where the retriever gives none)"
    )
    return retrieve
