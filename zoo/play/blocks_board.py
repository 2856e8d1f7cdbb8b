"""The Blocks board of ``zoo play blocks``: which board, and what a policy does with your instruction.

A board is an example of the data (``dev:N``, ``test:N``: the N-th example of the split, as
``zoo blocks render --index N`` numbers them) or a procedural one (``procedural[:SEED]``). Its
annotated goal is the one its own instruction (the data's, or the template's) asks for; the
distance error to it is reported after every instruction, whatever you typed. Instructions
are carried out one after another on the board as it stands, so a person can correct the
agent; ``reset`` goes back to the start board.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from zoo.blocks.evaluate import greedy_actions
from zoo.blocks.geometry import STOP, describe_action
from zoo.blocks.records import Example
from zoo.blocks.rollout import EpisodeRunner

SPLITS = ("train", "dev", "test")


def choose_board(spec: str, data_dir: str | None = None) -> tuple[Example, str, bool]:
    """``(example, label, from_data)`` for ``dev:N``, ``test:N``, ``train:N``, ``procedural`` or
    ``procedural:SEED``."""
    kind, _, number = spec.strip().partition(":")
    kind = kind.lower()
    if kind == "procedural":
        from zoo.blocks.procedural import generate_transitions

        seed = _number(spec, number or "0", "seed")
        transition = generate_transitions(1, seed=seed, prefix="play")[0]
        return transition.examples()[0], f"procedural:{seed}", False
    if kind not in SPLITS or not number:
        raise ValueError(f"--board {spec!r}: expected dev:N, test:N, train:N, procedural or procedural:SEED")
    from zoo.blocks.data import load_split

    index = _number(spec, number, "example index")
    try:
        split = load_split(kind, data_dir)
    except FileNotFoundError as missing:
        raise FileNotFoundError(f"--board {spec}: the Blocks {kind} data is not available ({missing}); "
                                f"use --board procedural[:SEED]") from None
    if not 0 <= index < len(split.examples):
        raise ValueError(f"--board {spec}: the {kind} split has examples 0..{len(split.examples) - 1}")
    return split.examples[index], f"{kind}:{index}", True


def _number(spec: str, text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"--board {spec!r}: the {what} must be a whole number, got {text!r}") from None
    if value < 0:
        raise ValueError(f"--board {spec!r}: the {what} must be at least 0")
    return value


@dataclass
class InstructionRun:
    """What the policy did with one instruction: its moves (``blocked`` ones changed nothing),
    the distance error to the annotated goal before and after, the frames, and the time."""

    instruction: str
    moves: list[str]
    blocked: list[bool]
    error_before: float
    error_after: float
    frames: list[torch.Tensor] = field(repr=False)
    seconds: float = 0.0


class BlocksBoard:
    """A board being instructed. ``example`` holds the start, the annotated goal and the
    data's own instruction; ``positions`` is the board as it stands now."""

    def __init__(self, example: Example, label: str, from_data: bool, data_dir: str | None = None) -> None:
        from zoo.blocks.render import BoardRenderer

        self.example, self.label, self.from_data = example, label, from_data
        self.renderer = BoardRenderer(data_dir)
        self.positions = np.array(example.transition.start, dtype=np.float64)

    @property
    def transition(self):
        return self.example.transition

    def reset(self) -> None:
        self.positions = np.array(self.transition.start, dtype=np.float64)

    def _runner(self, policy, instruction: str) -> tuple[EpisodeRunner, Example]:
        runner = EpisodeRunner(self.renderer, device=policy.device)
        example = Example(replace(self.transition, start=self.positions.copy()), instruction)
        runner.start([example], images=True,  # the animation needs the frames, whatever the policy reads
                     demonstrations=policy.needs_demonstrations, encode=policy.instruction_encoder,
                     featurize=policy.instruction_featurizer)
        return runner, example

    def error(self) -> float:
        """Distance error of the board as it stands to the annotated goal, in block lengths."""
        from zoo.blocks.board import distance_error

        return float(distance_error(torch.from_numpy(self.positions), torch.from_numpy(self.transition.goal)))

    @torch.no_grad()
    def run(self, policy, instruction: str) -> InstructionRun:
        """Play ``policy`` greedily on the board as it stands until it stops (or the horizon)."""
        started = time.perf_counter()
        if hasattr(policy, "eval"):
            policy.eval()
        before = self.error()
        runner, _ = self._runner(policy, instruction)
        act = greedy_actions(policy)
        moves, blocked = [], []
        while not runner.env.all_done:
            action = act(runner.observe())
            outcome, _ = runner.step(action)
            moves.append(describe_action(int(action[0])))
            blocked.append(bool(outcome.failed[0]) and int(action[0]) != STOP)
        self.positions = runner.env.positions[0, : self.transition.n_blocks].cpu().numpy().astype(np.float64)
        frames = [frame[0] for frame in runner.frames]
        return InstructionRun(instruction, moves, blocked, before, self.error(), frames, time.perf_counter() - started)

    def frame(self) -> torch.Tensor:
        """The board as it stands, as the agent sees it (``[3, 120, 120]`` uint8)."""
        from zoo.blocks.board import BoardBatch

        boards = BoardBatch.from_transitions([replace(self.transition, start=self.positions.copy())])
        return self.renderer.render(boards.start, boards.n_blocks, boards.logo)[0]

    def goal(self) -> dict:
        """The annotated goal, for the red marker of the pictures (people only; agents never see it)."""
        return {"positions": self.transition.goal, "n_blocks": self.transition.n_blocks,
                "main_block": self.transition.moved_block}

    def write_picture(self, path: Path, caption: str) -> Path:
        """The board as it stands, with the goal marked, as a PNG."""
        from zoo.blocks.animation import write_episode_animation

        return write_episode_animation([self.frame()], path, goal=self.goal(), captions=[caption])

    def write_animation(self, run: InstructionRun, path: Path) -> Path:
        """A GIF of ``run``: the board before, then after each move, captioned."""
        from zoo.blocks.animation import write_episode_animation

        captions = [f"start, error {run.error_before:.2f}"] + [
            f"{i}: {move}{' (blocked)' if stuck else ''}" for i, (move, stuck) in enumerate(zip(run.moves, run.blocked), 1)]
        captions[-1] += f", error {run.error_after:.2f}"
        return write_episode_animation(run.frames, path, goal=self.goal(), captions=captions[: len(run.frames)],
                                       instruction=run.instruction)
