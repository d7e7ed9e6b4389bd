"""bench/scale_corpus.py streams (passages drawn and written a block at a time, a passage's words drawn
again from its PCG64 position when a question or a vector needs them) and must write the bytes of the
in-memory generator it replaced, which drew every passage's words in one sequence. That generator is kept
here as the reference."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.helpers import REPO

SCRIPT = REPO / "bench" / "scale_corpus.py"


@pytest.fixture(scope="module")
def scale_corpus() -> ModuleType:
    spec = importlib.util.spec_from_file_location("scale_corpus", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reference_generate(sc: ModuleType, out: Path, passages: int, questions: int) -> None:
    """The previous generator (with vectors): every passage's words drawn at once and held."""
    rng = np.random.default_rng(sc.SEED)
    words = np.array(sc.vocabulary(sc.VOCABULARY, rng), dtype=object)
    lengths = rng.integers(sc.PASSAGE_WORDS[0], sc.PASSAGE_WORDS[1] + 1, size=passages)
    title_lengths = rng.integers(sc.TITLE_WORDS[0], sc.TITLE_WORDS[1] + 1, size=passages)
    body = sc.zipf_draw(rng, int(lengths.sum()), sc.VOCABULARY)
    titles = sc.zipf_draw(rng, int(title_lengths.sum()), sc.VOCABULARY)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    title_starts = np.concatenate([[0], np.cumsum(title_lengths)])
    width = len(str(passages - 1))
    doc_ids = [f"p{i:0{width}d}" for i in range(passages)]
    out.mkdir(parents=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8", newline="\n") as f:
        for i, doc in enumerate(doc_ids):
            title = " ".join(words[titles[title_starts[i] : title_starts[i + 1]]].tolist()).capitalize()
            text = sc._sentence(words, body[starts[i] : starts[i + 1]])
            f.write(json.dumps({"_id": doc, "title": title, "text": text}, ensure_ascii=False) + "\n")
    targets = rng.integers(0, passages, size=questions)
    q_lengths = rng.integers(sc.QUESTION_WORDS[0], sc.QUESTION_WORDS[1] + 1, size=questions)
    qwidth = len(str(questions - 1))
    rows, qrels, query_words = [], [], []
    for j in range(questions):
        qid, n = f"q{j:0{qwidth}d}", int(q_lengths[j])
        if j % sc.UNANSWERABLE_EVERY == sc.UNANSWERABLE_EVERY - 1:
            ids, kind = sc.zipf_draw(rng, n, sc.VOCABULARY), "unanswerable"
        else:
            own = body[starts[targets[j]] : starts[targets[j] + 1]]
            ids = np.concatenate([rng.choice(own, size=n - 1, replace=False), sc.zipf_draw(rng, 1, sc.VOCABULARY)])
            kind = "from-passage"
            qrels.append(f"{qid}\t{doc_ids[targets[j]]}\t1")
        text = " ".join(words[ids].tolist()).capitalize() + "?"
        rows.append({"_id": qid, "text": text, "kind": kind, "answerable": kind != "unanswerable"})
        query_words.append(ids)
    with (out / "queries.jsonl").open("w", encoding="utf-8", newline="\n") as f:
        f.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    (out / "qrels").mkdir()
    (out / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(r + "\n" for r in qrels))
    word_vectors = (
        rng.standard_normal((sc.VOCABULARY, sc.DIMENSIONS)) * np.log(np.arange(2, sc.VOCABULARY + 2))[:, None]
    )
    (out / "embeddings").mkdir()
    matrix = np.empty((passages, sc.DIMENSIONS), dtype=np.float32)
    for lo in range(0, passages, 5_000):
        hi = min(lo + 5_000, passages)
        sums = np.add.reduceat(word_vectors[body[starts[lo] : starts[hi]]], starts[lo:hi] - starts[lo], axis=0)
        matrix[lo:hi] = sc._unit(sums)
    np.save(out / "embeddings" / "passages.npy", matrix, allow_pickle=False)
    np.save(
        out / "embeddings" / "queries.npy", sc._unit(np.stack([word_vectors[ids].sum(axis=0) for ids in query_words]))
    )
    index = {
        "model": "scale-corpus-bag-of-words",
        "provenance": f"bench/scale_corpus.py seed {sc.SEED}: normalised ln(rank + 1)-weighted sum of seeded "
        "Gaussian word vectors",
        "dimensions": sc.DIMENSIONS,
        "dtype": "float32",
        "normalised": True,
        "passages": doc_ids,
        "queries": [row["_id"] for row in rows],
    }
    (out / "embeddings" / "index.json").write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")
    (out / "README.md").write_text(sc._readme(passages, questions, True), encoding="utf-8")


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("passages", "questions"), [(1, 1), (97, 23), (250, 40)])
def test_the_streaming_generator_writes_the_bytes_of_the_in_memory_one(
    scale_corpus: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, passages: int, questions: int
) -> None:
    monkeypatch.setattr(scale_corpus, "BLOCK", 10)  # many blocks, and a short last one
    monkeypatch.setattr(scale_corpus, "SUM_PASSAGES", 3)
    monkeypatch.setattr(scale_corpus, "VOCABULARY", 2_000)  # drawing 30,000 made-up words took 0.9 s a corpus
    reference_generate(scale_corpus, tmp_path / "held", passages, questions)
    scale_corpus.generate(tmp_path / "streamed", passages, questions, vectors=True)
    held, streamed = files(tmp_path / "held"), files(tmp_path / "streamed")
    assert sorted(held) == sorted(streamed)
    for name, content in held.items():
        assert streamed[name] == content, name


def test_a_passage_drawn_again_from_its_position_is_the_one_written(scale_corpus: ModuleType) -> None:
    rng = np.random.default_rng(scale_corpus.SEED)
    rng.integers(0, 7, size=3)  # leaves a buffered 32-bit half, as the lengths' draws may
    assert rng.bit_generator.state["has_uint32"] == 1
    starts = np.array([0, 5, 12, 20])
    draws = scale_corpus._Draws(rng.bit_generator.state, starts)
    in_order = np.concatenate(list(draws.blocks()))
    for i in range(3):
        assert draws.passage(i).tolist() == in_order[starts[i] : starts[i + 1]].tolist()
    state = rng.bit_generator.state
    after = scale_corpus._advanced(state, 20)
    rng.random(20)
    assert rng.bit_generator.state == after  # the buffered half kept, as uniform draws keep it
