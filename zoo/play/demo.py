"""``zoo demo``: both games on one local web page, served by the standard library.

A page needs four calls (a new LIGHT room, a line in it, a new Blocks board, an instruction
on it), so a small ``http.server`` serves them with no dependency to install and nothing
fetched from elsewhere: the page is one embedded HTML file with its script, and pictures come
back inline as data URLs. The games are the terminal's own (:class:`LightGame`,
:class:`BlocksBoard`): a line typed in the chat is handled exactly as at the prompt, ``/do``
and all. Only on 127.0.0.1 unless ``--host`` says otherwise.

Nothing a client sends can stall or crash it: every connection has its own thread (daemon, so
stopping never waits on one) and a deadline, so an idle or slow client drops only itself: the
whole request (request line, headers, body) must arrive within :data:`REQUEST_TIMEOUT`, however
it trickles, and each write waits at most as long; a burst of connections waits in a deep listen queue instead of being reset; the games
run one call at a time under one lock (the models are not shared across threads), waited for
boundedly; a request whose Host or Origin is not this server is refused (403), so another web
page cannot drive it, nor reach it through DNS rebinding; and a body that is too big, not JSON,
nested too deep, holding ``NaN``/``Infinity`` or a value of the wrong type gets a one-line JSON
error (400), never a traceback.
"""

from __future__ import annotations

import base64
import io
import ipaddress
import json
import math
import re
import secrets
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path

from zoo.play.terminal_text import shown

MAX_BODY_BYTES = 64 * 1024
MAX_JSON_DEPTH = 16
"""Deepest nesting of arrays and objects a body may have (the calls need 1)."""
REQUEST_TIMEOUT = 10.0
"""Seconds a client has to send its whole request (request line, headers, body), counted from
when the server starts reading it, not per byte; also the longest a reply's write waits."""
GAME_WAIT = 60.0
"""Seconds a request waits for the games while another call holds them, before a 503."""
LISTEN_BACKLOG = 64
"""Connections the kernel queues while every thread is starting: a page's burst is not reset."""
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
        self.lock = threading.Lock()
        """Held by every call on the games: the models and the game tables are not thread-safe."""

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
    def new_light(self, room: str = "random", seed: int | None = None) -> dict:
        """A new LIGHT game; without a seed, a fresh one is drawn (a random room is another room
        each time) and returned, so the page can show it and the game can be replayed."""
        from zoo.play.light_game import LightGame
        from zoo.play.light_room import draw_seed, stage_room
        from zoo.play.transcript import Transcript

        seed = draw_seed() if seed is None else int(seed)
        staged = stage_room(self.world, room or "random", seed=seed)
        out = io.StringIO()
        game = LightGame(staged, self.partner, out, Transcript(None))
        game.start(self.details)
        key = secrets.token_hex(8)
        self._keep(self.light, key, (game, out))
        return {"game": key, "seed": seed, "output": self._drain(out), **self._light_view(game)}

    def light_line(self, key: str, line: str) -> dict:
        from zoo.play.terminal_text import clean_line

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
        from zoo.play.terminal_text import clean_line

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


PAGES = ("/", "/index.html")
"""What a GET serves: the page (every other path is a 404)."""

ROUTES = {  # what a POST calls, with its JSON body (docs/play.md lists them, tests/test_play_showcase.py checks)
    "/api/light/new": lambda demo, body: demo.new_light(_text(body, "room", "random"), _seed(body.get("seed"))),
    "/api/light/say": lambda demo, body: demo.light_line(_text(body, "game", ""), _text(body, "line", "")),
    "/api/blocks/new": lambda demo, body: demo.new_blocks(_text(body, "board", "procedural")),
    "/api/blocks/instruct": lambda demo, body: demo.blocks_instruction(_text(body, "game", ""),
                                                                       _text(body, "instruction", "")),
}


def _text(body: dict, key: str, default: str) -> str:
    value = body.get(key, default)
    if not isinstance(value, str):
        raise ValueError(f"{key!r} must be a string, got {type(value).__name__}")
    return value


def _seed(value) -> int | None:
    """A whole-number seed, or None (absent or empty: the game draws one)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"the seed must be a whole number, got {value!r}")
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"the seed must be a whole number, got {str(value)[:40]!r}") from None


def parse_body(raw: bytes) -> dict:
    """A request body as a JSON object; anything else is a one-line ValueError.

    ``json`` takes ``NaN``, ``Infinity`` and ``1e400`` (an infinite float), and recurses once
    per nesting level (30,000 ``[`` are a RecursionError, not a ValueError): all are refused
    here before a game sees them. The depth is counted on the decoded text, as ``json`` reads
    it (UTF-8, -16 or -32), so a multi-byte character cannot hide a bracket or a quote."""
    text = raw.decode(json.detect_encoding(raw), "surrogatepass") if raw else "{}"
    if _nesting_depth(text) > MAX_JSON_DEPTH:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        body = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:  # not reached after the depth check; kept so no body can crash a thread
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    if not isinstance(body, dict):
        raise ValueError("expected a JSON object")
    return body


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number this server takes")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 overflows to inf without ever spelling Infinity
        raise ValueError(f"{text[:40]} is not a finite number")
    return value


def _nesting_depth(text: str) -> int:
    """The deepest ``[``/``{`` nesting in ``text``, brackets inside strings not counted; stops
    counting once past :data:`MAX_JSON_DEPTH`."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_JSON_DEPTH:
                break
        elif char in "]}":
            depth -= 1
    return deepest


def page() -> bytes:
    return resources.files("zoo.play").joinpath("demo.html").read_bytes()


class _DeadlineReader(io.RawIOBase):
    """A connection's incoming bytes, each read waiting only for what is left of the request's
    deadline (``handler.read_deadline``): a socket timeout alone restarts with every byte, so a
    client sending one byte just inside it would hold its thread for ever."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self.handler = handler

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        left = self.handler.read_deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive in time")
        connection = self.handler.connection
        connection.settimeout(left)
        try:
            return connection.recv_into(buffer)
        finally:
            connection.settimeout(self.handler.timeout)  # writes keep their own limit


class _Busy(Exception):
    """The games stayed busy for :data:`GAME_WAIT` seconds."""


def handler_for(demo: Demo) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "zoo-demo"
        timeout = REQUEST_TIMEOUT  # the whole request's deadline; each write waits at most this
        read_deadline = math.inf

        def setup(self) -> None:
            super().setup()
            self.rfile.close()  # the socket's own reader: reads go through the deadline instead
            self.rfile = io.BufferedReader(_DeadlineReader(self))

        def handle_one_request(self) -> None:
            self.read_deadline = time.monotonic() + (self.timeout if self.timeout is not None else math.inf)
            super().handle_one_request()

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

        def _foreign(self) -> str | None:
            """Why the request is not from this server's own page, or None when it is."""
            host = self.headers.get("Host")
            if not self.server.is_own_host(host):
                return f"Host {str(host)[:80]!r} is not this server"
            origin = self.headers.get("Origin")
            if origin is not None and not (origin.lower().startswith("http://")
                                           and self.server.is_own_host(origin[len("http://"):])):
                return f"Origin {origin[:80]!r} is not this server's page"
            return None

        def do_GET(self):
            refused = self._foreign()
            if refused:
                self._json(HTTPStatus.FORBIDDEN, {"error": refused})
            elif self.path in PAGES:
                self._send(HTTPStatus.OK, page(), "text/html; charset=utf-8")
            else:
                self._json(HTTPStatus.NOT_FOUND, {"error": f"no page {self.path[:80]}"})

        def do_POST(self):
            refused = self._foreign()
            if refused:
                return self._json(HTTPStatus.FORBIDDEN, {"error": refused})
            route = ROUTES.get(self.path)
            if route is None:
                return self._json(HTTPStatus.NOT_FOUND, {"error": f"no call {self.path[:80]}"})
            try:
                length = int(self.headers.get("Content-Length") or 0)
                if not 0 <= length <= MAX_BODY_BYTES:
                    raise ValueError(f"request body over {MAX_BODY_BYTES} bytes")
                raw = self.rfile.read(length)
                if len(raw) < length:
                    raise ValueError(f"request body ended after {len(raw)} of {length} bytes")
                body = parse_body(raw)
                if not demo.lock.acquire(timeout=GAME_WAIT):
                    raise _Busy
                try:
                    reply = route(demo, body)
                finally:
                    demo.lock.release()
                self._json(HTTPStatus.OK, reply)
            except TimeoutError:
                self.close_connection = True  # the client stopped sending: it gets nothing more
            except (ValueError, KeyError, FileNotFoundError) as error:
                message = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
                self._json(HTTPStatus.BAD_REQUEST, {"error": str(message).splitlines()[0] if message else
                                                    type(error).__name__})
            except _Busy:
                self._json(HTTPStatus.SERVICE_UNAVAILABLE, {"error": f"the games stayed busy for {GAME_WAIT:g} s; retry"})
            except ConnectionError:
                self.close_connection = True  # the client went away mid-reply
            except Exception as error:  # noqa: BLE001 - a game's own failure: one line here and there
                note = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
                print(shown(f"zoo demo: {self.path} failed: {note}"), file=sys.stderr, flush=True)
                self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"the call failed: {note}"})

    return Handler


class DemoServer(ThreadingHTTPServer):
    """The demo's HTTP server: a daemon thread per connection, a deep listen queue, and a
    one-line note (not a traceback) for whatever a connection ends with."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = LISTEN_BACKLOG

    def is_own_host(self, value: str | None) -> bool:
        """Whether a Host value (``name:port``) names this server: the bound address or a
        loopback name, with this port; bound to every interface, also any IP literal and this
        machine's names. Someone else's DNS name pointing here (rebinding) is not one."""
        if not value:
            return False
        match = re.fullmatch(r"(\[[0-9a-f:.]*\]|[^:\[\]]+)(?::(\d{1,5}))?", value.strip().lower())
        if match is None:
            return False
        name, port = match.group(1), int(match.group(2) or 80)
        bound, own_port = self.server_address[:2]
        if port != own_port:
            return False
        if name in {str(bound), "localhost", "127.0.0.1", "[::1]"}:
            return True
        if str(bound) not in ("0.0.0.0", ""):
            return False
        try:
            ipaddress.ip_address(name.strip("[]"))
            return True
        except ValueError:
            return name in {socket.gethostname().lower(), socket.getfqdn().lower()}

    def handle_error(self, request, client_address) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError)):
            return  # the client went away or went quiet: nothing to report
        print(shown(f"zoo demo: a request from {client_address[0]} failed: {type(error).__name__}: {error}"),
              file=sys.stderr, flush=True)


def make_server(demo: Demo, host: str = "127.0.0.1", port: int = 7860) -> DemoServer:
    """A server for ``demo`` bound to ``host:port`` (port 0: any free one; see ``server_port``)."""
    return DemoServer((host, port), handler_for(demo))
