"""The oracle planner baseline: the network picks the block and its goal, A* finds the path."""

from __future__ import annotations

import torch
from torch import nn

from zoo.blocks.geometry import MAX_BLOCKS, NUM_ACTIONS, STOP
from zoo.blocks.observation import BlocksObservation
from zoo.models.blocks.policy import BlocksPolicy, register_objective


@register_objective("planner", "CNN-LSTM block and goal predictor followed by an A* planner; pass the vocabulary")
class BlocksPlanner(BlocksPolicy):
    """Predicts the block to move (20-way) and its goal centre (2-d) at an episode's first
    step; the A* planner, which sees the true board (the "oracle" part), then finds the path
    that the following steps replay. Its action probabilities are one-hot on the plan."""

    data_mode = "targets"

    def build_heads(self, hidden_dim: int) -> None:
        self.block_head = nn.Linear(hidden_dim, MAX_BLOCKS)
        self.goal_head = nn.Linear(hidden_dim, 2)
        self._plans: dict = {}

    def predict_target(self, images, tokens, lengths, previous_action) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities of the block to move [B, 20] and its predicted goal centre [B, 2]."""
        hidden = self.features(images, tokens, lengths, previous_action)
        return self.block_head(hidden).log_softmax(-1), self.goal_head(hidden)

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        loss = self.target_loss(batch, "train")
        self.log("train/loss", loss, prog_bar=True, batch_size=len(batch.get("action", batch.get("episodes"))))
        return loss

    def validation_step(self, batch: dict, batch_idx: int) -> None:
        self.log("val/loss", self.target_loss(batch, "val"), batch_size=len(batch["block"]))

    def target_loss(self, batch: dict, stage: str) -> torch.Tensor:
        """Block cross-entropy plus the squared goal error in block lengths."""
        from zoo.blocks.geometry import BLOCK_SIZE

        block, goal = self.predict_target(batch["images"], batch["tokens"], batch["lengths"], batch["previous_action"])
        block_loss = torch.nn.functional.nll_loss(block, batch["block"])
        goal_loss = ((goal - batch["goal"]) / BLOCK_SIZE).square().sum(-1).mean()
        size = len(batch["block"])
        self.log(f"{stage}/block_accuracy", (block.argmax(-1) == batch["block"]).float().mean(), batch_size=size)
        self.log(f"{stage}/goal_error", ((goal - batch["goal"]).norm(dim=-1) / BLOCK_SIZE).mean(), batch_size=size)
        return block_loss + goal_loss

    def action_probabilities(self, observation: BlocksObservation) -> torch.Tensor:
        """One-hot scores of the planner's next action."""
        from zoo.blocks.demos import plan
        from zoo.blocks.records import Transition

        if observation.boards is None or observation.moves_taken is None:
            raise ValueError("the oracle planner needs the privileged boards and moves_taken fields")
        starting = (observation.moves_taken == 0).nonzero().squeeze(1)
        if len(starting):
            tokens, lengths = self.encode_instructions([observation.instructions[i] for i in starting.tolist()])
            block, goal = self.predict_target(observation.images[starting].to(self.device), tokens, lengths,
                                              observation.previous_action[starting].to(self.device))
            for row, chosen, centre in zip(starting.tolist(), block.argmax(-1).tolist(), goal.double().cpu().numpy()):
                count = int(observation.boards.n_blocks[row])
                start = observation.boards.start[row, :count].cpu().numpy()
                target = start.copy()
                if chosen < count:
                    target[chosen] = centre
                episode = Transition("planned", 0, 1, "digit", start, target, (observation.instructions[row],))
                self._plans[self._episode_key(observation, row)] = plan(episode).actions
        scores = torch.zeros(len(observation), NUM_ACTIONS)
        for row in range(len(observation)):
            actions = self._plans.get(self._episode_key(observation, row), (STOP,))
            step = int(observation.moves_taken[row])
            scores[row, actions[step] if step < len(actions) else STOP] = 1.0
        return scores

    @torch.no_grad()
    def act(self, observation: BlocksObservation, generator: torch.Generator | None = None) -> torch.Tensor:
        return super(BlocksPolicy, self).act(observation, generator)

    @staticmethod
    def _episode_key(observation: BlocksObservation, row: int) -> tuple:
        return (observation.instructions[row], observation.boards.start[row].cpu().numpy().tobytes())
