"""Progress of a long count of work (episodes, examples): a bar on a terminal, a plain line per
~10% otherwise, so the log of a background run shows how far it is and how long is left."""

from __future__ import annotations

import sys
import time

from tqdm import tqdm


class CountProgress:
    """``advance(n)`` after each piece of work; ``close()`` at the end. Nothing is shown when
    ``progress`` is False (library calls, tests). ``first_line``: without a terminal, the first
    line (with its estimate of the time left) comes after this many units instead of ~10%."""

    def __init__(self, total: int, unit: str, progress: bool = True, first_line: int | None = None):
        self.total, self.unit, self.done, self.started = total, unit, 0, time.perf_counter()
        self.enabled = progress and total > 0
        self.bar = tqdm(total=total, desc=unit, unit=unit[:2]) if self.enabled and sys.stderr.isatty() else None
        self.next_line = max(1, first_line if first_line is not None else total // 10)

    def advance(self, count: int) -> None:
        self.done += count
        if self.bar is not None:
            self.bar.update(count)
        elif self.enabled and (self.done >= self.next_line or self.done == self.total):
            seconds = time.perf_counter() - self.started
            left = seconds / self.done * (self.total - self.done)
            print(f"{self.unit} {self.done}/{self.total} ({100 * self.done / self.total:.0f}%), {seconds:.0f}s, "
                  f"~{left:.0f}s left", file=sys.stderr, flush=True)
            self.next_line = self.done + max(1, self.total // 10)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
