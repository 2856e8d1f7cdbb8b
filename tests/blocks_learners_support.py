"""Shared by the tests of the objectives that learn from rollouts (DAgger, SPO): a policy small
enough to train in a second, and a few procedural training episodes to roll it out on."""

from __future__ import annotations

import torch

from zoo.blocks.procedural import procedural_split
from zoo.blocks.vocab import Vocabulary, build_vocabulary

TINY_POLICY = dict(embedding_dim=8, lstm_dim=8, image_dim=8, conv_channels=4, block_embedding_dim=4,
                   direction_embedding_dim=4, hidden_dim=8, init="glorot")
"""``BlocksPolicy`` sizes for tests, with Glorot weights: a net this small learns visibly within
the few steps a test takes (the original scheme's small normals barely move it in ten)."""


def few_training_episodes() -> list:
    """Eight procedural training examples (one transition each)."""
    return procedural_split("train", transitions=6, seed=3).examples[:8]


def tiny_learner(objective: type, examples: list, **settings):
    """A freshly seeded ``objective`` with :data:`TINY_POLICY`'s sizes and the examples' vocabulary."""
    torch.manual_seed(0)
    return objective(Vocabulary(build_vocabulary(e.instruction for e in examples)).words, **TINY_POLICY, **settings)
