"""Goal-prediction targets: where an instruction puts its block, as a cell of a map over the
start image.

Goal prediction (Misra et al., EMNLP 2018) splits instruction following into reading where
the goal is and getting there. Its data is one item per example: the start board's frame
(what the agent sees before it acts), the instruction, the block that moves and its goal
centre, and that centre as a cell of a ``cells x cells`` grid over the image. The camera sees
the blocks' top faces, so the goal is placed on the image where the moved block's top face
would be seen (:func:`~zoo.blocks.render.project` at the block's height); a cell maps back to
the board the same way (:func:`cell_centre`).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from zoo.blocks.board import BoardBatch, distance_error
from zoo.blocks.expert import EpisodeExpert
from zoo.blocks.geometry import BLOCK_SIZE, HORIZON
from zoo.blocks.records import Example, Transition
from zoo.blocks.render import IMAGE_SIZE, project, unproject
from zoo.blocks.vocab import Vocabulary

MAP_CELLS = 60
"""Cells per side of the goal map: 2 pixels each, about a quarter of a block length."""


MIRRORED_WORDS = {"left": "right", "lefthand": "righthand", "leftmost": "rightmost", "lefts": "rights",
                  "west": "east", "western": "eastern", "northwest": "northeast", "southwest": "southeast"}
"""Words that swap when the board is mirrored left to right (both directions)."""
MIRRORED_WORDS |= {right: left for left, right in MIRRORED_WORDS.items()}


def mirrored_transition(transition: Transition) -> Transition:
    """``transition`` mirrored left to right: every block's x negated (the board is symmetric
    about x = 0, so every position stays on it; digits and logos go with their blocks)."""
    flip = np.array([-1.0, 1.0])
    return dataclasses.replace(transition, start=transition.start * flip, goal=transition.goal * flip)


def mirrored(example: Example, transition: Transition | None = None) -> Example:
    """``example`` mirrored left to right, its instruction's left/right words swapped: a second,
    consistent example for training. Pass the mirrored ``transition`` to share one among the
    examples of a transition (see :func:`mirrored_examples`)."""
    words = re.sub(r"[A-Za-z]+", lambda m: MIRRORED_WORDS.get(m.group(0).lower(), m.group(0)), example.instruction)
    return dataclasses.replace(example, transition=transition or mirrored_transition(example.transition),
                               instruction=words)


def mirrored_examples(examples: Sequence[Example]) -> list[Example]:
    """Every example mirrored, the examples of one transition sharing its mirror (rendered once)."""
    mirrors: dict[int, Transition] = {}
    return [mirrored(e, mirrors.setdefault(id(e.transition), mirrored_transition(e.transition))) for e in examples]


def goal_cell(goal: torch.Tensor, cells: int = MAP_CELLS) -> torch.Tensor:
    """The map cell (row-major index) where a goal centre ``[N, 2]`` (x, z) is seen. [N]"""
    u, v = project(goal[:, 0].double(), goal[:, 1].double(), height=BLOCK_SIZE)
    per_cell = IMAGE_SIZE / cells
    column = (u / per_cell).floor().long().clamp(0, cells - 1)
    row = (v / per_cell).floor().long().clamp(0, cells - 1)  # rows grow with +z (the agent's frames)
    return row * cells + column


def cell_centre(cells_index: torch.Tensor, cells: int = MAP_CELLS) -> torch.Tensor:
    """The board point (x, z) at the centre of map cells (row-major indices). [N, 2]"""
    per_cell = IMAGE_SIZE / cells
    row, column = cells_index // cells, cells_index % cells
    x, z = unproject((column.double() + 0.5) * per_cell, (row.double() + 0.5) * per_cell, height=BLOCK_SIZE)
    return torch.stack([x, z], dim=-1)


def goal_errors(predicted: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
    """Distances between predicted and true goal centres, in block lengths. [N]"""
    return (predicted.double() - goal.double()).norm(dim=-1) / BLOCK_SIZE


def executed_errors(transitions: Sequence[Transition], block: torch.Tensor, goal: torch.Tensor,
                    horizon: int = HORIZON) -> torch.Tensor:
    """The task's error (the paper's metric, block lengths) if each episode's ``block`` [N] went
    to its predicted ``goal`` centre [N, 2] the way the shortest-path expert goes, around the
    other blocks, and stopped on the reachable lattice cell nearest it. [N]

    This is what a goal prediction is worth to a controller that carries it out perfectly: it
    separates reading the instruction from acting. The true block and goal score the oracle's
    lattice error; a block the board does not hold moves nothing.
    """
    boards = BoardBatch.from_transitions(transitions)
    final = boards.start.clone()
    start = boards.start.numpy()
    for row, (moved, point, count) in enumerate(zip(block.tolist(), goal.double().numpy(), boards.n_blocks.tolist())):
        if not 0 <= moved < count:
            continue
        target = start[row].copy()
        target[moved] = point
        expert = EpisodeExpert(start[row], target, moved, count)
        field, _ = expert.field_at(start[row], horizon)
        i, j = field.end
        final[row, moved] = torch.tensor([expert.cell_x[i], expert.cell_z[j]], dtype=final.dtype)
    return distance_error(final, boards.goal)


def goal_report(goal: torch.Tensor, block: torch.Tensor, targets: "GoalTargets",
                transitions: Sequence[Transition] | None = None) -> dict[str, float]:
    """How good predicted goal centres [N, 2] and blocks [N] are against ``targets``: the goal
    error's mean and median (block lengths), the share within one block length, the block
    accuracy; with the split's ``transitions`` (one per item), also the task error of carrying
    the prediction out with the shortest-path expert (:func:`executed_errors`)."""
    errors = goal_errors(goal, targets.goal)
    report = {"goal_error": float(errors.mean()), "goal_error_median": float(errors.median()),
              "within_one_block": float((errors <= 1.0).float().mean()),
              "block_accuracy": float((block == targets.block).float().mean())}
    if transitions is not None:
        report["carried_out_error"] = float(executed_errors(transitions, block, goal).mean())
    return report


@dataclass
class GoalTargets:
    """Every example of a split as tensors: ``frames`` [T, 3, H, W] uint8 (one per transition),
    ``frame_of`` [N] (each example's frame), ``tokens`` [N, L] and ``lengths`` [N], ``block`` [N]
    (the block that moves), ``start`` [N, 2] (where it stands), ``goal`` [N, 2] and ``cell`` [N]."""

    frames: torch.Tensor
    frame_of: torch.Tensor
    tokens: torch.Tensor
    lengths: torch.Tensor
    block: torch.Tensor
    start: torch.Tensor
    goal: torch.Tensor
    cell: torch.Tensor

    def __len__(self) -> int:
        return len(self.block)

    def batch(self, rows: torch.Tensor) -> dict[str, torch.Tensor]:
        """The items ``rows`` (tokens cut to the longest of them)."""
        lengths = self.lengths[rows]
        return {"frames": self.frames[self.frame_of[rows]], "tokens": self.tokens[rows, : int(lengths.max())],
                "lengths": lengths, "block": self.block[rows], "start": self.start[rows], "goal": self.goal[rows],
                "cell": self.cell[rows]}


def goal_targets(examples: Sequence[Example], renderer, vocabulary: Vocabulary, cells: int = MAP_CELLS,
                 render_batch: int = 64) -> GoalTargets:
    """Goal targets of ``examples``; each transition's start frame is rendered once."""
    transitions, frame_of, seen = [], [], {}
    for example in examples:
        key = id(example.transition)
        if key not in seen:
            seen[key] = len(transitions)
            transitions.append(example.transition)
        frame_of.append(seen[key])
    frames = torch.cat([renderer.render_boards([t.start for t in transitions[first : first + render_batch]],
                                               [t.decoration == "logo" for t in transitions[first : first + render_batch]])
                        for first in range(0, len(transitions), render_batch)])
    tokens, lengths = vocabulary.encode_batch([e.instruction for e in examples])
    block = torch.tensor([e.transition.moved_block for e in examples], dtype=torch.long)
    start = torch.tensor(np.stack([e.transition.start[e.transition.moved_block] for e in examples]), dtype=torch.float64)
    goal = torch.tensor(np.stack([e.transition.goal[e.transition.moved_block] for e in examples]), dtype=torch.float64)
    return GoalTargets(frames.to(torch.uint8), torch.tensor(frame_of, dtype=torch.long), tokens, lengths, block,
                       start, goal, goal_cell(goal, cells))
