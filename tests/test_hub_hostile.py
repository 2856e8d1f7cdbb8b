"""Downloads against a hostile release host on 127.0.0.1: every transfer ends by its deadline.

The host streams endless bodies, trickles one byte every 1.5 s (in the body, the headers or a
TLS handshake), goes silent, sends more or fewer bytes than the manifest promises, the wrong
bytes, or redirects to an FTP server that trickles, to a port that never accepts, or to
``file://`` and ``data:`` URLs. Each is refused within ``$ZOO_DOWNLOAD_DEADLINE`` plus one read
timeout (both small here), and nothing is left in the cache or its staging names. Every server
loop is bounded in bytes and in time, so a client that did not stop would fail the test instead
of hanging it. Credentials in the hub URL are sent to the hub and never printed; with the
Hugging Face hub's offline mode on, ``hf://`` files come from its cache or fail in one line.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import importlib
import json
import socket
import socketserver
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import quote, unquote

import pytest

from zoo.cli import main
from zoo.hub import ChecksumError, DownloadError, download_file

RELEASE = b"released weights " * 600  # 10,200 bytes
DIGEST = hashlib.sha256(RELEASE).hexdigest()
DEADLINE = 3.0
TIMEOUT = 2.0
TRICKLE_GAP = 1.5
SERVER_LIMIT_S = 20.0
"""No server loop runs longer than this, nor sends more than SERVER_LIMIT_BYTES."""
SERVER_LIMIT_BYTES = 256 << 20
LATE_S = 1.5
"""How long ``/late-redirect/`` waits before it answers."""
TLS_RECORD_START = b"\x16\x03\x03\x40\x00"
"""A TLS handshake record header announcing 16 KiB: a client reads on until they came."""

TALLY: Counter = Counter()
"""Hosts tried, verified and refused, reported when the module ends."""


class Hostile(http.server.BaseHTTPRequestHandler):
    """One behaviour per path; ``/resolve/`` paths answer as the Hugging Face hub's resolve URL."""

    authorizations: list = []
    """(path, Authorization header) of every request, in order."""

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        Hostile.authorizations.append((self.path, self.headers.get("Authorization")))
        if self.path.startswith(("/redirect/", "/late-redirect/")):
            self._redirect()
            return
        kind = self.path.rsplit("/", 1)[-1]
        behaviour = getattr(self, f"_{kind.replace('-', '_')}", None)
        if behaviour is None:
            self.send_error(404)
            return
        try:
            behaviour()
        except (ConnectionError, TimeoutError):
            pass  # the client hung up: the point of the exercise

    def _head(self, length: int | None) -> None:
        self.send_response(200)
        if length is not None:
            self.send_header("Content-Length", str(length))
        self.end_headers()
        self.wfile.flush()

    def _send_forever(self, length: int | None) -> None:
        self._head(length)
        started, sent, block = time.monotonic(), 0, b"x" * (64 << 10)
        while sent < SERVER_LIMIT_BYTES and time.monotonic() - started < SERVER_LIMIT_S:
            self.wfile.write(block)
            sent += len(block)

    def _trickle(self, head: bytes, body: bool) -> None:
        self.wfile.write(head)
        self.wfile.flush()
        started = time.monotonic()
        while time.monotonic() - started < SERVER_LIMIT_S:
            self.wfile.write(b"x" if body else b"X")  # a header line that never ends
            self.wfile.flush()
            time.sleep(TRICKLE_GAP)

    def _honest(self) -> None:
        self._head(len(RELEASE))
        self.wfile.write(RELEASE)

    def _honest_unsized(self) -> None:
        self._head(None)
        self.wfile.write(RELEASE)

    def _endless(self) -> None:
        self._send_forever(None)

    def _endless_claims_huge(self) -> None:
        self._send_forever(300 << 20)

    def _endless_claims_size(self) -> None:  # Content-Length right, body never stops: http.client stops at it
        self._send_forever(len(RELEASE))

    def _longer_unsized(self) -> None:
        self._head(None)
        self.wfile.write(RELEASE + b"and more")

    def _longer_sized(self) -> None:
        self._head(len(RELEASE) + 8)
        self.wfile.write(RELEASE + b"and more")

    def _shorter_sized(self) -> None:
        self._head(len(RELEASE))
        self.wfile.write(RELEASE[:-100])

    def _shorter_unsized(self) -> None:
        self._head(None)
        self.wfile.write(RELEASE[:-100])

    def _wrong_bytes(self) -> None:
        tampered = RELEASE[:-1] + b"!"
        self._head(len(tampered))
        self.wfile.write(tampered)

    def _trickle_body(self) -> None:
        self._trickle(b"HTTP/1.0 200 OK\r\n\r\n", body=True)

    def _trickle_sized_body(self) -> None:
        self._trickle(f"HTTP/1.0 200 OK\r\nContent-Length: {len(RELEASE)}\r\n\r\n".encode(), body=True)

    def _trickle_headers(self) -> None:
        self._trickle(b"HTTP/1.0 200 OK\r\n", body=False)

    def _to_cdn(self) -> None:  # the hub sends large files on to another host
        self.send_response(302)
        self.send_header("Location", f"http://localhost:{self.server.server_address[1]}/cdn/honest")
        self.end_headers()

    def _silent(self) -> None:
        time.sleep(min(SERVER_LIMIT_S, 3 * TIMEOUT))

    def _redirect(self) -> None:
        """``/redirect/<quoted URL>`` answers 302 to that URL, ``/late-redirect/...`` after LATE_S."""
        kind, _, target = self.path[1:].partition("/")
        if kind == "late-redirect":
            time.sleep(LATE_S)
        self.send_response(302)
        self.send_header("Location", unquote(target))
        self.end_headers()


class Trickler(socketserver.ThreadingTCPServer):
    """Answers every TCP client with the start of a TLS record, then one byte every TRICKLE_GAP:
    a TLS handshake, or an FTP greeting, that never completes. Counts its clients."""

    daemon_threads = True
    clients = 0

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), TrickleHandler)


class TrickleHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.server.clients += 1
        started = time.monotonic()
        try:
            self.request.sendall(TLS_RECORD_START)
            while time.monotonic() - started < SERVER_LIMIT_S:
                time.sleep(TRICKLE_GAP)
                self.request.sendall(b"x")
        except OSError:
            pass  # the client hung up


@pytest.fixture(scope="module")
def trickler():
    server = Trickler()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def never_accepts():
    """A port on 127.0.0.1 whose accept queue is full: a connect to it waits until it gives up."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    queued = socket.create_connection(listener.getsockname(), timeout=5)  # fills the queue of one
    yield listener.getsockname()[1]
    queued.close()
    listener.close()


@pytest.fixture(scope="module")
def host():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    print(f"\nhostile hub: {TALLY['tried']} hosts tried, {TALLY['verified']} verified, {TALLY['refused']} refused, "
          f"{TALLY['hung']} hung, {TALLY['left']} files left")


@pytest.fixture(autouse=True)
def bounded(monkeypatch):
    monkeypatch.setenv("ZOO_DOWNLOAD_DEADLINE", str(DEADLINE))
    monkeypatch.setenv("ZOO_DOWNLOAD_TIMEOUT", str(TIMEOUT))
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(var, "127.0.0.1,localhost")
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "ZOO_HUB_URL", "ZOO_CHECKPOINTS"):
        monkeypatch.delenv(var, raising=False)  # these tests reach the local host; offline mode has its own


def fetch(url: str, dest: Path, size: int | None = len(RELEASE)) -> tuple[BaseException | None, float]:
    """(the error, seconds taken) of one download; tallied."""
    TALLY["tried"] += 1
    started = time.monotonic()
    try:
        download_file(url, DIGEST, dest, progress=False, size=size)
        error = None
        TALLY["verified"] += 1
    except DownloadError as caught:
        error = caught
        TALLY["refused"] += 1
    seconds = time.monotonic() - started
    TALLY["hung"] += seconds > DEADLINE + TIMEOUT + 1
    leftovers = [p for p in dest.parent.iterdir() if p != dest] if dest.parent.exists() else []
    TALLY["left"] += len(leftovers) + (error is not None and dest.exists())
    return error, seconds


def assert_refused_in_time(error, seconds, dest: Path, words: str) -> None:
    assert isinstance(error, DownloadError) and words in str(error), error
    assert "\n" not in str(error)
    assert seconds < DEADLINE + TIMEOUT + 1, f"took {seconds:.1f} s"
    assert not dest.exists() and list(dest.parent.iterdir()) == []  # no partial, no staging file


@pytest.mark.parametrize("path, size", [("honest", len(RELEASE)), ("honest-unsized", len(RELEASE)),
                                        ("honest", None)])
def test_an_honest_host_is_verified(host, tmp_path, path, size):
    dest = tmp_path / "cache" / "model.safetensors"
    error, seconds = fetch(f"{host}/{path}", dest, size)
    assert error is None and dest.read_bytes() == RELEASE and list(dest.parent.iterdir()) == [dest]


@pytest.mark.parametrize("path, words", [
    ("endless", "sent more than the release's 10200 bytes (cut at 10201)"),
    ("endless-claims-huge", "the server announces 314572800 bytes, the release is 10200"),
    ("longer-unsized", "sent more than the release's 10200 bytes"),
    ("longer-sized", "the server announces 10208 bytes"),
    ("shorter-sized", "received 10100 of 10200 bytes"),
    ("shorter-unsized", "received 10100 of 10200 bytes"),
    ("wrong-bytes", "expected " + DIGEST),
    ("silent", "timed out"),
])
@pytest.mark.slow
def test_a_body_other_than_the_release_is_refused_and_nothing_kept(host, tmp_path, path, words):
    dest = tmp_path / "cache" / "model.safetensors"
    assert_refused_in_time(*fetch(f"{host}/{path}", dest), dest, words)


def test_a_body_that_never_stops_past_its_content_length_is_not_read_further(host, tmp_path):
    dest = tmp_path / "cache" / "model.safetensors"
    error, seconds = fetch(f"{host}/endless-claims-size", dest)
    assert isinstance(error, ChecksumError) and seconds < DEADLINE  # 10,200 bytes of "x", then stop
    assert list(dest.parent.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("path", ["trickle-body", "trickle-sized-body", "trickle-headers"])
def test_a_trickle_of_one_byte_every_second_and_a_half_ends_at_the_deadline(host, tmp_path, path):
    """Each byte comes within the read timeout, so only the overall deadline can stop it."""
    dest = tmp_path / "cache" / "model.safetensors"
    error, seconds = fetch(f"{host}/{path}", dest)
    assert_refused_in_time(error, seconds, dest, "took longer than 3 s ($ZOO_DOWNLOAD_DEADLINE)")
    assert seconds >= DEADLINE - 0.1


@pytest.fixture
def hub_endpoint(host, monkeypatch):
    """huggingface_hub pointed at the hostile host (it reads HF_ENDPOINT at import)."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_ENDPOINT", host)
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    importlib.reload(huggingface_hub.constants)
    yield
    monkeypatch.undo()
    importlib.reload(huggingface_hub.constants)


@pytest.mark.parametrize("path, words", [
    ("honest", None),
    ("endless", "cut at 10201"),
    ("endless-claims-huge", "the server announces 314572800 bytes"),
    ("wrong-bytes", "expected " + DIGEST),
    ("trickle-body", "took longer than 3 s"),
    ("trickle-headers", "took longer than 3 s"),
])
@pytest.mark.slow
def test_hf_files_are_bounded_the_same_way(hub_endpoint, tmp_path, path, words):
    dest = tmp_path / "cache" / "model.safetensors"
    error, seconds = fetch(f"hf://owner/repo@v1/resolve/{path}", dest)
    if words is None:
        assert error is None and dest.read_bytes() == RELEASE
    else:
        assert_refused_in_time(error, seconds, dest, words)
        assert f"hf://owner/repo@v1/resolve/{path}" in str(error)


def test_the_hub_token_is_not_sent_on_to_another_host(hub_endpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_not_for_the_cdn")
    Hostile.authorizations.clear()
    dest = tmp_path / "cache" / "model.safetensors"
    assert fetch("hf://owner/repo@v1/resolve/to-cdn", dest)[0] is None and dest.read_bytes() == RELEASE
    transfer = [(path, auth) for path, auth in Hostile.authorizations if "cdn" in path]  # not the hub's own calls
    assert transfer == [("/owner/repo/resolve/v1/resolve/to-cdn", "Bearer hf_not_for_the_cdn"), ("/cdn/honest", None)]


COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def offline(hub_endpoint, monkeypatch, tmp_path) -> Path:
    """The Hugging Face hub's offline mode, its cache in tmp_path/hf (huggingface_hub reads both at import)."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    importlib.reload(huggingface_hub.constants)
    Hostile.authorizations.clear()
    return tmp_path / "hf"


def hf_cache_holds(cache: Path, body: bytes) -> Path:
    """Lay ``body`` out as ``hf download owner/repo model.safetensors --revision v1`` would."""
    repo = cache / "models--owner--repo"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "v1").write_text(COMMIT)
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (snapshot / "model.safetensors").write_bytes(body)
    return repo


def test_offline_an_hf_file_comes_verified_from_the_hugging_face_cache_then_from_zoos(offline, tmp_path):
    import shutil

    hf_cache_holds(offline, RELEASE)
    dest = tmp_path / "cache" / "model.safetensors"
    assert fetch("hf://owner/repo@v1/model.safetensors", dest)[0] is None and dest.read_bytes() == RELEASE
    shutil.rmtree(offline)
    assert fetch("hf://owner/repo@v1/model.safetensors", dest)[0] is None and dest.read_bytes() == RELEASE
    assert Hostile.authorizations == []  # the hub was never contacted


def test_offline_a_wrong_file_in_the_hugging_face_cache_is_refused(offline, tmp_path):
    hf_cache_holds(offline, RELEASE[:-1] + b"!")
    dest = tmp_path / "cache" / "model.safetensors"
    error, seconds = fetch("hf://owner/repo@v1/model.safetensors", dest)
    assert_refused_in_time(error, seconds, dest, "expected " + DIGEST)
    assert isinstance(error, ChecksumError) and Hostile.authorizations == []


def test_offline_an_hf_file_in_no_cache_fails_in_one_line_saying_how_to_go_on(offline, tmp_path):
    dest = tmp_path / "cache" / "model.safetensors"
    error, seconds = fetch("hf://owner/repo@v1/model.safetensors", dest)
    assert_refused_in_time(error, seconds, dest, "offline mode is on (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE)")
    assert "hf download owner/repo model.safetensors --revision v1" in str(error) and str(dest) in str(error)
    assert Hostile.authorizations == []


@pytest.mark.parametrize("variable", ["ZOO_DOWNLOAD_TIMEOUT", "ZOO_DOWNLOAD_DEADLINE"])
@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "-5", "0", "soon", "1e300"])
def test_a_bad_timeout_setting_is_one_line_before_any_network(monkeypatch, tmp_path, variable, value):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError) as caught:
        download_file("http://127.0.0.1:9/never-contacted", DIGEST, tmp_path / "m", progress=False)
    message = str(caught.value)
    assert variable in message and repr(value) in message and "\n" not in message
    assert list(tmp_path.iterdir()) == []


def test_the_cli_reports_a_bad_setting_on_one_line(monkeypatch, tmp_path, capsys):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"format": 1, "models": [{
        "name": "m", "model_class": "Tiny", "training_data": "none", "metrics": {}, "license": "MIT",
        "files": [{"name": "model.safetensors", "url": "http://127.0.0.1:9/m", "sha256": DIGEST, "size": len(RELEASE)}],
    }]}))
    monkeypatch.setenv("ZOO_MANIFEST", str(manifest))
    monkeypatch.setenv("ZOO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ZOO_DOWNLOAD_TIMEOUT", "inf")
    with pytest.raises(SystemExit) as exited:
        main(["download", "m"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "Traceback" not in err
    assert err.splitlines()[-1].startswith("zoo: error: ZOO_DOWNLOAD_TIMEOUT must be a number of seconds")


# ---------------------------------------------------------------------------- redirects and connects
@pytest.mark.parametrize("target", [
    "ftp://anonymous:guest@127.0.0.1:{port}/model.safetensors",
    "file:///etc/hostname",
    "data:,released%20weights",
])
def test_a_redirect_away_from_http_is_refused_in_one_line_without_opening_it(host, trickler, tmp_path, target):
    """urllib's default opener would follow ftp:// to a server that trickles, which no deadline bounds."""
    target = target.format(port=trickler.server_address[1])
    clients = trickler.clients
    dest = tmp_path / "cache" / "model.safetensors"
    error, seconds = fetch(f"{host}/redirect/{quote(target, safe='')}", dest)
    assert_refused_in_time(error, seconds, dest, "and zoo downloads only over http and https")
    assert seconds < 1 and trickler.clients == clients
    assert "anonymous:guest@" not in str(error) and target.replace(":guest@", ":***@") in str(error)


@pytest.mark.slow
@pytest.mark.parametrize("server", ["never-accepts", "tls-trickle"])
def test_a_connect_after_a_late_redirect_waits_only_for_what_is_left_of_the_deadline(
        host, never_accepts, trickler, tmp_path, monkeypatch, server):
    """A port that never accepts, or a TLS handshake that trickles, reached 1.5 s into a 3 s deadline."""
    monkeypatch.setenv("ZOO_DOWNLOAD_TIMEOUT", "10")  # longer than the deadline: only the deadline ends the wait
    dest = tmp_path / "cache" / "model.safetensors"
    port = never_accepts if server == "never-accepts" else trickler.server_address[1]
    scheme = "http" if server == "never-accepts" else "https"
    error, seconds = fetch(f"{host}/late-redirect/{quote(f'{scheme}://127.0.0.1:{port}/m', safe='')}", dest)
    assert_refused_in_time(error, seconds, dest, "took longer than 3 s ($ZOO_DOWNLOAD_DEADLINE)")
    assert DEADLINE - 0.1 <= seconds < DEADLINE + 0.5


# ---------------------------------------------------------------------------- credentials
def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_credentials_in_the_hub_url_reach_the_hub_and_are_never_printed(host, tmp_path, monkeypatch, capsys):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"format": 1, "models": [{
        "name": "m", "model_class": "Tiny", "training_data": "none", "metrics": {}, "license": "MIT",
        "files": [{"name": "model.safetensors", "url": "m/missing", "sha256": DIGEST, "size": len(RELEASE)}],
    }]}))
    monkeypatch.setenv("ZOO_MANIFEST", str(manifest))
    monkeypatch.setenv("ZOO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ZOO_HUB_URL", host.replace("http://", "http://user:secret@"))
    Hostile.authorizations.clear()
    with pytest.raises(SystemExit):
        main(["download", "m"])
    err = capsys.readouterr().err
    assert Hostile.authorizations == [("/m/missing", basic("user", "secret"))]
    last = err.splitlines()[-1]
    assert "secret" not in err and last.startswith("zoo: error: model.safetensors of m could not be found")
    assert host.replace("http://", "http://user:***@") + "/m/missing (HTTP Error 404" in last


def test_credentials_in_a_url_are_not_sent_on_to_another_host(host, tmp_path):
    Hostile.authorizations.clear()
    dest = tmp_path / "cache" / "model.safetensors"
    assert fetch(host.replace("http://", "http://user:secret@") + "/to-cdn", dest)[0] is None
    assert Hostile.authorizations == [("/to-cdn", basic("user", "secret")), ("/cdn/honest", None)]


@pytest.mark.parametrize("hub", ["ftp://127.0.0.1/zoo", "file:///srv/zoo", "/srv/zoo"])
def test_a_hub_url_other_than_http_is_refused_in_one_line(hub, tmp_path, monkeypatch, capsys):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"format": 1, "models": [{
        "name": "m", "model_class": "Tiny", "training_data": "none", "metrics": {}, "license": "MIT",
        "files": [{"name": "model.safetensors", "url": "m/model.safetensors", "sha256": DIGEST, "size": 1}],
    }]}))
    monkeypatch.setenv("ZOO_MANIFEST", str(manifest))
    monkeypatch.setenv("ZOO_HUB_URL", hub)
    with pytest.raises(SystemExit):
        main(["download", "m"])
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == (f"zoo: error: ZOO_HUB_URL must be an http:// or https:// URL, got {hub!r}; "
                    "for a directory of release files set ZOO_CHECKPOINTS to it instead")
