"""The contract beyond ``Grounded`` is stated in :mod:`zoo.protocols`: every ability a caller
uses is declared there, a model without one says so through the protocol, and no code asks a
model for an ability by probing its attributes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from zoo.protocols import Policy, Ranker

REPO = Path(__file__).resolve().parent.parent
ABILITIES = {name for protocol in (Ranker, Policy) for name in vars(protocol) if not name.startswith("_")}


def ability_probes(source: str) -> list[tuple[int, str]]:
    """(line, name) of each ``getattr``/``hasattr`` call asking for a protocol's ability by name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value in ABILITIES:
            found.append((node.lineno, node.args[1].value))
    return found


def test_the_probe_finder_sees_a_probe_and_passes_other_attributes():
    assert ability_probes('if hasattr(model, "generate"):\n    pass\nx = getattr(p, "image_tracker", None)') \
        == [(1, "generate"), (3, "image_tracker")]
    assert ability_probes('getattr(stream, "reconfigure", None)\nhasattr(font, "size")') == []


def test_no_code_outside_the_protocols_probes_a_model_for_an_ability():
    probes = [f"{path.relative_to(REPO)}:{line} {name}"
              for path in sorted((REPO / "zoo").rglob("*.py")) if path.name != "protocols.py"
              for line, name in ability_probes(path.read_text())]
    assert probes == []


def test_a_model_without_an_ability_says_so_in_one_line():
    from zoo.models import BlocksStop, IRRanker

    stop, ir = BlocksStop(), IRRanker()
    assert not (stop.reads_instructions or stop.tracks_images or ir.supports_generation or ir.supports_retrieval)
    assert stop.instruction_encoder is None and stop.image_tracker_factory is None
    with pytest.raises(NotImplementedError, match=r"^BlocksStop has no instruction encoder \(reads_instructions is False\)$"):
        stop.encode_instructions(["move block 6"])
    with pytest.raises(NotImplementedError, match=r"^IRRanker has no generator \(supports_generation is False\)$"):
        ir.generate(["_task_speech"])


def test_the_models_that_have_an_ability_declare_it():
    from zoo.models import BiRanker, BlocksBandit, BlocksEnsemble, GenerativeTransformer, TransformerMemNet
    from zoo.models.light_ranker import LightRanker

    assert BiRanker.supports_retrieval and not BiRanker.supports_generation
    assert GenerativeTransformer.supports_generation and not GenerativeTransformer.supports_retrieval
    assert not TransformerMemNet.supports_retrieval and issubclass(TransformerMemNet, (LightRanker, Ranker))
    policy = BlocksBandit(["<pad>", "<unk>"])
    assert policy.reads_instructions and policy.tracks_images
    assert policy.instruction_encoder == policy.encode_instructions
    assert policy.image_tracker_factory == policy.image_tracker
    ensemble = BlocksEnsemble([policy])  # each member tokenises with its own vocabulary
    assert isinstance(ensemble, Policy) and ensemble.instruction_encoder is None
