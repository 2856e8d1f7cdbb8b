"""Print the generative transformer's Table 6 from a studies/light_generative_table6.sh output.

    python studies/light_table6.py runs/light/table6-8000 [--split valid|test|test_unseen]

Rows are the paper's grounding sets; columns dialogue perplexity and unigram F1 (from the
dialogue runs), action and emote accuracy (R@1 over the engine-valid actions and the 22
emotes, by length-normalised likelihood, from the action and emote runs). The paper's valid
numbers are printed beside ours for reference; ours are on LIGHT-sim, so only the order of
the rows is comparable. ``valid`` (the paper's split; the first 200 examples) comes from each
run's last ``metrics.jsonl`` line, ``test`` and ``test_unseen`` (the first 500) from its
``results.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROWS = {  # feature set: (label, paper's valid PPL, F1, action acc, emote acc)
    "actions_emotes": ("actions + emotes only", 32.8, 9.3, 10.5, 15.3),
    "dialogue": ("dialogue only", 28.0, 12.5, 12.3, 20.0),
    "dialogue_action_emote": ("dialogue + action + emote", 27.6, 12.3, 12.8, 22.0),
    "dialogue_persona": ("dialogue + persona", 27.8, 12.9, 12.3, 20.8),
    "dialogue_setting": ("dialogue + setting", 27.8, 12.1, 11.5, 17.8),
    "dialogue_objects": ("dialogue + objects", 27.7, 12.8, 11.0, 20.2),
    "all": ("all features", 27.1, 13.9, 13.0, 20.6),
}


def cell(results: dict | None, key: str, scale: float = 1.0) -> str:
    if results is None or key not in results:
        return "—"
    return f"{results[key] * scale:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--split", default="test", choices=("valid", "test", "test_unseen"))
    args = parser.parse_args()

    def results(task: str, features: str) -> dict | None:
        run = args.directory / f"{task}-{features}"
        if not (run / "results.json").is_file():  # unfinished: its validation may be a partial epoch's
            return None
        if args.split == "valid":
            lines = (run / "metrics.jsonl").read_text().splitlines()
            return json.loads(lines[-1]) if lines else None
        return json.loads((run / "results.json").read_text())

    split = args.split
    print("| grounding | dialogue PPL | F1 | action acc | emote acc | paper (valid): PPL / F1 / action / emote |")
    print("|---|---:|---:|---:|---:|---|")
    for features, (label, *paper) in ROWS.items():
        dialogue, action, emote = (results(task, features) for task in ("dialogue", "action", "emote"))
        print(f"| {label} | {cell(dialogue, f'{split}/ppl')} | {cell(dialogue, f'{split}/f1', 100)} | "
              f"{cell(action, f'{split}/r_at_1', 100)} | {cell(emote, f'{split}/r_at_1', 100)} | "
              f"{' / '.join(str(v) for v in paper)} |")


if __name__ == "__main__":
    main()
