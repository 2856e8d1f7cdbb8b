"""zoo from a built wheel, outside the clone: released models come from a release host.

The wheel is installed into a fresh venv in a temporary directory; its dependencies are
borrowed from this environment's site-packages through PYTHONPATH (which, unlike a site
directory, does not run this checkout's editable-install hook, so ``import zoo`` finds the
wheel). Files are served from 127.0.0.1: the project's ``checkpoints/`` over plain HTTP
(``ZOO_HUB_URL``), and a server that answers like the Hugging Face hub (``HF_ENDPOINT``).
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path

import pytest

import zoo

REPO = Path(__file__).resolve().parent.parent


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def checkpoint_server():
    handler = functools.partial(Quiet, directory=str(REPO / "checkpoints"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory) -> Path:
    import shutil

    root = tmp_path_factory.mktemp("install")
    # Build from a copy: setuptools writes build/ into the source tree it builds.
    source = root / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".git", ".venv", "runs", "build", "dist", "checkpoints",
                                                                 "*.egg-info", "__pycache__", "wandb", "docs"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(root / "dist"), str(source)], check=True, capture_output=True, timeout=300)
    wheel = next((root / "dist").glob("grounded_zoo-*.whl"))
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    # --ignore-installed: without it pip would first uninstall this environment's own zoo
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--ignore-installed",
                    "--prefix", str(venv), str(wheel)], check=True, capture_output=True, timeout=300)
    return venv


def run_zoo(venv: Path, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("ZOO_")}
    environment.update(PYTHONPATH=sysconfig.get_paths()["purelib"], NO_PROXY="127.0.0.1,localhost",
                       no_proxy="127.0.0.1,localhost", ZOO_CACHE=str(cwd / "cache"), **env)
    if "ZOO_DATA_DIR" in os.environ:
        environment["ZOO_DATA_DIR"] = os.environ["ZOO_DATA_DIR"]
    return subprocess.run([str(venv / "bin" / "python"), "-m", "zoo.cli", *args], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_wheel_lists_and_loads_released_models_from_a_release_host(wheel_venv, checkpoint_server, tmp_path):
    where = subprocess.run([str(wheel_venv / "bin" / "python"), "-c", "import zoo; print(zoo.__file__)"],
                           env={"PYTHONPATH": sysconfig.get_paths()["purelib"]}, capture_output=True, text=True,
                           cwd=tmp_path, timeout=120)
    assert str(wheel_venv) in where.stdout  # the wheel's zoo, not this checkout's
    version = run_zoo(wheel_venv, tmp_path, "--version")
    assert version.stdout.strip() == f"zoo {zoo.__version__}"
    metadata = next(wheel_venv.rglob("grounded_zoo-*.dist-info"))
    assert "Name: grounded-zoo" in (metadata / "METADATA").read_text().splitlines()
    assert (metadata / "licenses" / "LICENSE").read_text().startswith("MIT License")
    listed = run_zoo(wheel_venv, tmp_path, "models")
    assert listed.returncode == 0 and "blocks-bandit" in listed.stdout, listed.stderr
    offline = run_zoo(wheel_venv, tmp_path, "eval", "blocks", "--model", "blocks-bandit", "--limit", "5")
    assert offline.returncode == 2 and "ZOO_HUB_URL" in offline.stderr  # says what to set, in one line
    evaluated = run_zoo(wheel_venv, tmp_path, "eval", "blocks", "--model", "blocks-bandit", "--split", "dev",
                        "--limit", "50", "--json", ZOO_HUB_URL=checkpoint_server)
    assert evaluated.returncode == 0, evaluated.stderr[-2000:]
    result = json.loads(evaluated.stdout)
    assert result["n"] == 50 and result["mean"] > 0
    cached = tmp_path / "cache" / "checkpoints" / "blocks-bandit" / "model.safetensors"
    assert cached.is_file() and not cached.is_symlink()


class HubLike(http.server.BaseHTTPRequestHandler):
    """Answers ``/{repo}/resolve/{revision}/{path}`` as the Hugging Face hub does (HEAD with
    the commit, etag and size headers, then GET), from an in-memory table."""

    files: dict[str, bytes] = {}
    commit = "0123456789abcdef0123456789abcdef01234567"

    def log_message(self, *args):
        pass

    def _respond(self, body_too: bool) -> None:
        body = self.files.get(self.path.split("?")[0])
        if body is None:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", '"' + hashlib.sha256(body).hexdigest() + '"')
        self.send_header("X-Repo-Commit", self.commit)
        self.end_headers()
        if body_too:
            self.wfile.write(body)

    def do_HEAD(self):
        self._respond(False)

    def do_GET(self):
        self._respond(True)


def test_hf_entries_download_through_huggingface_hub_pinned_to_a_revision(tmp_path, monkeypatch):
    from zoo.hub import DownloadError, download_file

    payload = b"weights" * 1000
    HubLike.files = {"/owner/repo/resolve/v1/model.safetensors": payload}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HubLike)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
        monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        for offline in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):  # set on many clusters; this hub is local
            monkeypatch.delenv(offline, raising=False)
        import importlib

        import huggingface_hub.constants

        importlib.reload(huggingface_hub.constants)  # it reads HF_ENDPOINT at import
        dest = tmp_path / "cache" / "model.safetensors"
        digest = hashlib.sha256(payload).hexdigest()
        assert download_file("hf://owner/repo@v1/model.safetensors", digest, dest, progress=False).read_bytes() == payload
        with pytest.raises(DownloadError, match="hf://owner/repo@v2/model.safetensors"):
            download_file("hf://owner/repo@v2/model.safetensors", digest, tmp_path / "other" / "m", progress=False)
    finally:
        server.shutdown()
        server.server_close()
        monkeypatch.undo()
        importlib.reload(huggingface_hub.constants)  # back to what the environment says
