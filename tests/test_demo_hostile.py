"""``zoo demo`` against hostile clients on 127.0.0.1: nothing one client sends stalls the others
or reaches stderr as a traceback.

The server here runs the real page calls; the LIGHT room is the authored world's, whose start
needs no dialogue model, so a room is cheap and forty of them can be asked for at once. Every
client loop is bounded in count and time (sockets time out after CLIENT_TIMEOUT).
"""

from __future__ import annotations

import http.client
import itertools
import json
import select
import socket
import threading
import time
from collections import Counter
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zoo.light.environment import authored_world
from zoo.play.demo import LISTEN_BACKLOG, MAX_JSON_DEPTH, Demo, DemoServer, make_server, parse_body

SERVER_TIMEOUT = 1.0
"""The socket timeout the server gets here (10 s in ``zoo demo``), so drops are seen quickly."""
CLIENT_TIMEOUT = 20.0
TALLY: Counter = Counter()


@pytest.fixture(scope="module")
def server():
    demo = Demo(None, {}, None, "none", authored_world())
    server = make_server(demo, port=0)
    server.RequestHandlerClass.timeout = SERVER_TIMEOUT
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    demo.close()
    print(f"\nhostile demo: {TALLY['requests']} requests, {TALLY['refused']} refused with a JSON error, "
          f"{TALLY['tracebacks']} tracebacks, {TALLY['hung']} hung")


@pytest.fixture(autouse=True)
def no_traceback(capfd):
    """Whatever a test sends, the server's stderr holds no traceback."""
    yield
    err = capfd.readouterr().err
    TALLY["tracebacks"] += err.count("Traceback")
    assert "Traceback" not in err and "Error" not in err, err


def call(server, path: str, body: bytes | None = None, headers: dict | None = None,
         method: str = "POST") -> tuple[int, dict]:
    """(status, JSON reply) of one request; tallied."""
    TALLY["requests"] += 1
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=CLIENT_TIMEOUT)
    try:
        connection.request(method, path, body, {"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        status, raw = response.status, response.read()
    finally:
        connection.close()
        TALLY["hung"] += time.monotonic() - started > CLIENT_TIMEOUT / 2
    reply = json.loads(raw) if raw.startswith(b"{") else {"page": raw}
    if status >= 400:
        TALLY["refused"] += 1
        assert set(reply) == {"error"} and "\n" not in reply["error"]
    return status, reply


def raw_socket(server) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.server_port), timeout=CLIENT_TIMEOUT)
    return sock


def test_forty_requests_at_once_all_succeed(server):
    """A burst beyond the old backlog of 5: each waits its turn instead of being reset."""
    start, results = threading.Barrier(40), []

    def one(index: int) -> None:
        start.wait(timeout=CLIENT_TIMEOUT)
        results.append(call(server, "/api/light/new", json.dumps({"seed": index}).encode()))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=CLIENT_TIMEOUT)
    assert [status for status, _ in results] == [200] * 40
    assert len({reply["game"] for _, reply in results}) == 40
    assert LISTEN_BACKLOG >= 40


@pytest.mark.slow
def test_an_idle_connection_does_not_block_others_and_is_dropped(server):
    idle, half = raw_socket(server), raw_socket(server)
    half.sendall(b"POST /api/light/new HTTP/1.1\r\nHost: 127.0.0.1")  # headers that never end
    started = time.monotonic()
    assert call(server, "/api/light/new", b"{}")[0] == 200
    assert time.monotonic() - started < SERVER_TIMEOUT  # served while the other two wait
    for sock in (idle, half):
        assert sock.recv(1024) == b""  # the server hung up on it after its timeout
        assert time.monotonic() - started < SERVER_TIMEOUT + 3
        sock.close()


@pytest.mark.slow
def test_a_short_post_body_drops_only_its_sender(server):
    short = raw_socket(server)
    host = f"127.0.0.1:{server.server_port}"
    short.sendall(f"POST /api/light/new HTTP/1.1\r\nHost: {host}\r\nContent-Length: 100\r\n\r\n{{\"se".encode())
    started = time.monotonic()
    assert call(server, "/api/light/new", b"{}")[0] == 200
    assert time.monotonic() - started < SERVER_TIMEOUT
    assert short.recv(1024) == b""
    assert time.monotonic() - started < SERVER_TIMEOUT + 3
    short.close()


def trickle_until_dropped(sock: socket.socket, opening: bytes, filler: bytes, gap: float, limit: float) -> float:
    """Send ``opening`` at once, then ``filler`` one byte every ``gap`` seconds (never a gap the
    server's socket timeout would notice) until the server hangs up; the seconds that took.
    Gives up at ``limit`` seconds, so the test ends however the server behaves."""
    started = time.monotonic()
    sock.sendall(opening)
    for byte in itertools.cycle(filler):
        if time.monotonic() - started > limit:
            break
        try:
            sock.sendall(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            return time.monotonic() - started
        readable, _, _ = select.select([sock], [], [], gap)
        if readable:
            try:
                assert sock.recv(1024) == b""  # dropped without a reply
            except ConnectionResetError:
                pass
            return time.monotonic() - started
    return time.monotonic() - started


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["headers", "body"])
def test_a_client_trickling_its_request_is_dropped_at_the_deadline(server, phase):
    """A byte every 0.4 s never lets one read wait the 1 s timeout; the request as a whole has
    that second, whether the headers or the body trickle."""
    host = f"127.0.0.1:{server.server_port}"
    opening = f"POST /api/light/new HTTP/1.1\r\nHost: {host}\r\n".encode()
    if phase == "body":
        opening += b"Content-Length: 60000\r\n\r\n{\"room\": \""
    sock = raw_socket(server)
    try:
        seconds = trickle_until_dropped(sock, opening, b"X-Slow: a\r\n" if phase == "headers" else b"a",
                                        gap=0.4 * SERVER_TIMEOUT, limit=6 * SERVER_TIMEOUT)
    finally:
        sock.close()
    assert seconds < SERVER_TIMEOUT + 1.0
    assert call(server, "/api/light/new", b"{}")[0] == 200  # and the server goes on serving


def deep(levels: int, opener: str = "[", closer: str = "]") -> bytes:
    return (opener * levels + closer * levels).encode()


@pytest.mark.parametrize("path, body, message", [
    ("/api/light/new", b'{"room": ["a"]}', "'room' must be a string, got list"),
    ("/api/light/new", b'{"room": {"a": 1}}', "'room' must be a string, got dict"),
    ("/api/light/new", b'{"seed": Infinity}', "Infinity is not a number"),
    ("/api/light/new", b'{"seed": -Infinity}', "-Infinity is not a number"),
    ("/api/light/new", b'{"seed": NaN}', "NaN is not a number"),
    ("/api/light/new", b'{"seed": 1e400}', "1e400 is not a finite number"),
    ("/api/light/new", b'{"seed": true}', "the seed must be a whole number"),
    ("/api/light/new", b'{"seed": 2.5}', "the seed must be a whole number"),
    ("/api/light/new", b'{"seed": [1]}', "the seed must be a whole number"),
    ("/api/light/new", deep(30_000), f"nested deeper than {MAX_JSON_DEPTH} levels"),
    ("/api/light/new", b'{"a": ' * 8_000 + b"1" + b"}" * 8_000, f"nested deeper than {MAX_JSON_DEPTH} levels"),
    ("/api/light/new", b"\xff\xfe\x00garbage", "Expecting value"),
    ("/api/light/new", ('{"a": "\u2261", "b": ' + "[" * 15_000 + "]" * 15_000 + "}").encode("utf-16-le"),
     f"nested deeper than {MAX_JSON_DEPTH} levels"),  # U+2261 is the bytes 61 22: a quote to a byte scanner
    ("/api/light/new", b'"just a string"', "expected a JSON object"),
    ("/api/light/say", b'{"game": 7, "line": "hi"}', "'game' must be a string, got int"),
    ("/api/light/say", b'{"game": "x", "line": null}', "'line' must be a string, got NoneType"),
    ("/api/blocks/new", b'{"board": false}', "'board' must be a string, got bool"),
    ("/api/blocks/instruct", b'{"game": "x", "instruction": ["up"]}', "'instruction' must be a string"),
])
def test_a_malformed_body_gets_one_line_of_json_not_a_traceback(server, path, body, message):
    status, reply = call(server, path, body)
    assert status == 400 and message in reply["error"]


def test_nesting_is_capped_at_the_limit_and_brackets_in_strings_do_not_count():
    assert parse_body(json.dumps({"room": "[{" * 1000}).encode()) == {"room": "[{" * 1000}
    at_limit = b'{"extra": ' + deep(MAX_JSON_DEPTH - 1) + b"}"
    assert parse_body(at_limit)["extra"] is not None
    with pytest.raises(ValueError, match="nested deeper"):
        parse_body(b'{"extra": ' + deep(MAX_JSON_DEPTH) + b"}")


@pytest.mark.parametrize("headers", [
    {"Content-Length": "lots"}, {"Content-Length": "-1"}, {"Content-Length": str(10 ** 9)},
])
def test_a_bad_content_length_is_refused(server, headers):
    sock = raw_socket(server)
    lines = [f"POST /api/light/new HTTP/1.0", f"Host: 127.0.0.1:{server.server_port}"]
    lines += [f"{key}: {value}" for key, value in headers.items()]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    reply = b""
    while chunk := sock.recv(65536):
        reply += chunk
    sock.close()
    TALLY["requests"] += 1
    TALLY["refused"] += 1
    assert reply.startswith(b"HTTP/1.0 400") and b'{"error": ' in reply


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example"},
    {"Origin": "null"},
    {"Origin": "https://127.0.0.1"},
    {"Host": "evil.example"},
    {"Host": "rebound.example:{port}"},
    {"Host": "127.0.0.1:1"},
])
@pytest.mark.parametrize("method", ["POST", "GET"])
def test_a_request_from_another_origin_is_refused(server, headers, method):
    headers = {key: value.format(port=server.server_port) for key, value in headers.items()}
    status, reply = call(server, "/api/light/new" if method == "POST" else "/", b"{}" if method == "POST" else None,
                         headers, method)
    assert status == 403 and "is not this server" in reply["error"]


@pytest.mark.parametrize("headers", [
    {}, {"Origin": "http://127.0.0.1:{port}"}, {"Host": "localhost:{port}", "Origin": "http://localhost:{port}"},
])
def test_the_page_own_origin_is_served(server, headers):
    headers = {key: value.format(port=server.server_port) for key, value in headers.items()}
    assert call(server, "/api/light/new", b"{}", headers)[0] == 200


@pytest.mark.parametrize("bound, host, own", [
    ("127.0.0.1", "127.0.0.1:7860", True), ("127.0.0.1", "localhost:7860", True), ("127.0.0.1", "[::1]:7860", True),
    ("127.0.0.1", "127.0.0.1:7861", False), ("127.0.0.1", "192.168.1.5:7860", False),
    ("127.0.0.1", "attacker.example:7860", False), ("127.0.0.1", "", False), ("127.0.0.1", "a:b:c", False),
    ("0.0.0.0", "192.168.1.5:7860", True), ("0.0.0.0", "attacker.example:7860", False),
])
def test_own_hosts_are_the_bound_address_and_loopback_names(bound, host, own):
    """Bound to every interface, an IP literal is this server (rebinding needs a DNS name)."""
    assert DemoServer.is_own_host(SimpleNamespace(server_address=(bound, 7860)), host) is own


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(["/api/light/new", "/api/light/say", "/api/blocks/instruct"]),
       body=st.dictionaries(st.sampled_from(["room", "seed", "game", "line", "instruction", "board"]), json_values,
                            max_size=3))
def test_any_json_body_gets_a_reply_not_a_crash(server, path, body):
    status, reply = call(server, path, json.dumps(body).encode())
    assert status in (200, 400)


def test_a_failure_is_noted_on_the_server_terminal_with_control_characters_escaped(capfd):
    try:
        raise RuntimeError("no room \x1b]0;title\x07\x1b[2J")
    except RuntimeError:
        DemoServer.handle_error(SimpleNamespace(), None, ("127.0.0.1", 5555))
    err = capfd.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert err == "zoo demo: a request from 127.0.0.1 failed: RuntimeError: no room \\x1b]0;title\\x07\\x1b[2J\n"
