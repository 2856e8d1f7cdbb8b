"""``BlocksGoal``: a Blocks policy that reads the goal once, then acts toward it.

It is two networks in one ``Grounded`` policy. At an episode's first step the goal reader
(:class:`~zoo.models.blocks.goal.BlocksGoalPredictor`, frozen) reads the start image and the
instruction into the block to move and the cell of the goal map where it should end; that
reading travels with the episode as its per-episode features (``EpisodeRunner``'s
``featurize``, which for this policy also sees the first frame). At every step the actor
(:class:`~zoo.models.blocks.goal_actor.GoalActor`) sees the current frame with the goal marked
on it and chooses a direction for the read block, or STOP. Nothing else is read: no board, no
simulator state, so ``zoo eval blocks``, ``zoo play blocks``, the demo and ``--versus`` run it
as any other policy.

The actor learns from the demonstrations with their true block and goal (``zoo train
blocks-goal``): it is a controller for a marked goal, indifferent to where the mark came from,
so at test time it follows the reader's. The reader comes from a reader run
(``model.options.reader_from``: ``zoo train blocks-goal-reader``'s export).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from zoo.blocks.geometry import NUM_DIRECTIONS, STOP
from zoo.blocks.goals import cell_centre, goal_cell, goal_errors
from zoo.blocks.history import standardize
from zoo.blocks.observation import BlocksObservation, RawStacks
from zoo.blocks.vocab import Vocabulary
from zoo.models.blocks.goal import BlocksGoalPredictor
from zoo.models.blocks.goal_actor import LOCATION_CELLS, GoalActor
from zoo.models.blocks.network_config import BlocksNetworkConfig
from zoo.models.blocks.policy import BlocksPolicy, register_objective

READING_FIELDS = 2
"""A reading is (goal cell, block) per episode, as floats: what the actor needs of the words."""


@register_objective("goal", "goal reader then goal-conditioned actor; pass the vocabulary")
class BlocksGoal(BlocksPolicy):
    """Reads the block and goal from the start image and the instruction, then moves the block
    toward the goal with a learned controller."""

    data_mode = "steps"
    tracks_images = False

    def __init__(self, vocabulary: list[str], *, reader: dict | None = None, reader_from: str | None = None,
                 actor_channels: int = 32, location_weight: float = 1.0, history: int = 0, **settings):
        """
        Args:
            vocabulary: The instruction words, ``<pad>`` and ``<unk>`` first (the reader's).
            reader: The goal reader's settings (:class:`BlocksGoalPredictor`'s options, vocabulary
                aside); its defaults when not given. A saved policy holds those of its reader.
            reader_from: A trained goal reader to start from (a ``save_pretrained`` directory or a
                released name); its settings and weights replace ``reader``'s, and it stays frozen.
            actor_channels: Feature maps at every level of the actor's encoder and decoder.
            location_weight: Weight of the actor's map of where the block stands (its
                cross-entropy against the block's cell in each training frame) beside the
                direction's negative log-likelihood.
            history: Previous frames stacked with the current one; 0, the only value: the actor
                reads the current frame alone, standardised on its own (the network's default is 4).
            **settings: ``learning_rate`` (the actor's, :class:`BlocksPolicy`'s) and the Blocks
                network's other settings (:class:`BlocksNetworkConfig`); the reader's instruction
                encoder is sized by ``embedding_dim`` and ``lstm_dim``.
        """
        super().__init__(vocabulary, history=history, **settings)

    def check_settings(self) -> None:
        if self.hparams.history != 0:
            raise ValueError(f"BlocksGoal reads the current frame alone: history must be 0, got {self.hparams.history}")

    # ------------------------------------------------------------------ the two networks
    def build_network(self, config: BlocksNetworkConfig) -> None:
        self.network_config = config
        self.vocabulary = Vocabulary(config.vocabulary)
        self.history_slots = config.history
        self.reads_previous_action = False
        self.init_scheme = config.init
        if self.hparams.reader_from:
            reader = BlocksGoalPredictor.from_pretrained(self.hparams.reader_from)
            if list(reader.vocabulary) != list(config.vocabulary):
                raise ValueError(f"the goal reader in {self.hparams.reader_from} reads another vocabulary "
                                 f"({len(reader.vocabulary)} words) than this policy ({len(config.vocabulary)})")
            settings = {key: value for key, value in reader.config().items() if key != "vocabulary"}
            # Saved as the reader's settings, not its path: the policy's own files rebuild it.
            self.hparams.reader, self.hparams.reader_from = settings, None
        else:
            reader = BlocksGoalPredictor(list(config.vocabulary), **(self.hparams.reader or {}))
            self.hparams.reader = {key: value for key, value in reader.config().items() if key != "vocabulary"}
        self.reader = reader.requires_grad_(False).eval()
        self.actor = GoalActor(self.hparams.actor_channels)

    def build_heads(self, hidden_dim: int) -> None:
        """The actor is the head."""

    def reset_parameters(self) -> None:
        """The actor keeps PyTorch's initialisation; the reader its own or its trained weights."""

    def train(self, mode: bool = True) -> "BlocksGoal":
        super().train(mode)
        self.reader.eval()  # frozen: no dropout, whatever the actor does
        return self

    # ------------------------------------------------------------------ reading
    @torch.no_grad()
    def read(self, frames: torch.Tensor, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Readings [B, 2] (goal cell, block) of start frames [B, 3, H, W] (uint8) and instructions."""
        scores, blocks = self.reader(frames.to(self.device), tokens.to(self.device), lengths)
        return torch.stack([scores.argmax(-1), blocks.argmax(-1)], dim=1).float()

    @property
    def instruction_featurizer(self):
        """The per-episode reading (``EpisodeRunner``'s ``featurize``), from the first frame too."""
        return StartReading(self)

    # ------------------------------------------------------------------ acting
    @staticmethod
    def current_frames(images) -> torch.Tensor:
        """The newest frame of each observation, standardised on its own [B, 3, H, W]: a rollout's
        stacks give their newest frame's pixels; a training batch (``history`` 0) is that frame."""
        if isinstance(images, RawStacks):
            return standardize(images.in_history_order()[:, -3:] * (1.0 / 255.0))
        if images.shape[1] != 3:
            raise ValueError(f"BlocksGoal reads one frame (3 channels, history 0); got {images.shape[1]} channels")
        return images

    def direction_log_probs(self, frames: torch.Tensor, cells: torch.Tensor, blocks: torch.Tensor
                            ) -> tuple[torch.Tensor, torch.Tensor]:
        """The directions' log-probabilities [B, 5] and the block's location logits [B, cells²]."""
        return self.actor(frames.to(self.device), cells.long(), blocks.long())

    def action_log_probs(self, observation: BlocksObservation) -> torch.Tensor:
        if observation.images is None:
            raise ValueError("BlocksGoal needs the image stack (observation.images)")
        reading = observation.instruction_features
        if reading is None or reading.shape[-1] != READING_FIELDS:
            reading = self._read_at_start(observation)
        reading = reading.to(self.device)
        cells, blocks = reading[:, 0].long(), reading[:, 1].long()
        directions, _ = self.direction_log_probs(self.current_frames(observation.images), cells, blocks)
        scores = torch.full((len(observation), STOP + 1), float("-inf"), device=self.device, dtype=directions.dtype)
        rows = torch.arange(len(observation), device=self.device)
        for direction in range(NUM_DIRECTIONS):
            scores[rows, blocks * NUM_DIRECTIONS + direction] = directions[:, direction]
        scores[:, STOP] = directions[:, NUM_DIRECTIONS]
        return scores

    @torch.no_grad()
    def act(self, observation: BlocksObservation, generator: torch.Generator | None = None) -> torch.Tensor:
        """Greedy, or a draw from :meth:`action_probabilities` (not the paper network's two softmaxes)."""
        return super(BlocksPolicy, self).act(observation, generator)

    def _read_at_start(self, observation: BlocksObservation) -> torch.Tensor:
        """A reading from the observation itself, which only a first step allows (its newest frame
        is the start frame)."""
        if bool((observation.previous_action >= 0).any()):
            raise ValueError("BlocksGoal reads the goal at an episode's first step: run it through an EpisodeRunner "
                             "started with its instruction_featurizer, which keeps the reading for the episode")
        images = observation.images
        stacks = images.in_history_order() if isinstance(images, RawStacks) else None
        if stacks is None:
            raise ValueError("BlocksGoal reads the start frame's pixels: observe with RawStacks (EpisodeRunner)")
        tokens, lengths = observation.tokens, observation.lengths
        if tokens is None:
            tokens, lengths = self.encode_instructions(observation.instructions)
        return self.read(stacks[:, -3:].round().clamp(0, 255).to(torch.uint8), tokens, lengths)

    # ------------------------------------------------------------------ training
    def actor_loss(self, batch: dict, stage: str) -> torch.Tensor:
        """The demonstrations' directions (STOP as the fifth) for their true block and goal, and
        the cell where that block stands in the frame."""
        directions, location = self.direction_log_probs(self.current_frames(batch["images"]),
                                                        goal_cell(batch["goal"]), batch["block"])
        action = batch["action"].to(self.device)
        target = torch.where(action == STOP, NUM_DIRECTIONS, action % NUM_DIRECTIONS)
        where = goal_cell(batch["block_position"], LOCATION_CELLS).to(self.device)
        direction_loss, location_loss = F.nll_loss(directions, target), F.cross_entropy(location.float(), where)
        size = len(target)
        self.log(f"{stage}/accuracy", (directions.argmax(-1) == target).float().mean(), batch_size=size,
                 prog_bar=stage == "val")
        self.log(f"{stage}/location_error", goal_errors(cell_centre(location.detach().argmax(-1).cpu(), LOCATION_CELLS),
                                                        batch["block_position"]).mean(), batch_size=size)
        self.log(f"{stage}/direction_loss", direction_loss, batch_size=size)
        return direction_loss + self.hparams.location_weight * location_loss

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        loss = self.actor_loss(batch, "train")
        self.log("train/loss", loss, prog_bar=True, batch_size=len(batch["action"]))
        return loss

    def validation_step(self, batch: dict, batch_idx: int) -> None:
        self.log("val/loss", self.actor_loss(batch, "val"), batch_size=len(batch["action"]))

    def configure_optimizers(self):
        return torch.optim.Adam(self.actor.parameters(), lr=self.hparams.learning_rate)


class StartReading:
    """``featurize`` for an ``EpisodeRunner``: the policy's reading of each episode from its
    instruction and its first frame (``reads_start_frame``), computed once per episode."""

    reads_start_frame = True

    def __init__(self, policy: BlocksGoal):
        self.policy = policy

    def __call__(self, tokens: torch.Tensor, lengths: torch.Tensor, first_frames: torch.Tensor) -> torch.Tensor:
        return self.policy.read(first_frames, tokens, lengths)
