"""Goal prediction for Blocks: a map over the start image of where the instruction puts its
block, in the manner of LingUNet (Misra et al., EMNLP 2018).

The paper's policy network reads the image into one 200-d vector and the instruction into
another and mixes them only after both are pooled, so "the first open space to the right of
the SRI block" must be resolved without knowing where on the image anything is. LingUNet
keeps the image spatial: an encoder of strided convolutions, at each level a 1x1 convolution
whose kernels are computed from the instruction (the text decides which features matter,
everywhere on the image), and a decoder of transposed convolutions that brings the levels
back to a map of scores, one per cell (:mod:`zoo.blocks.goals`). The goal is the cell with the
highest score; a second head names the block to move.

Coordinate channels (the pixel's x and z) go in beside the colours, so the network can tell
the board's edges and halves apart (convolutions alone are blind to where they are).

It is trained by supervision on the annotated goal (cross-entropy over the map's cells, plus
the block's cross-entropy); the training environment gives both, the test-time input is only
the image and the instruction. Registered as ``blocks-goal-reader``: ``zoo train
blocks-goal-reader`` trains it on the data module's ``goals`` mode (one item per example), the
epoch kept by its tuning goal error (:class:`~zoo.callbacks.goal_evaluation.GoalEvaluation`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from zoo.blocks.geometry import MAX_BLOCKS
from zoo.blocks.goals import MAP_CELLS, GoalTargets, cell_centre, goal_errors
from zoo.blocks.history import standardize_stacks
from zoo.blocks.render import IMAGE_SIZE
from zoo.grounded import Grounded, named_arguments
from zoo.models.blocks.network import NETWORK_OPTIONS, BlocksNetworkConfig, InstructionEncoder
from zoo.models.blocks.policy import TINY_VOCABULARY
from zoo.registry import register_model

INSTRUCTION_OPTIONS = ("embedding_dim", "lstm_dim")
"""The network settings the goal reader builds from: its instruction encoder's (the policies' own)."""


def coordinate_channels(size: int) -> torch.Tensor:
    """Two channels [2, size, size]: each pixel's column and row, scaled to [-1, 1]."""
    axis = torch.linspace(-1.0, 1.0, size)
    return torch.stack([axis[None, :].expand(size, size), axis[:, None].expand(size, size)])


def decoded(filtered: list[torch.Tensor], decoder: nn.ModuleList) -> torch.Tensor:
    """LingUNet's decoder: from the deepest filtered level back up to the first level's size, each
    transposed convolution fed what came up joined with its own level's filtered map; returns the
    result joined with the first filtered level, [B, 2 * channels, H, W] of that level."""
    up = filtered[-1]
    for step, deconvolution in enumerate(decoder):
        skip = filtered[-2 - step]
        joined = up if step == 0 else torch.cat([up, filtered[-1 - step]], dim=1)
        up = F.leaky_relu(deconvolution(joined, output_size=skip.shape[-2:]))
    return torch.cat([up, filtered[0]], dim=1)


class TextKernels(nn.Module):
    """A 1x1 convolution per example whose ``channels x channels`` kernel is a linear function of
    the instruction vector, each output kernel scaled to unit norm (LingUNet's text kernels)."""

    def __init__(self, text_dim: int, channels: int):
        super().__init__()
        self.channels = channels
        self.kernels = nn.Linear(text_dim, channels * channels)

    def forward(self, features: torch.Tensor, text: torch.Tensor) -> torch.Tensor:
        kernels = F.normalize(self.kernels(text).view(-1, self.channels, self.channels), dim=-1)
        return torch.einsum("bchw,boc->bohw", features, kernels)


@register_model("blocks-goal-reader", defaults={"vocabulary": TINY_VOCABULARY},
                description="LingUNet-style goal reader: the block to move and a map of its goal, from the "
                            "start image and the instruction")
class BlocksGoalPredictor(Grounded):
    """Start frame and instruction -> scores of the goal over a ``MAP_CELLS``² map and of the
    block to move (20)."""

    domain = "blocks"
    data_mode = "goals"
    """The training data: one goal-prediction item per example (:class:`~zoo.blocks.goals.GoalTargets`)."""
    training_loop = None
    selection_metric = "tuning/goal_error"
    """The figure that picks the epoch a run exports (lower is better)."""

    def __init__(self, vocabulary: list[str], *, channels: int = 32, levels: int = 4, dropout: float = 0.1,
                 block_weight: float = 1.0, learning_rate: float = 1e-3, weight_decay: float = 0.0, **network):
        """
        Args:
            vocabulary: The instruction words, ``<pad>`` and ``<unk>`` first.
            channels: Feature maps at every level of the encoder and the decoder.
            levels: Encoder levels (120 -> 60 pixels, then halving at each further level), at least 2.
            dropout: Dropout on the instruction vector and in the block head.
            block_weight: Weight of the block's cross-entropy beside the goal map's.
            learning_rate: AdamW's learning rate.
            weight_decay: AdamW's weight decay.
            **network: The Blocks network's settings
                (:class:`~zoo.models.blocks.network_config.BlocksNetworkConfig`, the paper's unless
                given): the reader's instruction encoder is built from ``embedding_dim`` and
                ``lstm_dim``; the others are taken and saved as every Blocks model takes them
                (one recipe section, one ``--tiny`` overlay, sizes them all), and not read.
        """
        super().__init__()
        config = BlocksNetworkConfig.from_options(type(self).__name__, vocabulary, network)
        network.update(config.to_dict())  # saved, defaults too
        self.save_hyperparameters()
        if levels < 2:
            raise ValueError(f"a goal predictor needs at least 2 levels; got {levels}")
        self.instruction = InstructionEncoder.from_config(config)
        lstm_dim = config.lstm_dim
        self.register_buffer("coordinates", coordinate_channels(IMAGE_SIZE), persistent=False)
        # Encoder: 120 -> 60 (5x5, stride 2), then halving with 3x3 stride-2 convolutions.
        self.encoder = nn.ModuleList(
            [nn.Conv2d(3 + 2, channels, 5, stride=2, padding=2)]
            + [nn.Conv2d(channels, channels, 3, stride=2, padding=1) for _ in range(levels - 1)])
        self.norms = nn.ModuleList(nn.InstanceNorm2d(channels, affine=True) for _ in range(levels))
        self.text_kernels = nn.ModuleList(TextKernels(lstm_dim, channels) for _ in range(levels))
        # Decoder: from the deepest level back up to 60x60, each step joined with its level's text-filtered map.
        self.decoder = nn.ModuleList(nn.ConvTranspose2d(channels if step == 0 else 2 * channels, channels, 3, stride=2,
                                                        padding=1) for step in range(levels - 1))
        self.goal_scores = nn.Conv2d(2 * channels, 1, 1)
        self.block_head = nn.Sequential(nn.Linear(lstm_dim + channels, 128), nn.ReLU(), nn.Dropout(dropout),
                                        nn.Linear(128, MAX_BLOCKS))
        self.dropout = nn.Dropout(dropout)

    def forward(self, frames: torch.Tensor, tokens: torch.Tensor, lengths: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """Goal-cell logits [B, MAP_CELLS²] and block log-probabilities [B, 20] from uint8 start
        frames [B, 3, 120, 120] and padded instruction ids."""
        images = standardize_stacks(frames.to(self.device))
        images = torch.cat([images, self.coordinates.expand(len(images), -1, -1, -1)], dim=1)
        text = self.dropout(self.instruction(tokens.to(self.device), lengths))
        levels, features = [], images
        for convolution, norm in zip(self.encoder, self.norms):
            features = F.leaky_relu(norm(convolution(features)))
            levels.append(features)
        filtered = [kernels(level, text) for kernels, level in zip(self.text_kernels, levels)]
        scores = self.goal_scores(decoded(filtered, self.decoder)).flatten(1)
        pooled = levels[-1].mean(dim=(2, 3))
        block = self.block_head(torch.cat([text, pooled], dim=1)).log_softmax(-1)
        return scores, block

    @classmethod
    def config_keys(cls) -> frozenset[str]:
        return named_arguments(cls) | frozenset(NETWORK_OPTIONS)

    @property
    def vocabulary(self) -> list[str]:
        return self.hparams.vocabulary

    @torch.no_grad()
    def predict(self, frames, tokens, lengths) -> tuple[torch.Tensor, torch.Tensor]:
        """The predicted goal centres (x, z) [B, 2] and blocks [B]."""
        scores, block = self(frames, tokens, lengths)
        return cell_centre(scores.argmax(-1).cpu(), MAP_CELLS), block.argmax(-1).cpu()

    def losses(self, batch: dict) -> dict[str, torch.Tensor]:
        scores, block = self(batch["frames"], batch["tokens"], batch["lengths"])
        goal_loss = F.cross_entropy(scores, batch["cell"].to(self.device))
        block_loss = F.nll_loss(block, batch["block"].to(self.device))
        predicted = cell_centre(scores.detach().argmax(-1).cpu(), MAP_CELLS)
        return {"loss": goal_loss + self.hparams.block_weight * block_loss, "goal_loss": goal_loss,
                "block_loss": block_loss, "goal_error": goal_errors(predicted, batch["goal"]).mean(),
                "block_accuracy": (block.detach().argmax(-1).cpu() == batch["block"]).float().mean()}

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        values = self.losses(batch)
        self.log_dict({f"train/{k}": v for k, v in values.items()}, batch_size=len(batch["block"]),
                      prog_bar=False)
        return values["loss"]

    def validation_step(self, batch: dict, batch_idx: int) -> None:
        values = self.losses(batch)
        self.log_dict({f"val/{k}": v for k, v in values.items()}, batch_size=len(batch["block"]),
                      prog_bar=False)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.learning_rate,
                                 weight_decay=self.hparams.weight_decay)


class GoalPredictorEnsemble(nn.Module):
    """Several goal predictors read as one: the mean of their log-probabilities over the map's
    cells and over the blocks. Predictors trained apart disagree mostly where each is wrong, so
    the cell they agree on is right more often than any one's (measured in docs/blocks.md)."""

    def __init__(self, predictors: list[BlocksGoalPredictor]):
        super().__init__()
        if not predictors:
            raise ValueError("an ensemble needs at least one goal predictor")
        if any(list(p.vocabulary) != list(predictors[0].vocabulary) for p in predictors):
            raise ValueError("the goal readers of an ensemble must read one vocabulary (trained on the same data)")
        self.predictors = nn.ModuleList(predictors)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def vocabulary(self) -> list[str]:
        """The members' instruction words (one vocabulary: they read the same tokens)."""
        return self.predictors[0].vocabulary

    def forward(self, frames: torch.Tensor, tokens: torch.Tensor, lengths: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean goal-cell log-probabilities [B, MAP_CELLS²] and block log-probabilities [B, 20]."""
        outputs = [predictor(frames, tokens, lengths) for predictor in self.predictors]
        goal = torch.stack([scores.float().log_softmax(-1) for scores, _ in outputs]).mean(0)
        block = torch.stack([blocks.float() for _, blocks in outputs]).mean(0)
        return goal, block

    @torch.no_grad()
    def predict(self, frames, tokens, lengths) -> tuple[torch.Tensor, torch.Tensor]:
        """The predicted goal centres (x, z) [B, 2] and blocks [B]."""
        goal, block = self(frames, tokens, lengths)
        return cell_centre(goal.argmax(-1).cpu(), MAP_CELLS), block.argmax(-1).cpu()


@torch.no_grad()
def predicted_goals(reader: BlocksGoalPredictor | GoalPredictorEnsemble, targets: GoalTargets, batch_size: int = 256
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """The predicted goal centres [N, 2] and blocks [N] of every item of ``targets``, in
    inference mode (the reader's own training mode is restored after)."""
    training = reader.training
    reader.eval()
    goals, blocks = [], []
    try:
        for first in range(0, len(targets), batch_size):
            batch = targets.batch(torch.arange(first, min(first + batch_size, len(targets))))
            goal, block = reader.predict(batch["frames"], batch["tokens"], batch["lengths"])
            goals.append(goal)
            blocks.append(block)
    finally:
        reader.train(training)
    return torch.cat(goals), torch.cat(blocks)


def goal_reader(model) -> BlocksGoalPredictor | GoalPredictorEnsemble | None:
    """What reads the goal in ``model``: a goal reader or an ensemble of them is its own reader,
    a goal policy has one (its ``reader``); anything else reads none."""
    if isinstance(model, (BlocksGoalPredictor, GoalPredictorEnsemble)):
        return model
    reader = getattr(model, "reader", None)
    return reader if isinstance(reader, (BlocksGoalPredictor, GoalPredictorEnsemble)) else None


def reading_report(reader: BlocksGoalPredictor | GoalPredictorEnsemble, examples, renderer=None) -> dict[str, float]:
    """How well ``reader`` reads the goals of ``examples``
    (:func:`~zoo.blocks.goals.goal_report`: goal error mean and median, within one block, block
    accuracy, and the task error of its readings carried out by the shortest-path expert)."""
    from zoo.blocks.goals import goal_report, goal_targets
    from zoo.blocks.render import BoardRenderer
    from zoo.blocks.vocab import Vocabulary

    targets = goal_targets(examples, renderer or BoardRenderer(), Vocabulary(reader.vocabulary))
    goal, block = predicted_goals(reader, targets)
    return goal_report(goal, block, targets, [example.transition for example in examples])
