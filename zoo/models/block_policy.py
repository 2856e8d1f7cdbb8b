"""The CNN-LSTM block policy of Misra, Langford & Artzi (EMNLP 2017), Appendix C.

Image stack (current frame and K=4 previous, [15, 120, 120]) -> three convolutions -> 200-d;
instruction -> 150-d embeddings -> LSTM(250) -> mean over tokens; previous action -> block
(32-d, 21 values with "none") and direction (24-d, 6 values with "none") embeddings;
concatenation (506-d) -> ReLU layer of 120 -> a block softmax (20) and a direction softmax
(4 moves + STOP). A move's probability is p_block * p_direction; STOP's is p_direction(STOP).

The training objectives live elsewhere (:mod:`zoo.models.block_training`); this module is
the network and how it scores the 81 actions.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from zoo.blocks.geometry import MAX_BLOCKS, NUM_ACTIONS, NUM_DIRECTIONS, STOP
from zoo.blocks.observation import BlocksObservation, RawStacks
from zoo.blocks.history import pixel_sums, standardization
from zoo.scratch import ScratchBuffers
from zoo.blocks.vocab import Vocabulary
from zoo.models import block_objectives as objectives
from zoo.models.blocks_agent import BlocksAgent
from zoo.models.incremental_conv import FirstConvolutionTracker
from zoo.registry import register_model

INITIALISATIONS = ("glorot", "original")
CLIP_ALGORITHMS = ("per_parameter", "global")
UPDATE_WEIGHTINGS = ("steps", "episodes")
REWARD_BASELINES = ("none", "mean")
NO_BLOCK = MAX_BLOCKS  # "none" value of the previous block at episode start
NO_DIRECTION = NUM_DIRECTIONS + 1  # "none" value of the previous direction
STOP_DIRECTION = NUM_DIRECTIONS


def _normal_(weight: torch.Tensor, std: float, truncated: bool) -> None:
    """N(0, std²) in place; ``truncated`` redraws beyond two standard deviations, as
    TensorFlow's truncated_normal_initializer does."""
    if truncated:
        nn.init.trunc_normal_(weight, std=std, a=-2 * std, b=2 * std)
    else:
        nn.init.normal_(weight, std=std)


def clip_gradients(parameters, max_norm: float | None, algorithm: str = "per_parameter") -> None:
    """Clip gradients at ``max_norm``: each parameter's gradient on its own
    (``"per_parameter"``, the original's ``tf.clip_by_norm`` on every gradient) or all of
    them together (``"global"``, ``torch.nn.utils.clip_grad_norm_``)."""
    if not max_norm:
        return
    parameters = [p for p in parameters if p.grad is not None]
    if algorithm == "global":
        torch.nn.utils.clip_grad_norm_(parameters, max_norm)
        return
    norms = torch._foreach_norm([p.grad for p in parameters])
    scales = [max_norm / torch.clamp(norm, min=max_norm) for norm in norms]
    torch._foreach_mul_([p.grad for p in parameters], scales)


class ImageEncoder(nn.Module):
    """Three ReLU convolutions with TensorFlow's SAME padding (120 -> 30 -> 8 -> 4), then linear."""

    def __init__(self, in_channels: int, channels: int = 32, out_dim: int = 200, image_size: int = 120):
        super().__init__()
        self.convolutions = nn.Sequential(
            # In place: the convolutions' backward does not need their outputs, and a fresh
            # [B, 32, 30, 30] buffer per ReLU costs more in page faults than the ReLU itself.
            nn.Conv2d(in_channels, channels, 8, stride=4, padding=2), nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 8, stride=4, padding=3), nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 4, stride=2, padding=1), nn.ReLU(inplace=True),
        )
        with torch.no_grad():
            features = self.convolutions(torch.zeros(1, in_channels, image_size, image_size)).numel()
        self.project = nn.Linear(features, out_dim)
        self._scratch = ScratchBuffers()  # the stacks of rollout updates (see from_frames)

    def forward(self, images) -> torch.Tensor:
        """Embeddings [B, out_dim] of standardised stacks [B, 15, H, W], or of
        :class:`~zoo.blocks.observation.RawStacks` (standardised inside, see :meth:`_folded`)."""
        if isinstance(images, RawStacks):
            return self._folded(images.pixels, images.mean, images.scale, images.rotation, images.slot_channels,
                                images.response)
        return self.project(self.convolutions(images).flatten(1))

    def _folded(self, pixels: torch.Tensor, mean: torch.Tensor, scale: torch.Tensor, rotation: int = 0,
                slot_channels: int = 3, response: torch.Tensor | None = None) -> torch.Tensor:
        """The embedding of ``standardize(pixels / 255)`` computed without standardising the
        pixels: per-image standardisation is affine per stack, so it moves past the first
        (linear) convolution, ``conv(x) = (conv'(pixels) / 255 - mean·conv'(1)) / scale + bias``,
        where ``conv'`` is the convolution without bias and ``conv'(1)`` its response to an
        all-ones image with zero padding: 30x30 outputs per channel instead of 15x120x120 inputs.
        Pixels whose history slots are stored rotated (see RawStacks) meet weights rolled the
        same way, which is the same sum of products. A ``response`` kept current by a
        :class:`~zoo.models.incremental_conv.FirstConvolutionTracker` stands for ``conv'(pixels)``
        where no gradient is wanted (it is detached from the weights)."""
        first: nn.Conv2d = self.convolutions[0]
        tracked = (response is not None and response.tracker.serves(first.weight)
                   and not (torch.is_grad_enabled() and first.weight.requires_grad))
        if tracked:
            raw = response.values.clone()  # the tracker's state stays its own
            response_to_ones = response.tracker.ones
        elif pixels is None:
            raise ValueError("these stacks carry only a tracked first-convolution response, which this model "
                             "cannot use here (another model's, or with gradients): observe with pixels")
        else:
            weight = first.weight
            if rotation:
                out_channels, in_channels = weight.shape[:2]
                by_slot = weight.view(out_channels, in_channels // slot_channels, slot_channels, *weight.shape[2:])
                weight = by_slot.roll(rotation, dims=1).view_as(weight)
            pixels = pixels.contiguous(memory_format=torch.channels_last)  # a no-op for our producers' buffers
            raw = F.conv2d(pixels, weight, None, first.stride, first.padding)
            ones = pixels.new_ones(1, 1, *pixels.shape[-2:])
            response_to_ones = F.conv2d(ones, first.weight.sum(1, keepdim=True), None, first.stride, first.padding)
            # In the output's layout, or the broadcast below falls off the vectorised path (2.2x slower).
            response_to_ones = response_to_ones.contiguous(memory_format=torch.channels_last)
        shape = (-1, 1, 1, 1)
        mean, scale = mean.to(raw.dtype).view(shape), scale.to(raw.dtype).view(shape)
        # In place on the convolution's output (its backward does not need it): no new
        # [B, 32, 30, 30] buffers, which cost more in page faults than the arithmetic.
        hidden = raw.mul_(1.0 / (255.0 * scale)).addcmul_(-mean / scale, response_to_ones).add_(first.bias.view(1, -1, 1, 1))
        return self.project(self.convolutions[1:](hidden).flatten(1))

    def _stacks_channels_last(self, frames: torch.Tensor, index: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """Stacks ``[N, slots·3, H, W]`` in ``dtype``, channels-last (where the convolution and
        its weight gradient run 1.4-1.9x faster on CPU), of ``frames[index[n]]``.

        uint8 frames are gathered as rows of int64 words, reordered to channels-last while
        still one byte a value, then converted in one contiguous pass, in buffers reused from
        one update to the next (autograd refuses a backward through a buffer overwritten
        since its forward). Measured at N=64 on one thread: 81 ms for one copy that converts
        and reorders at once into a fresh buffer, 55 ms uint8-first, 26 ms uint8-first into
        reused buffers (the rest was page faults)."""
        count, slots = index.shape
        channels, height, width = frames.shape[1:]
        shape = (count, slots * channels, height, width)
        before_start = (index < 0).flatten()  # the all-zero frames before an episode's first
        safe = index.flatten().clamp(min=0)
        if frames.dtype != torch.uint8 or (channels * height * width) % 8:
            gathered = frames[safe]
            gathered[before_start] = 0
            return torch.empty(shape, dtype=dtype, device=frames.device,
                               memory_format=torch.channels_last).copy_(gathered.view(shape))
        words = self._scratch.get("gathered", (count * slots, channels * height * width // 8), torch.int64, frames.device)
        torch.index_select(frames.reshape(len(frames), -1).view(torch.int64), 0, safe, out=words)
        words[before_start] = 0
        by_pixel = self._scratch.get("by_pixel", (count, height, width, slots * channels), torch.uint8, frames.device)
        by_pixel.copy_(words.view(torch.uint8).view(shape).permute(0, 2, 3, 1))
        stacks = self._scratch.get("stacks", (count, height, width, slots * channels), dtype, frames.device)
        return stacks.copy_(by_pixel).permute(0, 3, 1, 2)

    def from_frames(self, frames: torch.Tensor, index: torch.Tensor, frame_sums: torch.Tensor | None = None) -> torch.Tensor:
        """The same embedding, computed from an episode's frames instead of stacked histories.

        ``frames`` [F, 3, H, W] are raw pixel values (0-255, uint8 or float), ``index``
        [N, K+1] names the frame in each history slot of each context, oldest first, -1
        for the all-zero frames before an episode's start; frames no context names cost
        nothing. Equal to ``forward(standardize(stack / 255))``, with less memory traffic:
        each frame named is converted to float and summed once (not once per stack it
        appears in), the stacks are gathered straight into the convolution's input, and the
        per-image standardisation, affine per context, is applied to the first convolution's
        output: ``conv(x) = (conv'(x) - mean·conv'(1)) / scale + bias``, where ``conv'`` is the
        convolution without bias and ``conv'(1)`` its response to an all-ones image with
        zero padding. (Splitting the first convolution into one per history slot, so that
        each frame is convolved once, does the same multiply-adds and measured 2.8x slower.)
        ``frame_sums`` [F, 2] (each frame's sum and sum of squares of its pixel values, as a
        rollout records them) saves computing them again.
        """
        dtype = self.convolutions[0].weight.dtype
        slots, channels, height, width = index.shape[1], frames.shape[1], frames.shape[-2], frames.shape[-1]
        stacks = self._stacks_channels_last(frames, index, dtype)
        if frame_sums is None:  # each frame a context names, summed once (not once per stack it is in)
            named = torch.unique(index[index >= 0])
            frame_sums = torch.zeros(len(frames), 2, dtype=torch.float64, device=frames.device)
            frame_sums[named] = pixel_sums(frames.reshape(len(frames), -1)[named])
        # Each stack's statistics from its frames' sums, the zero frames (-1) contributing zeros.
        per_slot = frame_sums.to(torch.float64)[index.clamp(min=0)] * (index >= 0).unsqueeze(-1)  # [N, K+1, 2]
        mean, scale = standardization(per_slot[..., 0].sum(1), per_slot[..., 1].sum(1),
                                      slots * channels * height * width, pixel_scale=255.0)
        return self._folded(stacks, mean, scale)


class InstructionEncoder(nn.Module):
    """Word embeddings -> LSTM -> mean of the hidden states over the real tokens."""

    def __init__(self, vocabulary_size: int, embedding_dim: int = 150, hidden_dim: int = 250):
        super().__init__()
        self.embed = nn.Embedding(vocabulary_size, embedding_dim, padding_idx=0)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim, batch_first=True)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = pack_padded_sequence(self.embed(tokens), lengths.cpu(), batch_first=True, enforce_sorted=False)
        states, _ = pad_packed_sequence(self.lstm(packed)[0], batch_first=True)  # zeros past each length
        return states.sum(dim=1) / lengths.to(states.device, states.dtype)[:, None]


@register_model("blocks-policy", defaults={"vocabulary": ["<pad>", "<unk>"]},
                description="CNN-LSTM block policy (Misra et al. 2017, Appendix C); pass the training vocabulary")
class BlockPolicy(BlocksAgent):
    """CNN-LSTM policy over the 81 block moves (20 blocks × 4 directions + STOP)."""

    def __init__(
        self,
        vocabulary: list[str],
        embedding_dim: int = 150,
        lstm_dim: int = 250,
        image_dim: int = 200,
        conv_channels: int = 32,
        block_embedding_dim: int = 32,
        direction_embedding_dim: int = 24,
        hidden_dim: int = 120,
        history: int = 4,
        image_size: int = 120,
        use_previous_action: bool = True,
        objective: str = "supervised",
        learning_rate: float = 1e-3,
        entropy_coefficient: float = 0.1,
        head: str = "factored",
        discount: float = 0.9,
        init: str = "glorot",
        loss_form: str = "original",
        episodes_per_update: int = 1,
        update_weighting: str = "steps",
        reward_baseline: str = "none",
        gradient_clip_val: float | None = 5.0,
        gradient_clip_algorithm: str = "per_parameter",
    ):
        super().__init__()
        if head not in ("factored", "q", "target"):
            raise ValueError(f"head must be 'factored' (two softmaxes), 'q' (81 Q-values, for DQN) or 'target' "
                             f"(block and goal centre, for the oracle planner); got {head!r}")
        if init not in INITIALISATIONS:
            raise ValueError(f"init must be one of {INITIALISATIONS}; got {init!r}")
        if loss_form not in objectives.LOSS_FORMS:
            raise ValueError(f"loss_form must be one of {objectives.LOSS_FORMS}; got {loss_form!r}")
        if gradient_clip_algorithm not in CLIP_ALGORITHMS:
            raise ValueError(f"gradient_clip_algorithm must be one of {CLIP_ALGORITHMS}; got {gradient_clip_algorithm!r}")
        if update_weighting not in UPDATE_WEIGHTINGS:
            raise ValueError(f"update_weighting must be one of {UPDATE_WEIGHTINGS}; got {update_weighting!r}")
        if reward_baseline not in REWARD_BASELINES:
            raise ValueError(f"reward_baseline must be one of {REWARD_BASELINES}; got {reward_baseline!r}")
        if episodes_per_update < 1:
            raise ValueError(f"episodes_per_update must be at least 1; got {episodes_per_update}")
        self.save_hyperparameters()
        self.vocabulary = Vocabulary(vocabulary)
        self.image = ImageEncoder(3 * (history + 1), conv_channels, image_dim, image_size)
        self.instruction = InstructionEncoder(len(vocabulary), embedding_dim, lstm_dim)
        action_dim = 0
        if use_previous_action:
            self.previous_block = nn.Embedding(MAX_BLOCKS + 1, block_embedding_dim)
            self.previous_direction = nn.Embedding(NUM_DIRECTIONS + 2, direction_embedding_dim)
            action_dim = block_embedding_dim + direction_embedding_dim
        self.hidden = nn.Linear(image_dim + lstm_dim + action_dim, hidden_dim)
        if head == "factored":
            self.block_head = nn.Linear(hidden_dim, MAX_BLOCKS)
            self.direction_head = nn.Linear(hidden_dim, NUM_DIRECTIONS + 1)
        elif head == "q":
            self.q_head = nn.Linear(hidden_dim, NUM_ACTIONS)
        else:
            self.block_head = nn.Linear(hidden_dim, MAX_BLOCKS)
            self.goal_head = nn.Linear(hidden_dim, 2)
            self._plans: dict = {}
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Initial weights; biases zero.

        ``init="original"`` is what the original agent's graph used (read from its model
        code): truncated normals of std 0.005 for the convolutions and 0.004 for the image
        projection, normals of std 0.01 for the mixing layer and both softmax layers, 0.001
        for the previous-action embeddings, N(0, 1) word vectors, a forget-gate bias of 1.
        These are 5-100x smaller than Glorot's, so a freshly initialised softmax is
        uniform in every state. ``init="glorot"`` (Glorot-uniform layers, PyTorch's
        embeddings and LSTM) is what zoo used before and the released policies were trained
        with.
        """
        original = self.hparams.init == "original"
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Conv2d)):
                if original:
                    std = 0.005 if isinstance(module, nn.Conv2d) else 0.004 if module is self.image.project else 0.01
                    truncated = module is self.image.project or isinstance(module, nn.Conv2d)
                    _normal_(module.weight, std, truncated)
                else:
                    nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)
        if original:
            if self.hparams.use_previous_action:
                nn.init.normal_(self.previous_block.weight, std=0.001)
                nn.init.normal_(self.previous_direction.weight, std=0.001)
            lstm = self.instruction.lstm
            for name, parameter in lstm.named_parameters():
                if name.startswith("weight"):
                    nn.init.xavier_uniform_(parameter)
                else:
                    nn.init.zeros_(parameter)
            hidden = lstm.hidden_size  # gate order i, f, g, o: the forget gate's bias is 1
            lstm.bias_ih_l0.data[hidden : 2 * hidden] = 1.0

    def reset_direction_head(self) -> None:
        """Re-initialise the direction softmax, as the paper does after supervised warm-up,
        with the policy's own initialisation scheme."""
        if self.hparams.init == "original":
            nn.init.normal_(self.direction_head.weight, std=0.01)
        else:
            nn.init.xavier_uniform_(self.direction_head.weight)
        nn.init.zeros_(self.direction_head.bias)

    def with_previous_action_input(self) -> "BlockPolicy":
        """A copy of this policy, trained without the previous-action input, with the input
        added: the two new embeddings and the mixing layer's new columns are initialised as
        a fresh policy's (seed the global generator first), every other weight is kept.

        Why: supervised training feeds the demonstrations' previous actions, which a policy
        running on its own never sees (exposure bias), so a start without the input scores
        better; a bandit learns from its own rollouts and can then learn to use the input.
        Under ``init="original"`` the new terms are ~1e-4 of the layer's input, so the grown
        policy acts as the one it came from."""
        if self.hparams.use_previous_action:
            raise ValueError("this policy already reads the previous action")
        grown = BlockPolicy(**{**self.hparams, "use_previous_action": True})
        state = grown.state_dict()
        for name, tensor in self.state_dict().items():
            if name == "hidden.weight":  # inputs are [image, instruction, previous block, previous direction]
                state[name][:, : tensor.shape[1]] = tensor
            else:
                state[name] = tensor
        grown.load_state_dict(state)
        return grown.train(self.training)

    # ------------------------------------------------------------------ inputs
    def image_tracker(self) -> FirstConvolutionTracker:
        """A tracker of the first convolution through one rollout (EpisodeRunner's ``track``):
        each step convolves only the window the moved block changed. For rollouts without
        gradients (evaluation, sampling); built from the weights as they are now."""
        return FirstConvolutionTracker(self.image.convolutions[0], slots=self.hparams.history + 1)

    def encode_instructions(self, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        tokens, lengths = self.vocabulary.encode_batch(texts)
        return tokens.to(self.device), lengths

    @staticmethod
    def split_previous_action(previous_action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(block, direction) embedding indices of the previous action; -1 means none yet."""
        none = previous_action < 0
        block = torch.where(none, NO_BLOCK, torch.where(previous_action == STOP, NO_BLOCK, previous_action // NUM_DIRECTIONS))
        direction = torch.where(previous_action == STOP, STOP_DIRECTION, previous_action % NUM_DIRECTIONS)
        return block, torch.where(none, NO_DIRECTION, direction)

    # ------------------------------------------------------------------ network
    def instruction_features(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The instruction's LSTM summary [B, lstm_dim]: the same for every step of an
        episode, so rollouts compute it once per episode (EpisodeRunner's ``featurize``)."""
        return self.instruction(tokens.to(self.device), lengths)

    def features(self, images, tokens, lengths, previous_action, text=None) -> torch.Tensor:
        """The 120-d ReLU layer both heads read. ``text`` is a precomputed
        :meth:`instruction_features` (then ``tokens``/``lengths`` are not read); ``images``
        may be the stacked histories [N, 15, H, W] or their precomputed embedding [N, image_dim]."""
        image = images if isinstance(images, torch.Tensor) and images.dim() == 2 else self.image(images)
        parts = [image, text if text is not None else self.instruction(tokens, lengths)]
        if self.hparams.use_previous_action:
            block, direction = self.split_previous_action(previous_action)
            parts += [self.previous_block(block), self.previous_direction(direction)]
        return torch.relu(self.hidden(torch.cat(parts, dim=-1)))

    def forward(self, images, tokens, lengths, previous_action, text=None) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities of the block [B, 20] and of the direction [B, 5]."""
        hidden = self.features(images, tokens, lengths, previous_action, text)
        return self.block_head(hidden).log_softmax(-1), self.direction_head(hidden).log_softmax(-1)

    def q_values(self, images, tokens, lengths, previous_action, text=None) -> torch.Tensor:
        """Q-value of each of the 81 actions [B, 81] (the DQN baseline's head)."""
        return self.q_head(self.features(images, tokens, lengths, previous_action, text))

    def observe(self, observation: BlocksObservation) -> tuple[torch.Tensor, torch.Tensor]:
        if observation.images is None:
            raise ValueError("BlockPolicy needs the image stack (observation.images)")
        tokens, lengths, text = self._instruction_inputs(observation)
        return self(observation.images.to(self.device), tokens, lengths, observation.previous_action.to(self.device), text)

    def _instruction_inputs(self, observation: BlocksObservation):
        """(tokens, lengths, precomputed features or None) of an observation's instructions."""
        text = observation.instruction_features
        if text is not None:
            return None, None, text.to(self.device)
        tokens, lengths = observation.tokens, observation.lengths
        if tokens is None:
            tokens, lengths = self.encode_instructions(observation.instructions)
        return tokens.to(self.device), lengths, None

    @staticmethod
    def joint_log_probs(block_log_probs: torch.Tensor, direction_log_probs: torch.Tensor) -> torch.Tensor:
        """log p of each of the 81 actions: block × move direction, then STOP."""
        moves = block_log_probs[:, :, None] + direction_log_probs[:, None, :NUM_DIRECTIONS]
        return torch.cat([moves.flatten(1), direction_log_probs[:, STOP_DIRECTION:]], dim=1)

    def action_log_probs(self, observation: BlocksObservation) -> torch.Tensor:
        return self.joint_log_probs(*self.observe(observation))

    def action_probabilities(self, observation: BlocksObservation) -> torch.Tensor:
        """The 81 actions' probabilities [B, 81]: p_block·p_direction, p(STOP). A DQN head's
        policy is greedy in its Q-values (one-hot); the planner's follows its plan (one-hot)."""
        if self.hparams.head == "target":
            return self._planned_scores(observation)
        if self.hparams.head == "q":
            greedy = self.score(observation).argmax(dim=-1)
            return F.one_hot(greedy, NUM_ACTIONS).float()
        return self.action_log_probs(observation).exp()

    def score(self, observations: BlocksObservation, candidates=None) -> torch.Tensor:
        """The action probabilities, or a DQN head's Q-values; the argmax is the greedy action."""
        if self.hparams.head == "q":
            tokens, lengths, text = self._instruction_inputs(observations)
            return self.q_values(observations.images.to(self.device), tokens, lengths,
                                 observations.previous_action.to(self.device), text)
        return self.action_probabilities(observations)

    @torch.no_grad()
    def sample(self, observation: BlocksObservation, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Sample as the original trainer did: a block and a direction, each from its own
        softmax; the action is STOP when the direction is. Returns the actions [B] and the
        sampled blocks [B] (which the original loss also scores on STOP steps). The joint
        distribution is :meth:`action_probabilities`'."""
        block_log_probs, direction_log_probs = (t.cpu() for t in self.observe(observation))
        blocks = torch.multinomial(block_log_probs.exp(), 1, generator=generator).squeeze(1)
        directions = torch.multinomial(direction_log_probs.exp(), 1, generator=generator).squeeze(1)
        actions = torch.where(directions == NUM_DIRECTIONS, STOP, blocks * NUM_DIRECTIONS + directions)
        return actions, blocks

    @torch.no_grad()
    def act(self, observation: BlocksObservation, generator: torch.Generator | None = None) -> torch.Tensor:
        if generator is None or self.hparams.head != "factored":
            return super().act(observation, generator)
        return self.sample(observation, generator)[0]

    # ------------------------------------------------------------------ training
    OBJECTIVES = ("supervised", "bandit", "reinforce", "dqn", "planner")

    ROLLOUT_OBJECTIVES = ("bandit", "reinforce")

    @property
    def automatic_optimization(self) -> bool:
        """Learning from rollouts makes several optimizer steps per batch (one per
        ``episodes_per_update`` episodes of the rollout), so it steps the optimizer itself."""
        return self.hparams.objective not in self.ROLLOUT_OBJECTIVES

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        objective = self.hparams.objective
        if objective == "supervised":
            loss = self._supervised(batch)
        elif objective in self.ROLLOUT_OBJECTIVES:
            loss = self.learn_from_rollout(batch["rollout"], self.optimizers(), self.manual_backward)
        elif objective == "dqn":
            loss = self._temporal_difference(batch["replay"])
        elif objective == "planner":
            loss = self._target_loss(batch, "train")
        else:
            raise ValueError(f"unknown objective {objective!r}; choose one of {self.OBJECTIVES}")
        self.log("train/loss", loss, prog_bar=True, batch_size=len(batch.get("action", batch.get("episodes"))))
        return loss

    def _supervised(self, batch: dict) -> torch.Tensor:
        block, direction = self(batch["images"], batch["tokens"], batch["lengths"], batch["previous_action"])
        loss = objectives.supervised_loss(block, direction, batch["action"])
        accuracy = (self.joint_log_probs(block, direction).argmax(-1) == batch["action"]).float().mean()
        self.log("train/accuracy", accuracy, batch_size=len(batch["action"]))
        return loss

    def learn_from_rollout(self, rollout: dict, optimizer, backward=None) -> torch.Tensor:
        """The original trainers' schedule (spec §6.4): one optimizer step per
        ``episodes_per_update`` episodes of a rollout, on the mean loss over their steps
        (``update_weighting="steps"``) or the mean of their episodes' means (``"episodes"``:
        the original's per-episode mean, the same thing when one episode makes an update).

        The rollout's episodes were all sampled from the policy as it was before the first
        of these steps, so the k-th step learns from experience k-1 steps old (the policy lag
        of rolling out several episodes at once; with ``episodes_per_update`` equal to the
        rollout's size there is one step and no lag). ``backward`` is the Trainer's
        ``manual_backward`` inside Lightning, ``Tensor.backward`` outside. Returns the mean loss.
        """
        backward = backward or (lambda loss: loss.backward())
        episodes = rollout["episodes"]
        if episodes.numel() == 0:
            raise RuntimeError("the rollout recorded no decisions")
        n_episodes = int(episodes.max()) + 1
        per_update = self.hparams.episodes_per_update
        losses = []
        for first in range(0, n_episodes, per_update):
            rows = ((episodes >= first) & (episodes < first + per_update)).nonzero().squeeze(1)
            if rows.numel() == 0:
                continue
            loss = self._from_rollout(rollout, self.hparams.objective, rows)
            optimizer.zero_grad()
            backward(loss)
            clip_gradients(self.parameters(), self.hparams.gradient_clip_val, self.hparams.gradient_clip_algorithm)
            optimizer.step()
            losses.append(loss.detach())
        return torch.stack(losses).mean()

    def _from_rollout(self, rollout: dict, objective: str, rows: torch.Tensor | None = None) -> torch.Tensor:
        """Bandit or REINFORCE loss on the decisions ``rows`` (default: all) of a rollout a
        ContextualBanditLoop collected."""
        if rows is None:
            rows = torch.arange(len(rollout["episodes"]))
        block, direction = self.rollout_heads(rollout, rows)
        actions = rollout["actions"][rows].to(self.device)
        blocks = rollout["blocks"][rows].to(self.device) if "blocks" in rollout else None
        targets = rollout["rewards" if objective == "bandit" else "returns"][rows].to(self.device)
        if self.hparams.get("reward_baseline", "none") == "mean":
            # The update's mean target subtracted (not the paper's): the expected gradient is
            # unchanged, only its variance and the push on unsampled actions differ. It does
            # not keep STOP alive (README, "Why STOP dies").
            targets = targets - targets.mean()
        weights = None
        if self.hparams.get("update_weighting", "steps") == "episodes":
            weights = objectives.episode_weights(rollout["episodes"][rows]).to(self.device)
        return objectives.policy_gradient_loss(block, direction, actions, targets, self.hparams.entropy_coefficient,
                                               blocks=blocks, form=self.hparams.loss_form, weights=weights)

    def rollout_heads(self, rollout: dict, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Block and direction log-probabilities ``[N, 20]``, ``[N, 5]`` of the decisions ``rows``
        of a rollout, computed from its recorded frames as an update computes them."""
        unique, inverse = torch.unique(rollout["episodes"][rows], return_inverse=True)
        images = self._embed_rollout_frames(rollout["frames"], rollout["steps"][rows], unique, inverse,
                                            rollout.get("frame_sums"))
        # One LSTM pass per episode, not per step: every step of an episode has its instruction.
        lengths = rollout["lengths"][unique.cpu()]
        tokens = rollout["tokens"][unique][:, : int(lengths.max())]
        text = self.instruction_features(tokens, lengths)[inverse.to(self.device)]
        return self(images.to(self.device), None, None, rollout["previous"][rows].to(self.device), text)

    def _embed_rollout_frames(self, frames: torch.Tensor, steps: torch.Tensor, unique: torch.Tensor,
                              inverse: torch.Tensor, frame_sums: torch.Tensor | None = None) -> torch.Tensor:
        """Image embeddings [N, image_dim] of the contexts ``(steps[i], unique[inverse[i]])``
        of a rollout's uint8 ``frames`` [T+1, B, 3, H, W], through
        :meth:`ImageEncoder.from_frames`: indexed where they lie when they are on the
        policy's device (no copy), else just these episodes' frames moved there."""
        sums = None
        if frames.device == self.device:
            flat, width, column = frames.flatten(0, 1), frames.shape[1], unique[inverse]
            if frame_sums is not None:
                sums = frame_sums.flatten(0, 1)
        else:
            length = int(steps.max()) + 1  # frames 0..last step are the only ones seen
            chosen = frames[:length, unique.to(frames.device)]  # [T, U, 3, H, W]
            flat, width, column = chosen.flatten(0, 1).to(self.device), len(unique), inverse
            if frame_sums is not None:
                sums = frame_sums[:length, unique.to(frame_sums.device)].flatten(0, 1).to(self.device)
        slots = torch.arange(-self.hparams.history, 1, device=steps.device)
        times = steps[:, None] + slots[None, :]  # [N, K+1]
        index = torch.where(times >= 0, times * width + column.to(steps.device)[:, None], -1)
        return self.image.from_frames(flat, index.to(self.device), sums)

    def _temporal_difference(self, replay: dict) -> torch.Tensor:
        """Huber loss between Q(s, a) and the targets r + γ·max Q_target(s', ·) a DQNLoop computed."""
        from zoo.blocks.history import standardize_stacks

        q = self.q_values(standardize_stacks(replay["stacks"]).to(self.device), replay["tokens"].to(self.device),
                          replay["lengths"], replay["previous"].to(self.device))
        chosen = q.gather(1, replay["actions"].to(self.device)[:, None]).squeeze(1)
        return torch.nn.functional.smooth_l1_loss(chosen, replay["targets"].to(chosen))

    # ------------------------------------------------------------------ oracle-planner baseline
    def predict_target(self, images, tokens, lengths, previous_action) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities of the block to move [B, 20] and its predicted goal centre [B, 2]."""
        hidden = self.features(images, tokens, lengths, previous_action)
        return self.block_head(hidden).log_softmax(-1), self.goal_head(hidden)

    def _target_loss(self, batch: dict, stage: str) -> torch.Tensor:
        """Block cross-entropy plus the squared goal error in block lengths."""
        from zoo.blocks.geometry import BLOCK_SIZE

        block, goal = self.predict_target(batch["images"], batch["tokens"], batch["lengths"], batch["previous_action"])
        block_loss = torch.nn.functional.nll_loss(block, batch["block"])
        goal_loss = ((goal - batch["goal"]) / BLOCK_SIZE).square().sum(-1).mean()
        size = len(batch["block"])
        self.log(f"{stage}/block_accuracy", (block.argmax(-1) == batch["block"]).float().mean(), batch_size=size)
        self.log(f"{stage}/goal_error", ((goal - batch["goal"]).norm(dim=-1) / BLOCK_SIZE).mean(), batch_size=size)
        return block_loss + goal_loss

    def _planned_scores(self, observation: BlocksObservation) -> torch.Tensor:
        """One-hot scores of the planner's next action. At an episode's first step the network
        picks the block and goal; the A* planner, which sees the true board (the "oracle"
        part), then finds the path that the following steps replay."""
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

    @staticmethod
    def _episode_key(observation: BlocksObservation, row: int) -> tuple:
        return (observation.instructions[row], observation.boards.start[row].cpu().numpy().tobytes())

    def validation_step(self, batch: dict, batch_idx: int) -> None:
        if self.hparams.head == "target":
            self.log("val/loss", self._target_loss(batch, "val"), batch_size=len(batch["block"]))
            return
        if self.hparams.head == "q":
            return  # Q-values have no likelihood; rollout metrics still validate a DQN
        block, direction = self(batch["images"], batch["tokens"], batch["lengths"], batch["previous_action"])
        size = len(batch["action"])
        self.log("val/loss", objectives.supervised_loss(block, direction, batch["action"]), batch_size=size)
        accuracy = (self.joint_log_probs(block, direction).argmax(-1) == batch["action"]).float().mean()
        self.log("val/accuracy", accuracy, batch_size=size, prog_bar=True)

    def configure_optimizers(self):
        # fused: one kernel for all parameters' update (0.6 ms a step on one CPU thread,
        # against 3.5 ms for foreach and 2.7 for the per-tensor loop), which matters when
        # every few episodes are an update
        return torch.optim.Adam(self.parameters(), lr=self.hparams.learning_rate, fused=True)
