"""The compute floor of the paper's block policy on this CPU, in plain PyTorch.

The same network as :class:`zoo.models.blocks.policy.BlocksPolicy` (Appendix C sizes), written
here without zoo, Lightning or any data: the reference a training or evaluation speed is
judged against. Two numbers, each a median over repeats:

* ``forward_frames_per_s``: a no-grad forward at batch 256 (what greedy evaluation and the
  rollout half of bandit training need per decision);
* ``update_frames_per_s``: forward + backward + Adam at batch 16 (what learning from a
  decision costs, one short episode per update as in the original trainer).

One rollout forward plus one update per frame bounds bandit training at
``1 / (1/forward + 1/update)`` frames per second: ``bandit_floor_frames_per_s``.

    python benchmarks/blocks_floor.py --threads 1 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
from torch import nn

IMAGE, CHANNELS, VOCABULARY, TOKENS = 120, 15, 300, 15


class PlainPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.convolutions = nn.Sequential(
            nn.Conv2d(CHANNELS, 32, 8, stride=4, padding=2), nn.ReLU(),
            nn.Conv2d(32, 32, 8, stride=4, padding=3), nn.ReLU(),
            nn.Conv2d(32, 32, 4, stride=2, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(512, 200))
        self.embed = nn.Embedding(VOCABULARY, 150)
        self.lstm = nn.LSTM(150, 250, batch_first=True)
        self.previous_block, self.previous_direction = nn.Embedding(21, 32), nn.Embedding(6, 24)
        self.hidden = nn.Linear(506, 120)
        self.block_head, self.direction_head = nn.Linear(120, 20), nn.Linear(120, 5)

    def forward(self, images, tokens, block, direction):
        text = self.lstm(self.embed(tokens))[0].mean(dim=1)
        state = torch.cat([self.convolutions(images), text, self.previous_block(block), self.previous_direction(direction)], 1)
        hidden = torch.relu(self.hidden(state))
        return self.block_head(hidden).log_softmax(-1), self.direction_head(hidden).log_softmax(-1)


def inputs(batch: int):
    return (torch.randn(batch, CHANNELS, IMAGE, IMAGE), torch.randint(1, VOCABULARY, (batch, TOKENS)),
            torch.randint(0, 21, (batch,)), torch.randint(0, 6, (batch,)))


def forward_rate(model, batch: int, iterations: int) -> float:
    data = inputs(batch)
    with torch.no_grad():
        model(*data)
        started = time.perf_counter()
        for _ in range(iterations):
            model(*data)
    return batch * iterations / (time.perf_counter() - started)


def update_rate(model, optimizer, batch: int, iterations: int) -> float:
    data = inputs(batch)
    targets = torch.randint(0, 20, (batch,)), torch.randint(0, 5, (batch,))

    def step():
        block, direction = model(*data)
        loss = -(block.gather(1, targets[0][:, None]).mean() + direction.gather(1, targets[1][:, None]).mean())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    step()
    started = time.perf_counter()
    for _ in range(iterations):
        step()
    return batch * iterations / (time.perf_counter() - started)


def measure(threads: int = 1, repeats: int = 5, forward_batch: int = 256, update_batch: int = 16) -> dict:
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = PlainPolicy()
    optimizer = torch.optim.Adam(model.parameters(), lr=2.5e-4)
    forward, update = [], []
    for _ in range(repeats):
        forward.append(forward_rate(model.eval(), forward_batch, 6))  # ~0.8 s: 2 batches varied 20% between runs
        update.append(update_rate(model.train(), optimizer, update_batch, 16))
    f, u = statistics.median(forward), statistics.median(update)
    return {"threads": threads, "forward_frames_per_s": round(f, 1), "update_frames_per_s": round(u, 1),
            "bandit_floor_frames_per_s": round(1 / (1 / f + 1 / u), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.threads, args.repeats)
    print(json.dumps(result) if args.json else "\n".join(f"{k:28s} {v}" for k, v in result.items()))


if __name__ == "__main__":
    main()
