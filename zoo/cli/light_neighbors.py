"""``zoo light neighbors``: nearest neighbours in a trained StarSpace space (the paper's Table 3).

Urbanek et al. (2019, Table 3) show what a StarSpace model trained on LIGHT learned by listing
the objects, characters, locations, actions and words nearest a query word. This command does
the same for a saved ``light-starspace`` model. Kept apart from the model so that
``zoo --help`` stays fast: torch is imported only when the command runs.
"""

from __future__ import annotations

import json
import sys

from zoo.light.world import NEIGHBOUR_KINDS as KINDS


def add_neighbors_command(commands) -> None:
    neighbors = commands.add_parser(
        "neighbors", help="nearest objects, characters, locations, actions and words in a StarSpace model",
        description="List what a trained light-starspace model places nearest QUERY (cosine in its one embedding "
        "space), as in Table 3 of Urbanek et al. (2019). Without --kind every kind is shown.")
    neighbors.add_argument("query", help="a word (or words, embedded as one bag)")
    neighbors.add_argument("--model", required=True, help="a save_pretrained directory or released name")
    neighbors.add_argument("--kind", choices=KINDS, help="one kind of neighbour (default: all)")
    neighbors.add_argument("-k", type=int, default=10, help="neighbours per kind (10)")
    neighbors.add_argument("--data-dir", help="where the LIGHT world is found when the model holds no entity names "
                           "(default $ZOO_DATA_DIR/light)")
    neighbors.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    neighbors.set_defaults(handler=run_neighbors)


def _load(model: str):
    from zoo.factory import Grounded  # the factory: every model class can be named by the config
    from zoo.models.starspace import StarSpaceRanker

    loaded = Grounded.from_pretrained(model)
    if not isinstance(loaded, StarSpaceRanker):
        raise TypeError(f"{model} holds a {type(loaded).__name__}, not a light-starspace model")
    return loaded


def format_table(query: str, neighbours: dict[str, list[tuple[str, float]]]) -> str:
    """One row per kind, neighbours best first (the layout of the paper's Table 3)."""
    width = max(len(kind) for kind in neighbours)
    rows = [f"query: {query}"]
    rows += [f"{kind:<{width}}  " + ", ".join(name for name, _ in found) for kind, found in neighbours.items()]
    return "\n".join(rows)


def run_neighbors(args) -> int:
    from zoo.light.records import LightDataError

    if args.k < 1:
        print("zoo light neighbors: error: -k must be >= 1", file=sys.stderr)
        return 2
    try:
        model = _load(args.model)
        kinds = (args.kind,) if args.kind else KINDS
        neighbours = {kind: model.nearest(args.query, kind, args.k, data_dir=args.data_dir) for kind in kinds}
    except (LightDataError, OSError, ValueError, KeyError, RuntimeError, TypeError) as error:
        from zoo.cli.messages import cli_words

        print(f"zoo light neighbors: error: {cli_words(error)}", file=sys.stderr)
        return 2
    if args.json:
        payload = {"query": args.query, "model": str(args.model),
                   "neighbors": {kind: [[name, round(sim, 6)] for name, sim in found]
                                 for kind, found in neighbours.items()}}
        print(json.dumps(payload))
    else:
        print(format_table(args.query, neighbours))
    return 0
