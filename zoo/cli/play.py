"""``zoo play light`` and ``zoo play blocks``: argument parsing and thin handlers.

Models, torch and the data load inside the handlers, so ``zoo --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys

from zoo.cli.arguments import add_threads_argument, positive_int
from zoo.loading import load_policies

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
    room.add_argument("--seed", type=int, default=None,
                      help="seeds the room, the cast and the engine (default: a fresh seed, printed so the game "
                           "can be replayed)")
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
    models.add_argument("--corpus", nargs="+", metavar="DIR",
                        help="LIGHT corpus directories whose distinct training utterances are retrieved (default: "
                             "the LIGHT-sim corpus, generated into the cache once: 74,296 distinct of its 112,921; "
                             "add corpora of other seeds, `zoo light sim --seed 1 --out DIR`, for more)")
    models.add_argument("--index-limit", type=positive_int, default=None,
                        help="retrieve from the first N distinct training utterances only (quick tries, tests)")
    _add_io_arguments(light)
    add_threads_argument(light, "small")
    light.set_defaults(handler=run_light)
    add_blocks_command(games)
    add_demo_command(commands)


BLOCKS_DESCRIPTION = """\
Instruct a Blocks policy on a board and watch what it does.

The board is an example of the data (dev:N or test:N, numbered as by `zoo blocks render
--index N`) or a procedural one (procedural[:SEED], no data needed). The start board is
written as a PNG with the annotated goal marked in red (for you; the agent never sees the
mark). Each instruction you type (or --instruction) is carried out greedily by the policy
from the board as it stands; every move is printed, a GIF of the execution written, and the
distance error to the board's annotated goal (the goal of the board's own instruction,
which /hint shows) reported. /reset restores the start board, /quit ends."""


def add_blocks_command(games) -> None:
    blocks = games.add_parser("blocks", help="instruct a Blocks policy on a board; PNG and GIF of what it does",
                              description=BLOCKS_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    blocks.add_argument("--board", default="procedural", help="dev:N | test:N | procedural[:SEED] (default procedural)")
    blocks.add_argument("--model", nargs="+", default=["blocks-bandit"],
                        help="the policy: a released name, a checkpoint directory, stop | random | demonstrations; "
                             "several learned policies form an ensemble (default blocks-bandit)")
    blocks.add_argument("--instruction", help="carry out this one instruction and end (no prompt)")
    blocks.add_argument("--out", default="play-blocks", help="directory for start.png and instruction-K.gif "
                                                             "(new, empty or zoo's own GIFs directory; default ./play-blocks)")
    blocks.add_argument("--data-dir", help="directory with the Blocks data (default $ZOO_DATA_DIR/blocks)")
    blocks.add_argument("--seed", type=int, default=0, help="seed of a stochastic policy (random)")
    _add_io_arguments(blocks)
    add_threads_argument(blocks, "small")
    blocks.set_defaults(handler=run_blocks)


def run_blocks(args) -> int:
    from pathlib import Path

    from zoo.safe_writes import check_replaceable, write_marker
    from zoo.play.blocks_board import BlocksBoard, choose_board
    from zoo.play.blocks_game import BlocksGame
    from zoo.play.terminal_text import LineSource, ShownOutput, clean_line
    from zoo.play.transcript import Transcript

    _tolerant_output()
    _check_transcript(args)
    example, label, from_data = choose_board(args.board, args.data_dir)
    out_dir = check_replaceable(Path(args.out), kind="gifs")  # new, empty or zoo's own: never over someone's files
    screen = ShownOutput(sys.stdout)  # the data's instructions and the command line's names, escaped
    lines = LineSource(args.script, "instruction> ", screen)
    instruction = None
    if args.instruction is not None:
        instruction, note = clean_line(args.instruction)
        if not instruction:
            raise ValueError("--instruction is empty")
        if note:  # e.g. a pasted page cut to a line: say so rather than act on a silently different text
            print(f"(your instruction: {note})", flush=True)
    policy = load_policies(tuple(args.model), args.seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_marker(out_dir, kind="gifs")
    with Transcript(args.transcript, args.append) as transcript:
        game = BlocksGame(BlocksBoard(example, label, from_data, args.data_dir), policy, " + ".join(args.model),
                          out_dir, screen, transcript)
        game.start()
        game.play(lines, instruction)
    return 0


def add_demo_command(commands) -> None:
    demo = commands.add_parser(
        "demo", help="both games on a local web page (http://127.0.0.1:7860/)",
        description="Serve a web page with the LIGHT room (world panel and chat: a line is handled as at the "
        "`zoo play light` prompt, /do and all) and the Blocks board (instruction box, animated execution). "
        "Models and the retrieval index load once at start. Serves only on 127.0.0.1 unless --host says otherwise.")
    demo.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1: this machine only)")
    demo.add_argument("--port", type=int, default=7860, help="port (default 7860; 0 picks a free one)")
    demo.add_argument("--world", choices=("auto", "official", "environment-full", "environment-flat", "authored"),
                      default="auto", help="which LIGHT world")
    demo.add_argument("--data-dir", help="directory with the LIGHT environment (default $ZOO_DATA_DIR/light; the "
                                         "Blocks data is found in $ZOO_DATA_DIR/blocks)")
    demo.add_argument("--model", default="light-bi-ranker", help="what speaks in the LIGHT room")
    demo.add_argument("--action-model", default="light-bi-ranker")
    demo.add_argument("--emote-model", default="light-memnet")
    demo.add_argument("--act", choices=("auto", "always", "never"), default="auto")
    demo.add_argument("--corpus", nargs="+", metavar="DIR", help="LIGHT corpora to retrieve from (as zoo play light)")
    demo.add_argument("--index-limit", type=positive_int, default=None)
    demo.add_argument("--blocks-model", nargs="+", default=["blocks-bandit"], help="the Blocks policy (or ensemble)")
    demo.set_defaults(handler=run_demo)


def run_demo(args) -> int:
    from zoo.light.environment import load_world
    from zoo.play.demo import Demo, make_server
    from zoo.play.light_partner import load_partner

    world = load_world(args.data_dir, args.world)
    partner, details = load_partner(args.model, args.action_model, args.emote_model, args.act, args.corpus,
                                    args.index_limit, args.data_dir, progress=True, say=_note)
    policy = load_policies(tuple(args.blocks_model))
    demo = Demo(partner, details, policy, " + ".join(args.blocks_model), world)
    server = make_server(demo, args.host, args.port)
    host, port = server.server_address[:2]
    print(f"zoo demo: serving on http://{host}:{port}/ (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("\nzoo demo: stopped", flush=True)
    finally:
        server.server_close()
        demo.close()
    return 0


def _add_io_arguments(parser) -> None:
    group = parser.add_argument_group("input and record")
    group.add_argument("--script", metavar="FILE",
                       help="take your lines from FILE, a pipe or - (standard input): one per line; # comments")
    group.add_argument("--transcript", metavar="OUT.jsonl",
                       help="write every turn as JSON lines: speaker, kind, text, world changes, seconds (a new "
                       "file: an existing one is refused unless --append is given)")
    group.add_argument("--append", action="store_true", help="with --transcript: add this game to the end of the file")


def _check_transcript(args) -> None:
    """Refuse an existing --transcript (without --append) before anything is loaded."""
    from zoo.play.transcript import check_transcript_path

    if args.append and args.transcript is None:
        raise ValueError("--append needs --transcript, the file to add the game to")
    if args.transcript is not None:
        check_transcript_path(args.transcript, args.append)


def _note(text: str) -> None:
    from zoo.play.terminal_text import shown

    print(shown(text), file=sys.stderr, flush=True)


def _tolerant_output() -> None:
    """A terminal that cannot show a character gets a replacement mark, not a crash."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")


def run_light(args) -> int:
    from zoo.light.environment import load_world
    from zoo.play.terminal_text import LineSource, ShownOutput
    from zoo.play.light_game import LightGame
    from zoo.play.light_partner import load_partner
    from zoo.play.light_room import draw_seed, stage_room
    from zoo.play.transcript import Transcript

    _tolerant_output()
    # Everything a typo can break is checked before the models load.
    _check_transcript(args)
    world = load_world(args.data_dir, args.world)
    seed = args.seed if args.seed is not None else draw_seed()
    room = stage_room(world, args.room, args.me, args.partner, seed)
    screen = ShownOutput(sys.stdout)  # the world's text, the corpus's lines and the command line's names, escaped
    lines = LineSource(args.script, "you> ", screen)
    with Transcript(args.transcript, args.append) as transcript:
        partner, details = load_partner(args.model, args.action_model, args.emote_model, args.act, args.corpus,
                                        args.index_limit, args.data_dir, progress=True, say=_note)
        index = details.get("index")
        if index:
            _note(f"Partner ready in {details['load_seconds']:.1f}s: retrieving from {index['utterances']:,} "
                  f"{index['corpus']} training utterances ({'built' if index['built'] else 'loaded'} in "
                  f"{index['seconds']:.1f}s).")
        game = LightGame(room, partner, screen, transcript)
        if args.seed is None:
            screen.write(f"room seed {seed}: rerun with --seed {seed} for this room\n")
        game.start(details)
        game.play(lines)
    return 0
