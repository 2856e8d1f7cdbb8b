"""What LIGHT-sim characters say: templates (our own text) filled with real LIGHT text.

An utterance is a short frame of ours around material the grounded context holds: a
sentence of the speaker's persona, of the room description, of an object description, the
partner's name, a word the partner just used, the object an action is about. So ranking the
true utterance among 19 others of the same split needs that context (negatives are built the
same way from other rooms and characters), and dropping a feature from the context removes
the evidence for the utterances built on it. Some utterances quote the room's background
story, which ParlAI never shows a model: ungrounded chatter, as in real chats.

Every function takes the RNG explicitly so a corpus is reproducible from its seed.
"""

from __future__ import annotations

import random
import re
from typing import Sequence

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
MAX_QUOTE_WORDS = 32

STOPWORDS = frozenset(
    "about above after again against also among another because been before being below between both could "
    "does doing down during each either every from further have having here hers herself himself into itself "
    "just like little many more most much must myself never only other ought ours ourselves over same shall "
    "should some such than that their theirs them themselves then there these they this those through under "
    "until upon very were what when where which while whom whose will with within without would your yours "
    "yourself yourselves always maybe really quite things thing something someone people around".split()
)


def sentences(text: str) -> list[str]:
    """The sentences of a description or persona, whitespace tidied, very long ones cut at a word."""
    result = []
    for part in SENTENCE_END.split(" ".join(text.split())):
        part = part.strip()
        if len(part.split()) < 3:
            continue
        words = part.split()
        if len(words) > MAX_QUOTE_WORDS:
            part = " ".join(words[:MAX_QUOTE_WORDS]).rstrip(",;:") + "..."
        result.append(part)
    return result


def span(sentence: str, rng: random.Random, shortest: int = 5, longest: int = 9) -> str:
    """A run of words from ``sentence`` (whole if short): people allude to what they know
    rather than recite it, so only part of a context sentence reappears in speech."""
    words = sentence.rstrip(".!?").split()
    if len(words) <= longest:
        return " ".join(words)
    clauses = [c.strip() for c in re.split(r"[,;:]", sentence.rstrip(".!?")) if len(c.split()) >= shortest]
    if clauses and rng.random() < 0.5:
        words = rng.choice(clauses).split()
        if len(words) <= longest + 3:
            return " ".join(words)
    size = rng.randint(shortest, longest)
    return " ".join(words[:size]).strip(",;:")


def lower_first(text: str) -> str:
    """``The cave is dark.`` -> ``the cave is dark.``; keeps ``I`` and names-like capitals (``I'm``)."""
    if not text or text.startswith(("I ", "I'")) or (len(text) > 1 and text[1].isupper()):
        return text
    return text[0].lower() + text[1:]


def place_name(room_name: str) -> str:
    """``The rectory`` -> ``rectory``, for frames like ``this rectory``."""
    name = room_name.strip()
    lowered = name.lower()
    for article in ("the ", "a ", "an "):
        if lowered.startswith(article):
            name = name[len(article):]
            break
    return name[:1].lower() + name[1:] if name[1:2].islower() or len(name) == 1 else name


def address(name: str) -> str:
    """How a character is spoken to: ``a wild boar`` -> ``wild boar`` (names may carry articles)."""
    lowered = name.lower()
    for article in ("a ", "an ", "the "):
        if lowered.startswith(article) and len(name) > len(article):
            return name[len(article):]
    return name


def content_word(text: str, rng: random.Random, grounded: frozenset[str] = frozenset()) -> str | None:
    """A word of ``text`` a reply might pick up on: preferably one naming something in the
    scene (``grounded``), else a longer non-function word."""
    words = [w.lower().strip("'-") for w in WORD.findall(text)]
    words = [w for w in words if len(w) >= 4 and w not in STOPWORDS]
    named = [w for w in words if w in grounded]
    if named:
        return rng.choice(named)
    words = [w for w in words if len(w) >= 6 and not w.endswith(("ing", "ed", "ly"))]
    return rng.choice(words) if words else None


def fill(rng: random.Random, templates: Sequence[str], **slots: str) -> str:
    return rng.choice(templates).format(**slots)


# ------------------------------------------------------------------------------- templates
GENERIC_ADDRESS = ("friend", "stranger", "my friend", "traveller", "good sir", "my lady", "old friend", "you",
                   "dear", "companion", "neighbour", "fellow")
"""How characters mostly address each other; the partner's name is used only now and then, as in
real chats (a name in every line would let word overlap find the speaker's lines)."""

GREETINGS = ("Hello, {p}.", "Greetings, {p}!", "Well met, {p}.", "Oh! Hello there, {p}.", "Good day to you, {p}.",
             "Ah, {p}. I did not expect company.", "Hail, {p}!", "Hello? Who goes there? Ah, {p}.")
GREETING_REPLIES = ("Hello to you too, {p}.", "Greetings, {p}.", "Well met indeed, {p}.", "Hello, {p}. Nice to meet you.",
                    "Good day, {p}.", "Oh, hello {p}, you startled me.")
INTRODUCTIONS = ("{s}", "Let me tell you a little about myself. {s}", "{s} That is my story.",
                 "You may have heard of me. {s}")
PERSONA_SPANS = ("{x}... yes, that is my life.", "As I always say, {x}.", "You know me, {p}: {x}.",
                 "{x}. That is all I will say.", "I was thinking, {x}.", "Well, {x}, you see.")
SELF_IMAGE = ("People describe me like this: {x}.", "Others would say: {x}.", "Look at me, {p}. {X}.",
              "If you asked about me in town, they would tell you: {x}.")
BACKGROUND_SPANS = ("Did you know, {p}, that {x}?", "I heard that {x}.", "Old stories say {x}.", "They say {x}.")
SETTING_SPANS = ("Look at this {r}. {x}.", "I do like how {x}.", "Here in this {r}, {x}.", "{x}. Strange, is it not?")
PERSONA = ("{s}", "{s} What about you, {p}?", "Let me tell you something, {p}. {s}", "You should know that {sl}",
           "Between you and me, {sl}", "{s} It is not an easy life.", "I often think about it. {s}",
           "Do you know what I mean, {p}? {s}")
SETTING = ("{d}", "Look around, {p}. {d}", "I know this {r} well. {d}", "Have you noticed? {d}",
           "Strange place, this {r}. {d}", "{d} I have always found it so.", "See how {dl}")
OBJECT = ("Do you see the {o}? {d}", "That {o} caught my eye. {d}", "Look at the {o}, {p}. {d}", "{d}",
          "Have you ever seen such a {o}? {d}", "What do you make of the {o}? {d}")
ECHO = ("The {w}? Tell me more about the {w}.", "You speak of the {w}, {p}? {s}", "I know little of the {w}. {s}",
        "Ah, the {w}. {s}", "{w}... yes, I have thought about that too.", "Why do you mention the {w}, {p}?")
QUESTIONS = {
    "why": ("What brings you to this {r}, {p}?", "Why have you come here, {p}?", "What are you doing in this {r}?"),
    "who": ("Who are you, stranger?", "Tell me, {p}, who are you really?", "And what is your story, {p}?"),
    "carry": ("What is that you carry, {p}?", "What have you got with you, {p}?"),
}
ANSWERS = {
    "why": ("I came here because {sl}", "Why? {s}", "I have my reasons. {s}", "Because {sl}"),
    "who": ("I am the {n}. {s}", "Who am I? {s}", "They call me the {n}. {s}"),
    "carry": ("This? It is my {o}. {d}", "Only my {o}. {d}", "My {o}, {p}. {d}"),
}
BACKGROUND = ("{b}", "They say {bl}", "I heard a story once. {b}", "Did you know? {b}")
SMALL_TALK = ("I am not sure what to make of all this.", "Let us not quarrel, {p}.", "It has been a long day, {p}.",
              "Do you hear that? No? Never mind.", "I should be going soon.", "What a day it has been.",
              "Tell me, {p}, what do you think?", "I see.", "Interesting. Go on.", "Hmm. Perhaps you are right, {p}.")
REQUESTS = {
    "get": ("Could you fetch the {o} for me, {p}?", "Would you pick up that {o}? {d}", "Bring me the {o}, please, {p}."),
    "get_from": ("Could you take the {o} out of the {c}, {p}?", "Would you get the {o} from the {c}?"),
    "put": ("Would you put the {o} in the {c}, {p}?", "Put your {o} in the {c}, please.",
            "The {o} would be safer in the {c}, {p}."),
    "drop": ("Drop the {o}, {p}!", "Would you put down that {o}?", "Leave the {o} here, {p}."),
    "give_me": ("Could you give me your {o}, {p}?", "Would you hand me the {o}? {d}", "I need that {o}, {p}. May I have it?"),
    "give": ("Would you give the {o} to the {c}, {p}?", "The {c} could use your {o}, {p}."),
    "steal": ("Go on, {p}, take the {o} from the {c}.", "The {c} will never notice if you take the {o}."),
    "wear": ("Put on your {o}, {p}.", "Why don't you wear the {o}?", "You should wear that {o}, {p}."),
    "wield": ("Ready your {o}, {p}!", "Hold your {o} ready, just in case.", "Wield the {o}, {p}, quickly!"),
    "remove": ("Take off that {o}, {p}.", "Why not remove the {o} for a while?"),
    "eat": ("You should eat the {o}, {p}.", "Go on, have a bite of the {o}."),
    "drink": ("Have a drink of the {o}, {p}.", "Why not drink the {o}? {d}"),
    "hit_me": ("Go on, hit me if you dare, {p}!", "Strike me, {p}, I am not afraid."),
    "hit": ("Hit the {c}, {p}! Do it!", "Teach the {c} a lesson, {p}."),
    "hug_me": ("Give me a hug, {p}.", "Come here, {p}, I need a hug."),
    "hug": ("Give the {c} a hug, {p}.", "The {c} looks lonely. Hug them, {p}."),
}
"""How one character asks the other to do something: one frame set per kind of action."""
REFUSALS = ("No, {p}, I would rather not.", "Not a chance, {p}.", "Perhaps later, {p}.", "Why should I, {p}?",
            "I don't think so.")

ANNOUNCE = {
    "get": ("I'll pick up the {o}.", "Let me grab the {o}.", "I think I will take that {o}.", "This {o} could be useful.",
            "Mind if I take the {o}, {p}?"),
    "get_from": ("I'll take the {o} out of the {c}.", "Let me get the {o} from the {c}.",
                 "What is in the {c}? Ah, the {o}."),
    "put": ("I'll put the {o} in the {c}.", "Let me stash the {o} in the {c}.", "The {o} belongs in the {c}.",
            "The {c} is a good place for my {o}."),
    "drop": ("I'll just drop this {o}.", "I don't need this {o} anymore.", "I'll leave the {o} here.",
             "This {o} is too heavy to carry around."),
    "give": ("Here, {p}, take my {o}.", "I want you to have this {o}.", "A gift for you, {p}: my {o}.",
             "Take the {o}, {p}. You need it more than I do."),
    "steal": ("Your {o} will be mine, {p}!", "I'll just help myself to that {o}.", "What a nice {o}. I'll take it!",
              "You won't miss the {o}, will you, {p}?"),
    "wear": ("I'll put on my {o}.", "Let me wear the {o}; it suits me.", "Time to wear this {o}.",
             "It is cold. I'll put the {o} on."),
    "wield": ("I'll wield my {o}, just in case.", "Let me ready the {o}.", "I keep my {o} at hand, {p}.",
              "Stand back, {p}. I have my {o}."),
    "remove": ("I'll take off the {o}.", "Let me remove this {o}.", "This {o} is uncomfortable.",
               "I don't need the {o} right now."),
    "eat": ("I'm starving, I'll eat this {o}.", "Mmm, this {o} looks tasty.", "Do you mind if I eat my {o}?",
            "I have not eaten all day. This {o} will do."),
    "drink": ("I'm so thirsty. I'll drink the {o}.", "A sip of this {o} will do me good.", "Cheers, {p}! To the {o}!",
              "Let me drink this {o} before it spoils."),
    "hit": ("Take that, {p}!", "You'll regret that, {p}!", "I've had enough of you, {p}!", "Defend yourself, {p}!"),
    "hug": ("Come here, {p}, let me hug you.", "You look like you need a hug, {p}.", "I'm so glad you're here, {p}.",
            "Friends should embrace, {p}."),
}
REACT = {
    "hit": ("Ouch! Why would you hit me, {p}?", "How dare you strike me, {p}!", "That hurt! What did I ever do to you?",
            "Stop it, {p}! Stop hitting me!"),
    "give": ("Thank you for the {o}, {p}!", "A {o}! How kind of you.", "I will treasure this {o}, {p}.",
             "For me? The {o}? Thank you!"),
    "steal": ("Hey! Give me back my {o}, {p}!", "Thief! That {o} is mine!", "You took my {o}, {p}!"),
    "hug": ("Oh! That is very kind of you, {p}.", "What a warm hug.", "You are a true friend, {p}."),
    "get": ("Are you going to keep that {o}?", "Careful with the {o}, {p}.", "I saw you take the {o}."),
    "wear": ("That {o} looks good on you, {p}.", "A fine {o} you are wearing."),
    "wield": ("Why are you holding the {o} like that, {p}?", "Put that {o} away, {p}."),
    "eat": ("Was the {o} any good?", "You could have shared the {o}, {p}."),
    "drink": ("Was the {o} any good?", "Save some {o} for me next time."),
    "drop": ("You dropped your {o}, {p}.", "Why leave the {o} there?"),
    "put": ("Why put the {o} in the {c}?", "The {o} looks safe in the {c}."),
    "remove": ("Why take off the {o}, {p}?",),
}
EMOTE_CUES = {
    "applaud": ("Bravo! Well done!", "That deserves applause.", "I applaud you, {p}."),
    "blush": ("Oh, you flatter me.", "Now I am embarrassed.", "You make me blush, {p}."),
    "cry": ("This is all so sad.", "I cannot hold back my tears.", "It makes me want to cry."),
    "dance": ("I feel like dancing!", "What a tune is stuck in my head!", "Let us dance, {p}!"),
    "frown": ("I don't like the sound of that.", "That displeases me, {p}.", "You make me frown."),
    "gasp": ("Oh my!", "I can't believe it!", "What? Truly?"),
    "grin": ("Heh, I know something you don't.", "This is going rather well.", "I can't help but grin."),
    "groan": ("Ugh, not again.", "My back aches terribly.", "Please, no more of this."),
    "growl": ("Stay away from me.", "Don't test my patience, {p}.", "Grr. Leave me be."),
    "laugh": ("Ha! That is too funny.", "You make me laugh, {p}.", "Ha ha! Good one."),
    "nod": ("Yes, I agree.", "Indeed, that is right.", "I nod to that, {p}."),
    "nudge": ("Hey, look over there.", "Psst, pay attention, {p}.", "Go on, {p}, don't be shy."),
    "ponder": ("Let me think about that.", "I wonder what it means.", "I must ponder this."),
    "pout": ("That's not fair.", "Nobody ever listens to me.", "Fine. Be that way, {p}."),
    "scream": ("Help! Somebody help!", "Aaah!", "I could scream!"),
    "shrug": ("I don't really know.", "Who can say?", "It is all the same to me, {p}."),
    "sigh": ("Such a long day.", "If only things were different.", "Oh well, I sigh and carry on."),
    "smile": ("It is good to see you, {p}.", "What a pleasant day.", "That makes me smile."),
    "stare": ("What are you looking at?", "...", "I can't take my eyes off you, {p}."),
    "wave": ("Hello there!", "Farewell for now, {p}.", "I wave to you, {p}."),
    "wink": ("Our little secret, {p}.", "You know what I mean.", "Say no more."),
    "yawn": ("I'm so tired.", "This is getting boring.", "It is late, {p}. I need sleep."),
}
EMOTE_REACT = ("Why do you {e}, {p}?", "Is something the matter, {p}?", "What was that about, {p}?")

REACTION_EMOTES = {
    "hit": ("scream", "cry", "growl", "gasp", "groan", "frown"),
    "give": ("smile", "grin", "applaud", "blush", "nod"),
    "steal": ("growl", "frown", "pout", "scream", "gasp"),
    "hug": ("blush", "smile", "laugh", "grin"),
}
MIRRORED_EMOTES = frozenset({"wave", "smile", "laugh", "grin", "nod", "wink", "dance", "applaud", "yawn", "stare"})
