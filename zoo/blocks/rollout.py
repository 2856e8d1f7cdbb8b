"""Play a policy in the vectorised simulator: the loop shared by evaluation and RL training."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence

import torch

from zoo.blocks.board import BoardBatch
from zoo.blocks.demos import DemonstrationCache
from zoo.blocks.env import BlocksEnv, StepOutcome
from zoo.blocks.geometry import HORIZON, STOP
from zoo.blocks.history import HistoryStack
from zoo.blocks.observation import BlocksObservation
from zoo.blocks.records import Example
from zoo.blocks.reward import RewardConfig, ShapedReward


@dataclass(frozen=True)
class EpisodeResults:
    """Per-episode outcomes of one batch."""

    final_error: torch.Tensor  # [B] distance error at the end, in block lengths
    min_error: torch.Tensor  # [B] smallest error reached (start included)
    moves: torch.Tensor  # [B] non-STOP actions taken
    returns: torch.Tensor | None  # [B] sum of rewards, when a reward was configured


class EpisodeRunner:
    """Runs batches of episodes: reset, observe, step, with images and rewards only if needed.

    ``needs_images``/``needs_demonstrations`` are read from the policy, so cheap baselines
    never pay for rendering.
    """

    def __init__(
        self,
        renderer=None,
        demo_cache: DemonstrationCache | None = None,
        reward: RewardConfig | None = None,
        horizon: int = HORIZON,
        history: int = 4,
        device: str | torch.device = "cpu",
    ):
        self.renderer = renderer
        self.demo_cache = demo_cache or DemonstrationCache(horizon)
        self.reward_config = reward
        self.horizon = horizon
        self.history = history
        self.device = torch.device(device)
        self.env = BlocksEnv(horizon)
        self._history_stack = HistoryStack(history)

    def start(self, examples: Sequence[Example], images: bool, demonstrations: bool, encode: Callable | None = None,
              featurize: Callable | None = None, track: Callable | None = None):
        """Reset to ``examples``. ``encode`` (instructions -> tokens, lengths) tokenises once;
        ``featurize`` (tokens, lengths -> [B, D]) lets a policy summarise each instruction once
        per episode (observations carry it as ``instruction_features``); one whose
        ``reads_start_frame`` is true also gets the first frames (uint8 [B, 3, H, W]) and reads
        the episode's start, with images only; ``track`` makes the
        policy's tracker of its first convolution (``reset``/``push``/``response``, see
        :class:`zoo.models.incremental_conv.FirstConvolutionTracker`), told at every step which
        window of each frame the moved block can have changed (``BoardRenderer.footprint``);
        observations then carry its ``response``."""
        transitions = [example.transition for example in examples]
        self.instructions = [example.instruction for example in examples]
        self.boards = BoardBatch.from_transitions(transitions, self.device)
        self.demos = self.demo_cache.batch(transitions, self.device) if (demonstrations or self._reward_needs_demos) else None
        self.env.reset(self.boards)
        self.decisions = 0  # actions taken by running episodes (the work a policy did)
        self.tokens, self.lengths = encode(self.instructions) if encode else (None, None)
        reads_start = getattr(featurize, "reads_start_frame", False)  # computed below, from the first frame
        self.instruction_features = featurize(self.tokens, self.lengths) if featurize and encode and not reads_start else None
        self.reward = None
        if self.reward_config is not None:
            self.reward = ShapedReward(self.reward_config)
            self.reward.reset(self.boards, self.demos)
        self.stack = self.tracker = None
        self.frames: list[torch.Tensor] = []  # uint8 boards after 0, 1, ... actions, when rendering
        if images:
            if self.renderer is None:
                from zoo.blocks.render import BoardRenderer

                self.renderer = BoardRenderer()
            self.stack = self._history_stack  # one for every batch: its buffers are reused
            first = self._render()
            self.stack.reset(first)
            self.frames = [first]
            if reads_start and encode:
                self.instruction_features = featurize(self.tokens, self.lengths, first)
            self.tracker = track() if track is not None and hasattr(self.renderer, "move_window") else None
            if self.tracker is not None:
                self.tracker.reset(first)

    @property
    def _reward_needs_demos(self) -> bool:
        return self.reward_config is not None and self.reward_config.uses_f2

    def _render(self) -> torch.Tensor:
        return self.renderer.render(self.env.positions, self.boards.n_blocks, self.boards.logo)

    def observe(self, episodes: torch.Tensor | None = None) -> BlocksObservation:
        """What the policy sees, of ``episodes`` only when given (their image stacks are the
        only ones built: the running episodes', say). Images come as
        :class:`~zoo.blocks.observation.RawStacks` in a buffer reused at the next step."""
        tracking = self.tracker is not None and self.tracker.active
        images = self.stack.raw_observation(episodes, pixels=not tracking) if self.stack is not None else None
        if tracking:  # the policy's first convolution comes from its tracker: no pixels to convert
            rows = episodes if episodes is not None else torch.arange(len(self.instructions), device=self.device)
            images = replace(images, response=self.tracker.response(rows))
        observation = self.observe_without_images()
        if episodes is not None:
            observation = observation.select(episodes)
        return replace(observation, images=images)

    def observe_without_images(self) -> BlocksObservation:
        return BlocksObservation(
            instructions=self.instructions,
            previous_action=self.env.previous_action,
            images=None,
            tokens=self.tokens,
            lengths=self.lengths,
            boards=self.boards,
            positions=self.env.positions,
            moves_taken=self.env.moves_taken,
            demos=self.demos,
            instruction_features=self.instruction_features,
        )

    def step(self, actions: torch.Tensor) -> tuple[StepOutcome, torch.Tensor | None]:
        before = self.env.positions.clone() if self.tracker is not None else None
        outcome = self.env.step(actions)
        self.decisions += int(outcome.acted.sum())
        reward = self.reward(outcome, actions) if self.reward is not None else None
        if self.stack is not None:
            # Only boards that just acted are drawn; a finished episode's board is unchanged.
            acted = outcome.acted.nonzero().squeeze(1)
            if len(acted) == len(actions):
                frame = self._render()
            else:
                frame = self.frames[-1].clone()
                if len(acted):
                    frame[acted] = self.renderer.render(self.env.positions[acted], self.boards.n_blocks[acted],
                                                        self.boards.logo[acted])
            self.stack.push(frame, mask=outcome.acted)
            if self.tracker is not None:
                self._track(acted, before, frame)
            self.frames.append(frame)
        return outcome, reward

    def _track(self, acted: torch.Tensor, before: torch.Tensor, frame: torch.Tensor) -> None:
        """Tell the tracker what the episodes that acted changed: the moved block's footprints
        before and after its move (a blocked move changes nothing)."""
        bounds = self.renderer.move_window(before[acted], self.env.positions[acted])
        self.tracker.push(acted, frame if len(acted) == len(frame) else frame[acted], bounds)

    def _act_running(self, choose: Callable[[BlocksObservation], torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """The running episodes' indices and every episode's action: ``choose`` on the running
        ones' observation, STOP (which a finished episode ignores) for the rest."""
        running = (~self.env.done).nonzero().squeeze(1)
        actions = torch.full(self.env.done.shape, STOP, dtype=torch.long, device=self.device)
        actions[running] = choose(self.observe(running)).to(self.device)
        return running, actions

    def record(self, examples: Sequence[Example], choose: Callable[[BlocksObservation], torch.Tensor],
               encode: Callable | None = None, featurize: Callable | None = None,
               track: Callable | None = None) -> dict[str, torch.Tensor]:
        """Play with images, letting ``choose`` (observation of the running episodes -> their
        actions) decide, and log every decision: ``steps``, ``episodes``, ``actions``,
        ``previous`` (action before it), ``rewards``, ``done``, plus ``frames`` (uint8
        [T+1, B, 3, H, W]), their pixel ``frame_sums`` ([T+1, B, 2]: sum, sum of squares) and the
        instructions' ``tokens``/``lengths``. What learning from
        experience needs, for any way of choosing actions."""
        self.start(examples, images=True, demonstrations=False, encode=encode, featurize=featurize, track=track)
        log = {key: [] for key in ("steps", "episodes", "actions", "previous", "rewards", "done")}
        everyone = torch.arange(len(examples), device=self.device)
        sums = [self.stack.newest_sums(everyone)]  # each frame's pixel sums, computed once for the stack
        step = 0
        while not self.env.all_done:
            index, actions = self._act_running(choose)
            previous = self.env.previous_action.clone()
            outcome, reward = self.step(actions)
            acted = outcome.acted.nonzero().squeeze(1)
            sums.append(sums[-1].clone())
            sums[-1][acted] = self.stack.newest_sums(acted)
            rewards = reward[index] if reward is not None else torch.zeros(len(index), dtype=torch.float64, device=self.device)
            for key, value in (("steps", torch.full_like(index, step)), ("episodes", index), ("actions", actions[index]),
                               ("previous", previous[index]), ("rewards", rewards), ("done", outcome.done[index])):
                log[key].append(value)
            step += 1
        record = {key: torch.cat(values) for key, values in log.items()}
        record["frames"] = torch.stack(self.frames)
        record["frame_sums"] = torch.stack(sums)  # [T+1, B, 2]: sum and sum of squares of each frame's pixels
        record["tokens"], record["lengths"] = self.tokens, self.lengths
        return record

    def play(self, examples: Sequence[Example], act: Callable[[BlocksObservation], torch.Tensor], *,
             images: bool = False, demonstrations: bool = False, encode: Callable | None = None,
             featurize: Callable | None = None, running_only: bool = False, track: Callable | None = None) -> EpisodeResults:
        """Run ``act`` (observation -> actions) until every episode has ended. With
        ``running_only`` the observation holds the episodes still running and ``act`` returns
        their actions (finished ones are sent STOP, which they ignore): no forward pass or
        image stack is spent on an episode that has ended."""
        self.start(examples, images, demonstrations, encode, featurize, track)
        returns = torch.zeros(len(examples), dtype=torch.float64, device=self.device)
        while not self.env.all_done:
            actions = self._act_running(act)[1] if running_only else act(self.observe())
            _, reward = self.step(actions)
            if reward is not None:
                returns += reward
        return EpisodeResults(
            self.env.error(), self.env.min_error, self.env.moves_taken,
            returns if self.reward is not None else None,
        )
