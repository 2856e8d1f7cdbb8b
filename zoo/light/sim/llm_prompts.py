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
hold, for the writer to make less likely (:attr:`zoo.light.sim.line_writer.Sampling.echo_penalty`).
"""

from __future__ import annotations

import re
from typing import Sequence

from zoo.light.records import Episode, Turn
from zoo.light.sim.speech import STOPWORDS, address, sentences

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
          "{objects}{memories}"
          "You are talking with {partner}. Answer with only what you say out loud: one or two short "
          "sentences, in your own words, in character. No narration.")

INSTRUCTIONS = {
    "greet": "Greet them.",
    "greet_back": "Greet them back.",
    "introduce": "Tell them who you are: {m}",
    "persona": "Tell them something about your life: {m}",
    "self_image": "Tell them how others see you: {m}",
    "setting": "Say something about this place: {m}",
    "object": "Talk about the {m}.",
    "echo": "Pick up on what they said about the {m}.",
    "ask_why": "Ask them what brings them here.",
    "ask_who": "Ask them who they are.",
    "ask_carry": "Ask them what they are carrying.",
    "request": "Ask them to do this for you: {m}.",
    "background": "Share what people say about this place: {m}",
    "small_talk": "Make small talk.",
    "hit_back": "They hit you. Hit back, and say so.",
    "react_hit": "They just hit you. React.",
    "react_steal": "They just took your {m}. Protest.",
    "react_give": "They just gave you the {m}. Thank them.",
    "react_hug": "They just hugged you. Respond.",
    "react_action": "Comment on what they just did.",
    "react_emote": "Ask them why they {m}.",
    "mirror_emote": "You {m} too. Say why.",
    "comply": "Agree to what they asked, and do it: {m}.",
    "refuse": "Refuse what they asked.",
    "answer_carry": "Answer them: you carry the {m}.",
    "answer_why": "Answer their question: {m}",
    "answer_who": "Answer their question: {m}",
    "announce": "Say that you are going to do this: {m}.",
    "emote_cue": "Show that you {m}.",
}
"""One instruction per speech act of the simulator (:mod:`zoo.light.sim`). The partner is "them":
the system message names them once. Naming them in every instruction and dialogue label (speech
version 1) made the model name a character in 32% of its lines (people: 21% of the fixture's),
often as a leading "The fish, ...", and those names were a third of IR's score on `small`
(``studies/light_sim_names_probe.py``)."""

GENERIC_ROLES = ("me", "you", "they", "them", "assistant", "character", "answer", "reply", "response", "line")
STAGE_DIRECTION = re.compile(r"\*[^*]*\*|\([^)]*\)|\[[^\]]*\]")
SENTENCE = re.compile(r"[^.!?]+(?:[.!?]+[\"')\]]*|$)")
WORD = re.compile(r"[A-Za-z']+")
PROMPT_FRAME = re.compile(r"^(?:you are (?:in|talking with)\b|what do you, |one or two (?:short )?sentences|"
                          r"answer with only|the (?:rest of the )?conversation\b|you speak first|things here:|you carry:)",
                          re.IGNORECASE)
"""Sentences that repeat the prompt's own frames ("One or two sentences.", "You are in the Pond.") or
narrate the prompt's dialogue ("The conversation has ended.": 2.8% of version 2's `tiny` lines)."""
LEADING_LABEL = re.compile(r"^\s*([^:.!?\n]{1,40}?)\s*:\s+(?=\S)")
"""Up to 40 characters and a colon (then a space) opening a line: ``She: I will keep going.``"""
SPEAKER_LABEL = re.compile(r"^(?:[^\s,]+|(?:the|a|an|your|my|our|their|his|her|to|one)\s.+|"
                           r"(?:\S+\s+){0,3}(?:says?|said|speaks|answers?|repl(?:y|ies|ied)|tells? (?:them|him|her|you)))$",
                           re.IGNORECASE)
"""Which leading labels are the model labelling its line, not speech: one word (``I:``, ``She:``,
``Kathryn:``), a noun phrase (``The old man:``, ``Your Majesty:``, ``To everyone:``) or a saying
frame (``The king said:``, ``I say:``). Speech version 2 kept them unless they named a character
of the chat: 5.1% of the training lines of `small` at temperature 0.9 opened with one, ``I:`` alone 1.9%.
A clause with a verb of its own (``I tell you this: the king is dead.``) keeps its words."""
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
    notes, me = [], episode.turns[t]
    if t > 0:
        last = episode.turns[t - 1]
        if last.action:
            notes.append(f"They did this: {last.action}.")
        elif last.emote:
            notes.append(f"They {last.emote}.")
    if me.action:
        notes.append(f"You do this now: {me.action}.")
    elif me.emote:
        notes.append(f"You {me.emote} as you speak.")
    return " ".join(notes)


SMALL_TALK_FROM_MEMORY = "Make small talk; you may bring up something you know from elsewhere."
"""Small talk when the speaker has memories (:mod:`zoo.light.sim.llm_memories`): the turns with
no plan are where people bring in the rest of their world."""


def instruction(acts: Sequence[tuple[str, str]], memories: bool = False) -> str:
    """The turn's plan as instructions; an unplanned turn is small talk."""
    parts = [INSTRUCTIONS[kind].format(m=material.rstrip(". ")) for kind, material in acts if kind in INSTRUCTIONS]
    return " ".join(parts) or (SMALL_TALK_FROM_MEMORY if memories else INSTRUCTIONS["small_talk"])


def memory_lines(memories: Sequence[str]) -> str:
    """``You know from elsewhere: the well: It is old. The rug: ...`` (empty without memories, so
    that speech version 2's prompts, and its cached lines, stay as they were)."""
    return ("You know from elsewhere: " + " ".join(f"{m[0].upper()}{m[1:]}" for m in memories) + "\n"
            if memories else "")


def build_prompt(episode: Episode, t: int, acts: Sequence[tuple[str, str]], lines: Sequence[str],
                 memories: Sequence[str] = ()) -> list[dict]:
    """Chat messages asking for turn ``t``'s line, given the lines already written for turns < t;
    ``memories``: places and things the speaker knows beyond the room (:mod:`zoo.light.sim.llm_memories`)."""
    me, partner = episode.speaker(t), episode.partner(t)
    me_name, partner_name = character(me.name), character(partner.name)
    system = SYSTEM.format(me=me_name, persona=" ".join(me.persona.split()),
                           place=f"the {address(episode.setting.name)}",
                           description=" ".join(sentences(episode.setting.description)[:DESCRIPTION_SENTENCES]),
                           objects=object_list(episode.turns[t]), memories=memory_lines(memories),
                           partner=partner_name)
    history = [f"{'You' if episode.speaker(i) is me else 'They'}: {lines[i]}"
               for i in range(max(0, t - HISTORY_LINES), t)]
    user = ("The conversation so far:\n" + "\n".join(history) + "\n\n") if history else "You speak first.\n\n"
    user += " ".join(x for x in (happened(episode, t), instruction(acts, bool(memories))) if x)
    user += f"\nWhat do you, {me_name}, say? One or two sentences."
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def role_prefix(names: Sequence[str]) -> re.Pattern:
    """``The painter:``, ``**Painter**:``, ``You:`` at the start of a completion: the model
    naming the speaker, as the prompt's dialogue does. Only these names, so that a line like
    ``I tell you this: ...`` keeps its first words."""
    alternatives = _alternatives({*GENERIC_ROLES, *(address(n).lower() for n in names)})
    return re.compile(rf"^\s*\**\s*(?:the |a |an )?(?:{alternatives})\s*\**\s*:\s*", re.IGNORECASE)


def leading_vocative(names: Sequence[str]) -> re.Pattern:
    """``The painter, ...``, ``My dear painters! ...`` at the start of a line: the model opening by
    naming one of the chat's characters, its most common way of naming them (17% of the named
    lines of speech version 1's `small` train split). People rarely open that way; the line
    keeps what follows. A name used in the sentence (``The painter is late.``) stays."""
    alternatives = _alternatives({address(n).lower() for n in names})
    return re.compile(rf"^(?:(?:oh|ah|my|dear|the|a|an),?\s+)*(?:{alternatives})s?\s*[,!:.;]+\s*", re.IGNORECASE)


def _alternatives(words: set[str]) -> str:
    """A regex alternation of ``words``, longest first (so ``water nymph`` wins over ``water``)."""
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


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
    text = drop_leading_label(text, asked)
    text = STAGE_DIRECTION.sub(" ", text)
    text = " ".join(text.replace('"', " ").replace("\u201c", " ").replace("\u201d", " ").split()).strip(" '")
    if names:
        text = leading_vocative(names).sub("", text, count=1)
        text = text[:1].upper() + text[1:]
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


def drop_leading_label(text: str, asked: str = "") -> str:
    """``text`` without a label opening it (:data:`SPEAKER_LABEL`), or one the prompt holds
    (``They did this:``, the prompt's own frame for what just happened)."""
    label = LEADING_LABEL.match(text)
    if label and (SPEAKER_LABEL.match(label.group(1)) or label.group(1).lower() in asked.lower()):
        return text[label.end():]
    return text


def _normal(text: str) -> str:
    return " ".join(WORD.findall(text.lower()))
