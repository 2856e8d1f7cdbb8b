"""``BlocksPolicy``: the CNN-LSTM network with the paper's factored head, the base every
Blocks objective extends.

The head is a block softmax (20) and a direction softmax (4 moves + STOP); a move's
probability is p_block·p_direction, STOP's is p_direction(STOP). This module holds what every
objective shares: the action probabilities, acting and sampling, the validation likelihood,
the optimizer, persistence (``config.json`` holds the network's options and the objective's
settings, nothing else) and the objectives' registry. Each objective is one module beside
this one that overrides only what differs (its loss, and for DQN and the planner the head).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import torch
from torch import nn

from zoo.blocks.geometry import MAX_BLOCKS, NUM_DIRECTIONS, STOP
from zoo.blocks.observation import BlocksObservation
from zoo.grounded import named_arguments
from zoo.models.blocks import losses
from zoo.models.blocks.agent import BlocksAgent
from zoo.models.blocks.network import NETWORK_OPTIONS, STOP_DIRECTION, BlocksNetwork, BlocksNetworkConfig
from zoo.registry import register_model, retire_class_name

_OBJECTIVES: dict[str, type["BlocksPolicy"]] = {}
TINY_VOCABULARY = ["<pad>", "<unk>"]
RETIRED_CLASS_NAMES = {
    "BlockPolicy": "set its model_class to BlocksSupervised, BlocksBandit or the class of the other objective it "
                   "was trained with (its config's 'objective') and remove the settings that class does not take "
                   "('objective', 'head', ...)",
    "StopPolicy": "set its model_class to BlocksStop",
    "RandomPolicy": "set its model_class to BlocksRandom",
    "DemonstrationPolicy": "set its model_class to BlocksDemonstrations",
    "PolicyEnsemble": "set its model_class to BlocksEnsemble (and each member's as its own line says)",
}
"""The Blocks class names of zoo 0.2 and before: the single policy class, split by objective
since, and the baselines' and the ensemble's former names; what a config naming one should say."""
for _name, _advice in RETIRED_CLASS_NAMES.items():
    retire_class_name(_name, _advice)


def register_objective(name: str, description: str = "") -> Callable:
    """Class decorator: ``name`` trains with this class (``objective_class(name)``), and
    ``blocks-NAME`` builds a fresh one (``create_model``) and names it in a recipe's ``model.name``."""

    def decorate(cls: type[BlocksPolicy]) -> type[BlocksPolicy]:
        if name in _OBJECTIVES and _OBJECTIVES[name] is not cls:
            raise ValueError(f"objective {name!r} is already registered to {_OBJECTIVES[name].__name__}")
        cls.objective = name
        _OBJECTIVES[name] = cls
        return register_model(f"blocks-{name}", defaults={"vocabulary": TINY_VOCABULARY},
                              description=description)(cls)

    return decorate


def objective_class(name: str) -> type["BlocksPolicy"]:
    """The policy class that trains with objective ``name`` (every objective of this package is
    registered by then: Python ran ``zoo/models/blocks/__init__.py``, which imports them, before this module)."""
    if name not in _OBJECTIVES:
        raise KeyError(f"unknown Blocks objective {name!r}; known: {', '.join(sorted(_OBJECTIVES))}")
    return _OBJECTIVES[name]


def list_objectives() -> list[str]:
    return sorted(_OBJECTIVES)


class BlocksPolicy(BlocksAgent, BlocksNetwork):
    """CNN-LSTM policy over the 81 block moves (20 blocks × 4 directions + STOP)."""

    objective = ""  # set by @register_objective
    data_mode = "steps"
    """What the training data module yields for this objective: ``steps`` (demonstration steps),
    ``targets`` (each episode's block and goal) or ``episodes`` (examples to roll out)."""
    training_loop: str | None = None
    """The callback that collects its experience during training, by name
    (:mod:`zoo.callbacks.objective_loops`: ``contextual_bandit``, ``dqn``, ``expert``, ``scheduled``); None: none."""
    experience_type: type | None = None
    """The record its training loop's ``collect`` returns and its ``update`` learns from
    (:mod:`zoo.models.blocks.experience`); None: it learns from the data module's batches."""
    reads_instructions = True
    tracks_images = True

    def __init__(self, vocabulary: list[str], *, learning_rate: float = 1e-3, **network):
        """An objective adds its own settings as keyword arguments and passes ``**network`` on; all
        of them are the saved hyper-parameters.

        Args:
            vocabulary: The instruction words, ``<pad>`` and ``<unk>`` first.
            learning_rate: Adam's learning rate (the original supervised trainer's 1e-3).
            **network: The network's settings (:class:`BlocksNetworkConfig`'s fields, each with its
                default and ``Args:`` line there: the paper's sizes for those not given).
        """
        super().__init__()
        config = BlocksNetworkConfig.from_options(type(self).__name__, vocabulary, network)
        # save_hyperparameters reads the constructors' arguments where they are, this dict among
        # them: filled with the defaults, it saves every network setting, not just those given.
        network.update(config.to_dict())
        self.save_hyperparameters()
        self.check_settings()
        self.build_network(config)
        self.build_heads(config.hidden_dim)
        self.reset_parameters()

    @classmethod
    def config_keys(cls) -> frozenset[str]:
        """The objective's named arguments, those of the objectives it extends (a subclass names only
        the settings it changes and passes the others on), and the network's settings."""
        chain = (base for base in cls.__mro__ if issubclass(base, BlocksPolicy))
        return frozenset().union(*map(named_arguments, chain)) | frozenset(NETWORK_OPTIONS)

    def check_settings(self) -> None:
        """Refuse an objective's bad settings (in ``self.hparams``) in one line, before any layer is built."""

    def build_heads(self, hidden_dim: int) -> None:
        self.block_head = nn.Linear(hidden_dim, MAX_BLOCKS)
        self.direction_head = nn.Linear(hidden_dim, NUM_DIRECTIONS + 1)

    def network_options(self) -> dict:
        """The constructor arguments that rebuild the network (not the objective's settings)."""
        return self.network_config.to_dict()

    def set_experience(self, experience) -> None:
        """Hand the next ``training_step`` the experience a training loop collected for its batch."""
        self._experience = experience

    def take_experience(self):
        """The experience handed over for this batch (an :attr:`experience_type`), once."""
        experience, self._experience = getattr(self, "_experience", None), None
        if not isinstance(experience, self.experience_type):
            raise RuntimeError(f"{type(self).__name__} learns from a {self.experience_type.__name__} that its training "
                               f"loop hands over before each batch; got {type(experience).__name__}: train it with "
                               "zoo.callbacks.objective_loops.loop_callbacks, or call update(loop.collect(...), optimizer)")
        return experience

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """A training ``.ckpt`` names its class, as ``config.json`` does, so it loads as what it is."""
        checkpoint["model_class"] = type(self).__name__

    # ------------------------------------------------------------------ derived policies
    def reset_direction_head(self) -> None:
        """Re-initialise the direction softmax, as the paper does after supervised warm-up,
        with the policy's own initialisation scheme."""
        if self.init_scheme == "original":
            nn.init.normal_(self.direction_head.weight, std=0.01)
        else:
            nn.init.xavier_uniform_(self.direction_head.weight)
        nn.init.zeros_(self.direction_head.bias)

    def to_objective(self, target: type["BlocksPolicy"], **settings) -> "BlocksPolicy":
        """This policy's weights under another objective (a supervised start for the bandit):
        the same network, ``target``'s settings. Heads must match (DQN's and the planner's differ)."""
        policy = target(**{**self.network_options(), **settings})
        policy.load_state_dict(self.state_dict())
        return policy.train(self.training)

    def with_previous_action_input(self) -> "BlocksPolicy":
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
        grown = type(self)(**{**self.hparams, "use_previous_action": True})
        state = grown.state_dict()
        for name, tensor in self.state_dict().items():
            if name == "hidden.weight":  # inputs are [image, instruction, previous block, previous direction]
                state[name][:, : tensor.shape[1]] = tensor
            else:
                state[name] = tensor
        grown.load_state_dict(state)
        return grown.train(self.training)

    # ------------------------------------------------------------------ the factored head
    def forward(self, images, tokens, lengths, previous_action, text=None) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities of the block [B, 20] and of the direction [B, 5]."""
        return self.heads(self.features(images, tokens, lengths, previous_action, text))

    def heads(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.block_head(hidden).log_softmax(-1), self.direction_head(hidden).log_softmax(-1)

    def observe(self, observation: BlocksObservation) -> tuple[torch.Tensor, torch.Tensor]:
        return self.heads(self.observed_features(observation))

    @staticmethod
    def joint_log_probs(block_log_probs: torch.Tensor, direction_log_probs: torch.Tensor) -> torch.Tensor:
        """log p of each of the 81 actions: block × move direction, then STOP."""
        moves = block_log_probs[:, :, None] + direction_log_probs[:, None, :NUM_DIRECTIONS]
        return torch.cat([moves.flatten(1), direction_log_probs[:, STOP_DIRECTION:]], dim=1)

    def action_log_probs(self, observation: BlocksObservation) -> torch.Tensor:
        return self.joint_log_probs(*self.observe(observation))

    def action_probabilities(self, observation: BlocksObservation) -> torch.Tensor:
        """The 81 actions' probabilities [B, 81]: p_block·p_direction, p(STOP)."""
        return self.action_log_probs(observation).exp()

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
        if generator is None:
            return super().act(observation)
        return self.sample(observation, generator)[0]

    # ------------------------------------------------------------------ training
    def supervised_step(self, batch: dict, stage: str) -> torch.Tensor:
        """Negative log-likelihood of the demonstrations' actions, with the accuracy logged."""
        block, direction = self(batch["images"], batch["tokens"], batch["lengths"], batch["previous_action"])
        size = len(batch["action"])
        loss = losses.supervised_loss(block, direction, batch["action"])
        accuracy = (self.joint_log_probs(block, direction).argmax(-1) == batch["action"]).float().mean()
        self.log(f"{stage}/accuracy", accuracy, batch_size=size, prog_bar=stage == "val")
        return loss

    def validation_step(self, batch: dict, batch_idx: int) -> None:
        self.log("val/loss", self.supervised_step(batch, "val"), batch_size=len(batch["action"]))

    def configure_optimizers(self):
        # fused: one kernel for all parameters' update (0.6 ms a step on one CPU thread,
        # against 3.5 ms for foreach and 2.7 for the per-tensor loop), which matters when
        # every few episodes are an update
        return torch.optim.Adam(self.parameters(), lr=self.hparams.learning_rate, fused=True)


def load_training_checkpoint(path: str | Path, **overrides) -> BlocksPolicy:
    """A Blocks policy from a training run's ``.ckpt`` (read with ``weights_only``): the class
    the checkpoint names, built from its hyper-parameters with ``overrides``."""
    from zoo.registry import registered_class

    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    if "model_class" not in checkpoint:
        raise ValueError(f"{path} names no model class (a training checkpoint of zoo 0.1, whose one BlockPolicy "
                         "class zoo no longer reads): export it with zoo 0.2, or set its 'model_class' to the class "
                         "of its objective and remove the hyper-parameters that class does not take")
    target = registered_class(checkpoint["model_class"])
    if not issubclass(target, BlocksPolicy):
        raise ValueError(f"the checkpoint holds a {target.__name__}, not a Blocks policy")
    policy = target(**{**dict(checkpoint.get("hyper_parameters") or {}), **overrides})
    policy.load_state_dict(checkpoint["state_dict"])
    return policy
