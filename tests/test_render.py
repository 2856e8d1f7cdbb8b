"""Renderer, history stack, standardisation and animations (docs/blocks_environment.md §6).

Runs on the real textures in ``../shared/data/blocks`` when they exist and always also on the
no-data fallback (an empty data directory), so nothing is skipped without the data.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from zoo.blocks.animation import GOAL_RGB, Goal, compose_frames, write_episode_animation
from zoo.blocks.geometry import BLOCK_SIZE, MAX_BLOCKS
from zoo.blocks.render import (
    IMAGE_SIZE,
    BoardRenderer,
    HistoryStack,
    project,
    standardize,
    to_display,
)

REAL_BLOCKS = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "blocks"


@pytest.fixture(scope="module", params=["real", "fallback"])
def renderer(request, tmp_path_factory) -> BoardRenderer:
    """The renderer on the real assets when present (else the fallback), and on no data."""
    if request.param == "real" and REAL_BLOCKS.is_dir():
        return BoardRenderer(REAL_BLOCKS)
    return BoardRenderer(tmp_path_factory.mktemp("no-blocks-data"))


def board(*blocks: tuple[float, float], n_blocks: int | None = None, logo: bool = False):
    """One-board batch with the given block centres (others parked at the origin, absent)."""
    positions = torch.zeros(1, MAX_BLOCKS, 2, dtype=torch.float64)
    for i, (x, z) in enumerate(blocks):
        positions[0, i] = torch.tensor([x, z])
    count = len(blocks) if n_blocks is None else n_blocks
    return positions, torch.tensor([count]), torch.tensor([logo])


def pixel(x: float, z: float, height: float = BLOCK_SIZE) -> tuple[int, int]:
    """(row, column) of the pixel whose centre sees the point, by the camera model."""
    u, v = project(x, z, height)
    return int(math.floor(v)), int(math.floor(u))


def is_block_green(rgb: torch.Tensor) -> bool:
    r, g, b = (int(c) for c in rgb)
    return g >= 200 and r <= 130 and b <= 150


def drawn(frame: torch.Tensor, renderer: BoardRenderer) -> torch.Tensor:
    """[H, W] mask of pixels that differ from the empty board."""
    return (frame != renderer.background).any(dim=0)


# --------------------------------------------------------------------------------------
# Geometry and appearance


def test_empty_board_matches_spec_extent(renderer):
    background = renderer.background
    assert background.shape == (3, IMAGE_SIZE, IMAGE_SIZE) and background.dtype == torch.uint8
    sky = torch.tensor([104, 97, 91], dtype=torch.uint8)
    assert torch.equal(background[:, 0, 0], sky) and torch.equal(background[:, 60, 2], sky)
    # The board spans columns ~4.0-118.7 and rows ~2.6-117.4: pale yellow inside.
    for r, c in [(3, 4), (116, 118), (60, 60), (3, 118)]:
        red, green, blue = background[:, r, c].tolist()
        assert red == 255 and green == 255 and 160 <= blue <= 215, (r, c, (red, green, blue))
    assert torch.equal(background[:, 60, 119], sky) and torch.equal(background[:, 117, 60], sky)


@pytest.mark.parametrize("centre", [(0.0, 0.0), (0.5, -0.5), (-0.8, 0.9)])
def test_block_colour_at_projected_pixel(renderer, centre):
    x, z = centre
    frame = renderer.render(*board(centre))[0]
    # A point on the top face away from the numeral, and the top face's centre region.
    r, c = pixel(x - 0.055, z - 0.055)
    assert is_block_green(frame[:, r, c]), frame[:, r, c]
    far_r, far_c = pixel(-x * 0.5 + 0.6 * (1 if x <= 0 else -1), -z * 0.5 + 0.6 * (1 if z <= 0 else -1), 0.0)
    assert torch.equal(frame[:, far_r, far_c], renderer.background[:, far_r, far_c])
    # Everything drawn lies within the block's projected footprint.
    rows, cols = torch.nonzero(drawn(frame, renderer), as_tuple=True)
    top_r, top_c = pixel(x, z)
    assert (rows - top_r).abs().max() <= 12 and (cols - top_c).abs().max() <= 12


def test_top_face_is_seven_and_a_half_pixels(renderer):
    frame = renderer.render(*board((0.0, 0.0)))[0]
    mask = drawn(frame, renderer)
    widths = mask.sum(dim=1)
    assert widths.max() in (7, 8)
    assert mask.sum(dim=0).max() in (7, 8)


def test_side_faces_visible_away_from_centre(renderer):
    centre = renderer.render(*board((0.0, 0.0)))[0]
    corner = renderer.render(*board((1.0, 1.0)))[0]
    assert drawn(corner, renderer).sum() > drawn(centre, renderer).sum() + 20
    # The side faces lie toward the image centre (smaller row and column than the top face).
    rows, cols = torch.nonzero(drawn(corner, renderer), as_tuple=True)
    top_r, top_c = pixel(1.0, 1.0)
    assert rows.min() < top_r - 4 and cols.min() < top_c - 4


def test_absent_blocks_are_not_drawn(renderer):
    blocks = ((0.0, 0.0), (0.3, 0.3), (0.5, 0.5), (-0.6, -0.2))
    with_all = renderer.render(*board(*blocks))[0]
    without_last = renderer.render(*board(*blocks, n_blocks=3))[0]
    r, c = pixel(-0.6 - 0.055, -0.2 - 0.055)
    assert is_block_green(with_all[:, r, c])
    assert torch.equal(without_last[:, r, c], renderer.background[:, r, c])
    nothing = renderer.render(*board(*blocks, n_blocks=0))[0]
    assert torch.equal(nothing, renderer.background)


def test_orientation_agent_and_display(renderer):
    def centroid(frame):
        rows, cols = torch.nonzero(drawn(frame, renderer), as_tuple=True)
        return rows.float().mean().item(), cols.float().mean().item()

    origin = centroid(renderer.render(*board((0.0, 0.0)))[0])
    right = centroid(renderer.render(*board((0.6, 0.0)))[0])
    up = renderer.render(*board((0.0, 0.6)))
    assert right[1] > origin[1] + 20 and abs(right[0] - origin[0]) < 2
    assert centroid(up[0])[0] > origin[0] + 20  # agent convention: row grows with +z
    shown = to_display(up)
    assert shown.shape == (1, IMAGE_SIZE, IMAGE_SIZE, 3) and shown.dtype == np.uint8
    green = (shown[0, ..., 1] >= 200) & (shown[0, ..., 0] <= 130)
    assert green[: IMAGE_SIZE // 2].sum() > 30 and green[IMAGE_SIZE // 2 :].sum() == 0


def test_digits_and_logos_differ(renderer):
    positions, counts, _ = board((0.0, 0.0), (0.7, 0.7))
    digits = renderer.render(positions, counts, torch.tensor([False]))[0]
    logos = renderer.render(positions, counts, torch.tensor([True]))[0]
    footprint = drawn(digits, renderer) | drawn(logos, renderer)
    assert (digits != logos).any(dim=0)[footprint].sum() > 10

    swapped = renderer.render(*board((0.7, 0.7), (0.0, 0.0)))[0]  # block 2 now at the origin
    r, c = pixel(0.0, 0.0)
    window = (slice(None), slice(r - 4, r + 5), slice(c - 4, c + 5))
    assert not torch.equal(digits[window], swapped[window])
    # Every decoration is distinct from every other on its top face.
    tops = renderer._atlas.view(2 * MAX_BLOCKS, -1, renderer.texels + 2, renderer.texels + 2)[:, 16]
    assert len({tuple(top.flatten().tolist()) for top in tops}) == 2 * MAX_BLOCKS


def test_batch_render_equals_single_renders(renderer):
    generator = torch.Generator().manual_seed(0)
    batch = 9
    positions = torch.rand(batch, MAX_BLOCKS, 2, generator=generator, dtype=torch.float64) * 2.4 - 1.2
    positions[0, 1] = positions[0, 0] + 0.05  # overlapping blocks resolve deterministically
    counts = torch.tensor([20, 0, 1, 5, 12, 20, 19, 8, 20])
    logo = torch.tensor([0, 1, 1, 0, 1, 0, 1, 0, 1], dtype=torch.bool)
    frames = renderer.render(positions, counts, logo)
    assert frames.shape == (batch, 3, IMAGE_SIZE, IMAGE_SIZE) and frames.dtype == torch.uint8
    for i in range(batch):
        single = renderer.render(positions[i : i + 1], counts[i : i + 1], logo[i : i + 1])
        assert torch.equal(frames[i : i + 1], single), i
    assert torch.equal(renderer.render(positions.float(), counts, logo), frames)
    assert torch.equal(renderer.render(positions.flip(0), counts.flip(0), logo.flip(0)), frames.flip(0))


def test_render_boards_helper(renderer):
    boards = [np.array([[0.0, 0.0], [0.5, 0.5]]), np.array([[-0.5, 0.2]])]
    frames = renderer.render_boards(boards, logo=[False, True])
    positions, counts, logo = board((-0.5, 0.2), logo=True)
    assert torch.equal(frames[1:], renderer.render(positions, counts, logo))


# --------------------------------------------------------------------------------------
# Observations


def test_standardize_matches_hand_computation():
    stack = torch.tensor(
        [[[[0.0, 1.0], [2.0, 3.0]], [[4.0, 5.0], [6.0, 7.0]]], [[[1.0, 1.0], [1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]]]
    )
    out = standardize(stack)
    values = np.arange(8.0)
    expected = (values - 3.5) / math.sqrt(((values - 3.5) ** 2).mean())
    assert torch.allclose(out[0].flatten(), torch.tensor(expected, dtype=torch.float32), atol=1e-6)
    # A uniform image divides by the floor 1/sqrt(N) instead of zero.
    assert torch.equal(out[1], torch.zeros(2, 2, 2))
    small = torch.zeros(1, 1, 2, 2)
    small[0, 0, 0, 0] = 1e-4
    floor = 1 / math.sqrt(4)
    assert torch.allclose(standardize(small)[0, 0, 0, 0], torch.tensor((1e-4 - 0.25e-4) / floor))


def frames_with(values: list[int], size: int = 8) -> torch.Tensor:
    """A batch of constant-ish frames (one per value) with a marker pixel so they differ."""
    frames = torch.zeros(len(values), 3, size, size, dtype=torch.uint8)
    for i, value in enumerate(values):
        frames[i] = value
        frames[i, 0, 0, 0] = (value * 7) % 256
    return frames


def test_history_reset_zero_pads_and_standardises():
    stack = HistoryStack(K=4)
    first = frames_with([10, 200])
    stack.reset(first)
    raw = stack.frames()
    assert raw.shape == (2, 15, 8, 8) and raw.dtype == torch.uint8
    assert torch.equal(raw[:, :12], torch.zeros(2, 12, 8, 8, dtype=torch.uint8))
    assert torch.equal(raw[:, 12:], first)
    observation = stack.observation()
    assert observation.dtype == torch.float32
    assert torch.allclose(observation, standardize(raw.double() / 255).float(), atol=1e-5)


def test_history_push_shifts_oldest_out_and_respects_mask():
    stack = HistoryStack(K=4)
    stack.reset(frames_with([1, 2, 3]))
    stack.push(frames_with([11, 12, 13]))
    raw = stack.frames()
    assert torch.equal(raw[:, 9:12], frames_with([1, 2, 3])) and torch.equal(raw[:, 12:], frames_with([11, 12, 13]))
    assert torch.equal(raw[:, :9], torch.zeros_like(raw[:, :9]))

    stack.push(frames_with([21, 22, 23]), mask=torch.tensor([True, False, True]))
    raw = stack.frames()
    assert torch.equal(raw[1, 12:], frames_with([12])[0]) and torch.equal(raw[1, 9:12], frames_with([2])[0])
    assert torch.equal(raw[0, 12:], frames_with([21])[0]) and torch.equal(raw[0, 9:12], frames_with([11])[0])

    for step in range(3, 7):  # episode 0 now holds only real frames: 11 (gone), 21, 31, ...
        stack.push(frames_with([step * 10 + 1, step * 10 + 2, step * 10 + 3]))
    raw = stack.frames()
    expected = torch.cat([frames_with([v])[0] for v in (21, 31, 41, 51, 61)])
    assert torch.equal(raw[0], expected)
    behind = torch.cat([frames_with([v])[0] for v in (12, 32, 42, 52, 62)])  # skipped 22
    assert torch.equal(raw[1], behind)
    assert torch.allclose(stack.observation(), standardize(raw.double() / 255).float(), atol=1e-5)
    out = torch.empty(3, 15, 8, 8)
    assert stack.observation(out=out) is out and torch.allclose(out, standardize(raw.double() / 255).float(), atol=1e-5)

    stack.reset_episodes(frames_with([90, 91, 92]), mask=torch.tensor([False, True, False]))
    raw = stack.frames()
    assert torch.equal(raw[1, :12], torch.zeros(12, 8, 8, dtype=torch.uint8))
    assert torch.equal(raw[1, 12:], frames_with([91])[0]) and torch.equal(raw[0], expected)


def test_history_with_rendered_frames(renderer):
    positions, counts, logo = board((0.0, 0.0), (0.5, 0.5))
    stack = HistoryStack()
    stack.reset(renderer.render(positions, counts, logo))
    positions[0, 0, 0] += 0.1
    stack.push(renderer.render(positions, counts, logo))
    observation = stack.observation()
    assert observation.shape == (1, 15, IMAGE_SIZE, IMAGE_SIZE)
    assert abs(observation.mean().item()) < 1e-4 and abs(observation.std(correction=0).item() - 1) < 1e-3


# --------------------------------------------------------------------------------------
# Animations


def episode_frames(renderer: BoardRenderer, steps: int = 4) -> list[torch.Tensor]:
    positions, counts, logo = board((-0.5, 0.0), (0.5, 0.5))
    frames = []
    for _ in range(steps):
        frames.append(renderer.render(positions, counts, logo)[0])
        positions[0, 0, 0] += 0.1
    return frames


def test_gif_has_one_frame_per_step(renderer, tmp_path):
    frames = episode_frames(renderer)
    goal = Goal(torch.tensor([[0.0, 0.0], [0.5, 0.5]]), 2, 0)
    captions = [f"step {i}: move block 1 right" for i in range(len(frames))]
    path = write_episode_animation(frames, tmp_path / "episode.gif", goal=goal, captions=captions,
                                   instruction="move block 1 to the centre of the board, next to nothing")
    with Image.open(path) as image:
        assert image.format == "GIF" and image.n_frames == len(frames)
        assert image.size[0] == IMAGE_SIZE * 4 and image.size[1] > IMAGE_SIZE * 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episode.gif"]  # no temporary left


def test_png_grid_and_goal_marker(renderer, tmp_path):
    frames = episode_frames(renderer, steps=3)
    goal = {"positions": [[0.0, 0.0], [0.5, 0.5]], "n_blocks": 2, "main_block": 0}
    path = write_episode_animation(frames, tmp_path / "episode.png", goal=goal, scale=2)
    with Image.open(path) as image:
        assert image.format == "PNG" and image.size[0] == 3 * IMAGE_SIZE * 2 + 2 * 4
    panel = np.asarray(compose_frames(frames[:1], goal=goal, scale=2)[0])
    red = np.all(panel == np.array(GOAL_RGB, dtype=np.uint8), axis=-1)
    # 0.15 world units at ground level is ~6.9 px, i.e. ~14 px at scale 2.
    assert 150 < red.sum() < 260
    rows, cols = np.nonzero(red)
    u, v = project(0.0, 0.0)
    assert abs(cols.mean() / 2 - u) < 1 and abs((IMAGE_SIZE - rows.mean() / 2) - v) < 1
    plain = np.asarray(compose_frames(frames[:1], scale=2)[0])
    assert not np.all(plain == np.array(GOAL_RGB, dtype=np.uint8), axis=-1).any()


def test_moving_a_block_changes_pixels_only_inside_its_footprints(renderer):
    """What an incremental first convolution relies on: after one block moves, every pixel
    that differs lies in the block's footprint before or after the move."""
    generator = torch.Generator().manual_seed(0)
    for _ in range(6):
        positions = (torch.rand(8, 20, 2, generator=generator, dtype=torch.float64) - 0.5) * 2.0
        counts = torch.randint(4, 21, (8,), generator=generator)
        moved = (torch.rand(8, generator=generator) * counts).long()
        after = positions.clone()
        steps = torch.tensor([[0.1524, 0.0], [-0.1524, 0.0], [0.0, 0.1524], [0.0, -0.1524]], dtype=torch.float64)
        after[torch.arange(8), moved] += steps[torch.randint(0, 4, (8,), generator=generator)]
        logo = torch.rand(8, generator=generator) < 0.5
        changed = (renderer.render(positions, counts, logo) != renderer.render(after, counts, logo)).any(1)
        for board in range(8):
            inside = torch.zeros(IMAGE_SIZE, IMAGE_SIZE, dtype=torch.bool)
            for where in (positions, after):
                row_low, row_high, col_low, col_high = renderer.footprint(where[board, moved[board]]).tolist()
                assert row_high - row_low < renderer.spans.block and col_high - col_low < renderer.spans.block
                inside[row_low : row_high + 1, col_low : col_high + 1] = True
            assert changed[board].any() or not (positions[board, moved[board]].abs() < 0.9).all()
            assert not (changed[board] & ~inside).any()
