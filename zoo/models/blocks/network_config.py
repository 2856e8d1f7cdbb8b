"""``BlocksNetworkConfig``: every setting of the Blocks CNN-LSTM network, each once, with its default.

The network (:class:`~zoo.models.blocks.network.BlocksNetwork`) is built from one; every
objective's class (supervised, bandit, REINFORCE, DQN, DAgger, SPO, planner) and the goal
predictor take its settings as keyword arguments and build it (``BlocksBandit(words, hidden_dim=64)``),
so a setting is named and defaulted here alone. A recipe sets them as ``model.options.<name>``;
the recipe schema reads their types and defaults from this class, and ``NETWORK_OPTIONS``, the
keys a saved configuration holds for the network, are its fields.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal, get_args

Initialisation = Literal["glorot", "original"]
INITIALISATIONS = get_args(Initialisation)


@dataclass(frozen=True)
class BlocksNetworkConfig:
    """The CNN-LSTM network of Misra, Langford & Artzi (EMNLP 2017); the defaults are the paper's
    Appendix C sizes and the original agent's initialisation, which every release uses.

    Args:
        vocabulary: The instruction words, ``<pad>`` and ``<unk>`` first (a data module's
            ``vocabulary.words``); the word embedding has one row per word.
        embedding_dim: Width of the word embeddings.
        lstm_dim: Hidden size of the instruction LSTM, whose states are averaged over the tokens.
        image_dim: Width of the image embedding the three convolutions are projected to.
        conv_channels: Output channels of each of the three convolutions.
        block_embedding_dim: Width of the previous action's block embedding (20 blocks and "none").
        direction_embedding_dim: Width of the previous action's direction embedding (4 moves,
            STOP and "none").
        hidden_dim: Width of the ReLU layer that mixes the three inputs and that the objectives'
            heads read.
        history: Previous frames stacked with the current one: the image input has
            ``3 * (history + 1)`` channels.
        image_size: Side of the square input images, in pixels.
        use_previous_action: Whether the previous action's embeddings are an input (the supervised
            release has none; ``BlocksPolicy.with_previous_action_input`` adds them to a policy, as
            a bandit started from such a policy gets them: new embeddings, every other weight kept).
        init: How the weights start: ``"original"`` (the original agent's small normals: a fresh
            softmax is nearly uniform; every release starts so) or ``"glorot"`` (Glorot-uniform
            layers, PyTorch's embeddings and LSTM). Also the scheme of the direction head a bandit
            re-initialises after its supervised start.
    """

    vocabulary: list[str]
    embedding_dim: int = 150
    lstm_dim: int = 250
    image_dim: int = 200
    conv_channels: int = 32
    block_embedding_dim: int = 32
    direction_embedding_dim: int = 24
    hidden_dim: int = 120
    history: int = 4
    image_size: int = 120
    use_previous_action: bool = True
    init: Initialisation = "original"

    def __post_init__(self) -> None:
        if self.init not in INITIALISATIONS:
            raise ValueError(f"init must be one of {INITIALISATIONS}; got {self.init!r}")

    @classmethod
    def from_options(cls, owner: str, vocabulary: list[str], options: dict,
                     accepted: tuple[str, ...] | None = None) -> "BlocksNetworkConfig":
        """The config of a class's ``**network`` keyword arguments, an unknown one refused in one
        line as Python refuses a keyword (``owner``, the class's name, takes no such argument).
        ``accepted``: the settings that class reads, when not all of them."""
        unknown = sorted(set(options) - set(accepted or NETWORK_OPTIONS))
        if unknown:
            raise TypeError(f"{owner} takes no argument(s) {', '.join(map(repr, unknown))}")
        return cls(vocabulary, **options)

    def to_dict(self) -> dict:
        """The settings as keyword arguments: what a policy's hyper-parameters and ``config.json``
        hold for the network, beside the objective's own settings."""
        return {field.name: getattr(self, field.name) for field in fields(self)}


NETWORK_OPTIONS = tuple(field.name for field in fields(BlocksNetworkConfig))
"""What ``config.json`` holds to rebuild the network (the objectives add their own settings)."""
