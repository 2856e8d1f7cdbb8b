"""``LightDataModule``: the three LIGHT tasks as Lightning data, from the release or LIGHT-sim.

One module serves every LIGHT model: it finds the corpus (``source``), flattens it into
examples with a named feature set (the paper's grounding ablations), attaches candidate sets
and yields batches. Models never see files: they receive items with the self-contained
context (ParlAI-format text of the episode so far), the candidates and the gold's index, and
plug their own tokeniser in through ``collate``.

``source``: ``official`` (the release pickles: ``data_dir``, ``$ZOO_DATA_DIR/light`` or the
cache; ``download=True`` fetches them), ``sim`` (a LIGHT-sim corpus, generated into the cache
once, or the one at ``sim_dir``), or ``auto`` (official when present, else LIGHT-sim with a
logged warning). ``label`` says which one was used (``LIGHT`` or ``LIGHT-sim``): report it
with every number.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset

from zoo.light.candidates import CandidateOptions
from zoo.light.corpus_dir import LABEL as SIM_LABEL
from zoo.light.corpus_dir import load_manifest, load_sim_corpus
from zoo.light.examples import LightExample, build_examples, build_split_examples, full_contexts, label_type
from zoo.light.features import Features, get_features
from zoo.light.items import LightItem
from zoo.light.records import Episode
from zoo.light.release import SPLITS, load_release, locate

log = logging.getLogger(__name__)

SOURCES = ("auto", "official", "sim")
STAGE_SPLITS = {"fit": ("train", "valid"), "validate": ("valid",), "test": ("test", "test_unseen"),
                "predict": ("test",), None: SPLITS}


@runtime_checkable
class GeneratedCorpus(Protocol):
    """A corpus made on first use, as ``sim=`` is given it (LIGHT-sim's ``SimCorpus``): the data
    module asks it for its label and its directory, and never imports what generates it."""

    @property
    def label(self) -> str: ...

    def ensure(self, data_dir: str | os.PathLike | None = None) -> Path: ...


def default_collate(items: Sequence[LightItem]) -> dict[str, Any]:
    """Strings stay strings (models tokenise them); the gold index becomes a tensor."""
    return {
        "contexts": [item.context for item in items],
        "candidates": [list(item.candidates) for item in items],
        "labels": torch.tensor([item.label for item in items], dtype=torch.long),
        "examples": [item.example for item in items],
    }


class LightDataset(Dataset):
    """Examples of one split with their self-contained contexts."""

    def __init__(self, examples: Sequence[LightExample], contexts: Sequence[str] | None = None) -> None:
        self.examples = list(examples)
        self.contexts = list(contexts) if contexts is not None else full_contexts(self.examples)
        if len(self.contexts) != len(self.examples):
            raise ValueError("one context per example is needed")

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, index: int) -> LightItem:
        example = self.examples[index]
        return LightItem(self.contexts[index], example.candidates, example.candidates.index(example.label), example)


def official_available(data_dir: str | os.PathLike | None = None) -> bool:
    """Whether both release dialogue files can be found locally (no download)."""
    try:
        for name in ("light_data", "light_unseen_data"):
            locate(name, data_dir)
    except FileNotFoundError:
        return False
    return True


class LightDataModule(L.LightningDataModule):
    """The LIGHT dialogue/action/emote tasks (docs/light_data.md §4-§5) with named grounding features.

    ``task``: ``dialogue`` (R@1/20), ``action`` or ``emote``. ``features``: a name of
    :data:`zoo.light.features.FEATURE_SETS` or a :class:`Features`. ``candidates``: candidate
    options; the default draws speech negatives as ParlAI did (one RNG over the splits in build
    order) for the release, and with a fresh RNG per split for LIGHT-sim, so one LIGHT-sim split
    can be built without the others. ``collate``: turns a list of :class:`LightItem` into a
    batch (default: :func:`default_collate`); models pass their tokenising collate here.
    ``limit``: keep only N examples of each split (quick runs), or a mapping from split name
    to N (splits not named stay whole): the first N, or with ``limit_seed`` N drawn over the
    split with that seed, in split order (:func:`zoo.example_sample.subset_indices`); ``split_sizes``
    holds each built split's size before the limit. Under DDP the evaluation loaders split the
    examples over the ranks without padding, so metrics reduced over ranks count every example
    exactly once. ``sim``: the LIGHT-sim corpus made on first use (``zoo.light.sim.SimCorpus``) when
    ``source`` is ``sim`` (or ``auto`` without the release) and no ``sim_dir`` is given.
    """

    def __init__(
        self,
        task: str = "dialogue",
        features: str | Features = "parlai_default",
        source: str = "auto",
        data_dir: str | os.PathLike | None = None,
        sim: GeneratedCorpus | None = None,
        sim_dir: str | os.PathLike | None = None,
        candidates: CandidateOptions | None = None,
        batch_size: int = 32,
        eval_batch_size: int | None = None,
        collate: Callable[[Sequence[LightItem]], Any] | None = None,
        num_workers: int = 0,
        download: bool = False,
        limit: int | Mapping[str, int | None] | None = None,
        shuffle: bool = True,
        limit_seed: int | None = None,
    ) -> None:
        super().__init__()
        if source not in SOURCES:
            raise ValueError(f"unknown LIGHT source {source!r}; choose one of {SOURCES}")
        label_type(task)  # validates the task name
        self.task = task
        self.features = get_features(features)
        self.feature_name = features if isinstance(features, str) else "custom"
        self.requested_source = source
        self.data_dir = data_dir
        if sim is not None and not isinstance(sim, GeneratedCorpus):
            raise ValueError("sim must be a generated corpus such as zoo.light.sim.SimCorpus('tiny'), "
                             f"not a {type(sim).__name__}")
        self.sim = sim
        self.sim_dir = Path(sim_dir) if sim_dir is not None else None
        self.candidate_options = candidates
        self.batch_size = batch_size
        self.eval_batch_size = eval_batch_size or batch_size
        self.collate = collate or default_collate
        self.num_workers = num_workers
        self.download = download
        self.limit = limit
        self.limit_seed = limit_seed
        self.split_sizes: dict[str, int] = {}
        self.shuffle = shuffle
        self.source: str | None = None
        self._episodes: dict[str, list[Episode]] | None = None
        self._datasets: dict[str, LightDataset] = {}

    # ------------------------------------------------------------------ source
    def resolve_source(self) -> str:
        """``official`` or ``sim``: what ``auto`` means on this machine."""
        if self.source is not None:
            return self.source
        source = self.requested_source
        if source == "auto":
            if self.sim_dir is None and official_available(self.data_dir):
                source = "official"
            else:
                source = "sim"
                if self.sim_dir is None:
                    log.warning("LIGHT release files not found; using LIGHT-sim, a generated stand-in. "
                                "Label every number measured on it LIGHT-sim.")
        self.source = source
        return source

    @property
    def label(self) -> str:
        """``LIGHT`` or ``LIGHT-sim``: the name to report numbers under."""
        if self.resolve_source() == "official":
            return "LIGHT"
        if self.sim_dir is not None:
            return load_manifest(self.sim_dir).get("label", SIM_LABEL)
        return self._generated().label

    def prepare_data(self) -> None:
        """Download the release (when asked) or generate the LIGHT-sim corpus, once."""
        if self.resolve_source() == "official":
            for name in ("light_data", "light_unseen_data"):
                locate(name, self.data_dir, self.download)
        elif self.sim_dir is None:
            self._generated().ensure(self.data_dir)

    def corpus_dir(self) -> Path | None:
        """The LIGHT-sim corpus directory (None for the release)."""
        if self.resolve_source() == "official":
            return None
        return self.sim_dir or self._generated().ensure(self.data_dir)

    def _generated(self) -> GeneratedCorpus:
        if self.sim is None:
            raise ValueError("LIGHT-sim data needs sim_dir (a corpus directory) or sim "
                             "(a generated corpus such as zoo.light.sim.SimCorpus('full'))")
        return self.sim

    def episodes(self) -> dict[str, list[Episode]]:
        """The four splits' episodes (loaded once)."""
        if self._episodes is None:
            if self.resolve_source() == "official":
                self._episodes = load_release(self.data_dir, self.download)
            else:
                self._episodes = load_sim_corpus(self.corpus_dir())  # type: ignore[arg-type]
        return self._episodes

    # ------------------------------------------------------------------ examples
    @property
    def candidates(self) -> CandidateOptions:
        if self.candidate_options is not None:
            return self.candidate_options
        return CandidateOptions() if self.resolve_source() == "official" else CandidateOptions(rng="per_split")

    def examples(self, split: str) -> list[LightExample]:
        return self.dataset(split).examples

    def contexts(self, split: str) -> list[str]:
        return self.dataset(split).contexts

    def dataset(self, split: str) -> LightDataset:
        """Examples and contexts of ``split`` (built on first use)."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; choose one of {SPLITS}")
        if split not in self._datasets:
            splits = self.episodes()
            options = self.candidates
            if options.rng == "per_split":
                examples = build_examples(splits[split], self.task, self.features, options, split)
            else:
                examples = build_split_examples(splits, split, self.task, self.features, options)
            contexts = full_contexts(examples)
            limit = self.limit.get(split) if isinstance(self.limit, Mapping) else self.limit
            self.split_sizes[split] = len(examples)
            if limit is not None:
                from zoo.example_sample import subset_indices

                chosen = subset_indices(len(examples), limit, self.limit_seed or 0, first=self.limit_seed is None)
                examples, contexts = [examples[i] for i in chosen], [contexts[i] for i in chosen]
            self._datasets[split] = LightDataset(examples, contexts)
        return self._datasets[split]

    def setup(self, stage: str | None = None) -> None:
        for split in STAGE_SPLITS.get(stage, SPLITS):
            self.dataset(split)

    # ------------------------------------------------------------------ loaders
    def _loader(self, split: str, shuffle: bool, batch_size: int) -> DataLoader:
        dataset = self.dataset(split)
        sampler = None
        if not shuffle and torch.distributed.is_available() and torch.distributed.is_initialized():
            # Lightning's default DistributedSampler pads the last batch with repeated examples,
            # which would count them twice in R@1; this one gives each example to one rank.
            from lightning.pytorch.overrides.distributed import UnrepeatedDistributedSampler

            sampler = UnrepeatedDistributedSampler(dataset, shuffle=False)
        return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle if sampler is None else False,
                          sampler=sampler, collate_fn=self.collate, num_workers=self.num_workers)

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", self.shuffle, self.batch_size)

    def val_dataloader(self) -> DataLoader:
        return self._loader("valid", False, self.eval_batch_size)

    def test_dataloader(self) -> list[DataLoader]:
        """Seen then unseen test (the paper reports both)."""
        return [self._loader("test", False, self.eval_batch_size), self._loader("test_unseen", False, self.eval_batch_size)]

    def predict_dataloader(self) -> DataLoader:
        return self._loader("test", False, self.eval_batch_size)
