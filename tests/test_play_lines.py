"""What a person reads and types in ``zoo play light``: the partner never says a line naming
itself, room text has one article per name, and lines come from a file, a pipe or ``-``."""

from __future__ import annotations

import io
import json
import os
import sys

import pytest
import torch

from zoo.cli import main
from zoo.light.environment import authored_world
from zoo.models.candidate_cache import RetrievalIndex
from zoo.play.terminal_text import LineSource, shown
from zoo.play.light_partner import RETRIEVED, Partner, name_pattern
from zoo.play.light_room import a_or_an, stage_room


@pytest.fixture
def room():
    return stage_room(authored_world(), "Village graveyard", "gravedigger", "priest", seed=3)


class OneQuery:
    """A speaker whose every context has the same embedding, so the index's scores alone order
    the lines (the choice among them is what is tested here)."""

    supports_retrieval = True
    supports_generation = False

    def encode_contexts(self, texts):
        return torch.ones(len(texts), 1)


def partner_saying(lines: list[str]) -> Partner:
    """A partner whose index ranks ``lines`` in the order given."""
    scores = torch.arange(len(lines), 0, -1, dtype=torch.float32).unsqueeze(1)
    return Partner(OneQuery(), None, None, RetrievalIndex(lines, scores, ()))


def test_the_partner_never_says_a_line_addressed_to_its_own_name(room):
    assert room.partner == "priest"
    partner = partner_saying(["Perhaps you are right, priest.", "PRIEST, hear me!", "Good evening to you, gravedigger.",
                              "Pray for me."])
    assert partner.speak(room, room.record_turn(room.partner)) == "Good evening to you, gravedigger."


def test_it_looks_farther_when_every_first_line_names_it(room):
    partner = partner_saying([f"Tell me, priest, about grave {n}." for n in range(RETRIEVED + 5)] + ["Pray for me."])
    assert partner.speak(room, room.record_turn(room.partner)) == "Pray for me."


def test_a_name_is_matched_as_whole_words_without_its_article():
    sheriff = name_pattern("the town sheriff")
    assert sheriff.search("Perhaps you are right, town sheriff.")
    assert sheriff.search("TOWN  SHERIFF! Over here.")
    assert not sheriff.search("The sheriffs of this town are lazy.")
    assert not name_pattern("priest").search("A priestly matter.")


def test_room_text_puts_no_second_article_before_a_name_that_has_one(room):
    held = next(n for n in room.graph.nodes.values() if n.is_object and room.graph.parent(n).name == "priest")
    held.name, held.equipped = "a holy book", "wield"
    lying = next(n for n in room.graph.nodes.values() if n.is_object and room.graph.parent(n).kind == "room")
    lying.name = "An old altar"
    text = room.panel()
    assert "the priest" in text and "wields a holy book" in text and "An old altar" in text
    assert "an a " not in text and "a An " not in text and "a a " not in text
    assert [a_or_an(name) for name in ("apple", "Ogre's club", "skull", "the bell", "some coins")] == \
        ["an apple", "an Ogre's club", "a skull", "the bell", "some coins"]


def read(source: LineSource) -> list[str]:
    return [line for line, _ in source]


def test_script_lines_come_from_standard_input_with_a_dash(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"hello\n# a comment\nbye\xff\r\n")))
    out = io.StringIO()
    assert read(LineSource("-", "you> ", out)) == ["hello", "bye\ufffd"]
    assert out.getvalue() == "you> hello\nyou> bye\ufffd\n"


def test_script_lines_come_from_a_pipe():
    reading, writing = os.pipe()
    os.write(writing, "Good evening.\n/quit\n".encode())
    os.close(writing)
    try:
        assert read(LineSource(f"/dev/fd/{reading}", "you> ", io.StringIO())) == ["Good evening.", "/quit"]
    finally:
        os.close(reading)


def test_a_named_pipe_and_a_directory(tmp_path):
    fifo = tmp_path / "lines"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR)  # a writer is there, as with `mkfifo lines; echo ... > lines &`
    os.write(writer, b"/look\n")
    lines = iter(LineSource(fifo, "you> ", io.StringIO()))
    assert next(lines)[0] == "/look"  # read while the writer is still there
    os.close(writer)
    assert list(lines) == []
    with pytest.raises(FileNotFoundError, match="is not a file or a pipe"):
        LineSource(tmp_path, "you> ", io.StringIO())


def test_zoo_play_light_reads_its_script_from_standard_input(tmp_path, monkeypatch, play_corpus, play_cache, capsys):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "no-data"))
    monkeypatch.setenv("ZOO_CACHE", str(play_cache))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Good evening, father.\n/quit\n")))
    transcript = tmp_path / "game.jsonl"
    assert main(["play", "light", "--room", "Village graveyard", "--as", "gravedigger", "--partner", "priest",
                 "--corpus", str(play_corpus), "--index-limit", "200", "--script", "-",
                 "--transcript", str(transcript)]) == 0
    records = [json.loads(line) for line in transcript.read_text(encoding="utf-8").splitlines()]
    assert [r["text"] for r in records if r.get("speaker") == "gravedigger"][:1] == ["Good evening, father."]
    assert "you> Good evening, father." in capsys.readouterr().out


def test_text_is_shown_as_written_but_for_what_a_terminal_would_obey():
    assert shown("Caf\u00e9 \U0001F468\u200d\U0001F469 said:\nhello") == "Caf\u00e9 \U0001F468\u200d\U0001F469 said:\nhello"
    assert shown("a\x1b]52;c;SGVsbG8=\x07b\rc\x9b2Jd\u202ee\udc80") == (
        "a\\x1b]52;c;SGVsbG8=\\x07b\\rc\\x9b2Jd\\u202ee\\udc80")
