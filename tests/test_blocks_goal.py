"""Goal prediction: goal centres map to cells of the image and back within a cell, and the
LingUNet-style predictor scores every cell and learns a batch it sees."""

import torch

from zoo.blocks.goals import MAP_CELLS, cell_centre, goal_cell, goal_errors
from zoo.models.blocks.goal import BlocksGoalPredictor


def test_a_goal_maps_to_a_cell_and_back_within_a_quarter_block():
    goals = torch.rand(500, 2, dtype=torch.float64) * 2.2 - 1.1
    assert float(goal_errors(cell_centre(goal_cell(goals)), goals).max()) < 0.2


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
    first = float(model.losses(batch)["loss"])
    for _ in range(30):
        loss = model.losses(batch)["loss"]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert float(loss) < 0.75 * first
