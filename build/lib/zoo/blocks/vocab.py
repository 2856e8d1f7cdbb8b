"""Instruction tokens: lower-cased word/punctuation tokens and a vocabulary built on train."""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Sequence

import torch

PAD, UNK = "<pad>", "<unk>"
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[^\sa-z0-9]")


def tokenize(text: str) -> list[str]:
    """Lower-cased words, numbers and single punctuation marks (close to NLTK's
    ``word_tokenize``, which the original agent used, without its data download)."""
    return _TOKEN.findall(text.lower())


def build_vocabulary(texts: Iterable[str], min_count: int = 1) -> list[str]:
    """Padding and unknown first, then words by decreasing frequency (ties alphabetical)."""
    counts = Counter(token for text in texts for token in tokenize(text))
    words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    return [PAD, UNK, *words]


class Vocabulary:
    """Maps instructions to padded id tensors for the LSTM."""

    def __init__(self, words: Sequence[str]):
        if list(words[:2]) != [PAD, UNK]:
            raise ValueError(f"a vocabulary starts with {PAD!r} and {UNK!r}")
        self.words = list(words)
        self.index = {word: i for i, word in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, text: str) -> list[int]:
        unknown = self.index[UNK]
        return [self.index.get(token, unknown) for token in tokenize(text)] or [unknown]

    def encode_batch(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(ids [B, T], lengths [B])``, padded with 0."""
        encoded = [self.encode(text) for text in texts]
        lengths = torch.tensor([len(ids) for ids in encoded], dtype=torch.long)
        ids = torch.zeros(len(encoded), int(lengths.max()), dtype=torch.long)
        for row, tokens in enumerate(encoded):
            ids[row, : len(tokens)] = torch.tensor(tokens)
        return ids, lengths
