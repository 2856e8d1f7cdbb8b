"""Load the Blocks release (Bisk et al. 2016, as used by Misra et al. 2017) into typed records.

Raw JSON episodes -> :class:`Transition` per A0 note -> :class:`Example` per instruction.
Files come from a local directory (the caller's, ``$ZOO_DATA_DIR/blocks``, or the download
cache) or, when asked, are downloaded from the official repository and checked by sha256.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from zoo.blocks.geometry import BLOCK_SIZE, BOARD_HALF
from zoo.safe_json import JsonError, read_json
from zoo.blocks.records import DECORATIONS, BlocksSplit, Transition, moved_blocks
from zoo.paths import cache_dir, domain_data_dir

SPLITS = ("train", "dev", "test")
MAX_HEIGHT = 1.0
"""Blocks rest on the table (y = 0.1 in the release); anything far above it is not a board."""

OVERLAP_TOLERANCE = 0.1
"""Two blocks of a start or goal board overlap when their centres are closer than
``1 - OVERLAP_TOLERANCE`` block lengths on both axes. The release's simulator lets touching
blocks sink into each other a little (train holds pairs 0.95 block lengths apart); a block
inside another, or several stacked at one point, is not a board the agent can be scored on."""

MAX_INSTRUCTION_CHARACTERS = 2000
"""Characters an instruction may have. The release's longest has 383 (77 words; 332 in dev,
337 in test), so the margin is five-fold. The network reads every token (no model cuts the
instruction), so a record far past it, such as a pasted book of 400,000 words, would cost
minutes and gigabytes to score; it is refused when the file is read. Typed instructions are cut
shorter still, with a note, at :data:`zoo.play.terminal_text.MAX_LINE_CHARACTERS`."""

OFFICIAL_COMMIT = "798cba8"
OFFICIAL_URL = "https://raw.githubusercontent.com/clic-lab/blocks/{commit}/BlockWorldSimulator/Assets/{file}"

SPLIT_FILES = {
    "train": ("trainset.json", "ac46032db6b51fb7241af3087927a6570feff4909f69e57b2f916120b5f749ab"),
    "dev": ("devset.json", "3d0f74384ab2d1b05da003b7571154556ada97f4310776347ff5b6a27cb924da"),
    "test": ("testset.json", "7427bc6a8c8118edcdb8ef171ad959901cdb4b3c4b09e8d23695cc5214796266"),
}

TUNING_EPISODES_PER_DECORATION = 2


class BlocksDataError(ValueError):
    """The Blocks JSON does not have the structure of the release."""


def locate_split(split: str, data_dir: str | os.PathLike | None = None, download: bool = False) -> Path:
    """Path of ``split``'s JSON file, downloading it into the cache if allowed and needed."""
    if split not in SPLIT_FILES:
        raise ValueError(f"unknown Blocks split {split!r}; choose one of {SPLITS}")
    filename, sha256 = SPLIT_FILES[split]
    local = domain_data_dir("blocks", data_dir)
    if local is not None and (local / filename).is_file():
        return local / filename
    if data_dir is not None:
        raise FileNotFoundError(f"{filename} not found in {data_dir}")
    cached = cache_dir() / "blocks" / filename
    if cached.is_file():
        return cached
    url = OFFICIAL_URL.format(commit=OFFICIAL_COMMIT, file=filename)
    if not download:
        raise FileNotFoundError(
            f"Blocks {split} data ({filename}) not found. Set ZOO_DATA_DIR to a directory holding "
            f"blocks/{filename}, pass data_dir=, place the file at {cached}, or pass download=True "
            f"to fetch it from {url}."
        )
    from zoo.hub import download_file

    return download_file(url, sha256, cached)


def load_split(split: str, data_dir: str | os.PathLike | None = None, download: bool = False) -> BlocksSplit:
    """Load one split of the release: transitions, examples and the tuning mask."""
    path = locate_split(split, data_dir, download)
    try:
        raw = read_json(path)
    except JsonError as error:
        raise BlocksDataError(str(error)) from None
    episodes = parse_episodes(raw, source=str(path))
    return build_split(split, episodes)


def build_split(name: str, episodes: list[list[Transition]]) -> BlocksSplit:
    """Flatten episodes into a split and mark the tuning examples (docs/blocks_environment.md §1.4)."""
    transitions = [t for episode in episodes for t in episode]
    examples, tuning = [], []
    held_episodes = _tuning_episodes(episodes)
    for index, episode in enumerate(episodes):
        for transition in episode:
            for example in transition.examples():
                examples.append(example)
                tuning.append(index in held_episodes)
    return BlocksSplit(name, transitions, examples, np.array(tuning, dtype=bool))


def _tuning_episodes(episodes: list[list[Transition]]) -> set[int]:
    held, seen = set(), {d: 0 for d in DECORATIONS}
    for index, episode in enumerate(episodes):
        if not episode:
            continue
        decoration = episode[0].decoration
        if seen[decoration] < TUNING_EPISODES_PER_DECORATION:
            seen[decoration] += 1
            held.add(index)
    return held


def parse_episodes(raw, source: str = "<json>") -> list[list[Transition]]:
    """Typed transitions of each raw episode, A0 notes only, in file order.

    Every structural assumption the simulator made is checked, so a malformed file fails here
    with the episode and field named rather than deep inside training.
    """
    if not isinstance(raw, list):
        raise BlocksDataError(f"{source}: expected a JSON list of episodes, got {type(raw).__name__}")
    return [_parse_episode(episode, f"{source}: episode {index}") for index, episode in enumerate(raw)]


def _parse_episode(episode, where: str) -> list[Transition]:
    if not isinstance(episode, dict):
        raise BlocksDataError(f"{where}: expected an object, got {type(episode).__name__}")
    for key in ("states", "notes", "decoration"):
        if key not in episode:
            raise BlocksDataError(f"{where}: missing key {key!r}")
    if isinstance(episode.get("filename"), str):
        where = f"{where} ({episode['filename']})"
    decoration = episode["decoration"]
    if decoration not in DECORATIONS:
        raise BlocksDataError(f"{where}: decoration must be 'digit' or 'logo', got {decoration!r}")
    frames = _parse_frames(episode["states"], where)
    episode_id = str(episode.get("filename", where))
    block_size = episode.get("side_length", 0.1524)
    if not _is_number(block_size) or not np.isclose(block_size, BLOCK_SIZE, rtol=1e-3):
        raise BlocksDataError(f"{where}: side_length must be {BLOCK_SIZE} (the simulator's block), got {block_size!r}")
    block_size = float(block_size)
    if not isinstance(episode["notes"], list):
        raise BlocksDataError(f"{where}: 'notes' must be a list, got {type(episode['notes']).__name__}")
    transitions = []
    for note_index, note in enumerate(episode["notes"]):
        note_where = f"{where}, note {note_index}"
        if not isinstance(note, dict) or "type" not in note:
            raise BlocksDataError(f"{note_where}: expected an object with a 'type'")
        if note["type"] != "A0":
            continue
        transitions.append(_parse_note(note, frames, episode_id, decoration, block_size, note_where))
    transitions.sort(key=lambda t: t.start_frame)
    return transitions


def _parse_frames(states, where: str) -> list[np.ndarray]:
    if not isinstance(states, list) or not states:
        raise BlocksDataError(f"{where}: 'states' must be a non-empty list of frames")
    frames = []
    for index, frame in enumerate(states):
        if not isinstance(frame, list) or not frame \
                or not all(isinstance(block, list) and len(block) == 3 for block in frame):
            raise BlocksDataError(f"{where}, frame {index}: expected a non-empty list of [x, y, z] blocks")
        bad = [value for block in frame for value in block if not _is_number(value)]
        if bad:
            raise BlocksDataError(f"{where}, frame {index}: block coordinates must be numbers, got {bad[0]!r}")
        array = np.asarray(frame, dtype=np.float64)
        if not np.isfinite(array).all() or np.abs(array[:, [0, 2]]).max(initial=0) > BOARD_HALF \
                or np.abs(array[:, 1]).max(initial=0) > MAX_HEIGHT:
            raise BlocksDataError(f"{where}, frame {index}: block coordinates must be finite and on the board "
                                  f"(|x|, |z| <= {BOARD_HALF}, |y| <= {MAX_HEIGHT})")
        if len(array) > 20:
            raise BlocksDataError(f"{where}, frame {index}: {len(array)} blocks; the world holds at most 20")
        frames.append(array[:, [0, 2]].copy())
    if len({len(f) for f in frames}) != 1:
        raise BlocksDataError(f"{where}: frames have different numbers of blocks")
    return frames


def _is_number(value) -> bool:
    """A JSON number: ``true`` is not a coordinate, ``"0.5"`` is not a size."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _overlapping_pair(board: np.ndarray, block_size: float) -> tuple[int, int] | None:
    """The first two blocks (indices) of a ``[n, 2]`` board that overlap, if any (see OVERLAP_TOLERANCE)."""
    gap = np.abs(board[:, None, :] - board[None, :, :]).max(axis=-1)
    first, second = np.nonzero(np.triu(gap < (1 - OVERLAP_TOLERANCE) * block_size, k=1))
    return (int(first[0]), int(second[0])) if len(first) else None


def _check_one_block_moves(frames: list[np.ndarray], start: int, finish: int, where: str) -> None:
    """An A0 note is one block's move (docs/blocks_environment.md §1.3): with no block moved there
    is nothing to do and every policy scores zero, and with several the distance error, the reward
    and the expert follow only the first of them (:attr:`Transition.moved_block`)."""
    moved, span = moved_blocks(frames[start], frames[finish]), f"from frame {start} to frame {finish}"
    if len(moved) == 0:
        raise BlocksDataError(f"{where}: no block moves {span} (the start board is the goal)")
    if len(moved) > 1:
        names = ", ".join(str(i + 1) for i in moved[:-1]) + f" and {moved[-1] + 1}"
        raise BlocksDataError(f"{where}: blocks {names} move {span}; an A0 note is one block's move")


def _parse_note(note, frames, episode_id, decoration, block_size, where) -> Transition:
    if "notes" not in note or not all(isinstance(note.get(key), int) and not isinstance(note.get(key), bool)
                                      for key in ("start", "finish")):
        raise BlocksDataError(f"{where}: A0 notes need integer 'start'/'finish' and a 'notes' list; got start "
                              f"{note.get('start')!r}, finish {note.get('finish')!r}")
    start, finish = note["start"], note["finish"]
    texts, users = note["notes"], note.get("users", [])
    if not (0 <= start < len(frames) and 0 <= finish < len(frames)):
        raise BlocksDataError(f"{where}: frames {start}->{finish} outside the episode's {len(frames)} frames")
    if finish <= start:
        raise BlocksDataError(f"{where}: the goal frame {finish} is not after the start frame {start}")
    for name, frame in (("start", start), ("goal", finish)):
        pair = _overlapping_pair(frames[frame], block_size)
        if pair is not None:
            raise BlocksDataError(f"{where}: blocks {pair[0] + 1} and {pair[1] + 1} overlap on the {name} board "
                                  f"(frame {frame})")
    _check_one_block_moves(frames, start, finish, where)
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise BlocksDataError(f"{where}: 'notes' must be a list of instruction strings")
    for index, text in enumerate(texts):
        if len(text) > MAX_INSTRUCTION_CHARACTERS:
            raise BlocksDataError(f"{where}: instruction {index} has {len(text)} characters, more than the "
                                  f"{MAX_INSTRUCTION_CHARACTERS} an instruction may have")
    if not isinstance(users, list):
        raise BlocksDataError(f"{where}: 'users' must be a list, got {type(users).__name__}")
    if len(users) != len(texts):
        raise BlocksDataError(f"{where}: {len(texts)} instructions but {len(users)} users")
    return Transition(
        episode_id=episode_id,
        start_frame=start,
        goal_frame=finish,
        decoration=decoration,
        start=frames[start],
        goal=frames[finish],
        instructions=tuple(texts),
        users=tuple(str(u) for u in users),
        block_size=block_size,
    )
