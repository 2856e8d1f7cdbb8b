"""The bandit's loss, computed by hand on a few decisions."""

import math

import torch

from zoo.models.blocks.losses import episode_weights, policy_gradient_loss


def test_episode_weights_make_every_episode_count_the_same():
    weights = episode_weights(torch.tensor([0, 0, 0, 0, 1, 2, 2]))
    expected = torch.tensor([1 / 12] * 4 + [1 / 3] + [1 / 6] * 2, dtype=torch.float64)
    torch.testing.assert_close(weights, expected)
    assert math.isclose(float(weights.sum()), 1.0)


def test_the_weighted_loss_is_the_mean_of_each_episodes_mean():
    """What the original's one-step-per-episode update averages, over pooled episodes."""
    torch.manual_seed(0)
    episodes = torch.tensor([0, 0, 0, 1, 2, 2])
    block = torch.log_softmax(torch.randn(6, 20), dim=1)
    direction = torch.log_softmax(torch.randn(6, 5), dim=1)
    actions = torch.tensor([3, 17, 80, 80, 41, 5])
    blocks = torch.tensor([0, 4, 9, 2, 10, 1])  # the sampled blocks: on STOP steps not the action's
    rewards = torch.tensor([1.5, -0.02, -1.0, 2.0, -1.0, 0.3])

    def loss(rows, weights=None):
        return policy_gradient_loss(block[rows], direction[rows], actions[rows], rewards[rows], 0.1,
                                    blocks=blocks[rows], weights=weights)

    per_episode = torch.stack([loss(episodes == e) for e in range(3)])
    weighted = loss(torch.ones(6, dtype=torch.bool), episode_weights(episodes))
    torch.testing.assert_close(weighted, per_episode.mean())
    # and the plain mean over the pooled steps weighs the 1-step episode's STOP less
    assert not torch.isclose(loss(torch.ones(6, dtype=torch.bool)), per_episode.mean())
