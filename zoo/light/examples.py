"""Flatten LIGHT episodes into ranking examples, exactly as ParlAI's ``light_dialog`` did (docs/light_data.md §4).

Each episode is seen twice: first by ``agents[1]`` (view A), then by ``agents[0]`` (view B,
where a ``None`` is put in front of the per-turn fields so the partner always takes the even
positions). In a view, every partner position ``i`` with a self reply at ``i + 1`` yields at
most one example whose label is the self agent's speech, action or emote (or ``which`` of
them) at ``i + 1``. An example's text holds only what is new since the previous example of
the view (ParlAI's history glues them together; :func:`full_contexts` does the same); the
first one starts with the header of task, setting, names, persona and object descriptions.
With the default features every line is ``<special token> <value>``; lines are joined by
``\\n`` and trailing newlines removed.

Candidates (docs/light_data.md §5) come from :mod:`zoo.light.candidates`; with the default options the
speech lists reproduce ParlAI's when the same pickle's earlier splits are given too.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Iterator, Mapping, Sequence

from zoo.light.candidates import (
    EMOTES,
    WHICH_CANDIDATES,
    CandidateOptions,
    SpeechSampler,
    action_candidates,
    finish,
    speech_pool,
    split_emotes,
)
from zoo.light.features import Features, get_features, uses
from zoo.light.records import Episode
from zoo.light.release import SPLITS

TASKS = {"dialogue": "speech", "speech": "speech", "action": "action", "emote": "emote", "which": "which"}
"""Task names -> the label type (the episode field predicted, and the ``_task_`` token)."""

VIEW_SELF_AGENT = (1, 0)
"""Views in ParlAI's order: first the view of ``agents[1]``, then of ``agents[0]``."""


@dataclass(frozen=True)
class LightExample:
    """One ranking example.

    ``text`` is ParlAI's per-example text (new context since the previous example of the same
    view); ``label`` the gold; ``candidates`` the list to rank (gold included);
    ``episode_done`` marks the last example of a view. ``task`` is the label type (``speech``,
    ``action``, ``emote`` or ``which``). ``split``, ``episode`` (position within the split),
    ``self_agent`` (0 or 1) and ``turn`` (index of the labelled turn) locate the example.
    """

    text: str
    label: str
    candidates: tuple[str, ...]
    episode_done: bool
    task: str
    split: str = "all"
    episode: int = 0
    self_agent: int = 1
    turn: int = 0

    def to_json(self) -> dict:
        """The example as ParlAI exposes it: text, label, candidates, episode_done."""
        return {
            "text": self.text,
            "label": self.label,
            "candidates": list(self.candidates),
            "episode_done": self.episode_done,
        }

    def to_parlai_line(self) -> str:
        """The example as a line of ParlAI's dialog-text build files (docs/light_data.md §1): tab-separated
        ``text``, ``labels``, ``label_candidates`` and, when true, ``episode_done``."""
        fields = [
            f"text:{_escape(self.text)}",
            f"labels:{_escape(self.label)}",
            "label_candidates:" + "|".join(_escape(c) for c in self.candidates),
        ]
        if self.episode_done:
            fields.append("episode_done:True")
        return "\t".join(fields)


def _escape(value: str) -> str:
    return value.replace("\t", "\\t").replace("\n", "\\n").replace("|", "__PIPE__")


def label_type(task: str) -> str:
    """``dialogue``/``speech`` -> ``speech``; ``action``, ``emote``, ``which`` unchanged."""
    try:
        return TASKS[task]
    except KeyError:
        raise ValueError(f"unknown LIGHT task {task!r}; choose one of {sorted(TASKS)}") from None


@dataclass(frozen=True)
class _Draft:
    """An example before candidates: enough to attach them in ParlAI's order."""

    text: str
    label: str
    episode_done: bool
    episode: int
    self_agent: int
    turn: int


class _View:
    """An episode seen by ``agents[self_agent]``: position ``p`` holds turn ``p - shift``."""

    def __init__(self, episode: Episode, self_agent: int) -> None:
        self.episode = episode
        self.self_agent = self_agent
        self.shift = 0 if self_agent == 1 else 1
        self.length = len(episode.turns) + self.shift

    def turn_index(self, position: int) -> int | None:
        t = position - self.shift
        return t if t >= 0 else None

    def get(self, field: str, position: int) -> str | None:
        t = self.turn_index(position)
        if t is None:
            return None
        turn = self.episode.turns[t]
        if field == "which":
            return "action" if turn.action is not None else "emote" if turn.emote is not None else "none"
        return getattr(turn, field)


def _header(episode: Episode, self_agent: int, kind: str, features: Features) -> list[str]:
    me, partner = episode.agents[self_agent], episode.agents[1 - self_agent]
    lines = []
    if features.taskname:
        lines.append(f"_task_{kind}")
    if features.setting:
        lines.append(f"_setting_name {episode.setting.name}, {episode.setting.category}")
        lines.append(f"_setting_desc {episode.setting.description}")
    if features.person_names:
        lines.append(f"_partner_name {partner.name}")
        lines.append(f"_self_name {me.name}")
    if uses(features.persona, "self"):
        lines.append(f"_self_persona {me.persona}")
    if uses(features.persona, "other"):
        lines.append(f"_other_persona {partner.persona}")
    if features.objects:
        lines.extend(f"_object_desc {o.name} : {o.description}" for o in episode.objects)
    return lines


def _say(prefix: str, speech: str, features: Features) -> str:
    return f"{prefix} {speech}" if features.speech_prefix else speech


def _view_drafts(view: _View, kind: str, features: Features, episode_index: int) -> list[_Draft]:
    """The examples of one view (docs/light_data.md §4 steps 1-5)."""
    # Pending text is a string, not a list of lines: the repeat modes replace it by a bare
    # utterance without a newline, and later lines are glued onto it as ParlAI did.
    pending = "".join(line + "\n" for line in _header(view.episode, view.self_agent, kind, features))
    drafts: list[_Draft] = []
    for i in range(0, view.length - 1, 2):
        me = i + 1
        speech, action, emote = view.get("speech", i), view.get("action", i), view.get("emote", i)
        if uses(features.speech, "partner") and speech is not None:
            pending += _say("_partner_say", speech, features) + "\n"
        if uses(features.action, "partner") and action is not None:
            pending += f"_partner_act {action}\n"
        if uses(features.emote, "partner") and emote is not None:
            pending += f"_partner_emote {emote}\n"
        pending = _repeat(pending, view, i, features.repeat)

        label = view.get(kind, me)
        my_speech, my_action, my_emote = view.get("speech", me), view.get("action", me), view.get("emote", me)
        current = uses(features.current_self_output, "all")
        write_current = "remove" not in features.current_self_output
        shown: set[str] = set()
        used_current = False
        say_allowed = uses(features.speech, "self") or not features.speech_gates_current_say
        if current and kind != "speech" and say_allowed and my_speech is not None:
            if write_current:
                pending += _say("_self_say", my_speech, features) + "\n"
                shown.add("speech")
            used_current = True
        if current and kind != "action" and uses(features.action, "self") and my_action is not None:
            if write_current:
                pending += f"_self_act {my_action}\n"
                shown.add("action")
            used_current = True
        if current and kind != "emote" and uses(features.emote, "self") and my_emote is not None:
            if write_current:
                pending += f"_self_emote {my_emote}\n"
                shown.add("emote")
            used_current = True
        if "all_filtered" in features.current_self_output and not used_current:
            label = None
        if label is not None:
            drafts.append(_Draft(pending.rstrip("\n"), label, False, episode_index, view.self_agent,
                                 view.turn_index(me)))
            pending = ""

        if uses(features.speech, "self") and my_speech is not None and "speech" not in shown:
            pending += _say("_self_say", my_speech, features) + "\n"
        if uses(features.action, "self") and my_action is not None and "action" not in shown:
            pending += f"_self_act {my_action}\n"
        if uses(features.emote, "self") and my_emote is not None and "emote" not in shown:
            pending += f"_self_emote {my_emote}\n"
    if drafts:
        drafts[-1] = replace(drafts[-1], episode_done=True)
    return drafts


def _repeat(pending: str, view: _View, i: int, mode: str) -> str:
    """The ``light_use_repeat`` baselines: replace the whole pending text (``str(None)`` kept)."""
    if mode == "self_last":
        return str(view.get("speech", i - 1)) if i > 0 else "nothing"
    if mode == "partner_last":
        return str(view.get("speech", i))
    if mode == "both_last":
        text = f"{view.get('speech', i - 1)} " if i > 0 else ""
        return text + str(view.get("speech", i))
    return pending


def drafts_for(episodes: Sequence[Episode], kind: str, features: Features) -> Iterator[_Draft]:
    """Examples of a split without candidates, in ParlAI's order (episodes, view A, view B)."""
    for index, episode in enumerate(episodes):
        for self_agent in VIEW_SELF_AGENT:
            yield from _view_drafts(_View(episode, self_agent), kind, features, index)


def build_examples(
    episodes: Sequence[Episode],
    task: str = "dialogue",
    features: str | Features | None = None,
    candidates: CandidateOptions | None = None,
    split: str = "all",
    rng: random.Random | None = None,
) -> list[LightExample]:
    """Examples of one split's episodes (file order) for ``task``.

    ``features``: a name of :data:`zoo.light.features.FEATURE_SETS` or a ``Features``
    (default: ParlAI's). Speech candidates are drawn from this split's utterances with ``rng``
    (default: a fresh ``Random(candidates.seed)``); pass a shared RNG to continue a build.
    """
    kind = label_type(task)
    features = get_features(features)
    options = candidates or CandidateOptions()
    drafts = list(drafts_for(episodes, kind, features))
    if kind == "speech":
        sampler = SpeechSampler(speech_pool(episodes), rng or random.Random(options.seed), options.num_speech)
        make = lambda draft: sampler(draft.label)  # noqa: E731
    elif kind == "action":
        make = lambda draft: action_candidates(episodes[draft.episode], draft.turn, options.affordances)  # noqa: E731
    elif kind == "emote":
        emotes = list(EMOTES) if options.emotes == "fixed" else split_emotes(episodes)
        make = lambda draft: emotes  # noqa: E731
    else:
        make = lambda draft: list(WHICH_CANDIDATES)  # noqa: E731
    return [
        LightExample(
            draft.text, draft.label, tuple(finish(make(draft), draft.label, options.clip)), draft.episode_done,
            kind, split, draft.episode, draft.self_agent, draft.turn,
        )
        for draft in drafts
    ]


def build_split_examples(
    splits: Mapping[str, Sequence[Episode]],
    split: str,
    task: str = "dialogue",
    features: str | Features | None = None,
    candidates: CandidateOptions | None = None,
) -> list[LightExample]:
    """Examples of ``splits[split]``, with ParlAI's shared speech RNG when asked.

    With ``candidates.rng == "parlai"`` (default) one ``Random(seed)`` is consumed by the
    speech examples of every split before ``split`` in ParlAI's order (train, valid, test,
    test_unseen) that ``splits`` holds, as ParlAI's single build did, so the speech lists
    equal ParlAI's for the same pickles and options. Splits not in that order (e.g. ``all``)
    get a fresh RNG.
    """
    options = candidates or CandidateOptions()
    if split not in splits:
        raise KeyError(f"split {split!r} not loaded; have {sorted(splits)}")
    rng = random.Random(options.seed)
    if options.rng == "parlai" and label_type(task) == "speech" and split in SPLITS:
        for earlier in SPLITS[: SPLITS.index(split)]:
            if earlier in splits:
                build_examples(splits[earlier], "speech", features, options, earlier, rng)
    return build_examples(splits[split], task, features, options, split, rng)


def build_all_examples(
    splits: Mapping[str, Sequence[Episode]],
    task: str = "dialogue",
    features: str | Features | None = None,
    candidates: CandidateOptions | None = None,
) -> list[LightExample]:
    """Examples of every split in ``splits``, ParlAI's order first (train, valid, test,
    test_unseen), then any others; one shared RNG with ``rng="parlai"``, as ParlAI's build."""
    options = candidates or CandidateOptions()
    order = [s for s in SPLITS if s in splits] + [s for s in splits if s not in SPLITS]
    examples: list[LightExample] = []
    rng = random.Random(options.seed)
    for name in order:
        if options.rng == "per_split":
            rng = random.Random(options.seed)
        examples.extend(build_examples(splits[name], task, features, options, name, rng))
    return examples


def full_contexts(examples: Sequence[LightExample]) -> list[str]:
    """Self-contained context of every example: the ``\\n``-join of its view's texts so far.

    This is what ParlAI's history shows a model (without the extra copy of the gold label
    that TorchAgent's ``--use-reply label`` adds; docs/light_data.md §4 history caveat). The
    contexts of a view repeat its history, so their size grows with the square of its length;
    loading refuses episodes past :data:`zoo.light.records.MAX_EPISODE_TURNS`, which bounds it.
    Not cut to a tail: the TF-IDF, StarSpace and fastText rankers read every line of a context.
    """
    contexts, history = [], []
    for example in examples:
        history.append(example.text)
        contexts.append("\n".join(history))
        if example.episode_done:
            history = []
    return contexts


def sample_train_episodes(examples: Sequence[LightExample], fraction: float) -> list[LightExample]:
    """ParlAI's ``light_percent_train_exs``: keep ``random.sample`` of ``int(n * fraction)``
    view episodes after seeding with 42 (so even 1.0 reorders them), flattened back."""
    episodes: list[list[LightExample]] = [[]]
    for example in examples:
        episodes[-1].append(example)
        if example.episode_done:
            episodes.append([])
    episodes = [episode for episode in episodes if episode]
    kept = random.Random(42).sample(episodes, int(len(episodes) * fraction))
    return [example for episode in kept for example in episode]
