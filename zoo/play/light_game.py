"""The turns of ``zoo play light``: your input, the engine's verdict, the partner's answer.

A turn of yours is a line you say, an engine command (``/do``) or an emote (``/emote``);
each is followed by the partner's turn. What the engine refuses is answered with its reason
and costs no turn. ``/look``, ``/inv`` and ``/help`` only show things.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TextIO

from zoo.light.candidates import EMOTES
from zoo.play.light_partner import Partner
from zoo.play.light_room import LightRoom, changes, the
from zoo.play.transcript import Transcript

COMMANDS_HELP = """\
Say something: type a line and press Enter. Commands:
  /do COMMAND   act in the world, e.g. /do get candle, /do give coin to guard, /do hug priest
                (the verbs: get, put, drop, give, steal, wear, wield, remove, eat, drink, hit, hug)
  /emote VERB   one of: {emotes}
  /look         the room, who is here, what everyone holds, and the dialogue so far
  /inv          what you carry, wear and wield
  /help         this help
  /quit         end the game (Ctrl-D works too)""".format(emotes=", ".join(EMOTES))


class LightGame:
    """One game in a staged room with a partner; output goes to ``out``, turns to ``transcript``."""

    def __init__(self, room: LightRoom, partner: Partner, out: TextIO, transcript: Transcript) -> None:
        self.room, self.partner, self.out, self.transcript = room, partner, out, transcript
        self.dialogue: list[str] = []
        self.turn = 0

    def show(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    # ------------------------------------------------------------------ start and end
    def start(self, details: dict) -> None:
        room = self.room
        self.show(room.panel())
        self.show()
        self.show(f"You play {the(room.me)}; {the(room.partner)} is played by {details.get('partner_model', 'a model')}. "
                  f"Type a line to speak, /help for commands.")
        self.transcript.write(0, "game", "start", room.scene.room.name, room=room.scene.room.name,
                              world=room.world.source, you=room.me, partner=room.partner, npc=room.npc,
                              persona=room.persona(room.me), seed=room.seed, **details)

    def play(self, lines) -> None:
        try:
            for line, note in lines:
                if not self.handle(line, note):
                    break
        except KeyboardInterrupt:  # Ctrl-C while the partner thinks ends the game, not in a traceback
            self.show()
        self.show(f"Goodbye. {self.turn} turns played.")

    # ------------------------------------------------------------------ one line
    def handle(self, line: str, note: str | None = None) -> bool:
        """Act on one input line; False when the game should end."""
        if note:
            self.show(f"(your line: {note})")
        if not line:
            self.show("(say something, or /help for commands)")
            return True
        if not line.startswith("/"):
            self.player_turn(speech=line)
            return True
        name, _, rest = line[1:].partition(" ")
        name, rest = name.lower(), rest.strip()
        if name in ("quit", "exit", "q"):
            return False
        if name == "help":
            self.show(COMMANDS_HELP)
        elif name == "look":
            self.look()
        elif name in ("inv", "inventory", "i"):
            self.show(f"You ({self.room.me}) {self.room.holdings(self.room.me)}.")
        elif name == "do" and rest:
            self.player_turn(command=rest)
        elif name == "do":
            self.show("(/do what? e.g. /do get candle)")
        elif name == "emote" and rest:
            self.player_turn(emote=rest)
        elif name == "emote":
            self.show(f"(/emote which? one of: {', '.join(EMOTES)})")
        else:
            self.show(f"(unknown command /{name[:40]}; /help lists them)")
        return True

    def look(self) -> None:
        self.show(self.room.panel())
        self.show()
        self.show("Dialogue so far:" if self.dialogue else "Dialogue so far: (nothing yet)")
        for line in self.dialogue:
            self.show(f"  {line}")

    # ------------------------------------------------------------------ turns
    def player_turn(self, speech: str | None = None, command: str | None = None, emote: str | None = None) -> None:
        room, me = self.room, self.room.me
        if room.engine.agent(me).dead:
            self.show("(you are dead; /quit to leave)")
            return
        pending = room.record_turn(me)
        before = room.where_things_are()
        result = None
        if command is not None or emote is not None:
            result = room.engine.execute(me, command) if command is not None else room.engine.emote(me, emote)
            if not result.ok:
                self.show(result.message)
                self.transcript.write(self.turn + 1, me, "refused", command if command is not None else emote,
                                      reason=result.reason)
                return
        self.turn += 1
        action = result.command if result is not None and result.kind == "action" else None
        emoted = result.command if result is not None and result.kind == "emote" else None
        room.turns.append(replace(pending, speech=speech, action=action, emote=emoted))
        changed = changes(before, room.where_things_are())
        if speech is not None:
            self.dialogue.append(f"you ({me}): {speech}")
            self.transcript.write(self.turn, me, "say", speech)
        else:
            self.show(result.message)
            self.dialogue.append(f"* {result.broadcast}")
            self.transcript.write(self.turn, me, "act" if result.kind == "action" else "emote", result.command, changed)
        self.show_changes(changed)
        self.partner_turn()

    def partner_turn(self) -> None:
        room, name = self.room, self.room.partner
        if room.engine.agent(name).dead:
            self.show(f"({the(name)} lies dead and does not answer)")
            return
        turn = self.partner.take_turn(room)
        self.turn += 1
        self.show(f'{name}: "{turn.say}"')
        self.dialogue.append(f"{name}: {turn.say}")
        self.transcript.write(self.turn, name, "say", turn.say, seconds=turn.seconds["say"])
        if turn.action is not None:
            self.show(f"* {turn.action.broadcast}")
            self.dialogue.append(f"* {turn.action.broadcast}")
        self.transcript.write(self.turn, name, "act", turn.action.command if turn.action else None, turn.changes,
                              turn.seconds["act"], why=turn.why)
        if turn.emote.ok:
            self.show(f"* {turn.emote.broadcast}")
            self.dialogue.append(f"* {turn.emote.broadcast}")
        self.transcript.write(self.turn, name, "emote", turn.emote.command, seconds=turn.seconds["emote"])
        self.show_changes(turn.changes)

    def show_changes(self, changed: list[str]) -> None:
        for line in changed:
            self.show(f"  (world: {line})")
