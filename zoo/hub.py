"""Released checkpoints: the manifest, verified downloads and the local cache.

``zoo/manifest.json`` (shipped inside the package, so every install has it) lists every
released model and the files it is made of, each with a sha256. A file is looked for, in
order, in

1. the verified cache, ``$ZOO_CACHE/checkpoints/<name>/`` (real copies, never links);
2. local mirrors: ``$ZOO_CHECKPOINTS``, the directory of a manifest given by
   ``$ZOO_MANIFEST``, and a checkout's ``checkpoints/`` when zoo runs from one;
3. the release host: a relative ``url`` resolves against ``$ZOO_HUB_URL`` (one ``http(s)://``
   base URL for all files), an ``http(s)://`` or ``file://`` URL is used as it is, and
   ``hf://OWNER/REPO@REVISION/PATH`` downloads through ``huggingface_hub`` pinned to that
   revision (``$HF_ENDPOINT`` picks the server).

Whatever the source, a file is copied into the cache only after its size and full sha256
matched, so a truncated transfer, a corrupted cache or a tampered mirror fails loudly
instead of loading wrong weights. Every transfer is bounded, because a hostile or broken
server must not hang zoo or fill the disk: a read may wait ``$ZOO_DOWNLOAD_TIMEOUT`` seconds
(default 30), a whole file may take ``$ZOO_DOWNLOAD_DEADLINE`` seconds (default 1800; at the
deadline the connection is shut, even mid-read), and no more than the manifest's size plus one
byte is ever written (a longer body is cut there and refused). Both settings take a positive,
finite number of seconds. The deadline is one clock for everything the transfer does: each
connect (a TLS handshake included) waits at most what is left of it, and every socket (a proxy's
tunnel included) is shut when it passes, on every redirect; only a host name lookup is left to
the system resolver's own timeout. Only ``http`` and ``https`` are opened over
the network, on every redirect too: a redirect to any other scheme (``ftp://``, ``file://``,
``data:``) is refused in one line, and ``file://`` URLs and paths in the manifest are read as
local files. A partial file never lands under the final name, and staged files of failed or
killed transfers are removed. Every failure names the file, the places tried and where a manual
copy can go, because the people who most need that are the ones behind a firewall.

Credentials in a URL (``ZOO_HUB_URL=https://user:password@host/zoo``) are sent as HTTP basic
authentication to that host only, never on to another host a redirect names, and never printed:
every message shows them as ``user:***@``.

Offline mode: with ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) set, an ``hf://`` file comes
from zoo's cache or, failing that, from the Hugging Face cache (``$HF_HUB_CACHE``, filled by
``hf download``) at the pinned revision, verified like any download; when neither holds it, the
error says offline mode is on and how to go on. zoo then never contacts the Hugging Face hub;
``$ZOO_HUB_URL`` and ``http(s)://`` entries are not Hugging Face's and are downloaded as usual.
"""

from __future__ import annotations

import base64
import hashlib
import math
import os
import re
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.client import HTTPException
from pathlib import Path
from typing import Any
from urllib import request as urlrequest
from urllib.error import HTTPError, URLError
from urllib.parse import unquote, urljoin, urlparse, urlsplit, urlunsplit

from zoo.safe_writes import STALE_SECONDS, remove_stale
from zoo.paths import cache_dir
from zoo.safe_json import JsonError, read_json

MANIFEST_ENV = "ZOO_MANIFEST"
MIRROR_ENV = "ZOO_CHECKPOINTS"
HUB_URL_ENV = "ZOO_HUB_URL"
TIMEOUT_ENV = "ZOO_DOWNLOAD_TIMEOUT"
DEFAULT_TIMEOUT = 30.0
DEADLINE_ENV = "ZOO_DOWNLOAD_DEADLINE"
DEFAULT_DEADLINE = 1800.0
MAX_SECONDS = 7 * 24 * 3600.0
"""The largest timeout or deadline accepted (a week); beyond it a socket timeout overflows."""
MANIFEST_FORMAT = 1
URL_SCHEMES = ("http", "https", "file", "hf")
NETWORK_SCHEMES = ("http", "https")
"""The only schemes opened over the network: hub URLs, manifest URLs and every redirect target."""

_SHA256 = re.compile(r"[0-9a-f]{64}")
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_USERINFO = re.compile(r"(?<=://)([^/\s@:]*)(:[^/\s]*)?@")
_CHUNK = 1 << 20

_ENTRY_REQUIRED = ("name", "model_class", "files", "training_data", "metrics", "license")
_ENTRY_OPTIONAL = ("description", "training_cost", "card")
_FILE_FIELDS = ("name", "url", "sha256", "size")


class DownloadError(OSError):
    """A file could not be fetched or verified; the message says where a manual copy goes."""

    def __init__(self, message: str, url: str | None = None, dest: Path | None = None):
        super().__init__(redact_credentials(message))  # every message, whatever URL or reason it quotes
        self.url = None if url is None else redact_credentials(url)
        self.dest = dest


class ChecksumError(DownloadError):
    """The bytes arrived but are not the released ones (truncated, corrupted or replaced)."""

    def __init__(self, message: str, url: str | None = None, dest: Path | None = None,
                 expected: str | None = None, actual: str | None = None):
        super().__init__(message, url, dest)
        self.expected = expected
        self.actual = actual


class ManifestError(ValueError):
    """The checkpoint manifest does not follow the schema in checkpoints/README.md."""


def redact_credentials(text: str) -> str:
    """``text`` with the credentials of every URL in it masked: ``user:***@`` for a user and
    password, ``***@`` for a user (often a token) alone; hub URLs may carry them, messages never do."""
    return _USERINFO.sub(lambda match: f"{match[1]}:***@" if match[2] else "***@", text)


# ---------------------------------------------------------------------------- downloads
def sha256_of(path: str | os.PathLike) -> str:
    """Hex sha256 of a file, read in chunks so multi-GB checkpoints need no memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download_file(url: str, sha256: str, dest: Path, progress: bool = True, *, size: int | None = None) -> Path:
    """``dest``, holding the file at ``url`` whose full sha256 is ``sha256``.

    A verified copy already at ``dest`` is used without touching the network. Otherwise the
    file is downloaded to a temporary name beside ``dest``, checked, and renamed into place,
    so ``dest`` only ever holds verified bytes and no failure leaves anything behind.
    ``url`` may be http(s), ``file://``, ``hf://`` or a local path. ``size``, when known,
    caps the transfer (a longer body is cut at ``size + 1`` bytes and refused) and turns a
    short one into a clear "incomplete" error. The transfer ends by ``$ZOO_DOWNLOAD_DEADLINE``.
    """
    dest = Path(dest)
    expected = _normalise_sha256(sha256)
    timeout, deadline = download_timeout(), download_deadline()  # bad settings fail before any network
    if dest.is_dir():
        raise DownloadError(f"cannot place {dest.name} at {dest}: a directory is in the way; move it aside", url, dest)
    if dest.is_file() and sha256_of(dest) == expected:
        return dest
    # A stale or corrupt copy is removed first: if the download fails, nothing is at dest.
    dest.unlink(missing_ok=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_downloads(dest)
    staging = dest.with_name(f"{dest.name}.{uuid.uuid4().hex}.download")
    try:
        _transfer(url, staging, dest, progress, size, _Watchdog(deadline), timeout)
        _verify(staging, expected, size, url, dest)
        os.replace(staging, dest)
    finally:
        staging.unlink(missing_ok=True)
    return dest


def remove_stale_downloads(dest: Path, older_than: float = STALE_SECONDS) -> None:
    """Delete staging files of ``dest`` (``<name>.<id>.download``) that no transfer has
    written to for ``older_than`` seconds: what a killed download leaves."""
    remove_stale(dest.parent.glob(f"{dest.name}.*.download"), older_than)


def download_timeout() -> float:
    """Seconds a connection or a read may wait for the server (``$ZOO_DOWNLOAD_TIMEOUT``)."""
    return _seconds_setting(TIMEOUT_ENV, DEFAULT_TIMEOUT)


def download_deadline() -> float:
    """Seconds one file's whole transfer may take (``$ZOO_DOWNLOAD_DEADLINE``): the bound a
    server sending one byte at a time cannot stretch."""
    return _seconds_setting(DEADLINE_ENV, DEFAULT_DEADLINE)


def _seconds_setting(name: str, default: float) -> float:
    """A positive, finite number of seconds from ``$name`` (``default`` when unset or empty);
    anything else (``inf``, ``nan``, ``-1``, ``soon``) is a one-line ValueError."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
        raise ValueError(f"{name} must be a number of seconds above 0 and at most {MAX_SECONDS:.0f}, got {text!r}")
    return value


class _DeadlinePassed(Exception):
    """The transfer ran past ``$ZOO_DOWNLOAD_DEADLINE``."""


class _Watchdog:
    """The deadline of one transfer. At the deadline it shuts every socket the transfer opened,
    so a read blocked on a server that trickles (one byte within each read timeout, forever)
    returns at once instead of waiting on."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> "_Watchdog":
        self.end = time.monotonic() + self.seconds  # the clock starts with the transfer itself
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def remaining(self) -> float:
        return max(self.end - time.monotonic(), 0.001)

    def passed(self) -> bool:
        """Whether the deadline has come, even if the timer has not fired yet."""
        return self.expired or time.monotonic() >= self.end

    def check(self) -> None:
        if self.passed():
            self.expired = True
            raise _DeadlinePassed

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


class _RedirectRefused(Exception):
    """A server redirected to a scheme zoo does not open (``ftp://``, ``file://``, ``data:``)."""

    def __init__(self, target: str) -> None:
        super().__init__(target)
        self.target = target


class _WatchedConnections:
    """Mixed into urllib's HTTP(S) handlers: every connection they open (redirects and proxies
    included) connects within what is left of the deadline and keeps that as its socket timeout,
    which also bounds a whole TLS handshake; its socket is watched from the moment it exists, so
    a proxy's tunnel reply cannot outlast the deadline either."""

    def __init__(self, watchdog: _Watchdog, **kwargs) -> None:
        super().__init__(**kwargs)
        self.watchdog = watchdog

    def do_open(self, http_class, req, **kwargs):
        watchdog = self.watchdog

        def connection(*args, **kw):
            conn = http_class(*args, **kw)
            conn._create_connection = _watched_connect(conn._create_connection, watchdog)
            return conn

        return super().do_open(connection, req, **kwargs)


def _watched_connect(create, watchdog: _Watchdog):
    """http.client's socket factory (``socket.create_connection``), bounded by the deadline."""

    def connect(address, timeout, *args):
        watchdog.check()
        left = watchdog.remaining()
        sock = create(address, min(timeout, left) if isinstance(timeout, (int, float)) else left, *args)
        watchdog.watch(sock)
        return sock

    return connect


class _WatchedHTTP(_WatchedConnections, urlrequest.HTTPHandler):
    pass


class _WatchedHTTPS(_WatchedConnections, urlrequest.HTTPSHandler):
    pass


class _HttpRedirects(urlrequest.HTTPRedirectHandler):
    """Redirects stay on http(s): urllib's own handler follows ``ftp://`` too, to a transfer no
    watchdog bounds. A redirect to another host (the hub's CDN) does not carry the hub's
    credentials along."""

    def http_error_302(self, req, fp, code, msg, headers):
        target = headers.get("location") or headers.get("uri")
        if target is not None and urlparse(urljoin(req.full_url, target)).scheme.lower() not in NETWORK_SCHEMES:
            fp.close()
            raise _RedirectRefused(urljoin(req.full_url, target))
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and urlparse(newurl).netloc != urlparse(req.full_url).netloc:
            for name in list(new.headers):
                if name.lower() == "authorization":
                    del new.headers[name]
        return new


def _opener(watchdog: _Watchdog) -> urlrequest.OpenerDirector:
    """An opener for http and https only (``build_opener`` adds ftp, file and data handlers a
    redirect could reach), with proxies from the environment for those two schemes."""
    proxies = {scheme: proxy for scheme, proxy in urlrequest.getproxies().items() if scheme in NETWORK_SCHEMES}
    opener = urlrequest.OpenerDirector()
    for handler in (urlrequest.ProxyHandler(proxies), urlrequest.UnknownHandler(), _WatchedHTTP(watchdog),
                    _WatchedHTTPS(watchdog), urlrequest.HTTPDefaultErrorHandler(),
                    _HttpRedirects(), urlrequest.HTTPErrorProcessor()):
        opener.add_handler(handler)
    return opener


def _transfer(url: str, staging: Path, dest: Path, progress: bool, size: int | None,
              watchdog: _Watchdog, timeout: float) -> None:
    """Stream ``url`` (or, for ``hf://``, the hub's resolve URL) into ``staging``; errors become
    a :class:`DownloadError` naming the manual place."""
    try:
        source, headers = _resolve_hf(url, dest) if url.startswith("hf://") else (_source(url), {})
        with watchdog:
            _stream(source, headers, url, staging, dest, progress, size, watchdog, timeout)
    except _DeadlinePassed:
        raise _deadline_error(url, dest, watchdog) from None
    except _RedirectRefused as refused:
        raise DownloadError(
            f"refused {dest.name} from {url}: the server redirects to {refused.target}, and zoo downloads only over "
            f"http and https. Download it manually and place it at {dest}.", url, dest) from None
    except DownloadError:
        raise
    except (OSError, HTTPException, ValueError) as error:
        if watchdog.passed():  # the watchdog shut the socket under a read, or a connect used up what was left
            raise _deadline_error(url, dest, watchdog) from error
        raise DownloadError(
            f"could not download {dest.name} from {url} ({_reason(error)}). "
            f"Download it manually and place it at {dest}, or check your network.",
            url, dest,
        ) from error


def _stream(source: str | Path, headers: dict, url: str, staging: Path, dest: Path, progress: bool,
            size: int | None, watchdog: _Watchdog, timeout: float) -> None:
    """Copy ``source`` (``url`` in messages) into ``staging``: each wait at most ``timeout``, all of it by the watchdog's
    deadline, and never more than ``size + 1`` bytes."""
    from tqdm.auto import tqdm

    from zoo.count_progress import CountProgress

    with _opened(source, headers, watchdog, timeout) as (body, announced), open(staging, "wb") as out:
        if size is not None and announced is not None and announced > size:
            raise DownloadError(
                f"refused {dest.name} from {url}: the server announces {announced} bytes, the release is "
                f"{size}. Download it manually and place it at {dest}.", url, dest)
        limit = size + 1 if size is not None else None
        received = 0
        terminal = sys.stderr.isatty()  # a bar redrawn into a log file is one endless line: a line per tenth there
        lines = CountProgress(size or announced or 0, f"{dest.name}: bytes", progress and not terminal)
        with tqdm(total=size or announced, unit="B", unit_scale=True, desc=dest.name,
                  disable=not (progress and terminal)) as bar:
            while limit is None or received < limit:
                chunk = body.read(_CHUNK if limit is None else min(_CHUNK, limit - received))
                if not chunk:
                    break
                out.write(chunk)
                received += len(chunk)
                bar.update(len(chunk))
                lines.advance(len(chunk))
                watchdog.check()
        watchdog.check()  # a read the watchdog cut short ends like the end of the body
    if size is not None and received > size:
        raise DownloadError(
            f"refused {dest.name} from {url}: the server sent more than the release's {size} bytes "
            f"(cut at {received}). Download it manually and place it at {dest}.", url, dest)


@contextmanager
def _opened(source: str | Path, headers: dict, watchdog: _Watchdog, timeout: float) -> Iterator[tuple[Any, int | None]]:
    """(body, announced length) of ``source``: a local file read directly (a device or pipe is
    refused, it could block forever), an http(s) URL through :func:`_opener`."""
    if isinstance(source, Path):
        if source.exists() and not source.is_file():
            raise ValueError(f"{source} is not a regular file")
        with open(source, "rb") as handle:
            yield handle, os.fstat(handle.fileno()).st_size
        return
    plain, credentials = _split_credentials(source)
    request = urlrequest.Request(plain, headers={**credentials, **headers})
    with _opener(watchdog).open(request, timeout=min(timeout, watchdog.remaining())) as response:
        announced = response.headers.get("Content-Length")
        yield response, int(announced) if announced and announced.strip().isdigit() else None


def _split_credentials(url: str) -> tuple[str, dict]:
    """``url`` without ``user:password@`` and the basic-authentication header that carries them
    (urllib would take ``user:password@host`` for the host name)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, {}
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    return urlunsplit(parts._replace(netloc=host)), {"Authorization": f"Basic {token}"}


def _deadline_error(url: str, dest: Path, watchdog: _Watchdog) -> DownloadError:
    return DownloadError(
        f"could not download {dest.name} from {url}: the transfer took longer than {watchdog.seconds:g} s "
        f"(${DEADLINE_ENV}). Retry, raise {DEADLINE_ENV}, or download it manually and place it at {dest}.",
        url, dest)


def parse_hf_url(url: str) -> tuple[str, str, str]:
    """``hf://OWNER/REPO@REVISION/PATH`` -> (repo id, revision, path in the repo)."""
    match = re.fullmatch(r"hf://([A-Za-z0-9][\w.-]*/[\w.-]+)@([\w.-]+)/(.+)", url)
    if match is None:
        raise ValueError(f"{url!r} is not hf://OWNER/REPO@REVISION/PATH")
    return match.group(1), match.group(2), match.group(3)


def _resolve_hf(url: str, dest: Path) -> tuple[str | Path, dict]:
    """The hub's resolve URL of an ``hf://`` file (pinned revision, ``$HF_ENDPOINT``) and the
    headers huggingface_hub would send (token, user agent); in offline mode, the file in the
    Hugging Face cache (:func:`_hf_cached`).

    The bytes then come through :func:`_stream` like any other download: ``hf_hub_download``
    bounds each read (``HF_HUB_DOWNLOAD_TIMEOUT``, retried up to five times) but not the whole
    transfer, and checks the size only after the body ended, so an endless or trickling body
    would hold it (and fill its cache) without end."""
    from huggingface_hub import constants, hf_hub_url
    from huggingface_hub.utils import build_hf_headers

    repo_id, revision, filename = parse_hf_url(url)
    if constants.HF_HUB_OFFLINE:
        return _hf_cached(url, dest), {}
    return hf_hub_url(repo_id, filename, revision=revision, endpoint=constants.ENDPOINT), build_hf_headers()


def _hf_cached(url: str, dest: Path) -> Path:
    """Offline mode (``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE``, as huggingface_hub reads
    them): the ``hf://`` file from the Hugging Face cache at its pinned revision, which is then
    verified like any source; when the cache lacks it, a one-line error saying how to go on.
    The network is never tried: offline mode is how clusters without it say so."""
    from huggingface_hub import try_to_load_from_cache

    repo_id, revision, filename = parse_hf_url(url)
    cached = try_to_load_from_cache(repo_id, filename, revision=revision)
    if isinstance(cached, str):
        return Path(cached)
    raise DownloadError(
        f"{dest.name} ({url}) is in neither zoo's cache nor the Hugging Face cache, and offline mode is on "
        f"(HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE). Unset it to download, fill the Hugging Face cache where the "
        f"network is reachable (hf download {repo_id} {filename} --revision {revision}), or place a verified copy "
        f"at {dest}.", url, dest)


def _verify(staging: Path, expected: str, size: int | None, url: str, dest: Path) -> None:
    received = staging.stat().st_size
    if size is not None and received != size:
        raise DownloadError(
            f"incomplete download of {dest.name} from {url}: received {received} of {size} bytes. "
            f"Retry, or download it manually and place it at {dest}.",
            url, dest,
        )
    actual = sha256_of(staging)
    if actual != expected:
        raise ChecksumError(
            f"{dest.name} from {url} has sha256 {actual} ({received} bytes), expected {expected}; "
            f"it was not kept. Place a verified copy at {dest}.",
            url, dest, expected, actual,
        )


def _reason(error: BaseException) -> str:
    """The short human part of a urllib/http.client error ("HTTP Error 404: Not Found")."""
    if isinstance(error, URLError) and not isinstance(error, HTTPError):
        return str(error.reason)
    return str(error) or type(error).__name__


def _source(url: str) -> str | Path:
    """What a non-``hf://`` ``url`` names: an http(s) URL as it is, or the local file of a
    ``file://`` URL or a path (read directly, never through urllib)."""
    if not _has_scheme(url):
        return Path(url).expanduser().resolve()
    parts = urlparse(url)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise ValueError(f"{url} names a file on another host; a file:// URL names a local file")
        return Path(urlrequest.url2pathname(parts.path))
    if parts.scheme not in NETWORK_SCHEMES:
        raise ValueError(f"unsupported URL scheme {parts.scheme!r} in {url}; use one of {', '.join(URL_SCHEMES)}")
    return url


def _normalise_sha256(sha256: str) -> str:
    value = sha256.strip().lower()
    if not _SHA256.fullmatch(value):
        raise ValueError(f"expected a full 64-character hex sha256, got {sha256!r}")
    return value


# ---------------------------------------------------------------------------- manifest
@dataclass(frozen=True)
class PretrainedFile:
    """One file of a release; ``url`` is http(s)/file/hf, or a path relative to the release
    root (a mirror directory or ``$ZOO_HUB_URL``)."""

    name: str
    url: str
    sha256: str
    size: int


@dataclass(frozen=True)
class PretrainedEntry:
    """One released model, as the manifest describes it."""

    name: str
    model_class: str
    files: tuple[PretrainedFile, ...]
    training_data: str
    metrics: Mapping[str, Any]
    license: str
    manifest: Path
    """The manifest file that declared the entry; relative paths resolve against its directory."""
    description: str = ""
    training_cost: str = ""
    card: str | None = None

    def mirror_paths(self, file: PretrainedFile) -> list[Path]:
        """Local places a relative file may already be, in the order they are tried."""
        if _has_scheme(file.url):
            return []
        return [root / file.url for root in mirror_roots(self.manifest)]

    def sources(self, file: PretrainedFile) -> list[str]:
        """Where a file is downloaded from when no mirror has it."""
        if _has_scheme(file.url):
            return [file.url]
        base = hub_url()
        return [base + "/" + file.url] if base else []

    @property
    def card_path(self) -> Path | None:
        if self.card is None:
            return None
        for root in mirror_roots(self.manifest):
            if (root / self.card).is_file():
                return root / self.card
        return None


def hub_url() -> str | None:
    """``$ZOO_HUB_URL`` without its trailing ``/``, or None when unset. It must be http(s): a
    local copy of the release files is what ``$ZOO_CHECKPOINTS`` is for."""
    base = os.environ.get(HUB_URL_ENV, "").strip()
    if not base:
        return None
    if urlparse(base).scheme.lower() not in NETWORK_SCHEMES:
        raise DownloadError(f"{HUB_URL_ENV} must be an http:// or https:// URL, got {base!r}; "
                            f"for a directory of release files set {MIRROR_ENV} to it instead")
    return base.rstrip("/")


def manifest_path() -> Path:
    """``$ZOO_MANIFEST``, else the manifest shipped inside the package (``zoo/manifest.json``)."""
    override = os.environ.get(MANIFEST_ENV)
    if override:
        return Path(override).expanduser()
    return Path(__file__).resolve().parent / "manifest.json"


def checkout_checkpoints() -> Path | None:
    """``checkpoints/`` of the repository zoo runs from, if it runs from a checkout."""
    candidate = Path(__file__).resolve().parent.parent / "checkpoints"
    return candidate if candidate.is_dir() else None


def mirror_roots(manifest: Path | None = None) -> list[Path]:
    """Local release roots, in order: ``$ZOO_CHECKPOINTS``, a ``$ZOO_MANIFEST``'s directory,
    a checkout's ``checkpoints/``."""
    roots = []
    if os.environ.get(MIRROR_ENV):
        roots.append(Path(os.environ[MIRROR_ENV]).expanduser())
    if manifest is not None and os.environ.get(MANIFEST_ENV):
        roots.append(manifest.parent)
    checkout = checkout_checkpoints()
    if checkout is not None:
        roots.append(checkout)
    return roots


def load_manifest(path: str | os.PathLike | None = None) -> dict[str, PretrainedEntry]:
    """Every entry of the manifest by name, validated so that mistakes fail at load time."""
    path = Path(path) if path is not None else manifest_path()
    try:
        if not path.is_file():
            raise FileNotFoundError(path)
        raw = read_json(path)
    except FileNotFoundError as error:
        raise ManifestError(f"checkpoint manifest {path} does not exist (set {MANIFEST_ENV} to override)") from error
    except JsonError as error:
        raise ManifestError(f"checkpoint manifest {error}") from None
    return _parse_manifest(raw, path)


def list_pretrained() -> list[str]:
    """Names of the released models, sorted."""
    return sorted(load_manifest())


def looks_like_path(value: str | os.PathLike) -> bool:
    """The rule for names against paths: a ``Path``, or text starting with ``.``, ``/`` or
    ``~`` or holding a separator, is a path; anything else is a released name."""
    if not isinstance(value, str):
        return True
    return value.startswith((".", "/", "~")) or "/" in value or os.sep in value or (os.altsep or "/") in value


def pretrained_entry(name: str) -> PretrainedEntry:
    """The manifest entry of ``name``; a KeyError lists what is released."""
    entries = load_manifest()
    if name not in entries:
        known = f"released models: {', '.join(sorted(entries))}" if entries else "no pretrained model is released yet"
        raise KeyError(f"unknown pretrained model {name!r}; {known} (manifest {manifest_path()})")
    return entries[name]


def fetch_pretrained(name: str, progress: bool = True) -> Path:
    """``$ZOO_CACHE/checkpoints/<name>/`` holding every file of the release, each verified
    (see the module docstring for where files are looked for)."""
    entry = pretrained_entry(name)
    directory = cache_dir() / "checkpoints" / entry.name
    created = not directory.exists()
    try:
        for file in entry.files:
            fetch_file(entry, file, directory / file.name, progress)
    except BaseException:
        if created:  # a failed first fetch leaves no empty model folder behind
            _remove_empty_tree(directory)
        raise
    return directory


def fetch_file(entry: PretrainedEntry, file: PretrainedFile, dest: Path, progress: bool = True) -> Path:
    """One file of a release at ``dest``: the verified cache copy, else a verified copy of a
    local mirror's, else a verified download; the error lists every place tried."""
    if dest.is_symlink():
        dest.unlink()  # a link into a checkout, left by an older zoo: the cache holds copies
    if dest.is_file() and dest.stat().st_size == file.size and sha256_of(dest) == file.sha256:
        return dest
    tried: list[str] = []
    for path in entry.mirror_paths(file):
        tried.append(str(path))
        if path.is_file():  # copied like a download: staged, sha256-checked, renamed; a copy of
            # the wrong size is a ChecksumError (not the released file), not an "incomplete" one
            return download_file(str(path), file.sha256, dest, progress=False)
    sources = entry.sources(file)
    if not sources:
        raise DownloadError(
            f"{file.name} of {entry.name} (manifest {entry.manifest}) is not in the cache or any local mirror "
            f"(tried {', '.join(tried) or 'none'}) "
            f"and no release host is set: set {HUB_URL_ENV} to the base URL of the release files, or "
            f"{MIRROR_ENV} to a directory holding {file.url}, or place a verified copy at {dest}",
            file.url, dest)
    errors = []
    for url in sources:
        try:
            return download_file(url, file.sha256, dest, progress, size=file.size)
        except DownloadError as error:
            errors.append(error)
    if len(errors) == 1 and not tried:
        raise errors[0]
    raise DownloadError(f"{file.name} of {entry.name} could not be found (tried {', '.join(tried + sources)}); "
                        f"last error: {errors[-1]}", file.url, dest)


def _remove_empty_tree(directory: Path) -> None:
    for path in sorted(directory.glob("**/*"), reverse=True):
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    if directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()


# ---------------------------------------------------------------------------- validation
def _parse_manifest(raw: Any, path: Path) -> dict[str, PretrainedEntry]:
    if not isinstance(raw, dict):
        raise ManifestError(f"{path}: expected a JSON object with 'format' and 'models'")
    if raw.get("format") != MANIFEST_FORMAT:
        raise ManifestError(f"{path}: 'format' must be {MANIFEST_FORMAT}, got {raw.get('format')!r}")
    models = raw.get("models")
    if not isinstance(models, list):
        raise ManifestError(f"{path}: 'models' must be a list")
    entries: dict[str, PretrainedEntry] = {}
    for index, item in enumerate(models):
        entry = _parse_entry(item, f"{path}: models[{index}]", path)
        if entry.name in entries:
            raise ManifestError(f"{path}: duplicate model name {entry.name!r}")
        entries[entry.name] = entry
    return entries


def _parse_entry(raw: Any, where: str, path: Path) -> PretrainedEntry:
    _check_keys(raw, _ENTRY_REQUIRED, _ENTRY_OPTIONAL, where)
    where = f"{where} ({raw['name']!r})"
    for key in ("name", "model_class", "training_data", "license", "description", "training_cost", "card"):
        if key in raw and not isinstance(raw[key], str) and not (key == "card" and raw[key] is None):
            raise ManifestError(f"{where}: {key!r} must be a string")
    _check_name(raw["name"], "model name", where)
    if not isinstance(raw["metrics"], dict):
        raise ManifestError(f"{where}: 'metrics' must be an object")
    if not isinstance(raw["files"], list) or not raw["files"]:
        raise ManifestError(f"{where}: 'files' must be a non-empty list")
    files = tuple(_parse_file(item, f"{where}: files[{i}]") for i, item in enumerate(raw["files"]))
    names = [f.name for f in files]
    if len(set(names)) != len(names):
        raise ManifestError(f"{where}: duplicate file names in {names}")
    folders = {name.split("/")[0] for name in names if "/" in name}
    clash = sorted(folders & set(names))
    if clash:
        raise ManifestError(f"{where}: {clash[0]!r} is both a file and the folder of another file")
    return PretrainedEntry(
        name=raw["name"], model_class=raw["model_class"], files=files, training_data=raw["training_data"],
        metrics=dict(raw["metrics"]), license=raw["license"], description=raw.get("description", ""),
        training_cost=raw.get("training_cost", ""), card=raw.get("card"), manifest=path,
    )


def _parse_file(raw: Any, where: str) -> PretrainedFile:
    _check_keys(raw, _FILE_FIELDS, (), where)
    name, url, sha256, size = (raw[key] for key in _FILE_FIELDS)
    if not isinstance(name, str):
        raise ManifestError(f"{where}: 'name' must be a string")
    _check_file_name(name, where)
    if not isinstance(url, str) or not url:
        raise ManifestError(f"{where}: 'url' must be a non-empty string")
    scheme = urlparse(url).scheme
    if _has_scheme(url) and scheme not in URL_SCHEMES:
        raise ManifestError(f"{where}: unsupported URL scheme {scheme!r}; use {', '.join(URL_SCHEMES)} or a relative path")
    if scheme == "hf":
        try:
            parse_hf_url(url)
        except ValueError as error:
            raise ManifestError(f"{where}: {error}") from None
    if not _has_scheme(url) and ".." in Path(url).parts:
        raise ManifestError(f"{where}: a relative url may not leave the release root, got {url!r}")
    if not _has_scheme(url) and Path(url).is_absolute():
        raise ManifestError(f"{where}: local files must be relative to the manifest's directory, got {url!r}")
    if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
        raise ManifestError(f"{where}: 'sha256' must be 64 lowercase hex characters, got {sha256!r}")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ManifestError(f"{where}: 'size' must be a non-negative integer (bytes), got {size!r}")
    return PretrainedFile(name, url, sha256, size)


def _check_keys(raw: Any, required: tuple[str, ...], optional: tuple[str, ...], where: str) -> None:
    """Missing and unknown keys both fail: a typo such as 'sha265' must not pass silently."""
    if not isinstance(raw, dict):
        raise ManifestError(f"{where}: expected an object, got {type(raw).__name__}")
    missing = [key for key in required if key not in raw]
    if missing:
        raise ManifestError(f"{where}: missing field(s) {', '.join(map(repr, missing))}")
    unknown = sorted(set(raw) - set(required) - set(optional))
    if unknown:
        raise ManifestError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}")


def _check_name(name: str, what: str, where: str) -> None:
    """Names become cache paths, so they may not contain separators or start with a dot."""
    if not _SAFE_NAME.fullmatch(name):
        raise ManifestError(f"{where}: {what} {name!r} may only use letters, digits, '.', '_' and '-'")


def _check_file_name(name: str, where: str) -> None:
    """File names become paths in the cache: safe parts, and at most one subfolder, which
    save_pretrained directories use for their tokenizer (``tokenizer/tokenizer.json``)."""
    parts = name.split("/")
    if len(parts) > 2 or not all(_SAFE_NAME.fullmatch(part) for part in parts):
        raise ManifestError(f"{where}: file name {name!r} may only use letters, digits, '.', '_' and '-', "
                            "with at most one '/' for a subfolder")


def _has_scheme(url: str) -> bool:
    """True for URLs; False for relative or absolute paths (a one-letter scheme is a drive)."""
    return len(urlparse(url).scheme) > 1
