"""The games README.md and docs/play.md show are what their commands print, and the demo's
HTTP calls docs/play.md lists are the ones the server answers.

A fenced block of those files whose first line is ``$ zoo play ...`` is a showcase: its command
is run in-process through ``zoo.cli.main`` (from a scratch folder that sees the repository's
``docs/``, with a cache of its own) and its standard output compared with the rest of the block,
line for line. A line ``...`` stands for lines left out, and the seconds a Blocks instruction
took are not compared. The JSON transcript line docs/play.md shows is compared with the record
the game wrote. Changing a block, its command or what the command prints fails here. The games
need the real data (``$ZOO_DATA_DIR``) and are skipped without it.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest

from tests.conftest import DATA_ROOT, LIGHT_DATA
from zoo.cli import main

REPO = Path(__file__).resolve().parent.parent
SHOWCASE_FILES = (REPO / "README.md", REPO / "docs" / "play.md")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
LEFT_OUT = "..."
SECONDS = re.compile(r"(\d+ moves? in )\d+\.\d+s")


@dataclass(frozen=True)
class Showcase:
    """A shown game: where it is, its command (without ``zoo``) and the lines shown under it."""

    where: str
    argv: tuple[str, ...]
    lines: tuple[str, ...]

    @property
    def game(self) -> str:
        return self.argv[1]


def fenced_blocks(path: Path) -> list[tuple[str, str]]:
    """``(language, text)`` of every fenced block of a markdown file."""
    return [(match.group(1), match.group(2)) for match in FENCE.finditer(path.read_text(encoding="utf-8"))]


def showcases() -> list[Showcase]:
    found = []
    for path in SHOWCASE_FILES:
        for number, (_, text) in enumerate(fenced_blocks(path), 1):
            lines = text.rstrip("\n").split("\n")
            if lines[0].startswith("$ zoo play "):
                command = shlex.split(lines[0][2:])
                found.append(Showcase(f"{path.name} block {number}", tuple(command[1:]), tuple(lines[1:])))
    return found


def comparable(lines) -> list[str]:
    """Lines with what differs from run to run (the seconds an instruction took) masked."""
    return [SECONDS.sub(r"\1<seconds>s", line.rstrip()) for line in lines]


def check_shown(shown: list[str], printed: list[str]) -> None:
    """``printed`` is ``shown``, where a ``...`` line stands for any number of lines."""
    if LEFT_OUT not in shown:
        assert printed == shown
        return
    segments, segment = [], []
    for line in shown:
        if line == LEFT_OUT:
            segments.append(segment)
            segment = []
        else:
            segment.append(line)
    segments.append(segment)
    position = 0
    for index, part in enumerate(segments):
        if not part:
            continue
        if index == 0:
            assert printed[:len(part)] == part, "the block's first lines are not the first lines printed"
            position = len(part)
            continue
        starts = [i for i in range(position, len(printed) - len(part) + 1) if printed[i:i + len(part)] == part]
        assert starts, "these shown lines are not printed (in this order):\n" + "\n".join(part)
        position = starts[0] + len(part)
    if segments[-1]:
        assert position == len(printed), "the block's last lines are not the last lines printed"


def test_a_left_out_line_stands_for_any_lines_and_the_rest_must_match():
    check_shown(["a", "...", "c", "d", "..."], ["a", "b", "c", "d", "e"])
    check_shown(["a", "b"], ["a", "b"])
    for shown in (["a", "...", "d", "c"], ["b", "..."], ["...", "c"], ["a", "c"]):
        with pytest.raises(AssertionError):
            check_shown(shown, ["a", "b", "c", "d"])


def test_the_docs_show_a_light_game_and_a_blocks_board():
    shown = {(case.where.split()[0], case.game) for case in showcases()}
    assert {("README.md", "light"), ("play.md", "light"), ("play.md", "blocks")} <= shown


def needs_data(case: Showcase) -> None:
    """Skip where the data a shown command reads is absent."""
    if case.game == "light" and not any((LIGHT_DATA / name).exists()
                                        for name in ("light_environment.pkl", "environment-full")):
        pytest.skip("the real LIGHT world is not available (set ZOO_DATA_DIR)")
    if case.game == "blocks" and (DATA_ROOT is None or not (DATA_ROOT / "blocks" / "devset.json").is_file()):
        pytest.skip("the real Blocks data is not available (set ZOO_DATA_DIR)")


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """``played(argv)``: ``(stdout lines, folder it ran in)`` of ``zoo ARGV``, each command run once."""
    runs: dict[tuple[str, ...], tuple[list[str], Path]] = {}
    cache = tmp_path_factory.mktemp("showcase-cache")

    def play(argv: tuple[str, ...]) -> tuple[list[str], Path]:
        if argv not in runs:
            folder = tmp_path_factory.mktemp("showcase")
            (folder / "docs").symlink_to(REPO / "docs", target_is_directory=True)
            screen = io.StringIO()
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("ZOO_CACHE", str(cache))
                patch.chdir(folder)
                with contextlib.redirect_stdout(screen):
                    assert main(list(argv)) == 0
            runs[argv] = screen.getvalue().splitlines(), folder
        return runs[argv]

    return play


@pytest.mark.slow
@pytest.mark.parametrize("case", showcases(), ids=lambda case: f"{case.where} zoo {' '.join(case.argv[:2])}")
def test_a_shown_game_is_what_its_command_prints(case, played):
    needs_data(case)
    printed, _ = played(case.argv)
    check_shown(comparable(case.lines), comparable(printed))


@pytest.mark.slow
def test_the_transcript_line_shown_is_what_the_game_recorded(played):
    shown = [json.loads(text) for language, text in fenced_blocks(REPO / "docs" / "play.md") if language == "json"]
    game = next(case for case in showcases() if case.where.startswith("play.md") and "--transcript" in case.argv)
    needs_data(game)
    _, folder = played(game.argv)
    transcript = folder / game.argv[game.argv.index("--transcript") + 1]
    recorded = [json.loads(line) for line in transcript.read_text(encoding="utf-8").splitlines()]
    assert shown
    for record in shown:
        same = [r for r in recorded if (r["turn"], r["speaker"], r["kind"]) ==
                (record["turn"], record["speaker"], record["kind"])]
        assert len(same) == 1
        assert {**same[0], "seconds": None} == {**record, "seconds": None}  # the seconds differ from run to run


def test_the_blocks_showcase_gives_the_policys_dev_mean_error_from_its_card():
    game = next(case for case in showcases() if case.game == "blocks")
    model = game.argv[game.argv.index("--model") + 1] if "--model" in game.argv else "blocks-bandit"
    card = (REPO / "checkpoints" / "cards" / f"{model}.md").read_text(encoding="utf-8")
    dev_mean = re.search(r"^\| dev \| ([\d.]+) \|", card, re.MULTILINE).group(1)
    board = game.argv[game.argv.index("--board") + 1]
    page = (REPO / "docs" / "play.md").read_text(encoding="utf-8")
    said = page[page.index("One board, picked"):page.index(f"$ zoo play blocks --board {board}")]
    assert board in said and f"**{dev_mean}**" in said


# ---------------------------------------------------------------------- the demo's HTTP calls
def documented_calls() -> dict[tuple[str, str], dict[str, set[str]]]:
    """``(method, path) -> {"body": keys, "response": keys}`` from docs/play.md's table: a key is
    a backticked lower-case name (values are written as JSON, ``"random"``, or as patterns)."""
    page = (REPO / "docs" / "play.md").read_text(encoding="utf-8")
    calls = {}
    for method, path, body, response in re.findall(r"^\| (GET|POST) \| `([^`]+)` \| (.*?) \| (.*?) \|$", page,
                                                   re.MULTILINE):
        keys = [set(re.findall(r"`([a-z_]+)`", column)) for column in (body, response)]
        assert (method, path) not in calls, f"{method} {path} is listed twice"
        calls[method, path] = {"body": keys[0], "response": keys[1]}
    return calls


def documented_examples() -> list[tuple[str, str, dict | None]]:
    """``(method, url, body)`` of each ``curl`` example in docs/play.md."""
    examples = []
    for line in (REPO / "docs" / "play.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("curl "):
            words = shlex.split(line)
            url = next(word for word in words if word.startswith("http://"))
            body = json.loads(words[words.index("-d") + 1]) if "-d" in words else None
            examples.append(("POST" if body is not None else "GET", url, body))
    return examples


class ReadKeys(dict):
    """An empty request body that notes which keys a call reads."""

    def __init__(self) -> None:
        super().__init__()
        self.read: set[str] = set()

    def get(self, key, default=None):
        self.read.add(key)
        return default


def test_the_demo_calls_listed_are_the_routes_the_server_defines_with_the_body_keys_each_reads():
    from zoo.play.demo import PAGES, ROUTES

    calls = documented_calls()
    assert set(calls) == {("GET", path) for path in PAGES} | {("POST", path) for path in ROUTES}
    anything = lambda *args: {}  # noqa: E731 - a game that takes whatever it is given
    games = SimpleNamespace(new_light=anything, light_line=anything, new_blocks=anything, blocks_instruction=anything)
    for path, call in ROUTES.items():
        body = ReadKeys()
        call(games, body)
        assert calls["POST", path]["body"] == body.read, path
    assert all(not calls["GET", path]["body"] for path in PAGES)


def test_each_demo_call_has_one_example_request_using_only_listed_keys():
    calls = documented_calls()
    examples = documented_examples()
    assert sorted((method, urlsplit(url).path) for method, url, _ in examples) == sorted(calls)
    for method, url, body in examples:
        assert urlsplit(url).netloc == "127.0.0.1:7860"
        assert set(body or {}) <= calls[method, urlsplit(url).path]["body"], url


@pytest.fixture
def demo_server():
    """The demo's server on a free port, with the authored world, a partner that answers every
    line the same way and the ``stop`` policy: the calls themselves, without the models' time."""
    from zoo.light.environment import authored_world
    from zoo.loading import load_policies
    from zoo.play.demo import Demo, make_server

    turn = SimpleNamespace(say="Peace be with you.", action=None, why="", changes=[],
                           emote=SimpleNamespace(ok=False, command=None), seconds={"say": 0, "act": 0, "emote": 0})
    partner = SimpleNamespace(take_turn=lambda room: turn)
    demo = Demo(partner, {"partner_model": "a fixed line"}, load_policies(("stop",)), "stop", authored_world())
    server = make_server(demo, port=0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    demo.close()


def test_each_example_request_is_answered_with_the_listed_keys(demo_server):
    calls = documented_calls()
    games: dict[str, str] = {}  # the id each kind of game got from its /new call
    for method, url, body in documented_examples():
        path = urlsplit(url).path
        kind = path.split("/")[2] if path.startswith("/api/") else None
        if body is not None and "game" in body:
            body = {**body, "game": games[kind]}  # the example's id stands for the one the server gave
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"http://127.0.0.1:{demo_server.server_port}{path}", data,
                                         {"Content-Type": "application/json"}, method=method)
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200, url
            kind_of_reply, raw = response.headers["Content-Type"], response.read()
        if method == "GET":
            assert kind_of_reply.startswith("text/html") and b"<html" in raw.lower()
            continue
        reply = json.loads(raw)
        assert set(reply) == calls[method, path]["response"], path
        if path.endswith("/new"):
            games[kind] = reply["game"]
