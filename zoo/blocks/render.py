"""Top-down 120x120 frames of Blocks boards (docs/blocks_environment.md §6); the history stack and the
standardisation the agent sees them through live in :mod:`zoo.blocks.history`.

The original simulator rendered a Unity scene; this module redraws it without a GPU or a
window. Everything that does not depend on the board (camera rays, ground, the textures of
all 40 decorations on every face) is computed once in :class:`BoardRenderer`. A frame is then
a few vectorised tensor operations over a fixed pixel window around every block of every
episode: per window pixel we find which face of the block its camera ray meets and which
texel of that face it sees, look the colour up in a precomputed atlas, and scatter it into
a copy of the background.

Array convention (docs/blocks_environment.md §6.3, the agent's): ``frame[:, r, c]`` with row ``r`` increasing
toward +z (the Unity texture is bottom row first) and column ``c`` toward +x.
:func:`to_display` flips rows for people.

Colours were measured on the reference renders of the original simulator
(``reference-renders/example{1..4}.png``): the ground's blue channel and the top faces
follow a light linear gradient over the board (a reflection of the directional light);
side faces are a constant, slightly lighter and yellower green.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFont

from zoo.blocks.geometry import BLOCK_SIZE, BOARD_HALF, LOGO_BRANDS, MAX_BLOCKS
from zoo.blocks.history import HISTORY, HistoryStack, standardize  # re-exported: their old home
from zoo.paths import domain_data_dir

__all__ = [
    "IMAGE_SIZE",
    "HISTORY",
    "BoardRenderer",
    "HistoryStack",
    "standardize",
    "to_display",
    "project",
    "unproject",
]

IMAGE_SIZE = 120
"""Frames are square, ``config.txt: screen size:120``."""

CAMERA_X = -0.03
"""Camera position over the board in the JSON frame (sim x = +0.03); camera z is 0."""

CAMERA_HEIGHT = 2.265
FIELD_OF_VIEW = 60.0
"""Vertical field of view in degrees; the aspect is 1."""

FOCAL = (IMAGE_SIZE / 2) / math.tan(math.radians(FIELD_OF_VIEW / 2))
"""Pixels per unit of (lateral offset / depth): 103.92."""

TOP_DEPTH = CAMERA_HEIGHT - BLOCK_SIZE
"""Depth of a settled block's top face below the camera; its width is ``FOCAL * 0.1524 /
TOP_DEPTH`` = 7.5 px."""

SKY_RGB = (104, 97, 91)
"""Skybox ground colour seen outside the board."""

GROUND_RG = 255
GROUND_BLUE = 185.7
GROUND_BLUE_SLOPE = (7.1, 6.4)
"""Blue channel of the board: ``185.7 + 7.1 x + 6.4 z`` (R and G saturate at 255)."""

GROUND_TEXTURE_GAIN = 0.2
"""How strongly the paper texture's blue channel shows through the yellow emission."""

SHADE_DIRECTION = (-0.6, 1.0)
"""Top faces are lit by ``p = -0.6 x + z``: brighter toward the upper left."""

SHADE_RANGE = 2.0
"""``|p|`` reaches 2 at the board's corners; shading levels span ``[-2, 2]``."""

SHADE_LEVELS = 32
"""Top-face shades precomputed per decoration (a 3-unit colour step for logo blocks)."""


@dataclass(frozen=True)
class BlockColours:
    """Colours of one episode type; logo cubes look lighter because of the overlay material."""

    top: tuple[float, float, float]
    top_slope: tuple[float, float, float]
    side: tuple[float, float, float]
    ink: tuple[float, float, float]


DIGIT_COLOURS = BlockColours(
    top=(37.8, 247.6, 63.1), top_slope=(3.3, 4.2, 6.0), side=(63.0, 255.0, 57.0), ink=(2.0, 12.0, 3.0)
)
LOGO_COLOURS = BlockColours(
    top=(82.9, 244.4, 108.6), top_slope=(23.1, 14.8, 23.1), side=(87.0, 231.0, 77.0), ink=(42.0, 46.0, 50.0)
)
LOGO_INK_GAIN = 0.8
"""A logo texel of colour ``c`` renders as ``ink + 0.8 c`` (light grey SRI stays light)."""

FALLBACK_MARKS = (
    "ad", "BMW", "BK", "CC", "Es", "He", "hp", "M", "MB", "nv", "Pe", "Sh", "SRI", "Sb", "St",
    "Ta", "Tx", "Ty", "tw", "ups",
)
"""Marks drawn for the brands when their PNG is missing: short, distinct, brand-like."""

_FAR = 1.0e3
"""Where absent blocks are moved so that no pixel sees them."""

_OFF_SCREEN_SLOPE = 1.0e6
"""Ray slope given to pixels outside the frame: every face test then lands on a border texel."""

_BACKGROUND = 0
_SIDE = 1
_TOP = 1 + MAX_BLOCKS
"""Priorities in the top byte of a packed colour: any top face beats any side face beats the
background; among equals the higher block index wins, so overlaps resolve deterministically."""


# --------------------------------------------------------------------------------------
# Camera model


def project(x: torch.Tensor | float, z: torch.Tensor | float, height: float = 0.0):
    """Continuous image coordinates ``(u, v)`` (agent convention: ``v`` grows with +z) of a
    point at ``(x, height, z)``; pixel ``(r, c)`` covers ``[c, c+1) x [r, r+1)``."""
    scale = FOCAL / (CAMERA_HEIGHT - height)
    return IMAGE_SIZE / 2 + (x - CAMERA_X) * scale, IMAGE_SIZE / 2 + z * scale


def unproject(u: torch.Tensor | float, v: torch.Tensor | float, height: float = 0.0):
    """The board point ``(x, z)`` at ``height`` seen at image coordinates ``(u, v)``: the
    inverse of :func:`project`."""
    scale = FOCAL / (CAMERA_HEIGHT - height)
    return CAMERA_X + (u - IMAGE_SIZE / 2) / scale, (v - IMAGE_SIZE / 2) / scale


def _pixel_slopes() -> torch.Tensor:
    """Lateral offset per unit depth of the ray through each pixel centre, ``(c + 0.5 - 60) /
    FOCAL``; the same for rows and columns because the camera is on the z = 0 axis."""
    return (torch.arange(IMAGE_SIZE, dtype=torch.float64) + 0.5 - IMAGE_SIZE / 2) / FOCAL


@dataclass(frozen=True)
class _Spans:
    """How many pixel centres, along one image axis, a block anywhere on the board can cover.

    ``top``: its top face (7.5 px). ``block``: top face plus the side face perspective reveals
    toward the image centre. ``side``: that side face across its own plane (at most 4 px at
    the board's edge). A block centred beyond the board loses the part of a side face that
    falls outside these windows.
    """

    top: int
    block: int
    side: int

    @classmethod
    def compute(cls) -> "_Spans":
        half = BLOCK_SIZE / 2
        reach = BOARD_HALF + abs(CAMERA_X)
        block = FOCAL * ((reach + half) / TOP_DEPTH - (reach - half) / CAMERA_HEIGHT)
        side = FOCAL * (reach - half) * (1 / TOP_DEPTH - 1 / CAMERA_HEIGHT)
        top = FOCAL * BLOCK_SIZE / TOP_DEPTH
        return cls(*(int(math.floor(width)) + 1 for width in (top, block, side)))


# --------------------------------------------------------------------------------------
# Textures


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Pillow's embedded font: available offline on every install."""
    return ImageFont.load_default(size=size)


def _text_alpha(text: str, canvas: int, height: float, width: float, stroke: float) -> np.ndarray:
    """Coverage in [0, 1] of ``text`` drawn bold and centred on a ``canvas``-pixel square, its
    ink scaled to ``height`` (fraction of the canvas) and at most ``width`` wide."""
    size = canvas
    font = _font(size)
    image = Image.new("L", (canvas * 2, canvas * 2), 0)
    draw = ImageDraw.Draw(image)
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font, stroke_width=int(stroke * size))
    scale = min(height * canvas / max(bottom - top, 1), width * canvas / max(right - left, 1))
    size = max(int(size * scale), 4)
    font = _font(size)
    stroke_px = max(int(round(stroke * size)), 1)
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font, stroke_width=stroke_px)
    origin = ((canvas - (right - left)) / 2 - left, (canvas - (bottom - top)) / 2 - top)
    image = Image.new("L", (canvas, canvas), 0)
    ImageDraw.Draw(image).text(origin, text, fill=255, font=font, stroke_width=stroke_px, stroke_fill=255)
    return np.asarray(image, dtype=np.float64) / 255.0


def _digit_layer(number: int, canvas: int) -> tuple[np.ndarray, np.ndarray]:
    """Black bold numeral ``number`` lying on the top face (TextMesh, font size 90): two thirds
    of the face high, two digits nine tenths of its width, as measured on example4.png."""
    alpha = _text_alpha(str(number), canvas, height=0.66, width=0.9, stroke=0.08)
    return np.zeros((canvas, canvas, 3)), alpha


def _logo_layer(path: Path | None, brand: int, canvas: int) -> tuple[np.ndarray, np.ndarray]:
    """A brand's texture stretched over the whole face (full 0-1 UV), or a drawn mark when the
    PNG is unavailable."""
    if path is not None and path.is_file():
        image = Image.open(path).convert("RGBA").resize((canvas, canvas), Image.Resampling.LANCZOS)
        rgba = np.asarray(image, dtype=np.float64) / 255.0
        return rgba[..., :3] * 255.0, rgba[..., 3]
    return _fallback_logo(brand, canvas)


def _fallback_logo(brand: int, canvas: int) -> tuple[np.ndarray, np.ndarray]:
    """Brand initials in a ring: distinct per brand and unmistakably not a numeral."""
    ring = Image.new("L", (canvas, canvas), 0)
    margin, width = canvas * 0.08, max(int(canvas * 0.06), 1)
    ImageDraw.Draw(ring).ellipse((margin, margin, canvas - margin, canvas - margin), outline=255, width=width)
    alpha = np.asarray(ring, dtype=np.float64) / 255.0
    text = _text_alpha(FALLBACK_MARKS[brand], canvas, height=0.35, width=0.62, stroke=0.02)
    return np.zeros((canvas, canvas, 3)), np.maximum(alpha, text)


def _downsample(image: np.ndarray, texels: int) -> np.ndarray:
    """Box-filter a high-resolution ``[S, S, ...]`` face to ``texels`` per side: the area
    average a mipmapped texture would give at the frame's 7.5 pixels per face."""
    size = image.shape[0]
    factor = size // texels
    shape = (texels, factor, texels, factor) + image.shape[2:]
    return image.reshape(shape).mean(axis=(1, 3))


def _top_shades(colours: BlockColours) -> np.ndarray:
    """Top-face green at each precomputed shading level, ``[SHADE_LEVELS, 3]``."""
    levels = np.linspace(-SHADE_RANGE, SHADE_RANGE, SHADE_LEVELS)[:, None]
    return np.clip(np.asarray(colours.top) + levels * np.asarray(colours.top_slope), 0, 255)


# --------------------------------------------------------------------------------------
# Packed colours


def _pack(rgb: np.ndarray, priority: int | np.ndarray) -> np.ndarray:
    """Pack RGB and a priority into int32 ``priority << 24 | b << 16 | g << 8 | r`` so that a
    single ``amax`` scatter both resolves occlusion and carries the colour; the bytes of a
    little-endian int32 then read ``r, g, b, priority``."""
    rgb = np.clip(np.rint(rgb), 0, 255).astype(np.int64)
    packed = np.asarray(priority, dtype=np.int64) << 24
    packed = packed | (rgb[..., 2] << 16) | (rgb[..., 1] << 8) | rgb[..., 0]
    return packed.astype(np.int32)


def _unpack(keys: torch.Tensor) -> torch.Tensor:
    """``[B, H*W]`` packed colours to ``[B, 3, H, W]`` uint8."""
    batch = keys.shape[0]
    if sys.byteorder == "little":
        channels = keys.view(torch.uint8).view(batch, -1, 4)[..., :3].permute(0, 2, 1)
    else:
        shifts = torch.tensor([0, 8, 16], dtype=torch.int32, device=keys.device)
        channels = ((keys.unsqueeze(1) >> shifts[:, None]) & 255).to(torch.uint8)
    return channels.reshape(batch, 3, IMAGE_SIZE, IMAGE_SIZE).contiguous()


# --------------------------------------------------------------------------------------
# Renderer


class BoardRenderer:
    """Renders batches of boards as the agent saw them, vectorised over episodes and blocks.

    Args:
        data_dir: directory with ``ground.png`` and ``logos/<brand>.png``; default
            ``$ZOO_DATA_DIR/blocks``. Missing files fall back to a plain ground colour and to
            drawn brand marks, so rendering never needs the data.
        device: where the precomputed tables live and frames are produced.
        texels: resolution of every face texture. 8 matches the 7.5-pixel faces, so a pixel
            samples about one box-filtered texel (the original's mipmapped look).
    """

    def __init__(self, data_dir: str | os.PathLike | None = None, device: str | torch.device = "cpu", texels: int = 8):
        self.device = torch.device(device)
        self.data_dir = domain_data_dir("blocks", data_dir)
        self.texels = texels
        self.spans = _Spans.compute()
        self._pad = self.spans.block
        self._faces_per_decoration = SHADE_LEVELS + 4
        self._face_stride = (texels + 2) ** 2
        self.background = self._build_background()
        self._background_keys = torch.from_numpy(
            _pack(self.background.permute(1, 2, 0).numpy().astype(np.float64), _BACKGROUND).reshape(-1)
        ).to(self.device)
        self._atlas = torch.from_numpy(self._build_atlas()).to(self.device)
        self._slopes = self._build_slope_table().to(self.device)
        self._steps = {n: torch.arange(n, device=self.device) for n in set(vars(self.spans).values())}
        self._blocks = torch.arange(MAX_BLOCKS, device=self.device)
        self._canvas: torch.Tensor | None = None

    # ---- precomputation ------------------------------------------------------------

    def _asset(self, *parts: str) -> Path | None:
        return None if self.data_dir is None else self.data_dir.joinpath(*parts)

    def _build_background(self) -> torch.Tensor:
        """``[3, 120, 120]`` uint8 empty board: pale yellow ground inside ±1.25, skybox outside."""
        slopes = _pixel_slopes()
        x = CAMERA_X + slopes[None, :] * CAMERA_HEIGHT
        z = slopes[:, None] * CAMERA_HEIGHT
        x, z = torch.broadcast_tensors(x, z)
        blue = GROUND_BLUE + GROUND_BLUE_SLOPE[0] * x + GROUND_BLUE_SLOPE[1] * z
        blue = blue + GROUND_TEXTURE_GAIN * self._ground_texture_blue(x, z)
        ground = torch.stack([torch.full_like(blue, GROUND_RG), torch.full_like(blue, GROUND_RG), blue])
        sky = torch.tensor(SKY_RGB, dtype=torch.float64)[:, None, None].expand_as(ground)
        on_board = (x.abs() <= BOARD_HALF) & (z.abs() <= BOARD_HALF)
        image = torch.where(on_board, ground, sky)
        return image.round().clamp(0, 255).to(torch.uint8)

    def _ground_texture_blue(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """Zero-mean blue channel of ``ground.png`` stretched over the board (top row at +z),
        sampled at ground points ``(x, z)``; zeros when the file is absent."""
        path = self._asset("ground.png")
        if path is None or not path.is_file():
            return torch.zeros_like(x)
        size = 256
        image = Image.open(path).convert("RGB").resize((size, size), Image.Resampling.BOX)
        blue = torch.from_numpy(np.asarray(image, dtype=np.float64)[..., 2])
        blue = blue - blue.mean()
        col = ((x + BOARD_HALF) / (2 * BOARD_HALF) * size).long().clamp(0, size - 1)
        row = ((BOARD_HALF - z) / (2 * BOARD_HALF) * size).long().clamp(0, size - 1)
        return blue[row, col]

    def _decoration_layers(self, canvas: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Ink colour and coverage of the 40 decorations: digits 1..20, then the 20 brands."""
        layers = [_digit_layer(i + 1, canvas) for i in range(MAX_BLOCKS)]
        for brand, name in enumerate(LOGO_BRANDS):
            layers.append(_logo_layer(self._asset("logos", f"{name}.png"), brand, canvas))
        return layers

    def _build_atlas(self) -> np.ndarray:
        """Packed colours of every texel of every face of every decoration, flattened.

        Layout: decoration ``d`` (block ``d % 20``; logos from 20), then ``SHADE_LEVELS`` top
        faces and the west, east, south, north sides; each face ``(T+2)^2`` texels with a
        border of zeros, so a ray that misses a face reads 0 (never wins the ``amax``)
        without any masking. Texel ``[i, j]`` of a top face lies toward +z for growing
        ``i`` and +x for growing ``j``; on a side face ``i`` grows with height and ``j`` with
        +z (west/east) or +x (south/north). Logos on the sides read upright from outside.
        """
        texels, canvas = self.texels, self.texels * 16
        faces = np.zeros((2 * MAX_BLOCKS, self._faces_per_decoration, texels + 2, texels + 2), np.int32)
        for decoration, (ink_rgb, alpha) in enumerate(self._decoration_layers(canvas)):
            is_logo = decoration >= MAX_BLOCKS
            colours = LOGO_COLOURS if is_logo else DIGIT_COLOURS
            ink = np.asarray(colours.ink) + (LOGO_INK_GAIN * ink_rgb if is_logo else 0.0)
            block = decoration % MAX_BLOCKS
            # Blending is linear, so box-filter coverage and inked colour once and blend small.
            coverage = _downsample(alpha, texels)[..., None]
            inked = _downsample(ink * np.ones((canvas, canvas, 1)) * alpha[..., None], texels)
            for level, shade in enumerate(_top_shades(colours)):
                image = shade * (1.0 - coverage) + inked
                faces[decoration, level, 1:-1, 1:-1] = _pack(image[::-1], _TOP + block)
            side = np.asarray(colours.side) * np.ones_like(inked)
            if is_logo:
                side = side * (1.0 - coverage) + inked
            upright = side[::-1]
            for offset, image in enumerate((upright[:, ::-1], upright, upright, upright[:, ::-1])):
                faces[decoration, SHADE_LEVELS + offset, 1:-1, 1:-1] = _pack(image, _SIDE + block)
        return faces.reshape(-1)

    def _build_slope_table(self) -> torch.Tensor:
        """Ray slopes of columns/rows ``-W .. 120 + W - 1`` (index ``c + W``); off-screen pixels
        get a huge slope so every face test misses them."""
        pad = self._pad
        table = torch.full((IMAGE_SIZE + 2 * pad,), _OFF_SCREEN_SLOPE, dtype=torch.float64)
        table[pad : pad + IMAGE_SIZE] = _pixel_slopes()
        return table.to(torch.float32)

    # ---- rendering -----------------------------------------------------------------

    def render(self, positions: torch.Tensor, n_blocks: torch.Tensor, logo: torch.Tensor) -> torch.Tensor:
        """Frames ``[B, 3, 120, 120]`` uint8 of boards ``positions`` ``[B, 20, 2]`` (JSON
        ``(x, z)``), of which the first ``n_blocks[b]`` blocks exist, decorated with logos
        where ``logo[b]`` and digits elsewhere."""
        positions = torch.as_tensor(positions, device=self.device).to(torch.float32)
        batch, count = positions.shape[:2]
        if count > MAX_BLOCKS:
            raise ValueError(f"at most {MAX_BLOCKS} blocks per board, got {count}")
        n_blocks = torch.as_tensor(n_blocks, device=self.device).reshape(batch, 1)
        logo = torch.as_tensor(logo, device=self.device).reshape(batch, 1).to(torch.long)
        present = self._blocks[:count] < n_blocks
        # Offsets from the camera axis; absent blocks go where no pixel sees them.
        across_x = torch.where(present, positions[..., 0], _FAR) - CAMERA_X
        across_z = torch.where(present, positions[..., 1], _FAR)
        decoration = self._blocks[:count] + MAX_BLOCKS * logo

        canvas = self._fresh_canvas(batch)
        for keys, pixels in (
            self._top(across_x, across_z, decoration),
            self._side(across_x, across_z, decoration, vertical=False),
            self._side(across_z, across_x, decoration, vertical=True),
        ):
            canvas.scatter_reduce_(1, pixels.reshape(batch, -1), keys.reshape(batch, -1), "amax")
        return _unpack(canvas)

    __call__ = render

    def _fresh_canvas(self, batch: int) -> torch.Tensor:
        """The background's packed colours for ``batch`` frames, in a buffer reused across
        calls (a fresh 15 MB allocation per call costs as much as the drawing)."""
        if self._canvas is None or self._canvas.shape[0] != batch:
            self._canvas = torch.empty(batch, IMAGE_SIZE * IMAGE_SIZE, dtype=torch.int32, device=self.device)
        return self._canvas.copy_(self._background_keys.expand(batch, -1))

    def _pixels(self, first: torch.Tensor, count: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``count`` pixel indices from ``first`` (continuous coordinate of the first pixel
        centre that may be covered) and the ray slopes through them; off-screen pixels keep an
        in-frame index (their slope makes every face test miss)."""
        start = torch.ceil(first - 0.5).clamp(-self._pad, IMAGE_SIZE).to(torch.long)
        index = start.unsqueeze(-1) + self._steps[count]
        return index.clamp(0, IMAGE_SIZE - 1), self._slopes[index + self._pad]

    def _lookup(self, texels: torch.Tensor) -> torch.Tensor:
        """Packed colours at flat atlas indices (``index_select`` is twice as fast as ``take``)."""
        return self._atlas.index_select(0, texels.reshape(-1)).view(texels.shape)

    def _face_base(self, decoration: torch.Tensor, face: torch.Tensor | int) -> torch.Tensor:
        return (decoration * self._faces_per_decoration + face) * self._face_stride

    def _texel(self, coordinate: torch.Tensor) -> torch.Tensor:
        """Padded texel index of a face coordinate already scaled to ``[1, T+1)`` when inside:
        outside lands on the zero border (0 or T+1)."""
        return coordinate.clamp_(0, self.texels + 1).to(torch.long)

    def _top(self, across_x: torch.Tensor, across_z: torch.Tensor, decoration: torch.Tensor):
        """Packed colours and pixel indices ``[B, N, 8, 8]`` of the window over each top face.

        The top face is a square at one depth, so its texture coordinates are separable: the
        column gives the x texel, the row the z texel."""
        scale, centre, span = self.texels / BLOCK_SIZE, self.texels / 2 + 1, self.spans.top
        to_pixels = FOCAL / TOP_DEPTH
        first = IMAGE_SIZE / 2 + (torch.stack([across_x, across_z]) - BLOCK_SIZE / 2) * to_pixels
        (cols, rows), (col_slope, row_slope) = self._pixels(first, span)
        tx = self._texel((col_slope * TOP_DEPTH - across_x.unsqueeze(-1)) * scale + centre)
        tz = self._texel((row_slope * TOP_DEPTH - across_z.unsqueeze(-1)) * scale + centre)
        shade = (SHADE_DIRECTION[0] * (across_x + CAMERA_X) + SHADE_DIRECTION[1] * across_z + SHADE_RANGE)
        level = (shade * ((SHADE_LEVELS - 1) / (2 * SHADE_RANGE))).round().clamp(0, SHADE_LEVELS - 1).to(torch.long)
        base = self._face_base(decoration, level).unsqueeze(-1) + tz * (self.texels + 2)
        keys = self._lookup(base.unsqueeze(-1) + tx.unsqueeze(-2))
        return keys, (rows * IMAGE_SIZE).unsqueeze(-1) + cols.unsqueeze(-2)

    def _side(self, across: torch.Tensor, along: torch.Tensor, decoration: torch.Tensor, vertical: bool):
        """Packed colours and pixel indices ``[B, N, 12, 4]`` of the side face perpendicular to
        the ``across`` axis that faces the camera (if the block is off-axis there): x (west or
        east face, ``vertical=False``) or z (south or north, ``vertical=True``).

        A ray with slope ``s`` across meets the face plane at offset ``e`` at depth ``e / s``;
        the height there depends only on the pixel's ``across`` index, the ``along`` position
        is the ray's along slope times that depth.
        """
        half, scale = BLOCK_SIZE / 2, self.texels / BLOCK_SIZE
        near_side = across - half > 0  # the face pointing back toward the axis: west / south
        visible = near_side | (across + half < 0)
        plane = torch.where(near_side, across - half, across + half)
        nearest = torch.minimum(plane / CAMERA_HEIGHT, plane / TOP_DEPTH)
        across_index, across_slope = self._pixels(IMAGE_SIZE / 2 + FOCAL * nearest, self.spans.side)
        edge = along - half
        nearest = torch.where(edge > 0, edge / CAMERA_HEIGHT, edge / TOP_DEPTH)
        along_index, along_slope = self._pixels(IMAGE_SIZE / 2 + FOCAL * nearest, self.spans.block)

        depth = plane.unsqueeze(-1) / across_slope
        height = torch.where(visible.unsqueeze(-1), (CAMERA_HEIGHT - depth) * scale + 1, float(self.texels + 1))
        face = SHADE_LEVELS + 2 * int(vertical) + (~near_side).to(torch.long)
        base = self._face_base(decoration, face).unsqueeze(-1) + self._texel(height) * (self.texels + 2)
        offset = (self.texels / 2 + 1 - along * scale).unsqueeze(-1).unsqueeze(-1)
        position = torch.addcmul(offset, along_slope.unsqueeze(-1), (depth * scale).unsqueeze(-2))
        keys = self._lookup(self._texel(position).add_(base.unsqueeze(-2)))
        along_stride, across_stride = (1, IMAGE_SIZE) if vertical else (IMAGE_SIZE, 1)
        pixels = (along_index * along_stride).unsqueeze(-1) + (across_index * across_stride).unsqueeze(-2)
        return keys, pixels

    def footprint(self, positions: torch.Tensor) -> torch.Tensor:
        """The pixels a block at ``positions`` ``[..., 2]`` (JSON ``(x, z)``) can colour, as
        inclusive ``[..., 4]`` bounds ``(row_low, row_high, col_low, col_high)`` clamped to the
        frame: the union of the windows :meth:`render` draws it in (its top face and the two
        side faces perspective may reveal). Moving one block changes a frame only inside its
        footprints before and after the move (the pixels it uncovers or covers): what an
        incremental first convolution needs to know (:meth:`move_window`,
        ``zoo.models.incremental_conv``)."""
        positions = torch.as_tensor(positions, device=self.device).to(torch.float32)
        half = BLOCK_SIZE / 2
        across = torch.stack([positions[..., 0] - CAMERA_X, positions[..., 1]], -1)  # columns, rows
        top = IMAGE_SIZE / 2 + (across - half) * (FOCAL / TOP_DEPTH)
        low, high = self._window(top, self.spans.top)
        for axis in (0, 1):  # the side face across this axis (x: columns, z: rows)
            plane = torch.where(across[..., axis] - half > 0, across[..., axis] - half, across[..., axis] + half)
            nearest = torch.minimum(plane / CAMERA_HEIGHT, plane / TOP_DEPTH)
            edge = across[..., 1 - axis] - half
            along = torch.where(edge > 0, edge / CAMERA_HEIGHT, edge / TOP_DEPTH)
            start = torch.empty_like(across)
            start[..., axis] = IMAGE_SIZE / 2 + FOCAL * nearest
            start[..., 1 - axis] = IMAGE_SIZE / 2 + FOCAL * along
            spans = torch.tensor([self.spans.block, self.spans.block], device=self.device)
            spans[axis] = self.spans.side
            side_low, side_high = self._window(start, spans)
            low, high = torch.minimum(low, side_low), torch.maximum(high, side_high)
        low, high = low.clamp(0, IMAGE_SIZE - 1), high.clamp(0, IMAGE_SIZE - 1)
        return torch.stack([low[..., 1], high[..., 1], low[..., 0], high[..., 0]], -1)

    def move_window(self, before: torch.Tensor, after: torch.Tensor) -> torch.Tensor:
        """Inclusive bounds ``[B, 4]`` (as :meth:`footprint`) holding every pixel that differs
        between the frames of boards ``before`` and ``after`` ``[B, 20, 2]``, which differ in
        at most one block: that block's footprints before and after, together (a board
        without a move gets block 0's footprint, where nothing changed)."""
        rows = torch.arange(len(before), device=before.device)
        block = (before != after).any(-1).to(torch.uint8).argmax(1)
        old, new = self.footprint(before[rows, block]), self.footprint(after[rows, block])
        low, high = torch.minimum(old, new), torch.maximum(old, new)
        return torch.stack([low[:, 0], high[:, 1], low[:, 2], high[:, 3]], 1)

    @staticmethod
    def _window(first: torch.Tensor, span) -> tuple[torch.Tensor, torch.Tensor]:
        """Inclusive pixel bounds of a window of ``span`` pixel centres from ``first`` (as :meth:`_pixels`)."""
        start = torch.ceil(first - 0.5).to(torch.long)
        return start, start + torch.as_tensor(span, device=first.device) - 1

    # ---- conveniences --------------------------------------------------------------

    def render_boards(self, boards: list[np.ndarray], logo: list[bool] | bool = False) -> torch.Tensor:
        """Render a list of ``[n_i, 2]`` position arrays (e.g. ``Transition.start``)."""
        batch = len(boards)
        positions = torch.zeros(batch, MAX_BLOCKS, 2, dtype=torch.float64)
        counts = torch.zeros(batch, dtype=torch.long)
        for i, board in enumerate(boards):
            board = torch.as_tensor(np.asarray(board, dtype=np.float64))
            positions[i, : board.shape[0]] = board
            counts[i] = board.shape[0]
        flags = torch.as_tensor([logo] * batch if isinstance(logo, bool) else list(logo), dtype=torch.bool)
        return self.render(positions, counts, flags)


# --------------------------------------------------------------------------------------
# Observations


def to_display(frames: torch.Tensor) -> np.ndarray:
    """Agent-convention frames ``[B, 3, H, W]`` to ``[B, H, W, 3]`` numpy with +z up, for
    people and image files."""
    return frames.flip(-2).permute(0, 2, 3, 1).contiguous().cpu().numpy().astype(np.uint8)
