"""The packaged models' sizes cost.json states are pinned (a rebuild without a model's package writes the same
file); these tests read them again from the installed weights, and hold the audit's pins to the build's."""

from __future__ import annotations

import pytest

from sitegen import audit
from sitegen.builder.cost import PACKAGED_MODEL_SIZES
from sitegen.embedding import mpnet
from sitegen.embedding.model import MODEL_NAME, EmbeddingModel, model_folder
from sitegen.embedding.models import MPNET_SPEC
from sitegen.scoring.cost import safetensors_parameters


def _measured(weights) -> dict[str, int]:
    return {"parameters": safetensors_parameters(weights), "weights_bytes": weights.stat().st_size}


def test_the_audit_pins_the_same_model_sizes_as_the_build() -> None:
    assert audit.PACKAGED_MODEL_SIZES == PACKAGED_MODEL_SIZES


def test_the_packaged_minilm_size_is_its_weights_file() -> None:
    assert PACKAGED_MODEL_SIZES[MODEL_NAME] == _measured(model_folder() / "model.safetensors")


@pytest.mark.slow
@pytest.mark.skipif(mpnet.part_files() is None, reason="the all-mpnet-base-v2 parts (sitegen[mpnet]) are not installed")
def test_the_packaged_mpnet_size_is_its_weights_file() -> None:
    model = EmbeddingModel(spec=MPNET_SPEC)
    assert PACKAGED_MODEL_SIZES[model.name] == _measured(model.folder / "model.safetensors")
