"""Sentence embeddings: the packaged model (:mod:`.model`), the vectors it gives and what a stored vector must
be (:mod:`.vectors`), and where a text's vector comes from, frozen, cached or fresh (:mod:`.cache`).

Nothing here knows a corpus: the corpus's vectors, supplied or embedded, are :mod:`sitegen.inputs.vectors`'s.
"""
