"""The learning curve the short-budget Blocks studies report (``blocks_bandit_schedule.py``,
``blocks_expert_schedule.py``): the greedy error on tuning examples every so many training
episodes, beside the frames, updates and episode lengths so far, printed and appended to a
JSON-lines file. One class for every method, so their curves compare field for field."""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch

from zoo.blocks.evaluate import evaluate_policy
from zoo.models.blocks.experience import Rollout


class TuningCurve:
    """Counts what training has seen (:meth:`record` after each rollout) and evaluates the
    policy on ``tuning`` (:meth:`evaluate`); ``eval_every`` is also how many of the newest
    training episodes the episode length and STOP rate average over."""

    def __init__(self, policy, tuning, runner, config: dict, eval_every: int, out: Path | None = None,
                 json_lines: bool = False):
        self.policy, self.tuning, self.runner, self.config = policy, tuning, runner, config
        self.eval_every, self.out, self.json_lines = eval_every, out, json_lines
        self.frames = self.updates = 0
        self.lengths: list[int] = []
        self.stops: list[bool] = []
        self.points: list[dict] = []
        self.started = time.perf_counter()

    def seconds(self) -> float:
        return time.perf_counter() - self.started

    def record(self, rollout: Rollout, stopped: torch.Tensor, updates: int, episodes: int, other_frames: int = 0) -> None:
        """One rollout of ``episodes`` episodes: its decisions (and ``other_frames`` simulator
        steps beside them, such as demonstrations played for the learner), the optimizer
        steps it led to, how each episode ended."""
        self.frames += len(rollout.actions) + other_frames
        self.updates += updates
        self.lengths += torch.bincount(rollout.episodes, minlength=episodes).tolist()
        self.stops += stopped.tolist()

    def evaluate(self, seen: int, **method_stats: float) -> dict:
        """Evaluate on tuning after ``seen`` training episodes; print, append and return the point."""
        error = evaluate_policy(self.policy, self.tuning, batch_size=len(self.tuning), runner=self.runner, progress=False)
        lengths, stops = self.lengths[-self.eval_every:], self.stops[-self.eval_every:]
        point = {"episodes": seen, "frames": self.frames, "updates": self.updates,
                 "tuning_mean_error": round(error["mean"], 4), "tuning_median_error": round(error["median"], 4),
                 "tuning_stop_rate": round(error["stop_rate"], 4),
                 "train_episode_length": round(sum(lengths) / max(1, len(lengths)), 2),
                 "train_stop_rate": round(sum(stops) / max(1, len(stops)), 4),
                 **{k: round(v, 4) for k, v in method_stats.items()}, "seconds": round(self.seconds(), 1)}
        self.points.append(point)
        line = json.dumps({"config": self.config, **{k: None if v != v else v for k, v in point.items()}})  # NaN: null
        print(line if self.json_lines else f"{seen:6d} episodes  {self.frames:7d} frames  {self.updates:5d} updates  "
              + "".join(f"{k} {v:.2f}  " for k, v in method_stats.items())
              + f"tuning {point['tuning_mean_error']:.3f} (stops {point['tuning_stop_rate']:.2f})  "
              f"train length {point['train_episode_length']:.1f} (stops {point['train_stop_rate']:.2f})  "
              f"{point['seconds']:.0f}s", flush=True)
        if self.out:
            with self.out.open("a") as handle:
                handle.write(line + "\n")
        return point

    def evaluate_when_due(self, seen: int, total: int, seconds: float | None = None, **method_stats: float) -> bool:
        """Evaluate after every ``eval_every`` episodes and after the last of ``total``; whether
        the run should stop (``seconds`` spent at an evaluation)."""
        if seen % self.eval_every and seen != total:
            return False
        self.evaluate(seen, **method_stats)
        return seconds is not None and self.seconds() > seconds

    def summary(self) -> dict:
        """The configuration and every point, printed as one JSON object with ``json_lines``."""
        summary = {"config": self.config, "curve": self.points}
        if self.json_lines:
            print(json.dumps(summary))
        return summary
