"""``zoo play light`` played through a pseudo-terminal, as a person plays it.

No LIGHT data is visible to the game (``$ZOO_DATA_DIR`` points at an empty directory), so it
falls back to the authored world shipped with zoo, as on a fresh machine.
"""

import os
import re
import sys

import pytest

from tests.conftest import REPO

pexpect = pytest.importorskip("pexpect")

PROMPT = "you> "


@pytest.mark.slow
def test_a_person_talks_acts_is_refused_and_quits(play_corpus, play_cache, tmp_path):
    env = {**os.environ, "ZOO_CACHE": str(play_cache), "ZOO_DATA_DIR": str(tmp_path), "OMP_NUM_THREADS": "1",
           "PYTHONIOENCODING": "utf-8"}
    child = pexpect.spawn(sys.executable, ["-m", "zoo.cli", "play", "light", "--room", "village graveyard",
                                           "--as", "gravedigger", "--partner", "priest", "--seed", "3",
                                           "--corpus", str(play_corpus), "--index-limit", "200"],
                          cwd=str(REPO), env=env, encoding="utf-8", timeout=120, dimensions=(60, 140))
    try:
        child.expect_exact(PROMPT)
        opening = child.before
        assert "== Village graveyard (Graveyard) ==" in opening           # the setting's name
        assert "Crooked gravestones lean in the long grass" in opening     # ... and description
        assert "You are the gravedigger. Your persona:" in opening
        assert "I dig graves for the living to fill." in opening          # the persona itself
        assert "Who is here: the gravedigger (you), the priest (your partner)" in opening
        assert "Objects here: a gravestone, a bouquet of lilies, a skull" in opening
        assert "the priest carries a holy water; wears a wooden cross" in opening

        child.sendline("Good evening, father. The dead are restless tonight.")
        child.expect(r'priest: "([^"\r\n]+)"')
        assert child.match.group(1).strip()                               # the partner replied
        child.expect_exact(PROMPT)

        child.sendline("/do get skull")
        child.expect_exact("You get the skull.")
        child.expect_exact("(world: the skull: here -> carried by the gravedigger (you))")
        child.expect(r'priest: "([^"\r\n]+)"')
        child.expect_exact(PROMPT)

        child.sendline("/do get gravestone")
        child.expect_exact("You can't do that: the gravestone cannot be picked up.")
        child.expect_exact(PROMPT)
        assert "priest:" not in child.before                              # a refusal costs no turn

        child.sendline("/look")
        child.expect_exact(PROMPT)
        look = child.before
        objects_here = re.search(r"Objects here: (.*)", look).group(1)
        assert "skull" not in objects_here                                # the world changed ...
        assert re.search(r"the (gravedigger \(you\)|priest) carries[^\r\n]*a skull", look)  # ... someone holds it
        assert "you (gravedigger): Good evening, father." in look          # the dialogue so far

        child.sendline("/quit")
        child.expect_exact("Goodbye.")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before
