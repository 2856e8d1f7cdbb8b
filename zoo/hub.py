"""Released checkpoints: the manifest, verified downloads and the local cache.

``checkpoints/manifest.json`` lists every released model and the files it is made of, each
with a sha256. Files are fetched once into ``$ZOO_CACHE`` and only ever used after their
full sha256 matched, so a truncated transfer, a corrupted cache or a tampered mirror fails
loudly instead of loading wrong weights. Every failure says where a manual copy can go,
because the people who most need that are the ones behind a firewall.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from http.client import HTTPException
from pathlib import Path
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlparse

from torch.hub import download_url_to_file

import zoo
from zoo.paths import cache_dir

MANIFEST_ENV = "ZOO_MANIFEST"
MANIFEST_FORMAT = 1
URL_SCHEMES = ("http", "https", "file")

_SHA256 = re.compile(r"[0-9a-f]{64}")
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_CHUNK = 1 << 20

_ENTRY_REQUIRED = ("name", "model_class", "files", "training_data", "metrics", "license")
_ENTRY_OPTIONAL = ("description", "training_cost", "card")
_FILE_FIELDS = ("name", "url", "sha256", "size")


class DownloadError(OSError):
    """A file could not be fetched or verified; the message says where a manual copy goes."""

    def __init__(self, message: str, url: str | None = None, dest: Path | None = None):
        super().__init__(message)
        self.url = url
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
    file is downloaded (with torch.hub's tqdm progress bar) to a temporary name beside
    ``dest``, checked, and renamed into place, so ``dest`` only ever holds verified bytes
    and no failure leaves anything behind. ``url`` may be http(s), ``file://`` or a local
    path. ``size``, when known, turns a short transfer into a clear "incomplete" error.
    """
    dest = Path(dest)
    expected = _normalise_sha256(sha256)
    if dest.is_file() and sha256_of(dest) == expected:
        return dest
    # A stale or corrupt copy is removed first: if the download fails, nothing is at dest.
    dest.unlink(missing_ok=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.with_name(f"{dest.name}.{uuid.uuid4().hex}.download")
    try:
        _transfer(_as_url(url), staging, url, dest, progress)
        _verify(staging, expected, size, url, dest)
        os.replace(staging, dest)
    finally:
        staging.unlink(missing_ok=True)
    return dest


def _transfer(source: str, staging: Path, url: str, dest: Path, progress: bool) -> None:
    """torch.hub's downloader, its errors turned into a :class:`DownloadError`.

    No ``hash_prefix`` is passed: we hash the result ourselves so the error can report the
    actual digest and size, which torch's RuntimeError does not carry in a usable form.
    """
    try:
        download_url_to_file(source, str(staging), hash_prefix=None, progress=progress)
    except (OSError, HTTPException, ValueError) as error:
        raise DownloadError(
            f"could not download {dest.name} from {url} ({_reason(error)}). "
            f"Download it manually and place it at {dest}, or check your network.",
            url, dest,
        ) from error


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


def _as_url(url: str) -> str:
    """``url`` itself for supported schemes; a local path becomes a ``file://`` URL."""
    if not _has_scheme(url):
        return Path(url).expanduser().resolve().as_uri()
    scheme = urlparse(url).scheme
    if scheme not in URL_SCHEMES:
        raise ValueError(f"unsupported URL scheme {scheme!r} in {url}; use one of {', '.join(URL_SCHEMES)}")
    return url


def _normalise_sha256(sha256: str) -> str:
    value = sha256.strip().lower()
    if not _SHA256.fullmatch(value):
        raise ValueError(f"expected a full 64-character hex sha256, got {sha256!r}")
    return value


# ---------------------------------------------------------------------------- manifest
@dataclass(frozen=True)
class PretrainedFile:
    """One file of a release; ``url`` is http(s)/file, or a path relative to the manifest."""

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

    def in_repo_path(self, file: PretrainedFile) -> Path | None:
        """Where a file shipped inside the repository lives; None for a downloaded one."""
        return None if _has_scheme(file.url) else self.manifest.parent / file.url

    @property
    def card_path(self) -> Path | None:
        return None if self.card is None else self.manifest.parent / self.card


def manifest_path() -> Path:
    """``$ZOO_MANIFEST``, else ``checkpoints/manifest.json`` at the repository root."""
    override = os.environ.get(MANIFEST_ENV)
    if override:
        return Path(override).expanduser()
    return Path(zoo.__file__).resolve().parent.parent / "checkpoints" / "manifest.json"


def load_manifest(path: str | os.PathLike | None = None) -> dict[str, PretrainedEntry]:
    """Every entry of the manifest by name, validated so that mistakes fail at load time."""
    path = Path(path) if path is not None else manifest_path()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise ManifestError(f"checkpoint manifest {path} does not exist (set {MANIFEST_ENV} to override)") from error
    except json.JSONDecodeError as error:
        raise ManifestError(f"checkpoint manifest {path} is not valid JSON: {error}") from error
    return _parse_manifest(raw, path)


def list_pretrained() -> list[str]:
    """Names of the released models, sorted."""
    return sorted(load_manifest())


def pretrained_entry(name: str) -> PretrainedEntry:
    """The manifest entry of ``name``; a KeyError lists what is released."""
    entries = load_manifest()
    if name not in entries:
        known = f"released models: {', '.join(sorted(entries))}" if entries else "no pretrained model is released yet"
        raise KeyError(f"unknown pretrained model {name!r}; {known} (manifest {manifest_path()})")
    return entries[name]


def fetch_pretrained(name: str, progress: bool = True) -> Path:
    """``$ZOO_CACHE/checkpoints/<name>/`` holding every file of the release, each verified.

    Downloaded files are cached there; files shipped in the repository are verified and
    symlinked, so they are used in place rather than copied.
    """
    entry = pretrained_entry(name)
    directory = cache_dir() / "checkpoints" / entry.name
    directory.mkdir(parents=True, exist_ok=True)
    for file in entry.files:
        (directory / file.name).parent.mkdir(parents=True, exist_ok=True)
        local = entry.in_repo_path(file)
        if local is None:
            download_file(file.url, file.sha256, directory / file.name, progress, size=file.size)
        else:
            _link_verified(local, file, directory / file.name, entry.manifest)
    return directory


def _link_verified(source: Path, file: PretrainedFile, link: Path, manifest: Path) -> None:
    """Point ``link`` at an in-repo file after checking it is the released one."""
    if not source.is_file():
        raise DownloadError(f"{file.name} is missing: {manifest} expects it at {source}", file.url, source)
    actual = sha256_of(source)
    if actual != file.sha256:
        raise ChecksumError(
            f"{source} has sha256 {actual}, but {manifest} expects {file.sha256} for {file.name}",
            file.url, source, file.sha256, actual,
        )
    target = source.resolve()
    if link.is_symlink() and link.resolve() == target:
        return
    staging = link.with_name(f"{link.name}.{uuid.uuid4().hex}.link")
    try:
        staging.symlink_to(target)
        os.replace(staging, link)
    finally:
        staging.unlink(missing_ok=True)


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
