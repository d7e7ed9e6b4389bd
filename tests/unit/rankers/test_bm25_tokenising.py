"""The passages tokenised a block at a time number their words exactly as tokenising them all at once does."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sitegen.inputs.corpus import Document, passage_text
from sitegen.rankers import bm25
from sitegen.rankers.tokenize import tokenize
from tests.helpers import TEXTS, examples


@settings(max_examples=examples(60), deadline=None)
@given(texts=st.lists(TEXTS.map(" ".join), min_size=0, max_size=9), block=st.integers(min_value=1, max_value=4))
def test_blocks_of_passages_give_the_ids_of_the_whole_stream(texts: list[str], block: int) -> None:
    documents = tuple(Document(f"d{i}", "Title cards" if i % 3 == 0 else "", text) for i, text in enumerate(texts))
    whole = bm25._numbered([tokenize(passage_text(d)) for d in documents])
    original = bm25._TOKENISE_BLOCK
    bm25._TOKENISE_BLOCK = block
    try:
        blocked = bm25._numbered_documents(documents)
    finally:
        bm25._TOKENISE_BLOCK = original
    assert blocked.vocabulary == whole.vocabulary
    assert blocked.ids.dtype == np.int32 and blocked.ids.tolist() == whole.ids.tolist()
    assert blocked.lengths.tolist() == whole.lengths.tolist()
