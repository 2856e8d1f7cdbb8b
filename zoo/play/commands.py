"""``zoo play light`` and ``zoo play blocks``: argument parsing and thin handlers.

Models, torch and the data load inside the handlers, so ``zoo --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys

LIGHT_DESCRIPTION = """\
Play a character in a LIGHT room and talk and act with a partner played by the models.

The room comes from the real LIGHT world when it is present ($ZOO_DATA_DIR/light), else from
the authored world shipped with zoo. You see the setting, your persona, who is here, the
objects and what everyone carries, wears and wields. Type a line to say it; /do COMMAND runs
an engine command (/do get candle, /do give coin to guard), /emote VERB one of the 22
emotes; /look, /inv, /help, /quit. What the engine refuses is answered with its reason.

The partner's turn: it SAYS the best of the LIGHT-sim training utterances the bi-ranker
retrieves (indexed once into $ZOO_CACHE, keyed by the model's weights and the corpus; later
starts load the index in seconds), or, with a generative --model, a generated line. It
EMOTES the best of the 22 emotes by the emote model. It ACTS only on what was just
mentioned (--act auto): an engine-valid action qualifies when a word of an object it
involves is in your last line or action or in the partner's reply (for hug and hit, the verb
itself); the action model ranks the qualifying actions and the engine executes the best
one; with none qualifying it does not act. --act always takes the best-ranked valid action
every turn, --act never none. Blows that could kill are never chosen.

No action or emote ranker is released yet: actions are ranked zero-shot by light-bi-ranker
(34.0% accurate on 500 LIGHT-sim test examples, chance 11.2%), emotes by light-memnet (15.2%,
chance 4.5%), both trained on LIGHT-sim dialogue; pass a ranker trained on the task instead."""


def add_commands(commands, eval_domains) -> None:
    play = commands.add_parser("play", help="play with the models: a LIGHT room, a Blocks board")
    games = play.add_subparsers(dest="game", required=True)
    light = games.add_parser("light", help="talk and act in a LIGHT room with a model-played partner",
                             description=LIGHT_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    room = light.add_argument_group("the room")
    room.add_argument("--room", default="random", help="room name (a unique part of one will do) or 'random'")
    room.add_argument("--as", dest="me", metavar="CHARACTER", help="the character you play (default: drawn)")
    room.add_argument("--partner", metavar="CHARACTER", help="the character the models play (default: drawn)")
    room.add_argument("--seed", type=int, default=0, help="seeds the room, the cast and the engine (0)")
    room.add_argument("--world", choices=("auto", "official", "environment-full", "environment-flat", "authored"),
                      default="auto", help="which LIGHT world (auto: the real one when present, else the authored)")
    room.add_argument("--data-dir", help="directory with the LIGHT environment (default $ZOO_DATA_DIR/light)")
    models = light.add_argument_group("the partner")
    models.add_argument("--model", default="light-bi-ranker",
                        help="what speaks: a bi-ranker (retrieves) or a generative model such as light-generative "
                             "(generates); a released name or a save_pretrained directory")
    models.add_argument("--action-model", default="light-bi-ranker",
                        help="what ranks the partner's actions (any LIGHT ranker; default light-bi-ranker)")
    models.add_argument("--emote-model", default="light-memnet",
                        help="what ranks the partner's emotes (any LIGHT ranker; default light-memnet)")
    models.add_argument("--act", choices=("auto", "always", "never"), default="auto",
                        help="when the partner acts (see above; default auto)")
    models.add_argument("--corpus", help="LIGHT corpus directory whose training utterances are retrieved "
                                         "(default: the LIGHT-sim corpus, generated into the cache once)")
    models.add_argument("--index-limit", type=_positive, default=None,
                        help="retrieve from the first N distinct training utterances only (quick tries, tests)")
    _add_io_arguments(light)
    light.set_defaults(handler=run_light)


def _add_io_arguments(parser) -> None:
    group = parser.add_argument_group("input and record")
    group.add_argument("--script", metavar="FILE", help="take your lines from FILE (one per line; # comments)")
    group.add_argument("--transcript", metavar="OUT.jsonl",
                       help="write every turn as JSON lines: speaker, kind, text, world changes, seconds")


def _positive(text: str) -> int:
    from zoo.blocks.commands import positive_int

    return positive_int(text)


def _note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_light(args) -> int:
    from zoo.light.environment import load_world
    from zoo.play.console import LineSource
    from zoo.play.light_game import LightGame
    from zoo.play.light_partner import load_partner
    from zoo.play.light_room import stage_room
    from zoo.play.transcript import Transcript

    # Everything a typo can break is checked before the models load.
    world = load_world(args.data_dir, args.world)
    room = stage_room(world, args.room, args.me, args.partner, args.seed)
    lines = LineSource(args.script, "you> ", sys.stdout)
    with Transcript(args.transcript) as transcript:
        partner, details = load_partner(args.model, args.action_model, args.emote_model, args.act, args.corpus,
                                        args.index_limit, args.data_dir, progress=True, say=_note)
        index = details.get("index")
        if index:
            _note(f"Partner ready in {details['load_seconds']:.1f}s: retrieving from {index['utterances']:,} "
                  f"{index['corpus']} training utterances ({'built' if index['built'] else 'loaded'} in "
                  f"{index['seconds']:.1f}s).")
        game = LightGame(room, partner, sys.stdout, transcript)
        game.start(details)
        game.play(lines)
    return 0
