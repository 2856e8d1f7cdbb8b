"""What a model answers beyond :class:`~zoo.grounded.Grounded`, stated once per benchmark.

``Ranker`` (LIGHT) and ``Policy`` (Blocks) declare every ability the commands, games,
evaluations and training loops use. An optional ability comes with a flag saying whether a
model has it and a default method that says in one line that it does not, so callers ask
the flag (``model.supports_generation``) instead of probing for attributes. Models inherit
the protocol of their benchmark and override what they can do. Nothing here imports torch
or a model: this module sits with ``zoo.grounded`` at the bottom of the import floors.
"""

from __future__ import annotations

from typing import Any, Sequence


def _lacks(model: Any, ability: str, flag: str) -> NotImplementedError:
    return NotImplementedError(f"{type(model).__name__} has no {ability} ({flag} is False)")


class Ranker:
    """A LIGHT model: scores each context's candidates and ranks one context's.

    Every LIGHT model answers :meth:`score` and :meth:`rank`. Optional abilities:

    * retrieval (``supports_retrieval``): :meth:`encode_contexts` and :meth:`index_candidates`,
      the bi-encoder's two towers, so a game can search a whole corpus of utterances;
    * generation (``supports_generation``): :meth:`generate` writes a line and :meth:`gold_nll`
      gives the gold line's negative log-likelihood (perplexity), for generative models.
    """

    supports_retrieval: bool = False
    supports_generation: bool = False

    def score(self, contexts: Sequence[str], candidates: Sequence[Sequence[str]] | None = None):
        """Scores ``[B, C]``, higher is better, ``-inf`` past each row's candidates."""
        raise NotImplementedError(f"{type(self).__name__} does not implement score()")

    def rank(self, context: str, candidates: Sequence[str]) -> list[tuple[str, float]]:
        """``(candidate, score)`` pairs of one context, best first."""
        raise NotImplementedError(f"{type(self).__name__} does not implement rank()")

    def encode_contexts(self, texts: Sequence[str]):
        """Context embeddings ``[B, D]`` to search a :meth:`index_candidates` index with."""
        raise _lacks(self, "context encoder", "supports_retrieval")

    def index_candidates(self, texts: Sequence[str], progress: bool = True):
        """A retrieval index of ``texts``' embeddings."""
        raise _lacks(self, "candidate index", "supports_retrieval")

    def generate(self, contexts: str | Sequence[str], **options):
        """The model's own line for each context."""
        raise _lacks(self, "generator", "supports_generation")

    def gold_nll(self, batch: dict, states: Any = None):
        """Negative log-likelihood of each example's gold line, and its token count."""
        raise _lacks(self, "gold likelihood", "supports_generation")


class Policy:
    """A Blocks policy: a distribution over the 81 actions and a choice among them.

    Every policy answers :meth:`action_probabilities` and :meth:`act`. What a rollout feeds
    it is declared here too, so runners render and compute only what a policy reads:

    * ``needs_images``: whether observations carry the image stacks;
    * ``needs_demonstrations``: whether they carry the privileged oracle path;
    * ``reads_instructions``: the policy tokenises instructions itself
      (:meth:`encode_instructions`) and summarises each once per episode
      (:meth:`instruction_features`);
    * ``tracks_images``: :meth:`image_tracker` follows its first convolution through a
      rollout, so each step convolves only the window a block moved in.
    """

    needs_images: bool = True
    needs_demonstrations: bool = False
    reads_instructions: bool = False
    tracks_images: bool = False

    def action_probabilities(self, observation):
        """A distribution over the 81 actions for each episode of ``observation``, ``[B, 81]``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement action_probabilities()")

    def act(self, observation, generator=None):
        """Actions ``[B]``: greedy without ``generator``, sampled with one."""
        raise NotImplementedError(f"{type(self).__name__} does not implement act()")

    def encode_instructions(self, texts: list[str]):
        """``(tokens [B, T], lengths [B])`` of instructions in the policy's vocabulary."""
        raise _lacks(self, "instruction encoder", "reads_instructions")

    def instruction_features(self, tokens, lengths):
        """Each instruction's summary ``[B, D]``, the same at every step of its episode."""
        raise _lacks(self, "instruction features", "reads_instructions")

    def image_tracker(self):
        """A fresh tracker of the first convolution for one rollout."""
        raise _lacks(self, "image tracker", "tracks_images")

    # ------------------------------------------------------------------ for runners
    @property
    def instruction_encoder(self):
        """:meth:`encode_instructions`, or None for a policy that reads no instructions (an
        ``EpisodeRunner``'s ``encode``)."""
        return self.encode_instructions if self.reads_instructions else None

    @property
    def instruction_featurizer(self):
        """:meth:`instruction_features` or None (an ``EpisodeRunner``'s ``featurize``)."""
        return self.instruction_features if self.reads_instructions else None

    @property
    def image_tracker_factory(self):
        """:meth:`image_tracker` or None (an ``EpisodeRunner``'s ``track``)."""
        return self.image_tracker if self.tracks_images else None
