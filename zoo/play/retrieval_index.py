"""The utterances a retrieving partner says, encoded once and kept in ``$ZOO_CACHE``.

ParlAI's interactive LIGHT mode re-encoded its 109,476 fixed candidates at every start (hours
on a CPU). Here the training utterances of a corpus are encoded by the bi-ranker's candidate
encoder once (bfloat16 where the CPU has it; a bar on a terminal, plain lines with the time left
otherwise) and stored under
``$ZOO_CACHE/play/light-index/<weights>-<corpus>/``: the directory name is keyed by a sha256
of the encoder's weights (the tensors themselves, wherever they were loaded from) and a sha256
of the corpus files, so a new model or corpus gets a new index and never a stale one.

The directory holds ``embeddings.safetensors`` (float16: the released weights are float16
already; half the disk and load time of float32), ``texts.json`` and ``index.json`` with
both keys and the sha256 of the two data files. It is written through a staging directory
renamed into place (:func:`zoo.safe_writes.replace_directory`), so a killed build leaves no half
index; a load re-checks every hash and rebuilds on any mismatch. Nothing is unpickled:
safetensors and JSON only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from zoo.safe_json import read_json
from zoo.models.candidate_cache import RetrievalIndex, weights_stamp
from zoo.paths import cache_dir

log = logging.getLogger(__name__)

INDEX_VERSION = "1"
"""Bumped when the stored layout or the choice of utterances changes."""

EMBEDDINGS_FILE = "embeddings.safetensors"
TEXTS_FILE = "texts.json"
INDEX_FILE = "index.json"
CORPUS_FILES = ("light_data.pkl", "light_unseen_data.pkl", "light_sim_train.pkl", "light_sim_valid.pkl",
                "light_sim_test.pkl", "light_sim_test_unseen.pkl")
"""The files of a corpus directory (either layout of :func:`zoo.light.sim.load_sim_corpus`)."""


@dataclass(frozen=True)
class UtteranceCorpus:
    """One or more LIGHT corpus directories (the release layout or LIGHT-sim's) whose training
    utterances a partner retrieves from; several corpora (LIGHT-sim of several seeds) make a
    bigger index. ``label`` names them in messages (``LIGHT-sim``, ``LIGHT``)."""

    directories: tuple[Path, ...]
    label: str

    @classmethod
    def open(cls, *directories: str | os.PathLike) -> "UtteranceCorpus":
        from zoo.light.sim import load_manifest

        if not directories:
            raise ValueError("no corpus directory given")
        paths, labels = [], []
        for directory in directories:
            path = Path(directory).expanduser()
            if not path.is_dir():
                raise FileNotFoundError(f"corpus directory {path} does not exist")
            if not _corpus_files(path):
                raise FileNotFoundError(f"{path} holds no LIGHT corpus ({' or '.join(CORPUS_FILES[:3])})")
            paths.append(path)
            labels.append(str(load_manifest(path).get("label") or "LIGHT"))
        return cls(tuple(paths), " + ".join(dict.fromkeys(labels)))

    def files(self) -> list[Path]:
        return [path for directory in self.directories for path in _corpus_files(directory)]

    def fingerprint(self) -> str:
        """sha256 over the corpus files' names and contents, corpus after corpus."""
        from zoo.hub import sha256_of

        digest = hashlib.sha256()
        for number, directory in enumerate(self.directories):
            for path in _corpus_files(directory):
                digest.update(f"{number}:{path.name}:{sha256_of(path)}\n".encode())
        return digest.hexdigest()

    def training_utterances(self, limit: int | None = None) -> list[str]:
        """Distinct utterances of the train splits in file order (the first ``limit`` of them)."""
        from zoo.light.candidates import speech_pool
        from zoo.light.sim import load_sim_corpus

        texts = list(dict.fromkeys(text for directory in self.directories
                                   for text in speech_pool(load_sim_corpus(directory)["train"]) if text.strip()))
        return texts[:limit] if limit is not None else texts


def _corpus_files(directory: Path) -> list[Path]:
    return [directory / name for name in CORPUS_FILES if (directory / name).is_file()]


def weights_fingerprint(model) -> str:
    """sha256 of what a candidate embedding depends on: the candidate encoder's tensors (name,
    dtype, shape, bytes), its token budget and the tokenizer's definition."""
    digest = hashlib.sha256()
    encoder = model.candidate_encoder
    for name, tensor in sorted(encoder.state_dict().items()):
        tensor = tensor.detach().cpu().contiguous()
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}\n".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().data if tensor.numel() else b"")
    digest.update(f"{type(model).__name__}:max_candidate_tokens={model.hparams.max_candidate_tokens}\n".encode())
    backend = getattr(model.tokenizer, "backend_tokenizer", None)
    if backend is not None:  # its definition; not the truncation and padding each call sets
        definition = {k: v for k, v in json.loads(backend.to_str()).items() if k not in ("truncation", "padding")}
        digest.update(json.dumps(definition, sort_keys=True).encode())
    return digest.hexdigest()


def index_directory(weights: str, corpus: str, limit: int | None = None) -> Path:
    suffix = f"-first{limit}" if limit is not None else ""
    return cache_dir() / "play" / "light-index" / f"{weights[:16]}-{corpus[:16]}{suffix}"


def _sha256_file(path: Path) -> str:
    from zoo.hub import sha256_of

    return sha256_of(path)


def load_index(directory: Path, model, weights: str, corpus: str) -> RetrievalIndex | None:
    """The stored index if it is whole and was made from these weights and this corpus, else None."""
    from safetensors.torch import load_file

    if not (directory / INDEX_FILE).is_file():
        return None
    try:
        meta = read_json(directory / INDEX_FILE)
        if (meta.get("version"), meta.get("weights_sha256"), meta.get("corpus_sha256")) != (INDEX_VERSION, weights, corpus):
            return None
        for name, key in ((EMBEDDINGS_FILE, "embeddings_sha256"), (TEXTS_FILE, "texts_sha256")):
            if _sha256_file(directory / name) != meta.get(key):
                log.warning("retrieval index %s: %s does not match its recorded sha256; rebuilding", directory, name)
                return None
        texts = read_json(directory / TEXTS_FILE)
        matrix = load_file(str(directory / EMBEDDINGS_FILE))["embeddings"].float()
    except (OSError, ValueError, KeyError) as error:
        log.warning("retrieval index %s unreadable (%s); rebuilding", directory, error)
        return None
    if not isinstance(texts, list) or matrix.shape != (len(texts), model.hparams.embedding_dim):
        return None
    return RetrievalIndex(texts, matrix.to(model.device), weights_stamp(model.candidate_encoder))


def build_index(directory: Path, model, texts: list[str], weights: str, corpus: str, label: str,
                progress: bool = True) -> RetrievalIndex:
    """Encode ``texts`` with ``model`` and store them at ``directory`` (atomically)."""
    from safetensors.torch import save_file

    from zoo.safe_writes import replace_directory

    started = time.perf_counter()
    index = model.index_candidates(texts, progress=progress)
    seconds = time.perf_counter() - started
    with replace_directory(directory, kind="retrieval-index") as staging:
        save_file({"embeddings": index.matrix.detach().cpu().half().contiguous()}, str(staging / EMBEDDINGS_FILE))
        (staging / TEXTS_FILE).write_text(json.dumps(index.texts, ensure_ascii=False), encoding="utf-8")
        meta = {
            "version": INDEX_VERSION, "weights_sha256": weights, "corpus_sha256": corpus, "corpus": label,
            "utterances": len(index.texts), "dim": int(index.matrix.shape[1]), "encode_seconds": round(seconds, 2),
            "embeddings_sha256": _sha256_file(staging / EMBEDDINGS_FILE),
            "texts_sha256": _sha256_file(staging / TEXTS_FILE),
        }
        (staging / INDEX_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    return index


def load_or_build_index(model, corpus: UtteranceCorpus, limit: int | None = None, progress: bool = True,
                        say: Callable[[str], None] = lambda text: None) -> tuple[RetrievalIndex, dict]:
    """The retrieval index of ``model`` over ``corpus``'s training utterances: loaded when a
    verified one is stored, else built once (under a lock, so two players starting together
    encode it once). Returns the index and what happened (``built``, ``seconds``, sizes)."""
    from filelock import FileLock

    if not model.supports_retrieval:
        raise ValueError(f"{type(model).__name__} cannot retrieve: it has no candidate encoder to index utterances "
                         f"with (use a bi-ranker such as light-bi-ranker)")
    if limit is not None and limit < 1:
        raise ValueError(f"--index-limit must be at least 1, got {limit}")
    started = time.perf_counter()
    weights, fingerprint = weights_fingerprint(model), corpus.fingerprint()
    directory = index_directory(weights, fingerprint, limit)
    locks = cache_dir() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    built = False
    with FileLock(str(locks / f"play-index-{directory.name}.lock")):
        index = load_index(directory, model, weights, fingerprint)
        if index is None:
            texts = corpus.training_utterances(limit)
            if not texts:
                raise ValueError(f"{', '.join(map(str, corpus.directories))} has no training utterances to retrieve from")
            say(f"Encoding {len(texts):,} {corpus.label} training utterances once for retrieval "
                f"(stored in {directory.parent}) ...")
            index = build_index(directory, model, texts, weights, fingerprint, corpus.label, progress)
            built = True
    info = {"built": built, "seconds": round(time.perf_counter() - started, 3), "utterances": len(index.texts),
            "corpus": corpus.label, "corpus_dirs": [str(d) for d in corpus.directories],
            "directory": str(directory)}
    return index, info
