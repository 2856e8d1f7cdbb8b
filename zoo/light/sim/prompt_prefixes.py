"""Reusing a speaker's previous prompt: the keys and values of the tokens two prompts share.

Why: a LIGHT-sim v2 speaker's prompts in one chat open the same way (persona, setting, the
objects while they stay put, the instructions: some 200 of ~280 tokens), and on a CPU without
AMX the prompt's prefill is about 69% of a line's cost. So the writer keeps, per *slot* (one
speaker of one chat), the token ids and the attention keys and values of that slot's last
prompt, and runs the model only over the tokens after the longest common prefix of the new
prompt and the kept one.

Why it is exact up to rounding: in a causal model the keys and values of a token depend only on
the tokens before it, so a shared prefix's are the same whichever prompt computed them, at the
same positions (rotary positions count from the prompt's first token, padding excluded). A
reused prefix differs from a fresh one only by float rounding (other batch neighbours, other
padding), as lines already differ between batch sizes.

Memory is the caller's to bound: a kept prompt costs layers x 2 x kv_heads x tokens x head_dim
values (SmolLM2-135M in bfloat16: 23 KB per token, ~6.4 MB per prompt), so the corpus writer
works through chats a pass at a time and calls :meth:`PromptPrefixes.forget` between passes.
"""

from __future__ import annotations

from typing import Hashable, Sequence


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class PromptPrefixes:
    """Per slot: the last prompt's token ids and its keys and values, one tensor of shape
    ``(layers, 2, kv_heads, tokens, head_dim)``."""

    def __init__(self):
        self._kept: dict[Hashable, tuple[list[int], object]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def reusable(self, slot: Hashable | None, ids: Sequence[int]) -> int:
        """Leading tokens of ``ids`` whose keys and values the slot holds, leaving at least one
        token to run (the model's output at the last prompt token is what the line starts from)."""
        if slot is None or slot not in self._kept:
            return 0
        return min(common_prefix(self._kept[slot][0], ids), len(ids) - 1)

    def past(self, slots: Sequence[Hashable | None], lengths: Sequence[int]):
        """The batch's cache before its new tokens: per layer ``(keys, values)`` of shape
        ``(rows, kv_heads, width, head_dim)``, row ``i``'s first ``lengths[i]`` kept tokens
        right-aligned (the attention mask hides the zeros to their left)."""
        import torch

        width = max(lengths)
        template = next(self._kept[s][1] for s, n in zip(slots, lengths) if n)
        layers, _, heads, _, head_dim = template.shape
        past = template.new_zeros(layers, 2, len(slots), heads, width, head_dim)
        for row, (slot, n) in enumerate(zip(slots, lengths)):
            if n:
                past[:, :, row, :, width - n:] = self._kept[slot][1][:, :, :, :n]
        return [(past[layer, 0], past[layer, 1]) for layer in range(layers)]

    def keep(self, slots: Sequence[Hashable | None], ids: Sequence[Sequence[int]], cache_layers, columns) -> None:
        """Remember each slotted row's prompt: ``cache_layers`` the batch's per-layer ``(keys,
        values)`` after the prompt's prefill, ``columns[i]`` the cache columns holding row
        ``i``'s prompt tokens, in order."""
        import torch

        stacked = None
        for row, slot in enumerate(slots):
            if slot is None:
                continue
            if stacked is None:  # (layers, 2, rows, heads, width, head_dim): one gather per row after this
                stacked = torch.stack([torch.stack(kv) for kv in cache_layers])
            self._kept[slot] = (list(ids[row]), stacked[:, :, row].index_select(3, columns[row]))

    def forget(self) -> None:
        """Drop every kept prompt (between passes over chats: none of them comes back)."""
        self._kept.clear()
