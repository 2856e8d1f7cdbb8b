"""Training and evaluation speed of the block policy on this machine, against the compute
floor of the same network in plain PyTorch (``benchmarks/blocks_floor.py``), side by side
in one run so both see the same machine load.

    python benchmarks/blocks_train.py --threads 1 --json

A "frame" is one decision: one supervised demonstration step, one step of a rollout, one
greedy step of evaluation. Measured, each a median over ``--repeats`` interleaved repeats:

* ``supervised_frames_per_s``: collation (rendering) + forward + backward + Adam;
* ``bandit_frames_per_s``: the ``blocks-bandit`` recipe's configuration
  (``zoo/recipes/blocks_bandit.yaml``: rollouts of ``data.episodes_per_batch`` episodes,
  one update per ``model.options.episodes_per_update``), rollout with sampling, rendering and the
  shaped reward, then the updates;
* ``dagger_frames_per_s``: DAgger as the ``blocks-dagger`` recipe configures it (rollouts of
  ``data.episodes_per_batch`` episodes, every state labelled by the expert, then
  ``loop.updates_per_rollout`` minibatches of ``loop.batch_size`` from the replay), with every
  action the policy's (β = 0, the most network work a rollout can need), from the released
  supervised policy when available;
* ``spo_frames_per_s``: SPO as the ``blocks-spo`` recipe configures it (trials of
  ``data.episodes_per_batch`` episodes sampled from the policy with the shaped reward, the
  expert's demonstrations of those worse than the moving baseline, then
  ``model.options.ppo_epochs`` steps on the PPO decisions and the demonstrations), from the
  released supervised policy when available; a frame is a decision of a trial;
* ``eval_steps_per_s``: greedy evaluation (``zoo eval blocks``'s loop);
* the floor: ``forward_frames_per_s`` (no-grad forward at batch 256),
  ``update_frames_per_s`` (forward + backward + Adam at batch 16) and
  ``bandit_floor_frames_per_s`` = 1 / (1/forward + 1/update);
* ``dagger_floor_frames_per_s``: the same network work at the floor's rates: one forward per
  decision and ``dagger_updates_per_frame`` update frames per decision (updates at
  ``loop.batch_size``);
* ``spo_floor_frames_per_s``: SPO's network work at the floor's rates: per decision of a trial
  one forward (sampling it), and ``spo_updates_per_frame``
  update frames (``ppo_epochs`` passes over the PPO decisions and the demonstrations' steps), the
  updates at the floor's rate for batch 256 (each pass is one batch of a whole rollout);
* ``bandit_vs_floor``, ``dagger_vs_floor``, ``spo_vs_floor`` and ``eval_vs_forward_floor``: the
  ratios the goals are stated in.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from blocks_floor import measure as measure_floor  # noqa: E402

from zoo.blocks.datamodule import BlocksDataModule  # noqa: E402
from zoo.blocks.evaluate import evaluate_policy  # noqa: E402
from zoo.blocks.rollout import EpisodeRunner  # noqa: E402
from zoo.callbacks.contextual_bandit import ContextualBanditLoop  # noqa: E402
from zoo.callbacks.expert_loop import ExpertLoop  # noqa: E402
from zoo.callbacks.objective_loops import loop_callbacks  # noqa: E402
from zoo.models.blocks import BlocksBandit, BlocksDagger, BlocksPolicy, BlocksSpo, BlocksSupervised  # noqa: E402
from zoo.models.blocks.network import NETWORK_OPTIONS  # noqa: E402
from zoo.recipes import recipe_defaults  # noqa: E402


def network(recipe) -> dict:
    """The network's sizes in a recipe's ``model.options``."""
    return {key: value for key, value in recipe.model.options.items() if key in NETWORK_OPTIONS}


def supervised_rate(policy, optimiser, datamodule, batches: int) -> float:
    iterator = iter(datamodule.train_dataloader())
    started, frames = time.perf_counter(), 0
    for batch in itertools.islice(iterator, batches):
        loss = policy.supervised_step(batch, "train")
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        frames += len(batch["action"])
    return frames / (time.perf_counter() - started)


def bandit_rate(policy, optimiser, loop, examples, rollouts: int, size: int) -> float:
    started, frames = time.perf_counter(), 0
    for index in range(rollouts):
        rollout = loop.collect(policy, examples[index * size : (index + 1) * size])
        policy.train()
        policy.update(rollout, optimiser)
        frames += len(rollout.actions)
    return frames / (time.perf_counter() - started)


def dagger_rate(policy, optimiser, loop: ExpertLoop, examples, rollouts: int, size: int) -> tuple[float, float]:
    """Decisions collected per second, and update frames per decision."""
    started, frames, updated = time.perf_counter(), 0, 0
    for index in range(rollouts):
        labels = loop.collect(policy, examples[index * size : (index + 1) * size])
        policy.train()
        policy.update(labels, optimiser)
        frames += len(labels.rollout.actions)
        updated += sum(len(minibatch.labels) for minibatch in labels.minibatches)
    return frames / (time.perf_counter() - started), updated / frames


def spo_rate(policy, optimiser, loop, examples, rollouts: int, size: int) -> tuple[float, float]:
    """Trial decisions per second, and update frames per trial decision."""
    started, frames, updated = time.perf_counter(), 0, 0
    for index in range(rollouts):
        trials = loop.collect(policy, examples[index * size : (index + 1) * size])
        policy.train()
        policy.update(trials, optimiser)
        rollout, demonstrations = trials.rollout, trials.demonstrations
        frames += len(rollout.actions)
        reinforced = int((~trials.worse)[rollout.episodes].sum())
        cloned = len(demonstrations.actions) if demonstrations is not None else 0
        updated += policy.hparams.ppo_epochs * (reinforced + cloned)
    return frames / (time.perf_counter() - started), updated / frames


def expert_learner_start(recipe, words: list[str], objective: type, **settings) -> BlocksPolicy:
    """DAgger or SPO from the released supervised policy when available, else fresh weights."""
    settings = dict(learning_rate=recipe.model.options.learning_rate, **settings)
    try:
        return BlocksPolicy.from_pretrained("blocks-supervised").to_objective(objective, **settings)
    except (OSError, KeyError, ValueError):
        return objective(words, **network(recipe), **settings)


def eval_rate(policy, examples, renderer) -> tuple[float, int]:
    result = evaluate_policy(policy, examples, batch_size=256, runner=EpisodeRunner(renderer), progress=False)
    return result["steps"] / result["seconds"], result["steps"]


def bandit_start(recipe, words: list[str]) -> BlocksBandit:
    """Where the bandit starts in the recipe: a supervised policy (the released one when
    available, so episodes have realistic lengths) with its direction head re-initialised."""
    options = {key: recipe.model.options[key]
               for key in ("learning_rate", "episodes_per_update", "loss_form", "gradient_clip_algorithm", "init")}
    try:
        policy = BlocksPolicy.from_pretrained("blocks-supervised").to_objective(BlocksBandit, **options)
    except (OSError, KeyError, ValueError):
        policy = BlocksBandit(words, **{**network(recipe), **options})
    torch.manual_seed(0)
    policy.reset_direction_head()
    return policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=10, help="supervised batches per repeat")
    parser.add_argument("--rollouts", type=int, default=3, help="bandit rollouts per repeat")
    parser.add_argument("--eval-episodes", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    recipe, bandit_recipe, dagger_recipe, spo_recipe = (recipe_defaults(f"blocks-{name}")
                                                        for name in ("supervised", "bandit", "dagger", "spo"))
    datamodule = BlocksDataModule(batch_size=recipe.data.batch_size, supervised_schedule=recipe.data.supervised_schedule)
    datamodule.setup()
    words = datamodule.vocabulary.words
    supervised = BlocksSupervised(words, **network(recipe))
    supervised.log = lambda *a, **k: None  # outside a Trainer
    supervised_optimiser = supervised.configure_optimizers()
    bandit = bandit_start(bandit_recipe, words)
    bandit_optimiser = bandit.configure_optimizers()
    loop = ContextualBanditLoop(datamodule.train_examples, renderer=datamodule.renderer, demo_cache=datamodule.demos)
    dagger = expert_learner_start(dagger_recipe, words, BlocksDagger)
    dagger_optimiser = dagger.configure_optimizers()
    settings = dagger_recipe.loop
    expert_loop = ExpertLoop(datamodule.train_examples, renderer=datamodule.renderer, beta_start=0.0, beta_end=0.0,
                             policy_actions=settings.policy_actions, replay_size=settings.replay_size,
                             batch_size=settings.batch_size, updates_per_rollout=settings.updates_per_rollout)
    spo_options = spo_recipe.model.options
    spo = expert_learner_start(spo_recipe, words, BlocksSpo, ppo_epochs=spo_options.ppo_epochs, clip=spo_options.clip,
                               baseline_window=spo_options.baseline_window,
                               entropy_coefficient=spo_options.entropy_coefficient)
    spo_optimiser = spo.configure_optimizers()
    (scheduled_loop,) = loop_callbacks(spo, datamodule, {}, seed=0)  # the recipe's ScheduledLoop
    size = bandit_recipe.data.episodes_per_batch
    examples = datamodule.train_examples
    evaluation = datamodule.dev_examples[: args.eval_episodes]
    rates: dict[str, list[float]] = {k: [] for k in ("supervised", "bandit", "dagger", "dagger_floor", "spo", "spo_floor",
                                                     "eval", "forward", "update", "floor")}
    for repeat in range(args.repeats):  # interleaved, so all see the same machine load
        floor = measure_floor(args.threads, repeats=1)
        rates["forward"].append(floor["forward_frames_per_s"])
        rates["update"].append(floor["update_frames_per_s"])
        rates["floor"].append(floor["bandit_floor_frames_per_s"])
        rates["supervised"].append(supervised_rate(supervised, supervised_optimiser, datamodule, args.batches))
        offset = repeat * args.rollouts * size
        rates["bandit"].append(bandit_rate(bandit, bandit_optimiser, loop, examples[offset:], args.rollouts, size))
        rate, per_frame = dagger_rate(dagger, dagger_optimiser, expert_loop, examples[offset:], args.rollouts, size)
        rates["dagger"].append(rate)
        # the floor's update at DAgger's minibatch size (the bandit's is at 16)
        update_rate = floor["update_frames_per_s"] if settings.batch_size == 16 else measure_floor(
            args.threads, repeats=1, update_batch=settings.batch_size)["update_frames_per_s"]
        rates["dagger_floor"].append(1.0 / (1.0 / floor["forward_frames_per_s"] + per_frame / update_rate))
        rate, spo_per_frame = spo_rate(spo, spo_optimiser, scheduled_loop, examples[offset:], args.rollouts, size)
        rates["spo"].append(rate)
        # SPO's passes are over whole rollouts (hundreds of decisions): the floor's update at batch 256
        spo_update_rate = measure_floor(args.threads, repeats=1, update_batch=256)["update_frames_per_s"]
        rates["spo_floor"].append(1.0 / (1.0 / floor["forward_frames_per_s"] + spo_per_frame / spo_update_rate))
        rate, steps = eval_rate(bandit, evaluation, datamodule.renderer)
        rates["eval"].append(rate)
    median = {k: statistics.median(v) for k, v in rates.items()}
    result = {
        "data": getattr(datamodule, "data_source", "procedural"),
        "threads": args.threads,
        "bandit_config": {"episodes_per_batch": size, "episodes_per_update": bandit_recipe.model.options.episodes_per_update},
        "supervised_frames_per_s": median["supervised"],
        "bandit_frames_per_s": median["bandit"],
        "dagger_frames_per_s": median["dagger"],
        "dagger_updates_per_frame": per_frame,
        "dagger_floor_frames_per_s": median["dagger_floor"],
        "spo_frames_per_s": median["spo"],
        "spo_updates_per_frame": spo_per_frame,
        "spo_floor_frames_per_s": median["spo_floor"],
        "eval_steps_per_s": median["eval"],
        "eval_steps": steps,
        "forward_frames_per_s": median["forward"],
        "update_frames_per_s": median["update"],
        "bandit_floor_frames_per_s": median["floor"],
        "bandit_vs_floor": median["bandit"] / median["floor"],
        "dagger_vs_floor": median["dagger"] / median["dagger_floor"],
        "spo_vs_floor": median["spo"] / median["spo_floor"],
        "eval_vs_forward_floor": median["eval"] / median["forward"],
    }
    result = {k: round(v, 3 if "_vs_" in k else 1) if isinstance(v, float) else v for k, v in result.items()}
    for key, value in result.items():
        print(f"{key:26s} {value}", file=sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
