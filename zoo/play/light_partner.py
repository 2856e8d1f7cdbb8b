"""The partner of ``zoo play light``: what it says, whether and how it acts, and its emote.

Every decision reads the game as the models read their training chats: the room is turned
into a release episode and flattened by the ParlAI-exact builder
(:func:`zoo.light.examples.drafts_for`), with the partner as the "self" agent and the
``_task_speech`` / ``_task_action`` / ``_task_emote`` header of the decision being made. As in
the data, the action context shows what the partner has just said, and the emote context
what it said and did.

* **Say**: a retrieving model (a bi-ranker) returns the best of the indexed training
  utterances (:mod:`zoo.play.retrieval_index`) that neither player has said yet in this game
  and that does not name the partner itself (a line such as "Perhaps you are right, town
  sheriff." answers the town sheriff; the sheriff never says it);
  a generative model (``light-generative``) writes a line.
* **Act**: the action model ranks the engine-valid actions (minus blows that would kill,
  as LIGHT-sim never lets a chat lose a player) and the engine executes the chosen one.
  Whether it acts at all (``act="auto"``): only on something just mentioned. An action
  qualifies when a word of an object it involves occurs in your last line or action or in
  the partner's reply (for ``hug``/``hit``, which involve no object: the verb itself); the
  best-ranked qualifying action is executed, and with none the partner does not act. So
  "could you give me the lantern?" can be answered by ``give lantern to you``, small talk
  by words alone. ``always``: the best-ranked valid action every turn; ``never``: no actions.
* **Emote**: the emote model ranks the 22 emotes; the best one is shown.

No action or emote ranker is released yet, so both are dialogue-trained releases used
zero-shot, chosen by measurement (first 500 LIGHT-sim test examples of each task, accuracy,
``zoo eval light --task action|emote --limit 500``): actions by ``light-bi-ranker`` (34.0%;
memnet 28.4, IR 19.2, StarSpace 14.2, chance 11.2), emotes by ``light-memnet`` (15.2%; IR
14.8, StarSpace 8.0, the bi-ranker 5.8, chance 4.5). Any LIGHT ranker trained on the task can
be put in their place.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from functools import lru_cache

from zoo.light import actions
from zoo.light.candidates import EMOTES
from zoo.light.engine import ActionResult
from zoo.light.examples import drafts_for
from zoo.light.features import PARLAI_DEFAULT
from zoo.light.records import Turn
from zoo.play.light_room import LightRoom, changes
from zoo.protocols import Ranker

ACT_POLICIES = ("auto", "always", "never")
RETRIEVED = 20
"""Utterances retrieved per turn: the best one not said yet in the game is used."""
FARTHER = 1000
"""Retrieved when none of the first ``RETRIEVED`` will do (all name the partner itself)."""

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_STOPWORDS = frozenset("the and for with from into onto some any this that its his her their our your a an of in on "
                       "to at by or".split())
AGENT_VERBS = ("hit", "hug")


def content_words(text: str) -> set[str]:
    """Lower-cased words of three letters or more, without a plural ``s``, minus stopwords."""
    words = set()
    for word in _WORD.findall(text.lower()):
        if len(word) >= 3 and word not in _STOPWORDS:
            words.add(word[:-1] if len(word) > 3 and word.endswith("s") else word)
    return words


def name_pattern(character: str) -> re.Pattern:
    """Matches ``character``'s name (less a leading article) as whole words, in any case."""
    name = re.sub(r"^(a|an|the)\s+", "", character.strip(), flags=re.IGNORECASE)
    return re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, name.split())) + r"(?!\w)", re.IGNORECASE)


def partner_context(room: LightRoom, kind: str, pending: Turn) -> str:
    """What the partner's model reads before deciding ``kind`` (``speech``, ``action`` or
    ``emote``) for the ``pending`` turn: ParlAI's default flattening of the game so far."""
    drafts = [d for d in drafts_for([room.episode(pending)], kind, PARLAI_DEFAULT) if d.self_agent == 1]
    return "\n".join(d.text for d in drafts)


def safe_actions(room: LightRoom) -> list[str]:
    """The partner's engine-valid actions, less blows that could kill."""
    graph, actor = room.graph, room.engine.agent(room.partner)
    safe = []
    for text in room.engine.valid_actions(room.partner):
        command = actions.parse(graph, text)
        lethal = isinstance(command, actions.Command) and command.verb == "hit" and \
            graph.nodes[command.target].health <= actions.max_damage(actor)
        if not lethal:
            safe.append(text)
    return safe


@dataclass
class PartnerTurn:
    """One partner turn: the line, the action (None when it did not act, with ``why``), the
    emote, the world changes, and the seconds each decision took."""

    say: str
    action: ActionResult | None
    why: str
    emote: ActionResult
    changes: list[str]
    seconds: dict[str, float] = field(default_factory=dict)


class Partner:
    """A model-driven LIGHT character. ``speaker`` says (a bi-ranker with ``index``, or a
    generative model); ``actor`` ranks actions, ``emoter`` emotes (any LIGHT ranker: ``rank``)."""

    def __init__(self, speaker, actor, emoter, index=None, act: str = "auto") -> None:
        if act not in ACT_POLICIES:
            raise ValueError(f"act must be one of {ACT_POLICIES}, got {act!r}")
        self.generates = speaker.supports_generation and index is None
        if not self.generates and index is None:
            raise ValueError(f"{type(speaker).__name__} needs a retrieval index to speak")
        self.speaker, self.actor, self.emoter, self.index, self.act = speaker, actor, emoter, index, act

    # ------------------------------------------------------------------ say
    def speak(self, room: LightRoom, pending: Turn) -> str:
        context = partner_context(room, "speech", replace(pending, speech=""))
        if self.generates:
            return self.speaker.generate([context])[0].strip() or "..."
        said = {(t.speech or "").strip().lower() for t in room.turns}
        query = self.speaker.encode_contexts([context])
        own_name = name_pattern(room.partner)
        for k in (RETRIEVED, FARTHER):
            results = [text for text, _ in self.index.search(query, k)[0]
                       if not own_name.search(text)]  # a line addressed to its own name is for the other one
            fresh = [text for text in results if text.strip().lower() not in said]
            if fresh or results:
                return (fresh or results)[0]
        return "..."

    # ------------------------------------------------------------------ act
    @staticmethod
    def mentioned(room: LightRoom, text: str, said: set[str]) -> bool:
        """Whether an action involves something among the words ``said`` (see the module docstring)."""
        command = actions.parse(room.graph, text)
        if not isinstance(command, actions.Command):
            return False
        if command.verb in AGENT_VERBS:
            return command.verb in said
        involved = [room.graph.nodes[i] for i in (command.target, command.other) if i is not None]
        return any(content_words(node.name) & said for node in involved if node.is_object)

    def choose_action(self, room: LightRoom, pending: Turn, reply: str) -> tuple[str | None, str]:
        """The action to take (or None) and why."""
        if self.act == "never":
            return None, "acting is off (--act never)"
        options = safe_actions(room)
        if not options:
            return None, "no action is possible"
        if self.act == "auto":
            last = room.turns[-1] if room.turns else None
            said = content_words(" ".join(x for x in (last.speech if last else None, last.action if last else None,
                                                      reply) if x))
            options = [text for text in options if self.mentioned(room, text, said)]
            if not options:
                return None, "nothing it could act on was mentioned"
        context = partner_context(room, "action", replace(pending, speech=reply, action="?"))
        best = self.actor.rank(context, options)[0][0]
        return best, "best-ranked valid action" if self.act == "always" else \
            f"best-ranked of {len(options)} actions on what was mentioned"

    # ------------------------------------------------------------------ emote
    def choose_emote(self, room: LightRoom, pending: Turn, reply: str, action: str | None) -> str:
        context = partner_context(room, "emote", replace(pending, speech=reply, action=action, emote="?"))
        return self.emoter.rank(context, list(EMOTES))[0][0]

    # ------------------------------------------------------------------ a whole turn
    def take_turn(self, room: LightRoom) -> PartnerTurn:
        """Say, maybe act, emote; the engine executes; the turn is appended to ``room.turns``."""
        pending = room.record_turn(room.partner, available=tuple(safe_actions(room)))
        before = room.where_things_are()
        seconds = {}
        started = time.perf_counter()
        reply = self.speak(room, pending)
        seconds["say"] = time.perf_counter() - started

        started = time.perf_counter()
        action, why = self.choose_action(room, pending, reply)
        result = room.engine.execute(room.partner, action) if action is not None else None
        if result is not None and not result.ok:  # the engine is the referee
            action, why, result = None, f"the engine refused {action!r}: {result.reason}", None
        seconds["act"] = time.perf_counter() - started

        started = time.perf_counter()
        emote = self.choose_emote(room, pending, reply, action)
        emoted = room.engine.emote(room.partner, emote)
        seconds["emote"] = time.perf_counter() - started

        room.turns.append(replace(pending, speech=reply, action=result.command if result else None, emote=emote))
        return PartnerTurn(reply, result, why, emoted, changes(before, room.where_things_are()),
                           {k: round(v, 4) for k, v in seconds.items()})


# ---------------------------------------------------------------------- setting a partner up
@lru_cache(maxsize=4)
def load_light_model(name: str):
    """A LIGHT model by released name or directory, loaded once per process (a web page
    serving many games, or a test session, pays for it once)."""
    from zoo.loading import load_ranker
    from zoo.hub import list_pretrained
    from zoo.factory import list_models

    if name in list_models("light-*") and name not in list_pretrained() and not any(c in name for c in "/.~"):
        raise ValueError(f"{name} is a registered model without released weights; pass the save_pretrained "
                         f"directory of a trained one (e.g. the pretrained/ folder of its recipe's run)")
    return load_ranker(name)


DEFAULT_SPEAKER, DEFAULT_ACTION_MODEL, DEFAULT_EMOTE_MODEL = "light-bi-ranker", "light-bi-ranker", "light-memnet"


def load_partner(model: str = DEFAULT_SPEAKER, action_model: str = DEFAULT_ACTION_MODEL,
                 emote_model: str = DEFAULT_EMOTE_MODEL, act: str = "auto", corpus: list[str] | None = None,
                 index_limit: int | None = None, data_dir: str | None = None, progress: bool = True,
                 say=lambda text: None) -> tuple[Partner, dict]:
    """A partner speaking with ``model`` (a bi-ranker retrieving from the training utterances
    of the ``corpus`` directories, or a generative model), acting with ``action_model`` and emoting with
    ``emote_model``; plus what was loaded and how long it took (transcript, benchmark)."""
    import time

    started = time.perf_counter()
    speaker = load_light_model(model)
    actor, emoter = load_light_model(action_model), load_light_model(emote_model)
    for flag, name, ranker in (("--action-model", action_model, actor), ("--emote-model", emote_model, emoter)):
        if not isinstance(ranker, Ranker):
            raise ValueError(f"{flag} {name}: a {type(ranker).__name__} cannot rank candidates")
    details: dict = {"partner_model": model, "action_model": action_model, "emote_model": emote_model, "act": act}
    index = None
    if speaker.supports_retrieval:
        from zoo.play.retrieval_index import UtteranceCorpus, load_or_build_index

        if not corpus:
            from zoo.light.sim import SimConfig, ensure_sim_corpus

            say("Finding the LIGHT-sim corpus to retrieve from (generated into the cache on first use) ...")
            corpus = [str(ensure_sim_corpus(SimConfig(), data_dir))]
        index, details["index"] = load_or_build_index(speaker, UtteranceCorpus.open(*corpus), index_limit, progress,
                                                      say)
    elif not speaker.supports_generation:
        raise ValueError(f"--model {model}: a {type(speaker).__name__} neither retrieves (a bi-ranker) nor generates "
                         f"(light-generative); it cannot speak")
    details["load_seconds"] = round(time.perf_counter() - started, 3)
    return Partner(speaker, actor, emoter, index, act), details
