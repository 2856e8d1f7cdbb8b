"""The CNN-LSTM network of Misra, Langford & Artzi (EMNLP 2017), Appendix C.

Image stack (current frame and K=4 previous, [15, 120, 120]) -> three convolutions -> 200-d;
instruction -> 150-d embeddings -> LSTM(250) -> mean over tokens; previous action -> block
(32-d, 21 values with "none") and direction (24-d, 6 values with "none") embeddings;
concatenation (506-d) -> ReLU layer of 120, which the heads read. The heads and what trains
them are the objectives' (:mod:`zoo.models.blocks.policy` and one module per objective); the sizes
and the other settings are a :class:`~zoo.models.blocks.network_config.BlocksNetworkConfig`'s.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from zoo.blocks.geometry import MAX_BLOCKS, NUM_DIRECTIONS, STOP
from zoo.blocks.history import pixel_sums, standardization
from zoo.blocks.observation import BlocksObservation, RawStacks
from zoo.blocks.vocab import Vocabulary
from zoo.models.blocks.network_config import INITIALISATIONS, NETWORK_OPTIONS, BlocksNetworkConfig  # noqa: F401
from zoo.models.incremental_conv import FirstConvolutionTracker
from zoo.scratch_buffers import ScratchBuffers

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


class ImageEncoder(nn.Module):
    """Three ReLU convolutions with TensorFlow's SAME padding (120 -> 30 -> 8 -> 4), then linear."""

    def __init__(self, in_channels: int, channels: int = BlocksNetworkConfig.conv_channels,
                 out_dim: int = BlocksNetworkConfig.image_dim, image_size: int = BlocksNetworkConfig.image_size):
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

    def __init__(self, vocabulary_size: int, embedding_dim: int, hidden_dim: int):
        super().__init__()
        self.embed = nn.Embedding(vocabulary_size, embedding_dim, padding_idx=0)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim, batch_first=True)

    @classmethod
    def from_config(cls, config: BlocksNetworkConfig) -> "InstructionEncoder":
        """The encoder of ``config``'s words, embeddings and LSTM (the policies' and the goal predictor's)."""
        return cls(len(config.vocabulary), config.embedding_dim, config.lstm_dim)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = pack_padded_sequence(self.embed(tokens), lengths.cpu(), batch_first=True, enforce_sorted=False)
        states, _ = pad_packed_sequence(self.lstm(packed)[0], batch_first=True)  # zeros past each length
        return states.sum(dim=1) / lengths.to(states.device, states.dtype)[:, None]


class BlocksNetwork(nn.Module):
    """The layers every Blocks objective shares, up to the 120-d ReLU layer its heads read.

    A mixin of the policy LightningModule rather than a submodule of it: the released
    weights name these layers at the top level (``image.*``, ``hidden.weight``), so a
    composed network would rename every tensor of every release, and the shape check
    against a release's files (``zoo.grounded.check_against_weights``) would compare nothing.
    The policy calls :meth:`build_network`, builds its heads, then :meth:`reset_parameters`.
    """

    def build_network(self, config: BlocksNetworkConfig) -> None:
        """The shared layers, as ``config`` describes them (kept as ``network_config``)."""
        self.network_config = config
        self.history_slots = config.history
        self.reads_previous_action = config.use_previous_action
        self.init_scheme = config.init
        self.vocabulary = Vocabulary(config.vocabulary)
        self.image = ImageEncoder(3 * (config.history + 1), config.conv_channels, config.image_dim, config.image_size)
        self.instruction = InstructionEncoder.from_config(config)
        action_dim = 0
        if config.use_previous_action:
            self.previous_block = nn.Embedding(MAX_BLOCKS + 1, config.block_embedding_dim)
            self.previous_direction = nn.Embedding(NUM_DIRECTIONS + 2, config.direction_embedding_dim)
            action_dim = config.block_embedding_dim + config.direction_embedding_dim
        self.hidden = nn.Linear(config.image_dim + config.lstm_dim + action_dim, config.hidden_dim)

    def reset_parameters(self) -> None:
        """Initial weights (the heads' included); biases zero.

        ``init="original"`` is what the original agent's graph used (read from its model
        code): truncated normals of std 0.005 for the convolutions and 0.004 for the image
        projection, normals of std 0.01 for the mixing layer and the heads, 0.001
        for the previous-action embeddings, N(0, 1) word vectors, a forget-gate bias of 1.
        These are 5-100x smaller than Glorot's, so a freshly initialised softmax is
        uniform in every state; the released policies were trained from them. ``init="glorot"``
        (Glorot-uniform layers, PyTorch's embeddings and LSTM) is what zoo used before.
        """
        original = self.init_scheme == "original"
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
            if self.reads_previous_action:
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

    # ------------------------------------------------------------------ inputs
    def image_tracker(self) -> FirstConvolutionTracker:
        """A tracker of the first convolution through one rollout (EpisodeRunner's ``track``):
        each step convolves only the window the moved block changed. For rollouts without
        gradients (evaluation, sampling); built from the weights as they are now."""
        return FirstConvolutionTracker(self.image.convolutions[0], slots=self.history_slots + 1)

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

    def instruction_features(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The instruction's LSTM summary [B, lstm_dim]: the same for every step of an
        episode, so rollouts compute it once per episode (EpisodeRunner's ``featurize``)."""
        return self.instruction(tokens.to(self.device), lengths)

    def features(self, images, tokens, lengths, previous_action, text=None) -> torch.Tensor:
        """The 120-d ReLU layer the heads read. ``text`` is a precomputed
        :meth:`instruction_features` (then ``tokens``/``lengths`` are not read); ``images``
        may be the stacked histories [N, 15, H, W] or their precomputed embedding [N, image_dim]."""
        image = images if isinstance(images, torch.Tensor) and images.dim() == 2 else self.image(images)
        parts = [image, text if text is not None else self.instruction(tokens, lengths)]
        if self.reads_previous_action:
            block, direction = self.split_previous_action(previous_action)
            parts += [self.previous_block(block), self.previous_direction(direction)]
        return torch.relu(self.hidden(torch.cat(parts, dim=-1)))

    def observed_features(self, observation: BlocksObservation) -> torch.Tensor:
        """:meth:`features` of an observation (its images, instructions and previous actions)."""
        if observation.images is None:
            raise ValueError(f"{type(self).__name__} needs the image stack (observation.images)")
        tokens, lengths, text = self._instruction_inputs(observation)
        return self.features(observation.images.to(self.device), tokens, lengths,
                             observation.previous_action.to(self.device), text)

    def _instruction_inputs(self, observation: BlocksObservation):
        """(tokens, lengths, precomputed features or None) of an observation's instructions."""
        text = observation.instruction_features
        if text is not None:
            return None, None, text.to(self.device)
        tokens, lengths = observation.tokens, observation.lengths
        if tokens is None:
            tokens, lengths = self.encode_instructions(observation.instructions)
        return tokens.to(self.device), lengths, None
