"""The turns of ``zoo play blocks``: your instruction, the policy's moves, the pictures.

The start board is written as ``start.png``; each instruction's execution as
``instruction-K.gif`` (the annotated goal marked in red, for people only). A line is an
instruction; ``/reset`` puts the board back, ``/hint`` shows the board's own instruction,
``/help`` and ``/quit``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from zoo.play.blocks_board import BlocksBoard
from zoo.play.transcript import Transcript

COMMANDS_HELP = """\
Type an instruction for the agent, e.g. "move the bmw block just left of the adidas block".
  /hint    the board's own instruction (the one its annotated goal belongs to)
  /reset   put the board back to its start
  /help    this help
  /quit    end (Ctrl-D works too)"""


class BlocksGame:
    """Instructions for ``policy`` (named ``model``) on ``board``; pictures go to ``out_dir``."""

    def __init__(self, board: BlocksBoard, policy, model: str, out_dir: Path, out: TextIO,
                 transcript: Transcript) -> None:
        self.board, self.policy, self.model = board, policy, model
        self.out_dir, self.out, self.transcript = out_dir, out, transcript
        self.count = 0

    def show(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    @property
    def goal_label(self) -> str:
        return "annotated goal" if self.board.from_data else "procedural goal"

    def start(self) -> None:
        board, transition = self.board, self.board.transition
        picture = board.write_picture(self.out_dir / "start.png", f"{board.label}: start, error {board.error():.2f}")
        self.show(f"Blocks board {board.label} ({transition.n_blocks} {transition.decoration} blocks); "
                  f"start board: {picture}")
        self.show(f"The board's own instruction: {board.example.instruction}")
        self.show(f"Distance error to its {self.goal_label} now: {board.error():.2f} block lengths. "
                  f"Type an instruction for {self.model} (/help for commands).")
        self.transcript.write(0, "game", "start", board.label, board=board.label, from_data=board.from_data,
                              blocks=transition.n_blocks, decoration=transition.decoration,
                              own_instruction=board.example.instruction, model=self.model, picture=str(picture),
                              error=round(board.error(), 4))

    def play(self, lines, instruction: str | None = None) -> None:
        if instruction is not None:
            self.instruct(instruction)
            return
        try:
            for line, note in lines:
                if note:
                    self.show(f"(your line: {note})")
                if not self.handle(line):
                    break
        except KeyboardInterrupt:
            self.show()
        self.show(f"Goodbye. {self.count} instruction{'s' if self.count != 1 else ''} carried out.")

    def handle(self, line: str) -> bool:
        if not line:
            self.show("(type an instruction, or /help)")
        elif line.lower() in ("/quit", "/exit", "/q"):
            return False
        elif line.lower() == "/help":
            self.show(COMMANDS_HELP)
        elif line.lower() == "/hint":
            self.show(f"The board's own instruction: {self.board.example.instruction}")
        elif line.lower() == "/reset":
            self.board.reset()
            self.show(f"The board is back at its start (error {self.board.error():.2f}).")
            self.transcript.write(self.count, "you", "reset", None, error=round(self.board.error(), 4))
        elif line.startswith("/"):
            self.show(f"(unknown command {line.split()[0][:40]}; /help lists them)")
        else:
            self.instruct(line)
        return True

    def instruct(self, instruction: str) -> None:
        self.count += 1
        self.transcript.write(self.count, "you", "instruction", instruction)
        run = self.board.run(self.policy, instruction)
        for number, (move, blocked) in enumerate(zip(run.moves, run.blocked), 1):
            self.show(f"  {number:2d}. {move}{' (blocked: the board is unchanged)' if blocked else ''}")
        gif = self.board.write_animation(run, self.out_dir / f"instruction-{self.count}.gif")
        moved = sum(move != "STOP" and not stuck for move, stuck in zip(run.moves, run.blocked))
        self.show(f"{self.model}: {moved} moves in {run.seconds:.2f}s; distance error to the {self.goal_label}: "
                  f"{run.error_before:.2f} -> {run.error_after:.2f} block lengths. Animation: {gif}")
        changed = [move for move, stuck in zip(run.moves, run.blocked) if move != "STOP" and not stuck]
        self.transcript.write(self.count, self.model, "moves", "; ".join(run.moves), changed, run.seconds,
                              moves=run.moves, blocked=run.blocked, error_before=round(run.error_before, 4),
                              error_after=round(run.error_after, 4), animation=str(gif))
