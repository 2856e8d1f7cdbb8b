"""``DQNLoop``: experience collection, replay memory and target network for the DQN baseline.

The paper compares its contextual bandit with DQN trained on the same shaped reward (Table
2). Before every training batch this callback plays the batch's episodes ε-greedily with the
current Q-network, stores each transition (uint8 image stacks, so 2,000 of them take ~0.9 GB)
in a replay memory of fixed size, samples a minibatch and hands it to the module with the target
network's ``max_a' Q_target(s', a')`` of each transition (a
:class:`~zoo.models.blocks.experience.Transitions`; the objective applies its discount). The
target network is a frozen copy (``BlocksDQN.frozen_copy``), re-synchronised at the start of every epoch. ε falls linearly from ``epsilon_start`` to
``epsilon_end`` over ``epsilon_steps`` collected transitions.
"""

from __future__ import annotations

from typing import Sequence

import lightning as L
import torch

from zoo.blocks.geometry import NUM_ACTIONS
from zoo.blocks.history import HISTORY, raw_stacks, standardize_stacks
from zoo.blocks.records import Example
from zoo.blocks.render import IMAGE_SIZE
from zoo.blocks.reward import RewardConfig
from zoo.blocks.rollout import EpisodeRunner
from zoo.models.blocks.experience import Transitions


class ReplayMemory:
    """A ring buffer of transitions, stored as tensors."""

    FIELDS = ("stacks", "next_stacks", "tokens", "lengths", "previous", "actions", "rewards", "done")

    def __init__(self, capacity: int = 2000):
        self.capacity = capacity
        self.store: dict[str, torch.Tensor] = {}
        self.size = 0
        self.cursor = 0

    @staticmethod
    def bytes_per_transition(history: int = HISTORY, image_size: int = IMAGE_SIZE) -> int:
        """Memory one transition takes in the store: its two uint8 stacks (before and after the
        action) of ``history + 1`` RGB frames, its action, previous action, length and at least
        one token (int64), its reward (float64) and done flag. The store allocates ``capacity``
        of them at the first rollout."""
        return 2 * (history + 1) * 3 * image_size**2 + 4 * 8 + 8 + 1

    @staticmethod
    def bytes_per_sampled_transition(history: int = HISTORY, image_size: int = IMAGE_SIZE) -> int:
        """Memory one transition of a sampled minibatch takes at least: its copied uint8 stacks
        and both standardised to float32 (:func:`zoo.blocks.history.standardize_stacks`), before
        any activation."""
        return 2 * (history + 1) * 3 * image_size**2 * (1 + 4)

    def add(self, batch: dict[str, torch.Tensor]) -> None:
        """Append transitions, overwriting the oldest. A batch larger than the memory keeps
        only its last ``capacity`` rows (what a ring buffer would hold after adding them one
        at a time), so no slot is written twice in one call."""
        count = len(batch["actions"])
        if count > self.capacity:
            batch = {key: value[count - self.capacity :] for key, value in batch.items()}
            count = self.capacity
        if not self.store:
            self.store = {k: torch.zeros((self.capacity, *v.shape[1:]), dtype=v.dtype) for k, v in batch.items() if k != "tokens"}
            self.store["tokens"] = torch.zeros((self.capacity, 1), dtype=torch.long)
        width = max(self.store["tokens"].shape[1], batch["tokens"].shape[1])
        if width > self.store["tokens"].shape[1]:  # instructions longer than any seen so far
            self.store["tokens"] = torch.nn.functional.pad(self.store["tokens"], (0, width - self.store["tokens"].shape[1]))
        slots = (self.cursor + torch.arange(count)) % self.capacity
        for key, value in batch.items():
            if key == "tokens":
                value = torch.nn.functional.pad(value, (0, width - value.shape[1]))
            self.store[key][slots] = value
        self.cursor = int((self.cursor + count) % self.capacity)
        self.size = min(self.size + count, self.capacity)

    def sample(self, count: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
        rows = torch.randint(0, self.size, (min(count, self.size),), generator=generator)
        sample = {key: value[rows] for key, value in self.store.items()}
        sample["tokens"] = sample["tokens"][:, : int(sample["lengths"].max())]
        return sample

    def state_dict(self) -> dict:
        return {"store": self.store, "size": self.size, "cursor": self.cursor}

    def load_state_dict(self, state: dict) -> None:
        self.store, self.size, self.cursor = state["store"], state["size"], state["cursor"]


class DQNLoop(L.Callback):
    """Hands the module a replay minibatch (:class:`~zoo.models.blocks.experience.Transitions`)
    after each ε-greedy rollout of ``batch["episodes"]``.

    Args:
        examples: The training examples ``batch["episodes"]`` indexes.
        reward: What each transition is scored by (default :class:`RewardConfig`'s).
        seed: Seeds exploration and replay sampling.
        renderer: Draws the boards (default: the simulator's own).
        demo_cache: Where the demonstrations the reward reads are cached (default: a new cache).
        capacity: The transitions the replay memory keeps (the newest).
        batch_size: Transitions drawn per update.
        epsilon_start: The share of random actions at the start.
        epsilon_end: The share it falls to.
        epsilon_steps: The collected transitions over which it falls, linearly.
        horizon: The most moves an episode may take.
        history: The previous frames in each image stack.
    """

    def __init__(self, examples: Sequence[Example], reward: RewardConfig | None = None, seed: int = 0,
                 renderer=None, demo_cache=None, capacity: int = 2000, batch_size: int = 32,
                 epsilon_start: float = 1.0, epsilon_end: float = 0.1, epsilon_steps: int = 100_000,
                 horizon: int = 40, history: int = 4):
        self.examples = examples
        self.runner = EpisodeRunner(renderer, demo_cache, reward or RewardConfig(), horizon, history)
        self.memory = ReplayMemory(capacity)
        self.batch_size = batch_size
        self.epsilon_start, self.epsilon_end, self.epsilon_steps = epsilon_start, epsilon_end, epsilon_steps
        self.generator = torch.Generator().manual_seed(seed)
        self.collected = 0
        self.target = None

    @property
    def epsilon(self) -> float:
        progress = min(self.collected / self.epsilon_steps, 1.0)
        return self.epsilon_start + progress * (self.epsilon_end - self.epsilon_start)

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self.target = pl_module.frozen_copy()

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        examples = [self.examples[i] for i in batch["episodes"].tolist()]
        pl_module.set_experience(self.collect(pl_module, examples))
        pl_module.log("dqn/epsilon", self.epsilon, batch_size=len(examples))

    def collect(self, policy, examples: Sequence[Example]) -> Transitions:
        """Play ``examples`` ε-greedily, add their transitions to the replay memory and draw
        ``batch_size`` of them, with the target network's values of the states they led to (the
        target is a frozen copy of ``policy`` until the next epoch starts)."""
        if self.target is None:
            self.target = policy.frozen_copy()
        self.memory.add(self.play(policy, examples))
        replay = self.memory.sample(self.batch_size, self.generator)
        return Transitions(**replay, next_q=self.next_values(policy.device, replay))

    @torch.no_grad()
    def next_values(self, device: torch.device, replay: dict) -> torch.Tensor:
        """max over actions of the target network's Q-values of each transition's next state [M]."""
        return self.target.q_values(standardize_stacks(replay["next_stacks"]).to(device), replay["tokens"].to(device),
                                    replay["lengths"], replay["actions"].to(device)).max(dim=1).values.cpu()

    @torch.no_grad()
    def play(self, policy, examples: Sequence[Example]) -> dict[str, torch.Tensor]:
        """Play ε-greedily; return every transition of the batch as replay-memory rows."""
        was_training = policy.training
        policy.eval()

        def epsilon_greedy(observation):
            greedy = policy.act(observation).cpu()
            explore = torch.rand(len(greedy), generator=self.generator) < self.epsilon
            return torch.where(explore, torch.randint(0, NUM_ACTIONS, (len(greedy),), generator=self.generator), greedy)

        record = self.runner.record(examples, epsilon_greedy, encode=policy.encode_instructions,
                                     featurize=policy.instruction_featurizer)
        steps, episodes = record["steps"], record["episodes"]
        transitions = {key: record[key] for key in ("actions", "previous", "rewards", "done")}
        transitions["stacks"] = raw_stacks(record["frames"], steps, episodes, self.runner.history)
        transitions["next_stacks"] = raw_stacks(record["frames"], steps + 1, episodes, self.runner.history)
        transitions["tokens"] = record["tokens"][episodes]
        transitions["lengths"] = record["lengths"][episodes]
        self.collected += len(steps)
        policy.train(was_training)
        return transitions

    def state_dict(self) -> dict:
        return {"generator": self.generator.get_state(), "collected": self.collected, "memory": self.memory.state_dict(),
                "target": self.target.state_dict() if self.target is not None else None}

    def load_state_dict(self, state: dict) -> None:
        self.generator.set_state(state["generator"])
        self.collected = state["collected"]
        self.memory.load_state_dict(state["memory"])
        self._target_state = state["target"]

    def on_train_start(self, trainer, pl_module) -> None:
        """A resumed run continues with the target network it had, not a fresh copy."""
        if getattr(self, "_target_state", None) is not None:  # resumed: the target as it was
            self.target = pl_module.frozen_copy(self._target_state)
            self._target_state = None
