"""What LIGHT-sim v2 asks its speech model, and how a completion becomes an utterance.

A prompt is built from what the speaker of a LIGHT-sim turn knows: its own persona (not the
partner's: ParlAI shows a model only ``_self_persona``), the real setting and the objects in
the room and in hand, the partner's name, the dialogue so far, what just happened (the
partner's action or emote, the speaker's own action or emote this turn, both chosen by the
simulator) and what the turn's template speech did (greet, ask for the beer, answer a
question, talk about an object: the plan of :attr:`zoo.light.sim._TurnNote.acts`). So the
grounding the templates had stays: the line is about this persona, this room, these objects,
and the actions still follow requests made in the dialogue. The template sentence itself is
never shown, so the model cannot copy our frames.

:func:`clean_line` turns a raw completion into an utterance: role prefixes, quotes, stage
directions and newlines go, it is cut to one or two sentences (:data:`MAX_SENTENCES`) and
:data:`MAX_WORDS` words, and it is rejected (``None``) when empty, too short, not speech, or
a repeat of a line already said in the chat.

A small model copies what its prompt holds. Measured on the nine real fixture dialogues, 13%
of a person's content words repeat one of the four lines before; SmolLM2 shown four lines
repeated 42% (and v1's templates copy half their content words from the persona and setting,
people 19%). So the prompt shows only the last :data:`HISTORY_LINES` lines, and
:func:`echo_words` lists the history's content words that the speaker's own grounding does not
hold, for the writer to make less likely (:attr:`zoo.light.llm_writer.Sampling.echo_penalty`).
"""

from __future__ import annotations

import re
from typing import Sequence

from zoo.light.records import Episode, Turn
from zoo.light.sim_speech import STOPWORDS, address, sentences

MAX_SENTENCES = 2
MAX_WORDS = 32
P_ONE_SENTENCE = 0.3
"""Share of lines cut to one sentence (drawn from the line's seed): people's lines vary in length."""
MIN_WORDS = 2
HISTORY_LINES = 2
"""Lines of dialogue shown (the most recent): enough to answer; more made the model echo the
dialogue (above), and prompt length is what the CPU cost of a line mostly is (the prefill)."""
DESCRIPTION_SENTENCES = 3
"""Sentences of the setting description shown (the first ones: where the room is, what it holds)."""
MAX_OBJECTS = 6

SYSTEM = ("You are {me}, a character in a medieval fantasy world. {persona}\n"
          "You are in {place}. {description}\n"
          "{objects}"
          "You are talking with {partner}. Answer with only what you say out loud: one or two short "
          "sentences, in your own words, in character. No narration.")

INSTRUCTIONS = {
    "greet": "Greet {partner}.",
    "greet_back": "Greet {partner} back.",
    "introduce": "Tell {partner} who you are: {m}",
    "persona": "Tell {partner} something about your life: {m}",
    "self_image": "Tell {partner} how others see you: {m}",
    "setting": "Say something about this place: {m}",
    "object": "Talk about the {m}.",
    "echo": "Pick up on what {partner} said about the {m}.",
    "ask_why": "Ask {partner} what brings them here.",
    "ask_who": "Ask {partner} who they are.",
    "ask_carry": "Ask {partner} what they are carrying.",
    "request": "Ask {partner} to do this for you: {m}.",
    "background": "Share what people say about this place: {m}",
    "small_talk": "Make small talk with {partner}.",
    "hit_back": "{partner} hit you. Hit back, and say so.",
    "react_hit": "{partner} just hit you. React.",
    "react_steal": "{partner} just took your {m}. Protest.",
    "react_give": "{partner} just gave you the {m}. Thank them.",
    "react_hug": "{partner} just hugged you. Respond.",
    "react_action": "Comment on what {partner} just did.",
    "react_emote": "Ask {partner} why they {m}.",
    "mirror_emote": "You {m} too. Say why.",
    "comply": "Agree to what {partner} asked, and do it: {m}.",
    "refuse": "Refuse what {partner} asked.",
    "answer_carry": "Answer {partner}: you carry the {m}.",
    "answer_why": "Answer {partner}'s question: {m}",
    "answer_who": "Answer {partner}'s question: {m}",
    "announce": "Say that you are going to do this: {m}.",
    "emote_cue": "Show that you {m}.",
}
"""One instruction per speech act of the simulator (:mod:`zoo.light.sim`)."""

GENERIC_ROLES = ("me", "you", "assistant", "character", "answer", "reply", "response", "line")
STAGE_DIRECTION = re.compile(r"\*[^*]*\*|\([^)]*\)|\[[^\]]*\]")
SENTENCE = re.compile(r"[^.!?]+(?:[.!?]+[\"')\]]*|$)")
WORD = re.compile(r"[A-Za-z']+")
PROMPT_FRAME = re.compile(r"^(?:you are (?:in|talking with)\b|what do you, |one or two (?:short )?sentences|"
                          r"answer with only|the conversation so far|you speak first|things here:|you carry:)",
                          re.IGNORECASE)
"""Sentences that repeat the prompt's own frames ("One or two sentences.", "You are in the Pond.")."""
NOT_SPEECH = re.compile(r"\b(as an ai|language model|assistant|the user|in character|narration|roleplay)\b",
                        re.IGNORECASE)


def character(name: str) -> str:
    """``painter`` -> ``the painter``; ``a wild boar`` -> ``the wild boar``."""
    return f"the {address(name)}"


def object_list(turn: Turn) -> str:
    """``Here: a lamp, a rug. You carry: a sword.`` (what ParlAI's object lines hold, shortened)."""
    here = ", ".join(turn.room_objects[:MAX_OBJECTS])
    held = ", ".join(turn.inventory[:MAX_OBJECTS])
    text = (f"Things here: {here}. " if here else "") + (f"You carry: {held}. " if held else "")
    return text + "\n" if text else ""


def happened(episode: Episode, t: int) -> str:
    """What the speaker sees before speaking: the partner's last action or emote, and its own
    action or emote of this turn (the simulator decided them; the line should fit)."""
    notes = []
    partner, me = character(episode.partner(t).name), episode.turns[t]
    if t > 0:
        last = episode.turns[t - 1]
        if last.action:
            notes.append(f"{partner.capitalize()} did this: {last.action}.")
        elif last.emote:
            notes.append(f"{partner.capitalize()} {plural_verb(last.emote)}.")
    if me.action:
        notes.append(f"You do this now: {me.action}.")
    elif me.emote:
        notes.append(f"You {me.emote} as you speak.")
    return " ".join(notes)


def plural_verb(emote: str) -> str:
    """``smile`` -> ``smiles``, ``wink`` -> ``winks``, ``nudge`` -> ``nudges``."""
    return emote + ("es" if emote.endswith(("sh", "ch", "s", "x")) else "s")


def instruction(acts: Sequence[tuple[str, str]], partner: str) -> str:
    """The turn's plan as instructions; an unplanned turn is small talk."""
    parts = [INSTRUCTIONS[kind].format(partner=partner, m=material.rstrip(". "))
             for kind, material in acts if kind in INSTRUCTIONS]
    return " ".join(parts) or INSTRUCTIONS["small_talk"].format(partner=partner)


def build_prompt(episode: Episode, t: int, acts: Sequence[tuple[str, str]], lines: Sequence[str]) -> list[dict]:
    """Chat messages asking for turn ``t``'s line, given the lines already written for turns < t."""
    me, partner = episode.speaker(t), episode.partner(t)
    me_name, partner_name = character(me.name), character(partner.name)
    system = SYSTEM.format(me=me_name, persona=" ".join(me.persona.split()),
                           place=f"the {address(episode.setting.name)}",
                           description=" ".join(sentences(episode.setting.description)[:DESCRIPTION_SENTENCES]),
                           objects=object_list(episode.turns[t]), partner=partner_name)
    history = [f"{character(episode.speaker(i).name).capitalize()}: {lines[i]}"
               for i in range(max(0, t - HISTORY_LINES), t)]
    user = ("The conversation so far:\n" + "\n".join(history) + "\n\n") if history else "You speak first.\n\n"
    user += " ".join(x for x in (happened(episode, t), instruction(acts, partner_name)) if x)
    user += f"\nWhat do you, {me_name}, say? One or two sentences."
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def role_prefix(names: Sequence[str]) -> re.Pattern:
    """``The painter:``, ``**Painter**:``, ``You:`` at the start of a completion: the model
    naming the speaker, as the prompt's dialogue does. Only these names, so that a line like
    ``I tell you this: ...`` keeps its first words."""
    roles = sorted({*GENERIC_ROLES, *(address(n).lower() for n in names)}, key=len, reverse=True)
    alternatives = "|".join(re.escape(r) for r in roles)
    return re.compile(rf"^\s*\**\s*(?:the |a |an )?(?:{alternatives})\s*\**\s*:\s*", re.IGNORECASE)


def echo_words(episode: Episode, t: int, lines: Sequence[str]) -> list[str]:
    """Content words of the dialogue lines shown for turn ``t`` that are not in what the
    speaker knows (its persona, the setting, the objects): the words a line should not merely
    repeat. Sorted, so a prompt's list (and cache key) is reproducible."""
    shown = " ".join(lines[max(0, t - HISTORY_LINES):t]).lower()
    me, turn = episode.speaker(t), episode.turns[t]
    grounding = " ".join((me.persona, episode.setting.name, episode.setting.description,
                          *turn.room_objects, *turn.inventory)).lower()
    known = set(WORD.findall(grounding))
    return sorted({w.strip("'") for w in WORD.findall(shown) if len(w) >= 4 and w not in STOPWORDS
                   and w not in known})


def clean_line(text: str, said: Sequence[str] = (), names: Sequence[str] = (), asked: str = "",
               max_sentences: int = MAX_SENTENCES) -> str | None:
    """The utterance in a raw completion, or ``None`` when there is none worth keeping.
    ``said``: the chat's lines so far (a repeat is rejected); ``names``: the two characters;
    ``asked``: the prompt's text, whose sentences the model sometimes repeats before speaking
    (those, and sentences opening with one of the prompt's frames, are dropped)."""
    text = text.strip().split("\n", 1)[0]
    prefix = role_prefix(names)
    for _ in range(2):
        text = prefix.sub("", text, count=1).strip()
    text = STAGE_DIRECTION.sub(" ", text)
    text = " ".join(text.replace('"', " ").replace("\u201c", " ").replace("\u201d", " ").split()).strip(" '")
    if not text or NOT_SPEECH.search(text):
        return None
    echoed = {_normal(s) for s in SENTENCE.findall(asked)}
    sentences = [s.strip() for s in SENTENCE.findall(text)
                 if s.strip() and _normal(s) not in echoed and not PROMPT_FRAME.match(s.strip())]
    text = " ".join(sentences[:max_sentences])
    words = text.split()
    if len(words) > MAX_WORDS:
        text = " ".join(words[:MAX_WORDS]).rstrip(",;:") + "..."
    if len(WORD.findall(text)) < MIN_WORDS:
        return None
    if _normal(text) in {_normal(s) for s in said}:
        return None
    return text


def _normal(text: str) -> str:
    return " ".join(WORD.findall(text.lower()))
