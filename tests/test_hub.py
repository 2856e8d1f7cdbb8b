"""The hub against a real HTTP server on 127.0.0.1: downloads, verification, cache, manifest."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from zoo.hub import (
    ChecksumError,
    DownloadError,
    ManifestError,
    PretrainedEntry,
    download_file,
    fetch_pretrained,
    list_pretrained,
    load_manifest,
    manifest_path,
    pretrained_entry,
)

PAYLOAD = b"released weights " * 1000
CONFIG = b'{"model_class": "Tiny", "config": {}}\n'


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Server:
    """Serves ``routes[path] = (body, advertised_length)``; counts every request it gets."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[bytes, int]] = {}
        self.requests: list[str] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append(self.path)
                if self.path not in server.routes:
                    self.send_error(404)
                    return
                body, length = server.routes[self.path]
                self.send_response(200)
                self.send_header("Content-Length", str(length))
                self.end_headers()
                self.wfile.write(body)  # HTTP/1.0: the connection closes after this

            def log_message(self, *args) -> None:
                pass

        return Handler

    def serve(self, path: str, body: bytes, length: int | None = None) -> str:
        self.routes[path] = (body, len(body) if length is None else length)
        return self.url(path)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """Cache in tmp_path, never route 127.0.0.1 through a proxy from the environment, and no
    release host or mirror from it either."""
    monkeypatch.setenv("ZOO_CACHE", str(tmp_path / "cache"))
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(var, "127.0.0.1,localhost")
    for var in ("ZOO_HUB_URL", "ZOO_CHECKPOINTS"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def server():
    server = Server()
    thread = threading.Thread(target=server.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()
    thread.join()


def assert_nothing_left(dest: Path) -> None:
    assert not dest.exists()
    assert list(dest.parent.iterdir()) == []


# ---------------------------------------------------------------------------- download_file
def test_good_file_is_downloaded_once(server, tmp_path):
    url = server.serve("/model.safetensors", PAYLOAD)
    dest = tmp_path / "dl" / "model.safetensors"
    assert download_file(url, sha(PAYLOAD), dest, progress=False) == dest
    assert dest.read_bytes() == PAYLOAD
    assert download_file(url, sha(PAYLOAD), dest, progress=False) == dest
    assert server.requests == ["/model.safetensors"]
    assert [p.name for p in dest.parent.iterdir()] == ["model.safetensors"]


def test_progress_is_shown_in_a_log_as_lines_not_a_redrawn_bar(server, tmp_path, capfd):
    url = server.serve("/model.safetensors", PAYLOAD)
    download_file(url, sha(PAYLOAD), tmp_path / "model.safetensors", progress=True)
    err = capfd.readouterr().err  # stderr is not a terminal here, as in a background run's log
    assert "\r" not in err and err.splitlines()[-1].startswith(f"model.safetensors: bytes {len(PAYLOAD)}/{len(PAYLOAD)} (100%)")


def test_wrong_hash_raises_and_keeps_nothing(server, tmp_path):
    url = server.serve("/model.safetensors", PAYLOAD)
    dest = tmp_path / "dl" / "model.safetensors"
    wrong = sha(b"something else")
    with pytest.raises(ChecksumError) as caught:
        download_file(url, wrong, dest, progress=False)
    message = str(caught.value)
    assert wrong in message and sha(PAYLOAD) in message and str(dest) in message
    assert (caught.value.expected, caught.value.actual) == (wrong, sha(PAYLOAD))
    assert_nothing_left(dest)


@pytest.mark.parametrize("size", [None, len(PAYLOAD)], ids=["hash-only", "with-size"])
def test_truncated_transfer_raises_and_keeps_nothing(server, tmp_path, size):
    url = server.serve("/model.safetensors", PAYLOAD[:100], length=len(PAYLOAD))
    dest = tmp_path / "dl" / "model.safetensors"
    with pytest.raises(DownloadError):
        download_file(url, sha(PAYLOAD), dest, progress=False, size=size)
    assert_nothing_left(dest)


def test_404_names_url_and_manual_path(server, tmp_path):
    url = server.url("/missing.safetensors")
    dest = tmp_path / "dl" / "missing.safetensors"
    dest.parent.mkdir()
    dest.write_bytes(b"corrupt")  # a stale copy must not survive a failed re-download
    with pytest.raises(DownloadError) as caught:
        download_file(url, sha(PAYLOAD), dest, progress=False)
    message = str(caught.value)
    assert not isinstance(caught.value, ChecksumError)
    assert "missing.safetensors" in message and url in message and str(dest) in message and "404" in message
    assert_nothing_left(dest)


def test_connection_refused_is_a_download_error(tmp_path):
    with socket.socket() as closed:  # bound but not listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/model.safetensors"
        dest = tmp_path / "dl" / "model.safetensors"
        with pytest.raises(DownloadError) as caught:
            download_file(url, sha(PAYLOAD), dest, progress=False)
    assert url in str(caught.value) and str(dest) in str(caught.value)
    assert_nothing_left(dest)


def test_corrupt_cache_is_downloaded_again(server, tmp_path):
    url = server.serve("/model.safetensors", PAYLOAD)
    dest = tmp_path / "model.safetensors"
    dest.write_bytes(PAYLOAD[:-1] + b"!")
    download_file(url, sha(PAYLOAD), dest, progress=False)
    assert dest.read_bytes() == PAYLOAD
    assert server.requests == ["/model.safetensors"]


@pytest.mark.parametrize("as_uri", [True, False], ids=["file-url", "path"])
def test_local_source_is_copied_and_verified(tmp_path, as_uri):
    source = tmp_path / "source.bin"
    source.write_bytes(PAYLOAD)
    dest = tmp_path / "copy" / "model.safetensors"
    download_file(source.as_uri() if as_uri else str(source), sha(PAYLOAD), dest, progress=False)
    assert dest.read_bytes() == PAYLOAD


def test_malformed_sha256_argument_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="64-character"):
        download_file("http://127.0.0.1:9/x", "abc123", tmp_path / "x", progress=False)


# ---------------------------------------------------------------------------- manifest
def file_entry(name: str, url: str, data: bytes) -> dict:
    return {"name": name, "url": url, "sha256": sha(data), "size": len(data)}


def model_entry(name: str, files: list[dict]) -> dict:
    return {
        "name": name, "model_class": "Tiny", "description": "a test model", "files": files,
        "training_data": "none", "metrics": {"mean": 1.0}, "training_cost": "0 s", "license": "MIT",
        "card": f"cards/{name}.md",
    }


def write_manifest(monkeypatch, tmp_path: Path, models: list[dict] | str) -> Path:
    path = tmp_path / "repo" / "checkpoints" / "manifest.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(models if isinstance(models, str) else json.dumps({"format": 1, "models": models}))
    monkeypatch.setenv("ZOO_MANIFEST", str(path))
    return path


def test_shipped_manifest_is_valid(monkeypatch):
    monkeypatch.delenv("ZOO_MANIFEST", raising=False)
    assert manifest_path().is_file()
    load_manifest()


def test_unknown_name_lists_known_names(monkeypatch, tmp_path, server):
    files = [file_entry("config.json", server.url("/c"), CONFIG)]
    write_manifest(monkeypatch, tmp_path, [model_entry("blocks-b", files), model_entry("blocks-a", files)])
    assert list_pretrained() == ["blocks-a", "blocks-b"]
    with pytest.raises(KeyError, match="blocks-a, blocks-b"):
        pretrained_entry("blocks-zzz")


def test_unknown_name_with_nothing_released(monkeypatch, tmp_path):
    write_manifest(monkeypatch, tmp_path, [])
    with pytest.raises(KeyError, match="no pretrained model is released"):
        fetch_pretrained("blocks-bandit")


def test_entry_mirrors_the_schema(monkeypatch, tmp_path, server):
    path = write_manifest(monkeypatch, tmp_path, [model_entry("m", [file_entry("config.json", server.url("/c"), CONFIG)])])
    entry = pretrained_entry("m")
    assert isinstance(entry, PretrainedEntry) and entry.model_class == "Tiny" and entry.metrics == {"mean": 1.0}
    assert entry.files[0].sha256 == sha(CONFIG) and entry.card_path is None  # no mirror holds the card
    (path.parent / "cards").mkdir()
    (path.parent / "cards" / "m.md").write_text("# m")
    assert entry.card_path == path.parent / "cards" / "m.md"
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.name = "other"


def test_fetch_pretrained_downloads_every_file(monkeypatch, tmp_path, server):
    files = [
        file_entry("config.json", server.serve("/m/config.json", CONFIG), CONFIG),
        file_entry("model.safetensors", server.serve("/m/weights", PAYLOAD), PAYLOAD),
    ]
    write_manifest(monkeypatch, tmp_path, [model_entry("blocks-test", files)])
    directory = fetch_pretrained("blocks-test", progress=False)
    assert directory == tmp_path / "cache" / "checkpoints" / "blocks-test"
    assert sorted(p.name for p in directory.iterdir()) == ["config.json", "model.safetensors"]
    assert (directory / "config.json").read_bytes() == CONFIG
    assert (directory / "model.safetensors").read_bytes() == PAYLOAD
    fetch_pretrained("blocks-test", progress=False)
    assert sorted(server.requests) == ["/m/config.json", "/m/weights"]


def test_fetch_pretrained_keeps_a_tokenizer_subfolder(monkeypatch, tmp_path, server):
    """save_pretrained directories of text models hold tokenizer/...; the release mirrors them."""
    files = [
        file_entry("config.json", server.serve("/m/config.json", CONFIG), CONFIG),
        file_entry("tokenizer/vocab.txt", server.serve("/m/tokenizer/vocab.txt", b"[PAD]\nhello\n"), b"[PAD]\nhello\n"),
    ]
    write_manifest(monkeypatch, tmp_path, [model_entry("light-test", files)])
    directory = fetch_pretrained("light-test", progress=False)
    assert (directory / "tokenizer" / "vocab.txt").read_bytes() == b"[PAD]\nhello\n"


def test_fetch_pretrained_failure_names_the_cache_path(monkeypatch, tmp_path, server):
    write_manifest(monkeypatch, tmp_path, [model_entry("m", [file_entry("model.safetensors", server.url("/gone"), PAYLOAD)])])
    with pytest.raises(DownloadError) as caught:
        fetch_pretrained("m", progress=False)
    assert str(tmp_path / "cache" / "checkpoints" / "m" / "model.safetensors") in str(caught.value)
    assert not (tmp_path / "cache" / "checkpoints" / "m").exists()  # no empty model folder left behind


def test_mirror_file_is_verified_and_copied_into_the_cache(monkeypatch, tmp_path, server):
    files = [
        file_entry("config.json", server.serve("/config.json", CONFIG), CONFIG),
        file_entry("model.safetensors", "weights/m.safetensors", PAYLOAD),
    ]
    path = write_manifest(monkeypatch, tmp_path, [model_entry("m", files)])
    shipped = path.parent / "weights" / "m.safetensors"
    shipped.parent.mkdir()
    shipped.write_bytes(PAYLOAD)
    directory = fetch_pretrained("m", progress=False)
    cached = directory / "model.safetensors"
    assert not cached.is_symlink() and cached.read_bytes() == PAYLOAD  # a copy: the mirror may move
    shipped.write_bytes(b"edited")
    assert fetch_pretrained("m", progress=False) == directory and cached.read_bytes() == PAYLOAD
    cached.unlink()
    with pytest.raises(ChecksumError):
        fetch_pretrained("m", progress=False)


def test_missing_in_repo_file_is_a_clear_error(monkeypatch, tmp_path):
    path = write_manifest(monkeypatch, tmp_path, [model_entry("m", [file_entry("model.safetensors", "w/m.bin", PAYLOAD)])])
    with pytest.raises(DownloadError) as caught:
        fetch_pretrained("m", progress=False)
    assert str(path.parent / "w" / "m.bin") in str(caught.value) and str(path) in str(caught.value)


def _break(mutate) -> list[dict]:
    entry = model_entry("m", [file_entry("model.safetensors", "https://example.org/m", PAYLOAD)])
    mutate(entry)
    return [entry]


@pytest.mark.parametrize(
    "models, expected",
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"format": 2, "models": []}), "'format' must be 1"),
        (json.dumps({"format": 1}), "'models' must be a list"),
        (_break(lambda e: e.pop("license")), "missing field(s) 'license'"),
        (_break(lambda e: e.update(licence="MIT")), "unknown field(s) 'licence'"),
        (_break(lambda e: e["files"][0].update(sha256="abc")), "'sha256' must be 64 lowercase hex"),
        (_break(lambda e: e["files"][0].update(size="1 MB")), "'size' must be a non-negative integer"),
        (_break(lambda e: e["files"][0].update(name="../escape")), "file name '../escape'"),
        (_break(lambda e: e["files"][0].update(name="a/b/too-deep")), "at most one '/'"),
        (_break(lambda e: e["files"][0].update(url="ftp://host/m")), "unsupported URL scheme 'ftp'"),
        (_break(lambda e: e["files"][0].update(url="/abs/m")), "relative to the manifest"),
        (_break(lambda e: e.update(files=[])), "'files' must be a non-empty list"),
        (_break(lambda e: e.update(metrics=[])), "'metrics' must be an object"),
        (_break(lambda e: e.update(files=e["files"] * 2)), "duplicate file names"),
        (_break(lambda e: None) * 2, "duplicate model name 'm'"),
    ],
)
def test_malformed_manifest_is_a_clear_error(monkeypatch, tmp_path, models, expected):
    path = write_manifest(monkeypatch, tmp_path, models)
    with pytest.raises(ManifestError) as caught:
        list_pretrained()
    assert str(path) in str(caught.value) and expected in str(caught.value)


def test_missing_manifest_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("ZOO_MANIFEST", str(tmp_path / "nowhere.json"))
    with pytest.raises(ManifestError, match="does not exist"):
        list_pretrained()


def test_load_pretrained_through_the_manifest(monkeypatch, tmp_path, server):
    """The consumer contract: Grounded.from_pretrained resolves a name through the hub."""
    import torch

    from zoo.grounded import CONFIG_NAME, Grounded
    from zoo.weights import SINGLE_FILE as WEIGHTS_NAME
    from zoo.factory import load_pretrained
    from zoo.registry import register_class

    @register_class
    class TinyHubModel(Grounded):
        def __init__(self, width: int = 3):
            super().__init__()
            self.save_hyperparameters()
            self.linear = torch.nn.Linear(width, 1)

    saved = TinyHubModel(width=4).save_pretrained(tmp_path / "release")
    weights = (saved / WEIGHTS_NAME).read_bytes()
    config = (saved / CONFIG_NAME).read_bytes()
    files = [
        file_entry(CONFIG_NAME, server.serve("/tiny/config.json", config), config),
        file_entry(WEIGHTS_NAME, server.serve("/tiny/model.safetensors", weights), weights),
    ]
    write_manifest(monkeypatch, tmp_path, [model_entry("tiny", files)])
    model = load_pretrained("tiny")
    assert isinstance(model, TinyHubModel) and model.linear.in_features == 4
    assert torch.equal(model.linear.weight, TinyHubModel.from_pretrained(saved).linear.weight)
