"""The shortest-path expert at any board: it agrees with the demonstrations on their own path,
routes around blocks that moved, and matches a plain search over the simulator's moves."""

from collections import deque

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zoo.blocks.board import BoardBatch
from zoo.blocks.demos import plan
from zoo.blocks.env import BlocksEnv, apply_moves
from zoo.blocks.expert import BlocksExpert
from zoo.blocks.geometry import COLLISION_EXTENT, MAX_BLOCKS, STOP
from zoo.blocks.procedural import generate_transitions
from zoo.blocks.records import Transition

LEFT, RIGHT, UP, DOWN = range(4)


def padded(board: np.ndarray) -> torch.Tensor:
    positions = torch.zeros(1, MAX_BLOCKS, 2, dtype=torch.float64)
    positions[0, : len(board)] = torch.from_numpy(np.asarray(board, dtype=np.float64))
    return positions


def follow(expert: BlocksExpert, env: BlocksEnv) -> tuple[int, int]:
    """Play the expert until every episode stops; (moves made, failed moves)."""
    moves = failures = 0
    while not env.all_done:
        actions = expert.act(env.positions, env.moves_taken)
        outcome = env.step(actions)
        moves += int((outcome.acted & ~outcome.stopped).sum())
        failures += int(outcome.failed.sum())
    return moves, failures


@pytest.mark.slow
def test_dev_demonstrations_agree_with_the_expert_at_every_state(blocks_dev):
    """On the demonstrations' own states the expert needs exactly their remaining moves, and
    where only one move is optimal it is the demonstration's (2,902 states, 2,042 untied)."""
    expert = BlocksExpert.from_transitions(blocks_dev.transitions)
    states = untied = 0
    for row, transition in enumerate(blocks_dev.transitions):
        demo = plan(transition)
        moves = len(demo.actions) - (demo.actions[-1] == STOP)
        board = transition.start.copy()
        for step, action in enumerate(demo.actions):
            board[demo.block] = demo.points[step]
            episode = torch.tensor([row])
            assert int(expert.remaining(padded(board), step, episode)[0]) == moves - step
            optimal = expert.optimal_actions(padded(board), step, episode)[0]
            assert optimal[action], (transition.key, step)
            states += 1
            untied += int(optimal.sum()) == 1
    assert states == 2902 and untied == 2042


@pytest.mark.slow
def test_following_the_expert_from_every_dev_start_ends_on_the_demonstrations_cell(blocks_dev):
    boards = BoardBatch.from_transitions(blocks_dev.transitions)
    env = BlocksEnv()
    env.reset(boards)
    expert = BlocksExpert(boards)
    moves, failures = follow(expert, env)
    ends = np.stack([plan(t).points[-1] for t in blocks_dev.transitions])
    final = env.positions[torch.arange(len(boards)), boards.main_block].numpy()
    assert failures == 0 and bool(env.stopped.all())
    np.testing.assert_allclose(final, ends, atol=1e-9)
    assert moves == sum(len(plan(t).actions) - 1 for t in blocks_dev.transitions)
    # One distance field per episode (no obstacle moved), and a second where the block starts
    # overlapping a neighbour: once it has left that cell it cannot move back in.
    overlapping = sum(
        bool((np.abs(np.delete(t.start, t.moved_block, 0) - t.start[t.moved_block]) <= COLLISION_EXTENT).all(1).any())
        for t in blocks_dev.transitions
    )
    assert expert.searches == len(boards) + overlapping


def test_a_wrong_block_moved_into_the_path_is_routed_around():
    # block 0 goes 5 steps right; block 1 starts above the path and is moved down into it
    start = np.array([[0.0, 0.0], [0.25, 0.4]])
    goal = np.array([[0.5, 0.0], [0.25, 0.4]])
    boards = BoardBatch.from_transitions([Transition("hand", 0, 1, "digit", start, goal, ("x",))])
    env, expert = BlocksEnv(), BlocksExpert(boards)
    env.reset(boards)
    assert int(expert.remaining(env.positions, 0)[0]) == 5
    assert int(expert.act(env.positions, 0)[0]) == RIGHT
    for _ in range(4):  # the wrong block: four steps down, to (0.25, 0.0)
        assert not env.step(torch.tensor([4 * 1 + DOWN])).failed.any()
    assert env.positions[0, 1].tolist() == pytest.approx([0.25, 0.0])
    assert int(expert.remaining(env.positions, env.moves_taken)[0]) > 5
    moves, failures = follow(expert, env)
    assert failures == 0 and bool(env.stopped.all())
    assert env.positions[0, 0].tolist() == pytest.approx([0.5, 0.0])
    assert moves > 5 and expert.searches == 2  # one field at the start, one after the obstacle moved


def search_over_simulator_moves(positions: torch.Tensor, n_blocks: int, block: int, budget: int) -> dict:
    """Moves from ``positions`` [1, 20, 2] to every position the target block can reach in
    ``budget`` moves, by breadth-first search over the simulator's own transition function."""
    key = lambda p: tuple(np.round(p[0, block].numpy(), 6))  # noqa: E731
    depth = {key(positions): (0, positions)}
    queue = deque([positions])
    counts = torch.tensor([n_blocks] * 4)
    moves = torch.tensor([4 * block + d for d in range(4)])
    while queue:
        here = queue.popleft()
        if depth[key(here)][0] == budget:
            continue
        moved, failed = apply_moves(here.expand(4, -1, -1), counts, moves)
        for d in range(4):
            nxt = moved[d : d + 1]
            if not failed[d] and key(nxt) not in depth:
                depth[key(nxt)] = (depth[key(here)][0] + 1, nxt)
                queue.append(nxt)
    return depth


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), detour=st.lists(st.integers(0, STOP - 1), max_size=12))
def test_on_procedural_boards_the_expert_matches_a_search_over_the_simulators_moves(seed, detour):
    """After any sequence of moves (wrong blocks included), following the expert reaches the
    position nearest the goal of those reachable in the moves left, in as few moves as a
    plain search needs, never failing."""
    transition = generate_transitions(1, seed=seed)[0]
    boards = BoardBatch.from_transitions([transition])
    env, expert = BlocksEnv(), BlocksExpert(boards)
    env.reset(boards)
    for action in detour:
        env.step(torch.tensor([action]))
    block, goal = transition.moved_block, torch.from_numpy(transition.goal[transition.moved_block])
    budget = env.horizon - int(env.moves_taken)
    reachable = search_over_simulator_moves(env.positions.clone(), transition.n_blocks, block, budget).values()
    gaps = [(float((p[0, block] - goal).norm()), moves) for moves, p in reachable]
    nearest_gap = min(g for g, _ in gaps)
    fewest = min(m for g, m in gaps if g <= nearest_gap + 1e-9)
    assert int(expert.remaining(env.positions, env.moves_taken)[0]) == fewest
    before = env.moves_taken.clone()
    _, failures = follow(expert, env)
    assert failures == 0
    assert int(env.moves_taken - before) == fewest
    assert float((env.positions[0, block] - goal).norm()) == pytest.approx(nearest_gap, abs=1e-9)


def test_labels_for_a_batch_name_their_episodes():
    transitions = generate_transitions(3, seed=4)
    boards = BoardBatch.from_transitions(transitions)
    expert = BlocksExpert(boards)
    everyone = expert.act(boards.start, 0)
    assert expert.act(boards.start[[2, 0]], torch.tensor([0, 0]), torch.tensor([2, 0])).tolist() == everyone[[2, 0]].tolist()
    assert [a // 4 for a in everyone.tolist()] == [t.moved_block for t in transitions]
    with pytest.raises(ValueError, match="boards for"):
        expert.act(boards.start, 0, torch.tensor([0]))
