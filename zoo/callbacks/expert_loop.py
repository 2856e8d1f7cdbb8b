"""``ExpertLoop``: DAgger's data collection (Ross, Gordon & Bagnell 2011) for the block policy.

Before every training batch, the callback plays that batch's episodes in the vectorised
simulator with a mixture of the expert and the policy: at each step of each episode the
expert's action with probability β, the policy's otherwise (greedy, as it acts at test time,
or sampled). β starts at ``beta_start`` (1: pure expert, the demonstrations' states) and decays
by ``beta_decay`` per rollout, so the states visited drift to the policy's own. Every state
visited is labelled with the expert's action there (:class:`zoo.blocks.expert.BlocksExpert`,
privileged: it reads the board; the policy still sees only images, instruction and previous
action), and the labelled decisions join an :class:`ExpertReplay` of the newest ones. The
callback then hands the LightningModule an :class:`~zoo.models.blocks.experience.ExpertLabels`:
minibatches drawn from the replay, on which it minimises cross-entropy to the labels.

Each rollout's random stream is a function of (seed, rank, rollouts so far); the rollout
count is the callback's checkpointed state, so β resumes where it was. The replay is not
checkpointed (a resumed run refills it from its next rollouts).
"""

from __future__ import annotations

from typing import Sequence

import lightning as L
import torch

from zoo.blocks.expert import BlocksExpert
from zoo.blocks.history import HISTORY
from zoo.blocks.records import Example
from zoo.blocks.render import IMAGE_SIZE
from zoo.blocks.rollout import EpisodeRunner
from zoo.models.blocks.experience import ExpertLabels, LabelledRollout, LabelMinibatch

POLICY_ACTIONS = ("greedy", "sample")


class ExpertReplay:
    """The newest ``capacity`` labelled decisions, stored as one frame each.

    A decision's image stack is its frame and the frames of the K decisions before it in the
    same episode, so decisions are stored episode by episode in step order and a stack is a
    window of slots in the ring (``-1``, an all-zero frame, before the episode's start). A
    window's oldest slots can be overwritten while the decision itself survives; sampling
    skips the K oldest decisions so every stack drawn is whole.
    """

    def __init__(self, capacity: int, history: int = 4):
        if capacity <= history:
            raise ValueError(f"the replay must hold more than {history} decisions; got capacity={capacity}")
        self.capacity, self.history = capacity, history
        self.total = 0  # decisions ever added
        self.frames = self.frame_sums = None
        self.steps = torch.zeros(capacity, dtype=torch.long)
        self.previous = torch.zeros(capacity, dtype=torch.long)
        self.labels = torch.zeros(capacity, dtype=torch.long)
        self.lengths = torch.ones(capacity, dtype=torch.long)
        self.tokens = torch.zeros(capacity, 1, dtype=torch.long)

    def __len__(self) -> int:
        return min(self.total, self.capacity)

    @staticmethod
    def bytes_per_decision(image_size: int = IMAGE_SIZE) -> int:
        """Memory one slot of the replay takes: its uint8 RGB frame, the frame's two pixel sums
        (float64), its step, previous action, label and length (int64) and at least one token
        (int64; a longer instruction widens every row). The replay allocates ``capacity`` of
        them at its first rollout, so this times ``loop.replay_size`` must fit in memory."""
        return 3 * image_size**2 + 2 * 8 + 4 * 8 + 8

    @staticmethod
    def bytes_per_sampled_decision(history: int = HISTORY, image_size: int = IMAGE_SIZE) -> int:
        """Memory one decision of a sampled minibatch takes at least on its way into the network:
        its stack of ``history + 1`` frames gathered as uint8, reordered as uint8 and converted to
        float32 (:meth:`zoo.models.blocks.network.ImageEncoder.from_frames`' three buffers), before
        any activation."""
        return (history + 1) * 3 * image_size**2 * (1 + 1 + 4)

    def add(self, rollout: LabelledRollout) -> None:
        """Add a labelled rollout's decisions."""
        steps, episodes = rollout.steps.cpu(), rollout.episodes.cpu()
        order = torch.argsort(episodes * (int(steps.max()) + 1) + steps)  # episode by episode, in step order
        steps, episodes = steps[order], episodes[order]
        frames = rollout.frames.cpu()[steps, episodes]  # [N, 3, H, W]: each decision's own frame
        sums = rollout.frame_sums.cpu()[steps, episodes]
        if self.frames is None:
            self.frames = torch.zeros(self.capacity, *frames.shape[1:], dtype=frames.dtype)
            self.frame_sums = torch.zeros(self.capacity, 2, dtype=sums.dtype)
        tokens, lengths = rollout.tokens.cpu()[episodes], rollout.lengths.cpu()[episodes]
        if tokens.shape[1] > self.tokens.shape[1]:
            wider = torch.zeros(self.capacity, tokens.shape[1], dtype=torch.long)
            wider[:, : self.tokens.shape[1]] = self.tokens
            self.tokens = wider
        for first in range(0, len(order), self.capacity):  # a rollout larger than the replay keeps its newest
            chunk = slice(first, first + self.capacity)
            slots = (self.total + torch.arange(len(steps[chunk]))) % self.capacity
            self.frames[slots], self.frame_sums[slots], self.steps[slots] = frames[chunk], sums[chunk], steps[chunk]
            self.previous[slots] = rollout.previous.cpu()[order][chunk]
            self.labels[slots] = rollout.labels.cpu()[order][chunk]
            self.tokens[slots] = 0
            self.tokens[slots, : tokens.shape[1]] = tokens[chunk]
            self.lengths[slots] = lengths[chunk]
            self.total += len(slots)

    def sample(self, size: int, generator: torch.Generator) -> LabelMinibatch:
        """``size`` decisions drawn uniformly (the frames are the whole store, not copied)."""
        oldest = max(0, self.total - self.capacity + self.history)
        if self.total - oldest < 1:
            raise RuntimeError("the replay holds no decisions yet")
        drawn = oldest + torch.randint(self.total - oldest, (size,), generator=generator)
        back = torch.arange(-self.history, 1)
        steps = self.steps[drawn % self.capacity]
        index = torch.where(back[None, :] >= -steps[:, None], (drawn[:, None] + back[None, :]) % self.capacity, -1)
        slots = drawn % self.capacity
        lengths = self.lengths[slots]
        return LabelMinibatch(frames=self.frames, frame_sums=self.frame_sums, index=index, previous=self.previous[slots],
                              labels=self.labels[slots], tokens=self.tokens[slots, : int(lengths.max())], lengths=lengths)


class ExpertLoop(L.Callback):
    """Hands the module replay minibatches (an :class:`~zoo.models.blocks.experience.ExpertLabels`)
    after each β-mixed, expert-labelled rollout of ``batch["episodes"]``.

    Args:
        examples: The training examples ``batch["episodes"]`` indexes.
        seed: Seeds each rollout's random stream, with the rank and the rollouts so far.
        renderer: Draws the boards (default: the simulator's own).
        horizon: The most moves an episode may take.
        history: The previous frames in each image stack.
        beta_start: The expert's share of the actions in the first rollout.
        beta_decay: Beta is multiplied by this after every rollout.
        beta_end: The least share beta falls to.
        policy_actions: How the policy acts where the expert does not: ``"greedy"`` or ``"sample"``.
        replay_size: The labelled decisions the replay keeps (the newest).
        batch_size: Decisions per minibatch.
        updates_per_rollout: Minibatches drawn after each rollout (default: one per episode
            played, the original supervised trainer's schedule, docs/blocks_environment.md §6.4).
    """

    def __init__(self, examples: Sequence[Example], seed: int = 0, renderer=None, horizon: int = 40, history: int = 4,
                 beta_start: float = 1.0, beta_decay: float = 0.99, beta_end: float = 0.0,
                 policy_actions: str = "greedy", replay_size: int = 2000, batch_size: int = 32,
                 updates_per_rollout: int | None = None):
        if not 0.0 <= beta_end <= beta_start <= 1.0:
            raise ValueError(f"need 0 <= beta_end <= beta_start <= 1; got {beta_end} and {beta_start}")
        if not 0.0 < beta_decay <= 1.0:
            raise ValueError(f"beta_decay must lie in (0, 1]; got {beta_decay}")
        if policy_actions not in POLICY_ACTIONS:
            raise ValueError(f"policy_actions must be one of {POLICY_ACTIONS}; got {policy_actions!r}")
        if updates_per_rollout is not None and updates_per_rollout < 1:
            raise ValueError(f"updates_per_rollout must be at least 1; got {updates_per_rollout}")
        self.examples, self.seed, self.horizon = examples, seed, horizon
        self.beta_start, self.beta_decay, self.beta_end = beta_start, beta_decay, beta_end
        self.policy_actions, self.batch_size, self.updates_per_rollout = policy_actions, batch_size, updates_per_rollout
        self.runner = EpisodeRunner(renderer, None, None, horizon, history)
        self.replay = ExpertReplay(replay_size, history)
        self.generator = torch.Generator().manual_seed(seed)
        self.rollouts = 0
        self.last_stats: dict[str, float] = {}

    def beta(self, rollouts: int | None = None) -> float:
        """The expert's share of the actions in rollout ``rollouts`` (default: the next one)."""
        rollouts = self.rollouts if rollouts is None else rollouts
        return max(self.beta_end, self.beta_start * self.beta_decay**rollouts)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.generator.manual_seed(((self.seed * 1_000_003 + trainer.global_rank) * 1_000_037 + self.rollouts) % 2**62)
        examples = [self.examples[i] for i in batch["episodes"].tolist()]
        pl_module.set_experience(self.collect(pl_module, examples))
        pl_module.log_dict({f"dagger/{k}": v for k, v in self.last_stats.items()}, batch_size=len(examples))

    def collect(self, policy, examples: Sequence[Example]) -> ExpertLabels:
        """Play ``examples`` with the β-mixture, add the labelled decisions to the replay and draw
        ``updates_per_rollout`` minibatches from it."""
        rollout = self.play(policy, examples)
        self.replay.add(rollout)
        updates = self.updates_per_rollout or len(examples)
        return ExpertLabels(tuple(self.replay.sample(self.batch_size, self.generator) for _ in range(updates)), rollout)

    @torch.no_grad()
    def play(self, policy, examples: Sequence[Example]) -> LabelledRollout:
        """Play ``examples`` with the β-mixture; the rollout with every decision's expert ``labels``
        and whether the expert chose it (``expert_acted``)."""
        was_training = policy.training
        policy.eval()
        beta = self.beta()
        env = self.runner.env
        labels, by_expert = [], []
        expert: BlocksExpert | None = None

        def choose(observation):
            nonlocal expert
            if expert is None:
                expert = BlocksExpert(self.runner.boards, self.horizon)
            running = (~env.done).nonzero().squeeze(1)
            label = expert.act(observation.positions, observation.moves_taken, running)
            use_expert = torch.rand(len(running), generator=self.generator) < beta
            actions = label.clone()
            mine = (~use_expert).nonzero().squeeze(1)
            if len(mine):
                chosen = observation.select(mine)
                generator = self.generator if self.policy_actions == "sample" else None
                actions[mine] = policy.act(chosen, generator).cpu()
            labels.append(label)
            by_expert.append(use_expert)
            return actions

        record = self.runner.record(examples, choose, encode=policy.instruction_encoder,
                                    featurize=policy.instruction_featurizer, track=policy.image_tracker_factory)
        rollout = LabelledRollout(**record, labels=torch.cat(labels), expert_acted=torch.cat(by_expert))
        self.rollouts += 1
        policy_rows = ~rollout.expert_acted
        self.last_stats = {
            "beta": beta,
            "final_error": float(env.error().mean()),
            "episode_length": float(env.moves_taken.float().mean()),
            "policy_share": float(policy_rows.float().mean()),
            # How often the policy's own choices agree with the expert's (on the states it acted in)
            "policy_agreement": float((rollout.actions[policy_rows] == rollout.labels[policy_rows]).float().mean())
            if policy_rows.any() else float("nan"),
            "expert_searches_per_episode": expert.searches / len(examples),
        }
        policy.train(was_training)
        return rollout

    def state_dict(self) -> dict:
        return {"rollouts": self.rollouts}

    def load_state_dict(self, state: dict) -> None:
        self.rollouts = int(state.get("rollouts", 0))
