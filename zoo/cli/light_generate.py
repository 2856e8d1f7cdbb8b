"""``zoo light generate``: one example's context, its gold and a generative model's decoding.

Heavy imports (torch, models) happen inside the handler: ``zoo --help`` stays fast.
"""

from __future__ import annotations

import json
import pickle
import sys

from zoo.cli.light_corpus import add_corpus_arguments, sim_corpus
from zoo.cli.messages import command_failed
from zoo.light.features import FEATURE_SETS
from zoo.light.records import LightDataError
from zoo.light.release import SPLITS
from zoo.loading import load_ranker


def add_generate_command(commands) -> None:
    generate = commands.add_parser(
        "generate", help="print a context, its gold and a generative model's beam output",
        description="Decode the next line of one example with a generative model (light-generative or a "
        "save_pretrained directory of one): prints the context, the gold label and the beam-search output.")
    generate.add_argument("--model", default="light-generative", help="released name or save_pretrained directory")
    generate.add_argument("--task", choices=("dialogue", "action", "emote"), default="dialogue")
    generate.add_argument("--split", choices=SPLITS, default="valid")
    generate.add_argument("--index", type=int, default=0, help="example index within the split")
    generate.add_argument("--features", choices=sorted(FEATURE_SETS), default="parlai_default")
    generate.add_argument("--beam-size", type=int, default=None, help="default: the model's (5)")
    add_corpus_arguments(generate)
    generate.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    generate.set_defaults(handler=run_generate)


def run_generate(args) -> int:
    from zoo.light.datamodule import LightDataModule

    try:
        module = LightDataModule(task=args.task, features=args.features, source=args.source, data_dir=args.data_dir,
                                 sim=sim_corpus(args), sim_dir=args.sim_dir, download=args.download)
        module.prepare_data()
        dataset = module.dataset(args.split)
        if not 0 <= args.index < len(dataset):
            raise ValueError(f"--index must be in 0..{len(dataset) - 1} for {args.split}")
        model = load_ranker(args.model)
        if not model.supports_generation:
            raise ValueError(f"{args.model} is a {type(model).__name__}, which ranks but does not generate")
        item = dataset[args.index]
        output = model.generate([item.context], beam_size=args.beam_size)[0]
    except (LightDataError, OSError, pickle.UnpicklingError, ValueError, KeyError, RuntimeError) as error:
        return command_failed("light generate", error)
    gold = item.candidates[item.label]
    human = sys.stderr if args.json else sys.stdout
    print(f"{module.label} {args.split} example {args.index} ({args.task})\n--- context\n{item.context}\n"
          f"--- gold\n{gold}\n--- {args.model}\n{output}", file=human)
    if args.json:
        print(json.dumps({"data": module.label, "split": args.split, "index": args.index, "task": args.task,
                          "context": item.context, "gold": gold, "generated": output}))
    return 0
