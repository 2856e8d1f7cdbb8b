"""``zoo demo``: both games on one local web page, served by the standard library.

A page needs four calls (a new LIGHT room, a line in it, a new Blocks board, an instruction
on it), so a small ``http.server`` serves them with no dependency to install and nothing
fetched from elsewhere: the page is one embedded HTML file with its script, and pictures come
back inline as data URLs. The games are the terminal's own (:class:`LightGame`,
:class:`BlocksBoard`): a line typed in the chat is handled exactly as at the prompt, ``/do``
and all. Requests are served one at a time (the models are not shared across threads), and
only on 127.0.0.1 unless ``--host`` says otherwise.
"""

from __future__ import annotations

import base64
import io
import json
import secrets
import shutil
import tempfile
from collections import OrderedDict
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from importlib import resources
from pathlib import Path

MAX_BODY_BYTES = 64 * 1024
MAX_GAMES = 32
"""Games kept per kind; the oldest is forgotten when a new one starts beyond this."""


class Demo:
    """The games behind the page, by id: LIGHT rooms with a shared partner, Blocks boards with a
    shared policy."""

    def __init__(self, partner, details: dict, policy, policy_name: str, world, data_dir: str | None = None) -> None:
        self.partner, self.details, self.policy, self.policy_name = partner, details, policy, policy_name
        self.world, self.data_dir = world, data_dir
        self.light: OrderedDict[str, tuple] = OrderedDict()
        self.blocks: OrderedDict[str, object] = OrderedDict()
        self.scratch = Path(tempfile.mkdtemp(prefix="zoo-demo-"))

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)

    @staticmethod
    def _keep(games: OrderedDict, key: str, game) -> None:
        games[key] = game
        while len(games) > MAX_GAMES:
            games.popitem(last=False)

    @staticmethod
    def _get(games: OrderedDict, key: str, kind: str):
        if key not in games:
            raise ValueError(f"no {kind} game {key!r} (it may have been replaced by newer games); start a new one")
        return games[key]

    # ------------------------------------------------------------------ LIGHT
    def new_light(self, room: str = "random", seed: int = 0) -> dict:
        from zoo.play.light_game import LightGame
        from zoo.play.light_room import stage_room
        from zoo.play.transcript import Transcript

        staged = stage_room(self.world, room or "random", seed=int(seed))
        out = io.StringIO()
        game = LightGame(staged, self.partner, out, Transcript(None))
        game.start(self.details)
        key = secrets.token_hex(8)
        self._keep(self.light, key, (game, out))
        return {"game": key, "output": self._drain(out), **self._light_view(game)}

    def light_line(self, key: str, line: str) -> dict:
        from zoo.play.console import clean_line

        game, out = self._get(self.light, key, "LIGHT")
        text, note = clean_line(str(line))
        out.write(f"you> {text}\n")
        going = game.handle(text, note)
        return {"game": key, "output": self._drain(out), "ended": not going, **self._light_view(game)}

    @staticmethod
    def _light_view(game) -> dict:
        return {"panel": game.room.panel(), "dialogue": list(game.dialogue), "you": game.room.me,
                "partner": game.room.partner}

    @staticmethod
    def _drain(out: io.StringIO) -> str:
        text = out.getvalue()
        out.seek(0)
        out.truncate()
        return text

    # ------------------------------------------------------------------ Blocks
    def new_blocks(self, board: str = "procedural") -> dict:
        from zoo.play.blocks_board import BlocksBoard, choose_board

        example, label, from_data = choose_board(board or "procedural", self.data_dir)
        game = BlocksBoard(example, label, from_data, self.data_dir)
        key = secrets.token_hex(8)
        self._keep(self.blocks, key, game)
        picture = game.write_picture(self.scratch / f"{key}-start.png", f"{label}: start, error {game.error():.2f}")
        return {"game": key, "board": label, "own_instruction": example.instruction, "error": round(game.error(), 4),
                "picture": self._data_url(picture, "image/png")}

    def blocks_instruction(self, key: str, instruction: str) -> dict:
        from zoo.play.console import clean_line

        game = self._get(self.blocks, key, "Blocks")
        text, _ = clean_line(str(instruction))
        if not text:
            raise ValueError("type an instruction first")
        run = game.run(self.policy, text)
        animation = game.write_animation(run, self.scratch / f"{key}-run.gif")
        return {"game": key, "instruction": text, "moves": run.moves, "blocked": run.blocked,
                "error_before": round(run.error_before, 4), "error_after": round(run.error_after, 4),
                "seconds": round(run.seconds, 3), "model": self.policy_name,
                "animation": self._data_url(animation, "image/gif")}

    @staticmethod
    def _data_url(path: Path, kind: str) -> str:
        data = path.read_bytes()
        path.unlink()
        return f"data:{kind};base64,{base64.b64encode(data).decode()}"


ROUTES = {
    "/api/light/new": lambda demo, body: demo.new_light(body.get("room", "random"), _seed(body.get("seed", 0))),
    "/api/light/say": lambda demo, body: demo.light_line(str(body.get("game", "")), str(body.get("line", ""))),
    "/api/blocks/new": lambda demo, body: demo.new_blocks(str(body.get("board", "procedural"))),
    "/api/blocks/instruct": lambda demo, body: demo.blocks_instruction(str(body.get("game", "")),
                                                                       str(body.get("instruction", ""))),
}


def _seed(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"the seed must be a whole number, got {value!r}") from None


def page() -> bytes:
    return resources.files("zoo.play").joinpath("demo.html").read_bytes()


def handler_for(demo: Demo) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "zoo-demo"

        def log_message(self, format, *args):  # quiet: the terminal shows the URL, not every request
            pass

        def _send(self, status: HTTPStatus, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: HTTPStatus, payload: dict) -> None:
            self._send(status, json.dumps(payload, ensure_ascii=False).encode("utf-8"), "application/json")

        def do_GET(self):
            if self.path in ("/", "/index.html"):
                self._send(HTTPStatus.OK, page(), "text/html; charset=utf-8")
            else:
                self._json(HTTPStatus.NOT_FOUND, {"error": f"no page {self.path[:80]}"})

        def do_POST(self):
            route = ROUTES.get(self.path)
            if route is None:
                return self._json(HTTPStatus.NOT_FOUND, {"error": f"no call {self.path[:80]}"})
            try:
                length = int(self.headers.get("Content-Length") or 0)
                if not 0 <= length <= MAX_BODY_BYTES:
                    raise ValueError(f"request body over {MAX_BODY_BYTES} bytes")
                body = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("expected a JSON object")
                self._json(HTTPStatus.OK, route(demo, body))
            except (ValueError, KeyError, FileNotFoundError) as error:
                message = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
                self._json(HTTPStatus.BAD_REQUEST, {"error": message})

    return Handler


def make_server(demo: Demo, host: str = "127.0.0.1", port: int = 7860) -> HTTPServer:
    """A server for ``demo`` bound to ``host:port`` (port 0: any free one; see ``server_port``)."""
    return HTTPServer((host, port), handler_for(demo))
