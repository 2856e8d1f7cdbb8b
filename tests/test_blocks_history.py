"""The history stack serves the policy the same stacks however it stores them: the float ring
(slots in ring order, compacted as episodes end) against a plain list of frames per episode."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from zoo.blocks.history import HistoryStack, standardize
from zoo.blocks.observation import RawStacks
from zoo.models.blocks.network import ImageEncoder

BATCH, SIZE, SLOTS = 5, 8, 5


def random_frames(generator: torch.Generator, batch: int = BATCH) -> torch.Tensor:
    return torch.randint(0, 256, (batch, 3, SIZE, SIZE), generator=generator, dtype=torch.uint8)


def expected_stacks(history: list[list[torch.Tensor]], episodes: list[int]) -> torch.Tensor:
    """What the agent should see: each episode's last five frames, oldest first, zeros before its start."""
    stacks = []
    for episode in episodes:
        frames = [torch.zeros(3, SIZE, SIZE, dtype=torch.uint8)] * SLOTS + history[episode]
        stacks.append(torch.cat(frames[-SLOTS:]))
    return standardize(torch.stack(stacks).double() / 255).float()


operation = st.one_of(
    st.just(("push", [True] * BATCH)),  # a step where every episode acts: their heads stay together
    st.tuples(st.just("push"), st.lists(st.booleans(), min_size=BATCH, max_size=BATCH)),
    st.tuples(st.just("observe"), st.lists(st.integers(0, BATCH - 1), min_size=1, max_size=BATCH, unique=True)),
    st.tuples(st.just("restart"), st.lists(st.booleans(), min_size=BATCH, max_size=BATCH)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(operation, min_size=1, max_size=25), st.integers(0, 2**16))
def test_every_observation_matches_the_frames_pushed(operations, seed):
    generator = torch.Generator().manual_seed(seed)
    stack = HistoryStack(K=SLOTS - 1)
    first = random_frames(generator)
    stack.reset(first)
    history = [[frame] for frame in first]
    for name, argument in operations:
        if name == "observe":  # any order, any subset: sorted running sets are the fast path
            episodes = torch.tensor(argument)
            observed = stack.raw_observation(episodes)
            torch.testing.assert_close(observed.standardized(), expected_stacks(history, argument), atol=1e-4, rtol=1e-4)
            continue
        frames, mask = random_frames(generator), torch.tensor(argument)
        if name == "push":
            stack.push(frames, mask=mask)
        else:
            stack.reset_episodes(frames, mask)
        for episode in mask.nonzero().squeeze(1).tolist():
            history[episode] = (history[episode] if name == "push" else []) + [frames[episode]]


def test_a_rollout_observes_its_running_episodes_without_copying_them():
    generator = torch.Generator().manual_seed(0)
    stack = HistoryStack()
    stack.reset(random_frames(generator))
    running = torch.arange(BATCH)
    first = stack.raw_observation(running)
    stack.push(random_frames(generator))
    again = stack.raw_observation(running)
    assert again.pixels.data_ptr() == first.pixels.data_ptr()  # a view of the ring, not a copy
    assert again.rotation != first.rotation  # the oldest slot moved on instead of the pixels
    assert again.pixels.is_contiguous(memory_format=torch.channels_last)

    ended = torch.tensor([True, False, True, False, False])  # episodes 0 and 2 stop
    stack.push(random_frames(generator), mask=~ended)
    fewer = stack.raw_observation(running[~ended])
    assert fewer.pixels.data_ptr() == first.pixels.data_ptr()  # compacted where it was


def test_episodes_whose_heads_differ_are_gathered_oldest_first():
    generator = torch.Generator().manual_seed(1)
    stack = HistoryStack()
    stack.reset(random_frames(generator))
    stack.push(random_frames(generator), mask=torch.tensor([True, False, True, True, True]))
    observed = stack.raw_observation()
    assert observed.rotation == 0
    torch.testing.assert_close(observed.standardized(), stack.observation(), atol=1e-5, rtol=1e-5)


def test_a_new_batch_reuses_the_buffers_and_starts_from_zeros():
    generator = torch.Generator().manual_seed(2)
    stack = HistoryStack()
    stack.reset(random_frames(generator, batch=4))
    for _ in range(3):
        stack.push(random_frames(generator, batch=4))
        stack.raw_observation()
    smaller = random_frames(generator, batch=2)
    stack.reset(smaller)
    observed = stack.raw_observation()
    expected = standardize(torch.cat([torch.zeros(2, 12, SIZE, SIZE, dtype=torch.uint8), smaller], 1).double() / 255)
    torch.testing.assert_close(observed.standardized(), expected.float(), atol=1e-5, rtol=1e-5)


def test_the_policy_reads_rotated_stacks_as_it_reads_standardised_ones():
    torch.manual_seed(0)
    encoder = ImageEncoder(15, image_size=SIZE * 4)
    pixels = torch.randint(0, 256, (3, 15, SIZE * 4, SIZE * 4)).float()
    mean, scale = torch.rand(3) * 0.5, torch.rand(3) + 0.5
    for rotation in range(SLOTS):
        stored = pixels.view(3, SLOTS, 3, SIZE * 4, SIZE * 4).roll(rotation, dims=1).flatten(1, 2)
        rotated = RawStacks(stored, mean, scale, rotation=rotation)
        torch.testing.assert_close(rotated.in_history_order(), pixels)
        with torch.no_grad():
            torch.testing.assert_close(encoder(rotated), encoder(rotated.standardized()), atol=1e-4, rtol=1e-4)


def test_a_second_rollout_embedding_before_the_first_backward_fails_loudly():
    """The encoder builds update stacks in reused buffers; overwriting one that a pending
    backward still needs must raise, never give silently wrong gradients."""
    torch.manual_seed(0)
    encoder = ImageEncoder(15, image_size=SIZE * 4)
    frames = torch.randint(0, 256, (6, 3, SIZE * 4, SIZE * 4), dtype=torch.uint8)
    index = torch.tensor([[-1, -1, -1, 0, 1], [-1, -1, 0, 1, 2]])
    first = encoder.from_frames(frames, index).sum()
    first.backward()  # one at a time: fine
    pending = encoder.from_frames(frames, index).sum()
    encoder.from_frames(frames, index.flip(0))
    with pytest.raises(RuntimeError, match="inplace"):
        pending.backward()
