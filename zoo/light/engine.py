"""The LIGHT game engine: one entry point over the graph, the 12 verbs and the 22 emotes.

``Engine.valid_actions(agent)`` gives what the collection showed a player as
``available_actions``; ``Engine.execute(agent, text)`` runs a typed command (a verb, an
emote such as ``smile`` or the raw-log form ``gesture smile``) and always returns an
:class:`ActionResult`, with the reason in words when the command is refused. Randomness
(only ``hit`` uses it) comes from the engine's own seeded RNG, so a replay is exact.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from zoo.light import actions
from zoo.light.candidates import EMOTES
from zoo.light.graph import GameGraph, Node

EMOTE_THIRD_PERSON = {
    "applaud": "applauds", "blush": "blushes", "cry": "cries", "dance": "dances", "frown": "frowns",
    "gasp": "gasps", "grin": "grins", "groan": "groans", "growl": "growls", "laugh": "laughs", "nod": "nods",
    "nudge": "nudges", "ponder": "ponders", "pout": "pouts", "scream": "screams", "shrug": "shrugs",
    "sigh": "sighs", "smile": "smiles", "stare": "stares", "wave": "waves", "wink": "winks", "yawn": "yawns",
}
"""Third-person forms of the 22 emotes (docs/light_data.md §6), for the message others see."""


@dataclass(frozen=True)
class ActionResult:
    """The outcome of one command.

    ``ok``: it happened. ``kind``: ``action``, ``emote`` or ``invalid``. ``command``: the
    canonical text (``give brush to worker``; the bare verb for an emote), None when refused.
    ``message``: what the actor reads; ``broadcast``: what others in the room read;
    ``reason``: why it was refused (empty when ok).
    """

    ok: bool
    kind: str
    command: str | None
    message: str
    broadcast: str = ""
    reason: str = ""


class Engine:
    """Rules over a :class:`GameGraph`. Agents are named by node name or id."""

    def __init__(self, graph: GameGraph, seed: int | random.Random = 0) -> None:
        self.graph = graph
        self.rng = seed if isinstance(seed, random.Random) else random.Random(seed)

    def agent(self, name: str) -> Node:
        """The agent called ``name``; ``KeyError`` with a clear message otherwise."""
        try:
            node = self.graph.resolve(name)
        except KeyError:
            raise KeyError(f"no agent named {name!r} in this world") from None
        if not node.is_agent:
            raise KeyError(f"{name!r} is a {node.kind}, not an agent")
        return node

    def valid_actions(self, agent: str) -> list[str]:
        """Sorted canonical commands over the 12 verbs that ``agent`` may run now."""
        return actions.valid_actions(self.graph, self.agent(agent))

    def check(self, agent: str, command: str) -> str | None:
        """``None`` if ``command`` would succeed now, else the reason (nothing changes)."""
        actor = self.agent(agent)
        parsed = self._parse(command)
        if isinstance(parsed, str):
            if parsed in EMOTE_THIRD_PERSON:
                return "you are dead" if actor.dead else None
            return parsed
        return actions.check(self.graph, actor, parsed)

    def execute(self, agent: str, command: str) -> ActionResult:
        """Run ``command`` for ``agent``: an action, an emote, or a refusal with its reason."""
        actor = self.agent(agent)
        parsed = self._parse(command)
        if isinstance(parsed, str):
            if parsed in EMOTE_THIRD_PERSON:
                return self.emote(agent, parsed)
            return ActionResult(False, "invalid", None, f"You can't do that: {parsed}.", reason=parsed)
        reason = actions.check(self.graph, actor, parsed)
        if reason is not None:
            return ActionResult(False, "invalid", None, f"You can't do that: {reason}.", reason=reason)
        text = actions.canonical(self.graph, parsed)
        effect = actions.apply(self.graph, actor, parsed, self.rng)
        return ActionResult(True, "action", text, effect.message, effect.broadcast)

    def emote(self, agent: str, verb: str) -> ActionResult:
        """One of the 22 emotes: a message only; nothing in the world changes."""
        actor = self.agent(agent)
        verb = verb.strip().lower()
        if verb not in EMOTE_THIRD_PERSON:
            reason = f"'{verb}' is not an emote; the emotes are {', '.join(EMOTES)}"
            return ActionResult(False, "invalid", None, f"You can't do that: {reason}.", reason=reason)
        if actor.dead:
            return ActionResult(False, "invalid", None, "You can't do that: you are dead.", reason="you are dead")
        return ActionResult(True, "emote", verb, f"You {verb}.", f"The {actor.name} {EMOTE_THIRD_PERSON[verb]}.")

    def _parse(self, command: str) -> actions.Command | str:
        words = command.strip().lower().split()
        if words[:1] == ["gesture"] and len(words) == 2:
            words = words[1:]
        if len(words) == 1 and words[0] in EMOTE_THIRD_PERSON:
            return words[0]
        return actions.parse(self.graph, command)

    # ------------------------------------------------------------------ release views
    def inventory(self, agent: str) -> tuple[list[str], list[str], list[str]]:
        """(carrying, wearing, wielding) of ``agent``, article-prefixed as in the release."""
        return self.graph.inventory(self.agent(agent))

    def room_objects(self, agent: str) -> list[str]:
        """Objects lying in ``agent``'s room, article-prefixed."""
        return self.graph.room_objects(self.graph.room_of(self.agent(agent)))

    def room_agents(self, agent: str) -> list[str]:
        """Names of the living agents in ``agent``'s room (``agent`` included)."""
        return [n.name for n in self.graph.agents_in(self.graph.room_of(self.agent(agent)))]
