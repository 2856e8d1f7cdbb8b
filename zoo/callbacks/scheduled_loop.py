"""``ScheduledLoop``: the trials of scheduled policy optimisation (Xiong et al., IJCAI 2018).

Before every training batch, the callback plays that batch's episodes with actions sampled
from the policy (a :class:`~zoo.callbacks.contextual_bandit.ContextualBanditLoop`'s rollout,
rewards included) and compares each trial's final distance error with the mean error of the
last ``window`` trials before it. The trials that are worse get the expert's demonstration of
their episode as well: an :class:`~zoo.callbacks.expert_loop.ExpertLoop` rollout with β = 1,
every state labelled (the shortest-path expert, privileged; the policy still sees only the
images, the instruction and its previous action). The LightningModule receives a
:class:`~zoo.models.blocks.experience.ScheduledTrials` (the trials' ``rollout``, which were
``worse``, their ``demonstrations``) and clones on the worse trials, PPO on the rest.

The first rollout has no baseline yet, so all its trials are cloned. The window of recent
errors is the callback's checkpointed state, and sampling is seeded as the bandit's is, so a
resumed run schedules what an uninterrupted one would.
"""

from __future__ import annotations

from typing import Sequence

import lightning as L
import torch

from zoo.blocks.records import Example
from zoo.blocks.reward import RewardConfig
from zoo.callbacks.contextual_bandit import ContextualBanditLoop
from zoo.callbacks.expert_loop import ExpertLoop
from zoo.models.blocks.experience import ScheduledTrials


class ScheduledLoop(L.Callback):
    """Hands the module the policy's trials of ``batch["episodes"]`` and the expert's
    demonstrations of those worse than the moving baseline, before each batch.

    Args:
        examples: The training examples ``batch["episodes"]`` indexes.
        reward: What each decision of a trial is scored by (default :class:`RewardConfig`'s).
        seed: Seeds each batch's sampling stream, as the bandit's loop does.
        renderer: Draws the boards (default: the simulator's own).
        demo_cache: Where the demonstrations the reward reads are cached (default: a new cache).
        horizon: The most moves an episode may take.
        history: The previous frames in each image stack.
        window: The trials the moving baseline averages.
    """

    def __init__(self, examples: Sequence[Example], reward: RewardConfig | None = None, seed: int = 0,
                 renderer=None, demo_cache=None, horizon: int = 40, history: int = 4, window: int = 100):
        if window < 1:
            raise ValueError(f"the baseline window must hold at least one trial; got {window}")
        self.examples, self.window = examples, window
        self.trials = ContextualBanditLoop(examples, reward, seed, renderer, demo_cache, horizon, history)
        self.expert = ExpertLoop(examples, seed, renderer, horizon, history, beta_start=1.0, beta_decay=1.0,
                                 beta_end=1.0, replay_size=history + 1)
        self.errors: list[float] = []  # the final errors of the newest trials, oldest first
        self.last_stats: dict[str, float] = {}

    def baseline(self) -> float:
        """The mean final error of the last ``window`` trials (NaN before the first)."""
        return sum(self.errors) / len(self.errors) if self.errors else float("nan")

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.trials.generator.manual_seed(self.trials.stream_seed(trainer.global_rank, trainer.global_step))
        examples = [self.examples[i] for i in batch["episodes"].tolist()]
        pl_module.set_experience(self.collect(pl_module, examples))
        pl_module.log_dict({f"spo/{k}": v for k, v in self.last_stats.items() if v == v}, batch_size=len(examples))

    def collect(self, policy, examples: Sequence[Example]) -> ScheduledTrials:
        """Play ``examples`` sampling from the policy; the rollout, which trials were worse than
        the baseline, and the demonstrations of those."""
        rollout = self.trials.collect(policy, examples)
        errors = self.trials.runner.env.error().double().cpu()
        baseline = self.baseline()
        worse = errors > baseline if self.errors else torch.ones(len(examples), dtype=torch.bool)
        chosen = [examples[i] for i in worse.nonzero().squeeze(1).tolist()]
        demonstrations = self.expert.play(policy, chosen) if chosen else None
        self.errors = (self.errors + errors.tolist())[-self.window:]
        self.last_stats = {**self.trials.last_stats, "baseline": baseline, "cloned_share": float(worse.float().mean())}
        return ScheduledTrials(rollout=rollout, worse=worse, demonstrations=demonstrations)

    def state_dict(self) -> dict:
        return {"errors": list(self.errors)}

    def load_state_dict(self, state: dict) -> None:
        self.errors = [float(e) for e in state.get("errors", [])][-self.window:]
