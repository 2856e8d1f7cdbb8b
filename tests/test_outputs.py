"""Nothing of a user's is overwritten: every output path (``--out``, ``--save``,
``--transcript``) follows one rule. zoo writes a new path, or into a directory it marked for
the same kind of output; an existing file is never replaced; a directory holding another
kind of zoo output is refused in one line naming what it holds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from zoo.cli import main
from zoo.errors import UnsafeDestinationError
from zoo.safe_writes import (
    MARKER_NAME,
    OUTPUT_KINDS,
    atomic_write,
    check_new_file,
    check_replaceable,
    output_kind,
    replace_directory,
    write_marker,
)

LIGHT_GAME = ["--world", "authored", "--room", "Village graveyard", "--as", "gravedigger", "--partner", "priest"]


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` and its bytes."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def run(argv: list[str]) -> int:
    """The exit status ``zoo ARGV`` ends with."""
    try:
        return main(argv)
    except SystemExit as stop:
        return stop.code


def refused_in_one_line(capsys, code: int) -> str:
    """The CLI's answer to a refused destination: exit status 2 and one line on stderr."""
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.fixture
def trained_model(tmp_path) -> Path:
    """``RUN/pretrained`` as training leaves it: a saved model."""
    return tiny_policy().save_pretrained(tmp_path / "RUN" / "pretrained")


def tiny_policy():
    from zoo.models.blocks import BlocksSupervised

    return BlocksSupervised(["<pad>", "<unk>", "move"], embedding_dim=8, lstm_dim=8, image_dim=8, conv_channels=4,
                            hidden_dim=8)


# --- a directory of another kind ---------------------------------------------------------


def test_light_sim_refuses_to_write_a_corpus_over_a_trained_model(trained_model, capsys):
    before = snapshot(trained_model)
    code = run(["light", "sim", "--preset", "tiny", "--world", "authored", "--out", str(trained_model)])
    err = refused_in_one_line(capsys, code)
    assert "it holds a trained model, not a corpus" in err
    assert snapshot(trained_model) == before


def test_play_blocks_refuses_to_write_gifs_into_a_trained_model(trained_model, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "no-data"))
    before = snapshot(trained_model)
    code = run(["play", "blocks", "--board", "procedural:1", "--model", "stop",
                 "--instruction", "move it", "--out", str(trained_model)])
    err = refused_in_one_line(capsys, code)
    assert "it holds a trained model, not Blocks GIFs" in err
    assert snapshot(trained_model) == before


def test_eval_save_refuses_to_write_a_model_over_a_corpus(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "no-data"))  # procedural boards
    corpus = tmp_path / "corpus"
    assert main(["light", "sim", "--preset", "tiny", "--world", "authored", "--out", str(corpus)]) == 0
    capsys.readouterr()
    before = snapshot(corpus)
    code = run(["eval", "blocks", "--model", "stop", "--procedural", "--limit", "2", "--save", str(corpus)])
    assert "it holds a corpus, not a trained model" in refused_in_one_line(capsys, code)
    assert snapshot(corpus) == before


@pytest.mark.slow
def test_the_same_kind_is_written_again(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    for _ in range(2):
        assert main(["light", "sim", "--preset", "tiny", "--world", "authored", "--out", str(corpus)]) == 0
    assert output_kind(corpus) == "corpus"
    model = tmp_path / "model"
    tiny_policy().save_pretrained(model)
    tiny_policy().save_pretrained(model)
    assert output_kind(model) == "model"
    assert json.loads((model / MARKER_NAME).read_text()) == {"written_by": "zoo", "kind": "model"}


def test_play_blocks_writes_into_its_own_directory_again(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "no-data"))
    pictures = tmp_path / "pictures"
    for _ in range(2):
        assert main(["play", "blocks", "--board", "procedural:1", "--model", "stop",
                     "--instruction", "move it", "--out", str(pictures)]) == 0
    assert output_kind(pictures) == "gifs"
    assert (pictures / "start.png").is_file()


def test_every_kind_refuses_every_other(tmp_path):
    for written in OUTPUT_KINDS:
        directory = tmp_path / written
        with replace_directory(directory, kind=written) as staging:
            (staging / "data").write_text(written)
        for other in OUTPUT_KINDS:
            if other == written:
                assert check_replaceable(directory, kind=other) == directory
            else:
                with pytest.raises(UnsafeDestinationError, match=f"it holds {OUTPUT_KINDS[written]}, not"):
                    check_replaceable(directory, kind=other)
        assert (directory / "data").read_text() == written


def test_an_unknown_kind_is_a_programming_error(tmp_path):
    with pytest.raises(ValueError, match="unknown output kind 'output'"):
        check_replaceable(tmp_path / "x", kind="output")


# --- a marker recording no kind zoo writes ------------------------------------------------


@pytest.mark.parametrize("marker", [
    '{"written_by": "zoo", "kind": "output"}\n',
    '{"written_by": "zoo", "kind": "light retrieval index"}\n',
    '{"written_by": "zoo", "kind": "zoo play blocks"}\n',
    '{"written_by": "zoo"}\n',
    "",
    '{"written_by": "zo',
])
def test_a_marker_recording_no_kind_zoo_writes_marks_nothing(tmp_path, marker):
    directory = tmp_path / "old"
    directory.mkdir()
    (directory / MARKER_NAME).write_text(marker)
    assert output_kind(directory) is None
    assert check_replaceable(directory, kind="retrieval-index") == directory  # the marker alone: nothing to lose
    (directory / "index.json").write_text("{}")
    (directory / "embeddings.safetensors").write_text("x")
    for kind in OUTPUT_KINDS:
        with pytest.raises(UnsafeDestinationError, match="it is not empty and zoo did not write it"):
            check_replaceable(directory, kind=kind)
    assert (directory / "index.json").read_text() == "{}"


def test_a_marker_that_is_a_link_or_a_pipe_is_not_zoos(tmp_path):
    (tmp_path / "elsewhere").write_text('{"written_by": "zoo", "kind": "corpus"}\n')
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / MARKER_NAME).symlink_to(tmp_path / "elsewhere")
    (linked / "mine.txt").write_text("mine")
    with pytest.raises(UnsafeDestinationError, match="zoo did not write it"):
        check_replaceable(linked, kind="corpus")
    piped = tmp_path / "piped"
    piped.mkdir()
    os.mkfifo(piped / MARKER_NAME)
    (piped / "config.json").write_text("{}")
    with pytest.raises(UnsafeDestinationError):  # answered at once: a pipe is never opened for reading
        check_replaceable(piped, kind="model")


# --- the marker is written atomically -----------------------------------------------------


def test_a_kill_while_the_marker_is_written_leaves_a_reusable_directory(tmp_path):
    """A writer killed inside :func:`write_marker` leaves at most its temporary, never a half
    marker; the directory is still one zoo may write again."""
    directory = tmp_path / "pictures"
    directory.mkdir()
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import os, time
        import zoo.safe_writes as safe_writes
        def stall(stream):
            stream.write(b'{{"written_by": "zo')
            stream.flush()
            print("writing", flush=True)
            time.sleep(60)
        safe_writes.atomic_write({str(directory / MARKER_NAME)!r}, stall)
        """)], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    try:
        assert child.stdout.readline().strip() == "writing"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    leftovers = [p.name for p in directory.iterdir()]
    assert MARKER_NAME not in leftovers and len(leftovers) == 1  # only the temporary
    assert check_replaceable(directory, kind="gifs") == directory
    write_marker(directory, kind="gifs")
    assert output_kind(directory) == "gifs"


# --- a file is never replaced --------------------------------------------------------------


def test_blocks_render_refuses_an_existing_file(tmp_path, capsys):
    out = tmp_path / "figure.gif"
    out.write_bytes(b"my figure")
    code = run(["blocks", "render", "--split", "dev", "--index", "0", "--out", str(out)])
    err = refused_in_one_line(capsys, code)
    assert "refusing to write over" in err and "figure.gif" in err
    assert out.read_bytes() == b"my figure"
    assert [p.name for p in tmp_path.iterdir()] == ["figure.gif"]


def test_atomic_write_without_replace_keeps_a_file_that_appears_meanwhile(tmp_path):
    path = tmp_path / "figure.png"

    def save(stream):
        path.write_bytes(b"written by someone else meanwhile")
        stream.write(b"ours")

    with pytest.raises(UnsafeDestinationError, match="appeared"):
        atomic_write(path, save, replace=False)
    assert path.read_bytes() == b"written by someone else meanwhile"
    assert [p.name for p in tmp_path.iterdir()] == ["figure.png"]
    with pytest.raises(UnsafeDestinationError, match="it exists"):
        check_new_file(path)


def light_game(tmp_path, play_corpus, transcript: Path, *extra) -> int:
    script = tmp_path / "script.txt"
    script.write_text("Good evening, father.\n/quit\n")
    return run(["play", "light", *LIGHT_GAME, "--corpus", str(play_corpus), "--index-limit", "200",
                 "--script", str(script), "--transcript", str(transcript), *extra])


@pytest.fixture
def light_env(tmp_path, monkeypatch, play_cache):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "no-data"))
    monkeypatch.setenv("ZOO_CACHE", str(play_cache))


def test_play_light_refuses_an_existing_transcript(tmp_path, play_corpus, light_env, capsys):
    notes = tmp_path / "notes.jsonl"
    notes.write_bytes(b"my notes\n")
    err = refused_in_one_line(capsys, light_game(tmp_path, play_corpus, notes))
    assert "notes.jsonl" in err and "--append" in err
    assert notes.read_bytes() == b"my notes\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.jsonl", "script.txt"]


@pytest.mark.slow
def test_play_light_appends_with_append(tmp_path, play_corpus, light_env, capsys):
    notes = tmp_path / "notes.jsonl"
    notes.write_bytes(b'{"mine": 1}')  # an unfinished last line: the game starts on a fresh one
    assert light_game(tmp_path, play_corpus, notes, "--append") == 0
    assert light_game(tmp_path, play_corpus, notes, "--append") == 0
    lines = notes.read_text().splitlines()
    assert lines[0] == '{"mine": 1}'
    records = [json.loads(line) for line in lines[1:]]
    assert [r["kind"] for r in records].count("start") == 2
    assert records[0]["kind"] == "start"


def test_play_blocks_refuses_an_existing_transcript_and_appends_with_append(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "no-data"))
    notes = tmp_path / "notes.jsonl"
    notes.write_bytes(b"my notes\n")
    game = ["play", "blocks", "--board", "procedural:1", "--model", "stop", "--instruction", "move it",
            "--out", str(tmp_path / "pictures"), "--transcript", str(notes)]
    refused_in_one_line(capsys, run(game))
    assert notes.read_bytes() == b"my notes\n"
    assert not (tmp_path / "pictures").exists()  # refused before anything was written
    assert main([*game, "--append"]) == 0
    text = notes.read_text()
    assert text.startswith("my notes\n")
    assert json.loads(text.splitlines()[1])["kind"] == "start"


def test_append_needs_a_transcript(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "no-data"))
    code = run(["play", "blocks", "--board", "procedural:1", "--model", "stop", "--instruction", "x",
                 "--out", str(tmp_path / "pictures"), "--append"])
    assert "--append needs --transcript" in refused_in_one_line(capsys, code)


def test_a_transcript_that_appears_during_the_game_is_kept(tmp_path):
    from zoo.play.transcript import Transcript

    notes = tmp_path / "notes.jsonl"
    with pytest.raises(UnsafeDestinationError, match="appeared during the game"):
        with Transcript(notes) as transcript:
            transcript.write(0, "you", "start", None)
            notes.write_bytes(b"written meanwhile\n")
    assert notes.read_bytes() == b"written meanwhile\n"
    kept = [p for p in tmp_path.iterdir() if p != notes]
    assert len(kept) == 1 and json.loads(kept[0].read_text())["kind"] == "start"


def test_a_transcript_swapped_for_a_link_before_the_game_ends_is_not_followed(tmp_path):
    from zoo.play.transcript import Transcript

    notes, target = tmp_path / "notes.jsonl", tmp_path / "elsewhere.txt"
    notes.write_bytes(b"mine\n")
    target.write_bytes(b"not to be touched\n")
    with pytest.raises(UnsafeDestinationError, match="could not append") as refused:
        with Transcript(notes, append=True) as transcript:
            transcript.write(0, "you", "start", None)
            notes.unlink()
            notes.symlink_to(target)
    assert len(str(refused.value).splitlines()) == 1
    assert target.read_bytes() == b"not to be touched\n"
    kept = [p for p in tmp_path.iterdir() if p not in (notes, target)]
    assert len(kept) == 1 and json.loads(kept[0].read_text())["kind"] == "start"
