"""``BlocksDataModule``: supervised demonstration steps for the block policy.

Every step of every demonstration is one training item: the image stack the agent would see
there (current frame and four previous, zeros before the start), the instruction, the
previous action and the oracle's action. Frames are rendered when a batch is collated, for
the whole batch at once, instead of stored: the train split has ~180k steps, 7.5 GB of frames.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from zoo.blocks.demos import Demonstration, DemonstrationCache
from zoo.blocks.geometry import MAX_BLOCKS
from zoo.blocks.goals import GoalTargets, goal_targets
from zoo.blocks.procedural import check_split_size
from zoo.blocks.records import BlocksSplit, Example
from zoo.blocks.vocab import Vocabulary, build_vocabulary
from zoo.resumable import ReplayMemoryBatches, ResumableBatchLoader, ResumableLoader

SUPERVISED_SCHEDULES = ("epoch", "replay")
"""``epoch``: every demonstration step once per epoch, shuffled, in batches of ``batch_size``;
``replay``: the original trainer's (docs/blocks_environment.md §6.4), one batch per demonstration episode drawn
from a memory of the last ``replay_capacity`` steps."""

LIMITED_SPLITS = ("train", "tuning", "dev")
"""What ``limit`` can shorten: the training examples, the tuning examples held out of the
train split (the model-selection set), and dev."""


@dataclass
class DemonstrationSteps(Dataset):
    """``(example index, step)`` pairs over the demonstrations of ``examples``."""

    examples: Sequence[Example]
    demos: DemonstrationCache

    def __post_init__(self):
        lengths = [len(self.demos(e.transition)) for e in self.examples]
        self.items = np.array([(i, t) for i, n in enumerate(lengths) for t in range(n)], dtype=np.int64)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> tuple[int, int]:
        example, step = self.items[index]
        return int(example), int(step)


@dataclass
class EpisodeIndices(Dataset):
    """Positions 0..size-1: which training examples a rollout batch plays."""

    size: int

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> int:
        return index


class StepCollator:
    """Turns ``(example, step)`` pairs into model inputs, rendering all frames in one call."""

    def __init__(self, examples: Sequence[Example], demos: DemonstrationCache, vocabulary: Vocabulary,
                 renderer, history: int = 4):
        self.examples, self.demos, self.vocabulary = examples, demos, vocabulary
        self.renderer, self.history = renderer, history

    def __call__(self, items: list[tuple[int, int]]) -> dict[str, torch.Tensor]:
        from zoo.blocks.history import standardize

        frames = self.history + 1
        positions = np.zeros((len(items), frames, MAX_BLOCKS, 2))
        exists = np.zeros((len(items), frames), dtype=bool)
        n_blocks, logo, previous, gold, moved, goal, now = [], [], [], [], [], [], []
        for row, (index, step) in enumerate(items):
            example = self.examples[index]
            transition, demo = example.transition, self.demos(example.transition)
            for slot, past in enumerate(range(step - self.history, step + 1)):
                if past >= 0:
                    positions[row, slot, : transition.n_blocks] = _board_at(transition.start, demo, past)
                    exists[row, slot] = True
            n_blocks.append(transition.n_blocks)
            logo.append(transition.decoration == "logo")
            previous.append(demo.actions[step - 1] if step > 0 else -1)
            gold.append(demo.actions[step])
            moved.append(transition.moved_block)
            goal.append(transition.goal[transition.moved_block])
            now.append(positions[row, -1, transition.moved_block])
        # Render only the frames that exist (not the zero padding before an episode starts),
        # straight into one preallocated float buffer: fresh 27 MB tensors cost more than drawing.
        present = torch.from_numpy(exists.reshape(-1))
        rendered = self.renderer.render(
            torch.from_numpy(positions.reshape(-1, MAX_BLOCKS, 2)[exists.reshape(-1)]),
            torch.tensor(n_blocks).repeat_interleave(frames)[present],
            torch.tensor(logo).repeat_interleave(frames)[present],
        )
        images = torch.zeros(len(items) * frames, *rendered.shape[1:])
        images[present] = rendered.float()
        images = images.view(len(items), frames * rendered.shape[1], *rendered.shape[2:]).mul_(1.0 / 255.0)
        tokens, lengths = self.vocabulary.encode_batch([self.examples[i].instruction for i, _ in items])
        return {
            "images": standardize(images, inplace=True),
            "tokens": tokens,
            "lengths": lengths,
            "previous_action": torch.tensor(previous, dtype=torch.long),
            "action": torch.tensor(gold, dtype=torch.long),
            "block": torch.tensor(moved, dtype=torch.long),  # the block the instruction moves, and its goal centre
            "goal": torch.tensor(np.stack(goal), dtype=torch.float32),
            "block_position": torch.tensor(np.stack(now), dtype=torch.float32),  # where that block stands now
        }


def check_limit(limit) -> None:
    """Raise ValueError (one line) unless ``limit`` is None, a positive integer, or a mapping
    from names in :data:`LIMITED_SPLITS` to positive integers or None."""
    def positive(value) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1

    if limit is None or positive(limit):
        return
    if not isinstance(limit, Mapping):
        raise ValueError(f"limit must be a positive integer or {{train: N, tuning: N, dev: N}}, got {limit!r}")
    for split, size in limit.items():
        if split not in LIMITED_SPLITS:
            raise ValueError(f"limit: unknown split {split!r} ({', '.join(LIMITED_SPLITS)}); write {{train: 40}} "
                             f"with a space after the colon")
        if size is not None and not positive(size):
            raise ValueError(f"limit: {split} must be a positive integer, got {size!r}")


def _board_at(start: np.ndarray, demo: Demonstration, step: int) -> np.ndarray:
    """The board before demonstration action ``step``: only the planned block has moved."""
    board = start.copy()
    board[demo.block] = demo.points[step]
    return board


DATA_MODES = ("steps", "episodes", "targets", "goals")
"""What a data module yields (an objective's ``data_mode``)."""


class BlocksDataModule(L.LightningDataModule):
    """Blocks splits for training: supervised demonstration steps and episodes to roll out.

    ``source="auto"`` uses the real release when found (``data_dir``, ``$ZOO_DATA_DIR/blocks``,
    the cache, or a download with ``download=True``) and procedural boards otherwise;
    ``"real"`` insists on the release; ``"procedural"`` always generates boards
    (``procedural_sizes`` sets the transitions per split). ``supervised_schedule`` picks how
    demonstration steps are batched (:data:`SUPERVISED_SCHEDULES`). ``limit``: keep only the
    first N examples of each of :data:`LIMITED_SPLITS` (quick runs), or a mapping from split
    name to N (splits not named stay whole); the vocabulary is built from the examples kept.
    """

    def __init__(
        self,
        data_dir: str | None = None,
        source: str = "auto",
        download: bool = False,
        batch_size: int = 32,
        num_workers: int = 0,
        history: int = 4,
        procedural_sizes: dict | None = None,
        seed: int = 0,
        mode: str = "steps",
        episodes_per_batch: int = 32,
        supervised_schedule: str = "epoch",
        replay_capacity: int = 2000,
        limit: int | Mapping[str, int | None] | None = None,
    ):
        super().__init__()
        if source not in ("auto", "real", "procedural"):
            raise ValueError(f"source must be 'auto', 'real' or 'procedural', got {source!r}")
        if mode not in DATA_MODES:
            raise ValueError(f"mode must be 'steps' (supervised), 'episodes' (rollouts), 'targets' "
                             f"(block and goal, for the oracle-planner baseline) or 'goals' (the goal reader's "
                             f"start frames and goal cells), got {mode!r}")
        for split, size in (procedural_sizes or {}).items():
            if split not in ("train", "dev", "test"):
                raise ValueError(f"procedural_sizes: unknown split {split!r} (train, dev, test); write {{train: 40}} "
                                 f"with a space after the colon")
            if not isinstance(size, int) or isinstance(size, bool) or size < 1:
                raise ValueError(f"procedural_sizes: {split} must be a positive integer, got {size!r}")
            check_split_size(split, size)
        check_limit(limit)
        if supervised_schedule not in SUPERVISED_SCHEDULES:
            raise ValueError(f"supervised_schedule must be one of {SUPERVISED_SCHEDULES}; got {supervised_schedule!r}")
        self.save_hyperparameters()
        self.demos = DemonstrationCache()
        self._splits: dict[str, BlocksSplit] = {}
        self.vocabulary: Vocabulary | None = None
        self._renderer = None
        self._goal_targets: dict[str, GoalTargets] = {}

    def prepare_data(self) -> None:
        """Download the release once (rank 0 only, as Lightning calls it)."""
        if self.hparams.source != "procedural" and self.hparams.download:
            from zoo.blocks.data import SPLITS, locate_split

            for split in SPLITS:
                locate_split(split, self.hparams.data_dir, download=True)

    def split(self, name: str) -> BlocksSplit:
        if name not in self._splits:
            self._splits[name] = self._open(name)
        return self._splits[name]

    def _open(self, name: str) -> BlocksSplit:
        from zoo.blocks.procedural import procedural_split
        from zoo.blocks.sources import open_split

        source = self.hparams.source
        if source == "procedural":
            sizes = self.hparams.procedural_sizes or {}
            return procedural_split(name, sizes.get(name))
        split, found = open_split(name, self.hparams.data_dir, self.hparams.download, procedural_fallback=source == "auto")
        self.data_source = found
        return split

    def setup(self, stage: str | None = None) -> None:
        train = self.split("train")
        self.train_examples = self.limited("train", train.training_examples())
        self.tuning_examples = self.limited("tuning", train.tuning_examples())
        self.dev_examples = self.limited("dev", self.split("dev").examples)
        if self.vocabulary is None:
            self.vocabulary = Vocabulary(build_vocabulary(e.instruction for e in self.train_examples))

    def limited(self, split: str, examples: list[Example]) -> list[Example]:
        """The first ``limit`` examples of ``split`` (all of them without a limit for it)."""
        limit = self.hparams.limit
        size = limit.get(split) if isinstance(limit, Mapping) else limit
        return examples if size is None else examples[:size]

    @property
    def renderer(self):
        if self._renderer is None:
            from zoo.blocks.render import BoardRenderer

            self._renderer = BoardRenderer(self.hparams.data_dir)
        return self._renderer

    def _steps_loader(self, examples: Sequence[Example], shuffle: bool) -> DataLoader:
        collate = StepCollator(examples, self.demos, self.vocabulary, self.renderer, self.hparams.history)
        if shuffle and self.hparams.supervised_schedule == "replay":
            steps = DemonstrationSteps(examples, self.demos)
            sizes = np.bincount(steps.items[:, 0], minlength=len(examples)).tolist()
            batches = ReplayMemoryBatches(sizes, self.hparams.batch_size, self.hparams.replay_capacity, self.hparams.seed)
            return ResumableBatchLoader(steps, batches, num_workers=self.hparams.num_workers, collate_fn=collate,
                                        persistent_workers=self.hparams.num_workers > 0)
        return ResumableLoader(
            DemonstrationSteps(examples, self.demos),
            batch_size=self.hparams.batch_size,
            seed=self.hparams.seed,
            shuffle=shuffle,
            num_workers=self.hparams.num_workers,
            collate_fn=collate,
            persistent_workers=self.hparams.num_workers > 0,
        )

    def _episodes_loader(self, examples: Sequence[Example]) -> DataLoader:
        """Batches of example indices; a ContextualBanditLoop turns them into experience."""
        return ResumableLoader(
            EpisodeIndices(len(examples)),
            batch_size=self.hparams.episodes_per_batch,
            seed=self.hparams.seed,
            shuffle=True,
            collate_fn=lambda indices: {"episodes": torch.tensor(indices, dtype=torch.long)},
        )

    def _targets_loader(self, examples: Sequence[Example], shuffle: bool) -> DataLoader:
        """One item per example: the start stack, the block to move and its goal centre."""
        steps = StepCollator(examples, self.demos, self.vocabulary, self.renderer, self.hparams.history)

        return ResumableLoader(EpisodeIndices(len(examples)), batch_size=self.hparams.batch_size, seed=self.hparams.seed,
                               shuffle=shuffle, collate_fn=lambda indices: steps([(i, 0) for i in indices]))

    def goal_targets(self, split: str) -> GoalTargets:
        """The goal-prediction items of ``split`` (``train``, ``tuning`` or ``dev``), each start
        frame rendered once and kept for the module's life."""
        if split not in self._goal_targets:
            examples = {"train": self.train_examples, "tuning": self.tuning_examples, "dev": self.dev_examples}[split]
            self._goal_targets[split] = goal_targets(examples, self.renderer, self.vocabulary)
        return self._goal_targets[split]

    def _goals_loader(self, split: str, shuffle: bool) -> DataLoader:
        targets = self.goal_targets(split)
        return ResumableLoader(EpisodeIndices(len(targets)), batch_size=self.hparams.batch_size, seed=self.hparams.seed,
                               shuffle=shuffle, collate_fn=lambda rows: targets.batch(torch.tensor(rows)))

    def train_dataloader(self) -> DataLoader:
        if self.hparams.mode == "goals":
            return self._goals_loader("train", shuffle=True)
        if self.hparams.mode == "episodes":
            return self._episodes_loader(self.train_examples)
        if self.hparams.mode == "targets":
            return self._targets_loader(self.train_examples, shuffle=True)
        return self._steps_loader(self.train_examples, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        if self.hparams.mode == "goals":
            return self._goals_loader("tuning", shuffle=False)
        if self.hparams.mode == "targets":
            return self._targets_loader(self.tuning_examples, shuffle=False)
        return self._steps_loader(self.tuning_examples, shuffle=False)

    def state_dict(self) -> dict:
        """The vocabulary travels in Lightning checkpoints, so resumed runs encode identically."""
        return {"vocabulary": self.vocabulary.words if self.vocabulary else None}

    def load_state_dict(self, state: dict) -> None:
        if state.get("vocabulary"):
            self.vocabulary = Vocabulary(state["vocabulary"])
