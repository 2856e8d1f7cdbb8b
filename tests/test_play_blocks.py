"""``zoo play blocks``: a policy carries out scripted instructions on a procedural board.

The transcript's moves are replayed in the simulator to check the reported error, and the
pictures are opened to check they show what happened. Needs no Blocks data.
"""

import json

import pytest
import torch
from PIL import Image

from zoo.blocks.board import BoardBatch, distance_error
from zoo.blocks.env import BlocksEnv
from zoo.blocks.geometry import DIRECTION_NAMES, STOP, encode_action
from zoo.cli import main
from zoo.play.blocks_board import choose_board


def action_of(move: str) -> int:
    """``"move block 6 left"`` -> its action id; ``"STOP"`` -> STOP."""
    if move == "STOP":
        return STOP
    words = move.split()
    return encode_action(int(words[2]) - 1, DIRECTION_NAMES.index(words[3]))


def replayed_error(transition, moves_per_instruction) -> float:
    """The distance error after playing every move in the simulator, instruction after instruction."""
    env = BlocksEnv()
    positions = None
    for moves in moves_per_instruction:
        env.reset(BoardBatch.from_transitions([transition]))
        if positions is not None:
            env.positions = positions
        for move in moves:
            env.step(torch.tensor([action_of(move)]))
        positions = env.positions
    return float(env.error()[0])


def play(tmp_path, monkeypatch, *args, script: str | None = None):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "no-data"))
    command = ["play", "blocks", "--out", str(tmp_path / "pictures"), "--transcript", str(tmp_path / "t.jsonl"), *args]
    if script is not None:
        (tmp_path / "script.txt").write_text(script)
        command += ["--script", str(tmp_path / "script.txt")]
    assert main(command) == 0
    return [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_instructions_are_carried_out_one_after_another_and_recorded(tmp_path, monkeypatch, capsys):
    records = play(tmp_path, monkeypatch, "--board", "procedural:5", "--model", "blocks-bandit",
                   script="/hint\nmove it a bit\n\n/bogus\nnow put it back where it belongs\n/quit\n")
    screen = capsys.readouterr().out
    example, _, _ = choose_board("procedural:5")
    start = records[0]
    assert start["kind"] == "start" and start["board"] == "procedural:5" and start["from_data"] is False
    assert start["own_instruction"] == example.instruction
    assert start["error"] == pytest.approx(float(distance_error(
        torch.from_numpy(example.transition.start), torch.from_numpy(example.transition.goal))), abs=1e-4)
    assert f"The board's own instruction: {example.instruction}" in screen

    instructions = [r["text"] for r in records if r["kind"] == "instruction"]
    assert instructions == ["move it a bit", "now put it back where it belongs"]
    runs = [r for r in records if r["kind"] == "moves"]
    assert len(runs) == 2
    for run in runs:
        assert run["speaker"] == "blocks-bandit" and run["seconds"] > 0
        assert run["moves"][-1] == "STOP" or len(run["moves"]) == 40
        assert run["changes"] == [m for m, b in zip(run["moves"], run["blocked"]) if m != "STOP" and not b]
        for number, move in enumerate(run["moves"], 1):
            assert f"{number:2d}. {move}" in screen                     # every move printed
    # Each instruction starts where the last one ended; the reported error is the simulator's.
    assert runs[1]["error_before"] == runs[0]["error_after"]
    assert runs[0]["error_after"] == pytest.approx(replayed_error(example.transition, [runs[0]["moves"]]), abs=1e-4)
    assert runs[1]["error_after"] == pytest.approx(
        replayed_error(example.transition, [r["moves"] for r in runs]), abs=1e-4)

    pictures = tmp_path / "pictures"
    with Image.open(pictures / "start.png") as png:
        assert png.format == "PNG" and png.width == 480
    for number, run in enumerate(runs, 1):
        with Image.open(pictures / f"instruction-{number}.gif") as gif:
            assert gif.n_frames == len(run["moves"]) + 1              # the start, then every move
    assert "(unknown command /bogus; /help lists them)" in screen


def test_the_oracle_reaches_the_goal_and_reset_puts_the_board_back(tmp_path, monkeypatch):
    records = play(tmp_path, monkeypatch, "--board", "procedural:2", "--model", "demonstrations",
                   script="do what the board asks\n/reset\n/quit\n")
    run = next(r for r in records if r["kind"] == "moves")
    # The A* demonstrations end within a step (0.1 units, 0.66 block lengths) of the goal.
    assert run["error_before"] > 2.0 and run["error_after"] < 0.66
    reset = next(r for r in records if r["kind"] == "reset")
    assert reset["error"] == pytest.approx(records[0]["error"])


def test_one_instruction_from_the_command_line(tmp_path, monkeypatch, capsys):
    records = play(tmp_path, monkeypatch, "--board", "procedural", "--model", "stop", "--instruction", "stay put")
    assert [r["kind"] for r in records] == ["start", "instruction", "moves"]
    assert records[2]["moves"] == ["STOP"] and records[2]["error_after"] == records[0]["error"]


def test_an_overlong_instruction_from_the_command_line_is_cut_with_a_note(tmp_path, monkeypatch, capsys):
    from zoo.play.terminal_text import MAX_LINE_CHARACTERS

    pasted = "move block one to the left " * 2_000
    records = play(tmp_path, monkeypatch, "--board", "procedural", "--model", "stop", "--instruction", pasted)
    assert len(records[1]["text"]) <= MAX_LINE_CHARACTERS and pasted.startswith(records[1]["text"])
    notes = [line for line in capsys.readouterr().out.splitlines() if "cut to" in line]
    assert notes == [f"(your instruction: cut to {MAX_LINE_CHARACTERS} characters)"]


@pytest.mark.parametrize("args, message", [
    (["--board", "dev:x"], "the example index must be a whole number"),
    (["--board", "valid:3"], "expected dev:N, test:N, train:N, procedural or procedural:SEED"),
    (["--board", "procedural", "--model", "no-such-policy"], "unknown model 'no-such-policy'"),
])
def test_bad_arguments_end_in_one_clear_line(tmp_path, args, message, capsys):
    with pytest.raises(SystemExit) as exit:
        main(["play", "blocks", "--out", str(tmp_path / "out"), *args])
    assert exit.value.code == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("zoo: error: ") and message in error


def test_a_folder_zoo_did_not_write_is_never_written_into(tmp_path, capsys):
    mine = tmp_path / "my-photos"
    mine.mkdir()
    (mine / "start.png").write_bytes(b"my own picture")
    with pytest.raises(SystemExit):
        main(["play", "blocks", "--board", "procedural", "--model", "stop", "--out", str(mine), "--instruction", "x"])
    assert (mine / "start.png").read_bytes() == b"my own picture"
    assert "refusing" in capsys.readouterr().err


HOSTILE = "move the block\x1b]52;c;SGVsbG8=\x07 left\x1b[2J\x1b]0;title\x07 \u202eevil"
"""An instruction that would write the clipboard (OSC 52), clear the screen and set the window
title, with a bidi override: text from the data a terminal must show, not obey."""


def test_an_instruction_from_the_data_is_shown_with_its_control_characters_escaped(tmp_path, monkeypatch, capsys):
    from dataclasses import replace

    from zoo.play import blocks_board

    procedural = blocks_board.choose_board

    def board_with_hostile_instruction(spec, data_dir=None):
        example, label, from_data = procedural(spec, data_dir)
        return replace(example, instruction=HOSTILE), label, from_data

    monkeypatch.setattr(blocks_board, "choose_board", board_with_hostile_instruction)
    play(tmp_path, monkeypatch, "--board", "procedural", "--model", "stop", script="/hint\nstay put\n")

    screen = capsys.readouterr().out
    assert "\x1b" not in screen and "\x07" not in screen and "\u202e" not in screen
    shown = "move the block\\x1b]52;c;SGVsbG8=\\x07 left\\x1b[2J\\x1b]0;title\\x07 \\u202eevil"
    assert screen.count(f"The board's own instruction: {shown}\n") == 2  # at the start and for /hint


def test_an_output_folder_named_with_escapes_is_shown_escaped(tmp_path, monkeypatch, capsys):
    out = tmp_path / "pictures\x1b[2J"
    assert main(["play", "blocks", "--board", "procedural", "--model", "stop", "--out", str(out),
                 "--instruction", "stay put"]) == 0
    screen = capsys.readouterr().out
    assert "\x1b" not in screen and "pictures\\x1b[2J/start.png" in screen
