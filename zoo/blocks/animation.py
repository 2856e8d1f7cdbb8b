"""Episode animations for people: upscaled frames with a caption bar, as a GIF or a PNG grid.

Frames come in the agent's convention (``[3, 120, 120]`` uint8, row 0 at -z) and are flipped
so that +z is up. The goal marker of the original README figures (a red 0.15 x 0.15 square
on the ground at the main block's goal) is painted here, on the human view only: the agent
never saw it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFont

from zoo.blocks.render import IMAGE_SIZE, project, to_display

__all__ = ["Goal", "write_episode_animation", "compose_frames"]

GOAL_SIZE = 0.15
GOAL_RGB = (255, 117, 125)
"""The marker's colour in the reference renders."""

CAPTION_RGB = (24, 24, 24)
CAPTION_BACKGROUND = (245, 245, 240)
GRID_COLUMNS = 5


class Goal(NamedTuple):
    """Where the main block should end: goal board ``positions`` (``[n, 2]`` JSON ``(x, z)``),
    its block count and the index of the block that moves."""

    positions: Sequence[Sequence[float]] | np.ndarray | torch.Tensor
    n_blocks: int
    block: int

    def centre(self) -> tuple[float, float]:
        if not 0 <= int(self.block) < int(self.n_blocks):
            raise ValueError(f"goal block {self.block} is not among the {self.n_blocks} blocks")
        x, z = torch.as_tensor(self.positions).detach().cpu().to(torch.float64)[int(self.block)].tolist()
        return x, z

    @classmethod
    def coerce(cls, goal: "Goal | Sequence | Mapping") -> "Goal":
        """A :class:`Goal` from itself, a ``(positions, n_blocks, block)`` sequence or a mapping
        with ``positions``, ``n_blocks`` and ``main_block`` (or ``block``)."""
        if isinstance(goal, Mapping):
            block = goal["main_block"] if "main_block" in goal else goal["block"]
            return cls(goal["positions"], int(goal["n_blocks"]), int(block))
        return cls(*goal)


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Pillow's embedded font, available offline."""
    return ImageFont.load_default(size=size)


def _wrap(text: str, font: ImageFont.FreeTypeFont | ImageFont.ImageFont, width: float) -> list[str]:
    """Greedy word wrap by measured pixel width (a fixed character count overflows or wastes
    space with a proportional font)."""
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        line = ""
        for word in paragraph.split():
            candidate = f"{line} {word}".strip()
            if line and font.getlength(candidate) > width:
                lines.append(line)
                line = word
            else:
                line = candidate
        lines.append(line)
    return lines


def _as_display(frames: Sequence[torch.Tensor | np.ndarray]) -> np.ndarray:
    """``[T, H, W, 3]`` uint8 with +z up, from agent-convention frames."""
    if len(frames) == 0:
        raise ValueError("no frames to write")
    stack = torch.stack([torch.as_tensor(frame).detach().cpu().to(torch.uint8) for frame in frames])
    if stack.shape[1:] != (3, IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(f"frames must be [3, {IMAGE_SIZE}, {IMAGE_SIZE}] uint8, got {tuple(stack.shape[1:])}")
    return to_display(stack)


def _paint_goal(image: np.ndarray, goal: Goal, scale: int) -> np.ndarray:
    """Paint the goal square on the ground of an upscaled display image ``[H, W, 3]``.

    The marker lies on the ground, so only ground-coloured pixels take it (pale yellow: R and G
    near 255, blue well below white); blocks standing on it hide it as in the originals."""
    x, z = goal.centre()
    half = GOAL_SIZE / 2
    left, bottom = project(x - half, z - half)
    right, top = project(x + half, z + half)
    # Display rows run from +z down; pixel centres at (i + 0.5) / scale.
    centres = (np.arange(image.shape[0]) + 0.5) / scale
    rows = (centres >= IMAGE_SIZE - top) & (centres < IMAGE_SIZE - bottom)
    cols = (centres >= left) & (centres < right)
    ground = (image[..., 0] >= 235) & (image[..., 1] >= 235) & (image[..., 2] <= 215)
    mask = rows[:, None] & cols[None, :] & ground
    image = image.copy()
    image[mask] = GOAL_RGB
    return image


def compose_frames(
    frames: Sequence[torch.Tensor | np.ndarray],
    goal: Goal | Sequence | Mapping | None = None,
    captions: Sequence[str] | None = None,
    scale: int = 4,
    instruction: str | None = None,
) -> list[Image.Image]:
    """Upscaled (nearest) display frames, each with a caption bar underneath: the wrapped
    ``instruction`` and the frame's caption (default ``step i/N``). All panels share one size."""
    images = _as_display(frames)
    count = len(images)
    if captions is not None and len(captions) != count:
        raise ValueError(f"{len(captions)} captions for {count} frames")
    captions = list(captions) if captions is not None else [f"step {i}/{count - 1}" for i in range(count)]
    goal = Goal.coerce(goal) if goal is not None else None
    side = IMAGE_SIZE * scale
    font = _font(max(10, 3 * scale))
    line_height = int(math.ceil(font.size * 1.25)) if hasattr(font, "size") else 14
    margin = max(4, scale)
    texts = [
        _wrap(f"{instruction}\n{caption}" if instruction else caption, font, side - 2 * margin) for caption in captions
    ]
    bar = margin * 2 + line_height * max(len(lines) for lines in texts)

    panels = []
    for image, lines in zip(images, texts):
        big = np.repeat(np.repeat(image, scale, axis=0), scale, axis=1)
        if goal is not None:
            big = _paint_goal(big, goal, scale)
        panel = Image.new("RGB", (side, side + bar), CAPTION_BACKGROUND)
        panel.paste(Image.fromarray(big), (0, 0))
        draw = ImageDraw.Draw(panel)
        for row, line in enumerate(lines):
            draw.text((margin, side + margin + row * line_height), line, fill=CAPTION_RGB, font=font)
        panels.append(panel)
    return panels


def _grid(panels: list[Image.Image]) -> Image.Image:
    """Panels left to right, top to bottom, ``GRID_COLUMNS`` per row, 4-pixel white gutters."""
    columns = min(GRID_COLUMNS, len(panels))
    rows = math.ceil(len(panels) / columns)
    width, height = panels[0].size
    gutter = 4
    size = (columns * width + (columns - 1) * gutter, rows * height + (rows - 1) * gutter)
    sheet = Image.new("RGB", size, (255, 255, 255))
    for i, panel in enumerate(panels):
        sheet.paste(panel, ((i % columns) * (width + gutter), (i // columns) * (height + gutter)))
    return sheet


def _save_atomically(path: Path, save, replace: bool = True) -> None:
    """Write through a temporary file in the target directory, then rename: a reader never
    sees half a file and a failure leaves nothing behind (``replace=False``: nor is an
    existing file written over)."""
    from zoo.safe_writes import atomic_write

    atomic_write(path, save, replace=replace)


def write_episode_animation(
    frames: Sequence[torch.Tensor | np.ndarray],
    path: str | os.PathLike,
    goal: Goal | Sequence | Mapping | None = None,
    captions: Sequence[str] | None = None,
    scale: int = 4,
    fps: float = 2,
    instruction: str | None = None,
    replace: bool = True,
) -> Path:
    """Write an episode for people: a looping GIF, or a PNG grid when ``path`` ends in ``.png``.

    Args:
        frames: agent-convention frames ``[3, 120, 120]`` uint8 (e.g. from
            :meth:`BoardRenderer.render`), in temporal order.
        path: output file; written atomically.
        goal: ``Goal(positions, n_blocks, block)``, the same as a tuple, or a mapping with
            ``positions``, ``n_blocks`` and ``main_block``: paints the red goal marker at
            ``positions[main_block]``.
        captions: one line per frame (e.g. ``"step 3: move block 6 left"``); default
            ``"step i/N"``.
        scale: nearest-neighbour upscaling factor.
        fps: GIF frame rate.
        instruction: text shown, wrapped, above every caption.
        replace: False refuses (:class:`~zoo.errors.UnsafeDestinationError`) an existing
            ``path`` rather than replacing it.
    """
    path = Path(path)
    panels = compose_frames(frames, goal=goal, captions=captions, scale=scale, instruction=instruction)
    if path.suffix.lower() == ".png":
        sheet = _grid(panels)
        _save_atomically(path, lambda stream: sheet.save(stream, format="PNG"), replace)
    else:
        duration = int(round(1000 / fps))
        _save_atomically(
            path,
            lambda stream: panels[0].save(
                stream, format="GIF", save_all=True, append_images=panels[1:], duration=duration, loop=0, disposal=1
            ),
            replace,
        )
    return path
