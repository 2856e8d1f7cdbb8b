"""Train the block policy of Misra, Langford & Artzi (2017) with any objective: supervised,
contextual bandit, REINFORCE, DQN, DAgger, an oracle planner (``zoo train blocks-OBJECTIVE`` does the same).

    python recipes/blocks_policy.py                                          # supervised (the paper's baseline)
    python recipes/blocks_policy.py model.name=blocks-bandit                 # the paper's approach
    python recipes/blocks_policy.py model.name=blocks-bandit model.options.reward=f1   # an ablation of Table 2
    python recipes/blocks_policy.py model.name=blocks-dqn                    # the DQN baseline
    python recipes/blocks_policy.py model.name=blocks-planner                # supervised with an oracle planner
    python recipes/blocks_policy.py trainer.devices=4 trainer.strategy=ddp

``model.name`` picks the objective's recipe (``zoo/recipes/blocks_<objective>.yaml`` over
``blocks_common.yaml``, shipped in the package); ``--help`` prints its keys. Runs resume from
``<run_dir>/checkpoints/last.ckpt`` when it exists and the run's ``config.yaml`` is this
configuration (another one is refused; see zoo/run_directory.py); the trained policy is
exported with ``save_pretrained`` to ``<run_dir>/pretrained`` (load it with
``zoo eval blocks --model <run_dir>/pretrained``). The runner is zoo/training/runner.py.
"""

import sys
from collections.abc import Sequence

from zoo.training.runner import run

DEFAULT_RECIPE = "blocks-supervised"
"""The recipe this script runs unless ``model.name=blocks-OBJECTIVE`` picks another."""


def main(argv: Sequence[str], extra_callbacks: Sequence = ()) -> int:
    """Run the recipe the last ``model.name=`` override names (else the supervised one);
    ``extra_callbacks`` observe or interrupt the fit (tests, notebooks)."""
    named = [arg.split("=", 1)[1] for arg in argv if arg.startswith("model.name=")]
    run(named[-1] if named else DEFAULT_RECIPE, argv, callbacks=extra_callbacks)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
