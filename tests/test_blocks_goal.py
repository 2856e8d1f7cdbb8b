"""Goal prediction: goal centres map to cells of the image and back within a cell, a predicted
goal is worth the task error the expert reaches by carrying it out, and the LingUNet-style
predictor scores every cell and learns a batch it sees."""

import numpy as np
import pytest
import torch

from zoo.blocks.geometry import BLOCK_SIZE
from zoo.blocks.goals import MAP_CELLS, cell_centre, executed_errors, goal_cell, goal_errors, mirrored, mirrored_examples
from zoo.blocks.records import Example, Transition
from zoo.models.blocks.goal import BlocksGoalPredictor, GoalPredictorEnsemble


def test_a_goal_maps_to_a_cell_and_back_within_a_quarter_block():
    goals = torch.rand(500, 2, dtype=torch.float64) * 2.2 - 1.1
    assert float(goal_errors(cell_centre(goal_cell(goals)), goals).max()) < 0.2


SHIFT = 0.5
"""Five lattice steps along +x: a goal the expert's lattice holds exactly."""


def two_block_transition() -> Transition:
    """Block 0 moves 0.5 along +x (3.28 block lengths); block 1 stands far away."""
    start = np.array([[0.0, 0.0], [0.0, 0.8]])
    goal = np.array([[SHIFT, 0.0], [0.0, 0.8]])
    return Transition("synthetic", 0, 1, "digit", start, goal, ("move 1 three to the right",))


def test_the_true_goal_carried_out_ends_on_the_lattice_and_a_wrong_block_adds_its_move():
    transition = two_block_transition()
    goal = torch.tensor([[SHIFT, 0.0]], dtype=torch.float64)
    staying = SHIFT / BLOCK_SIZE
    assert float(executed_errors([transition], torch.tensor([0]), goal)) == pytest.approx(0.0, abs=1e-9)
    # Block 1 carried the same distance: block 0's move is still missing, block 1's is new.
    wrong = executed_errors([transition], torch.tensor([1]), torch.tensor([[SHIFT, 0.8]], dtype=torch.float64))
    assert float(wrong) == pytest.approx(2 * staying)
    # A block the board does not hold moves nothing: the error of staying.
    assert float(executed_errors([transition], torch.tensor([7]), goal)) == pytest.approx(staying)


def test_a_mirrored_example_swaps_left_and_right_in_the_board_and_the_words():
    example = Example(two_block_transition(), "Move block 1 to the right of 2, not the West side")
    mirror = mirrored(example)
    assert mirror.instruction == "Move block 1 to the left of 2, not the east side"
    assert mirror.transition.goal[0].tolist() == [-SHIFT, 0.0] and mirror.transition.start[1].tolist() == [0.0, 0.8]
    twice = mirrored(mirror)
    assert np.array_equal(twice.transition.goal, example.transition.goal)
    assert twice.instruction.lower() == example.instruction.lower()
    shared = mirrored_examples([example, Example(example.transition, "left of 2")])
    assert shared[0].transition is shared[1].transition and shared[1].instruction == "right of 2"


def test_on_real_dev_the_true_goals_carried_out_score_the_oracle(blocks_dev):
    transitions = blocks_dev.transitions[:60]
    block = torch.tensor([t.moved_block for t in transitions])
    goal = torch.tensor(np.stack([t.goal[t.moved_block] for t in transitions]))
    start = torch.tensor(np.stack([t.start[t.moved_block] for t in transitions]))
    oracle = executed_errors(transitions, block, goal)
    assert 0.1 < float(oracle.mean()) < 0.6  # the 0.1-unit lattice's rounding, and blocks in the way
    staying = executed_errors(transitions, block, start)
    assert torch.allclose(staying, goal_errors(start, goal))
    assert bool((oracle <= staying + 1e-9).all())


def test_the_predictor_scores_every_cell_and_fits_a_batch():
    torch.manual_seed(0)
    model = BlocksGoalPredictor(["<pad>", "<unk>", "left", "of"], embedding_dim=8, lstm_dim=8, channels=8)
    frames = torch.randint(0, 255, (4, 3, 120, 120), dtype=torch.uint8)
    goals = torch.tensor([[0.5, 0.5], [-0.5, 0.2], [0.0, -0.7], [0.9, -0.9]], dtype=torch.float64)
    batch = {"frames": frames, "tokens": torch.tensor([[2, 3], [3, 2], [2, 0], [3, 0]]),
             "lengths": torch.tensor([2, 2, 1, 1]), "block": torch.tensor([0, 1, 2, 3]), "goal": goals,
             "cell": goal_cell(goals)}
    scores, block = model(frames, batch["tokens"], batch["lengths"])
    assert scores.shape == (4, MAP_CELLS**2) and block.shape == (4, 20)
    optimizer = model.configure_optimizers()
    first = float(model.losses(batch)["loss"].detach())
    for _ in range(30):
        loss = model.losses(batch)["loss"]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert float(loss.detach()) < 0.75 * first


def test_an_ensemble_of_goal_predictors_averages_their_log_probabilities():
    torch.manual_seed(0)
    words = ["<pad>", "<unk>", "left", "of"]
    members = [BlocksGoalPredictor(words, embedding_dim=8, lstm_dim=8, channels=8).eval() for _ in range(2)]
    frames = torch.randint(0, 255, (3, 3, 120, 120), dtype=torch.uint8)
    tokens, lengths = torch.tensor([[2, 3], [3, 2], [2, 0]]), torch.tensor([2, 2, 1])
    with torch.no_grad():
        (first, first_block), (second, second_block) = (member(frames, tokens, lengths) for member in members)
        goal, block = GoalPredictorEnsemble(members)(frames, tokens, lengths)
        lone_goal, lone_block = GoalPredictorEnsemble(members[:1]).predict(frames, tokens, lengths)
    assert torch.allclose(goal, (first.log_softmax(-1) + second.log_softmax(-1)) / 2, atol=1e-6)
    assert torch.allclose(block, (first_block + second_block) / 2, atol=1e-6)
    assert torch.equal(lone_goal, cell_centre(first.argmax(-1), MAP_CELLS))
    assert torch.equal(lone_block, first_block.argmax(-1))
    with pytest.raises(ValueError, match="at least one"):
        GoalPredictorEnsemble([])


def test_the_reader_is_a_registered_model_that_saves_and_loads(tmp_path):
    from zoo.factory import create_model
    from zoo.grounded import Grounded

    torch.manual_seed(0)
    reader = create_model("blocks-goal-reader", vocabulary=["<pad>", "<unk>", "left"], embedding_dim=8, lstm_dim=8,
                          channels=8, levels=3)
    reader.save_pretrained(tmp_path / "reader")
    loaded = Grounded.from_pretrained(tmp_path / "reader")
    frames = torch.randint(0, 255, (2, 3, 120, 120), dtype=torch.uint8)
    tokens, lengths = torch.tensor([[2], [1]]), torch.tensor([1, 1])
    assert type(loaded) is BlocksGoalPredictor and loaded.hparams.levels == 3
    with torch.no_grad():
        assert all(torch.equal(a, b) for a, b in zip(reader.eval()(frames, tokens, lengths), loaded(frames, tokens, lengths)))


@pytest.mark.slow
def test_zoo_train_blocks_goal_reader_keeps_the_epoch_with_the_lowest_tuning_goal_error(tmp_path):
    import json

    from zoo.cli import main

    run = tmp_path / "run"
    assert main(["train", "blocks-goal-reader", "--tiny", f"run_dir={run}", "trainer.max_epochs=2",
                 "trainer.precision=32-true"]) == 0
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    figures = [row for row in rows if "tuning/goal_error" in row]
    assert len(figures) == 2 and all("dev/carried_out_error" in row and "dev/block_accuracy" in row for row in figures)
    results = json.loads((run / "results.json").read_text())
    best = min(figures, key=lambda row: row["tuning/goal_error"])
    assert results["metrics"]["tuning/goal_error"] == best["tuning/goal_error"]
    assert json.loads((run / "pretrained" / "config.json").read_text())["model_class"] == "BlocksGoalPredictor"
