"""``zoo demo``: the page's calls over HTTP, and the page itself in a real headless Chromium.

The browser test needs ``selenium`` (the dev extra) and Debian's ``chromium`` and
``chromium-driver`` (``.ci/run`` installs them with apt-get where it can); it is skipped,
saying why, where they are missing.
"""

import base64
import io
import json
import shutil
import threading
import urllib.error
import urllib.request

import pytest
from PIL import Image

from zoo.cli import build_parser
from zoo.loading import load_policies
from zoo.light.environment import authored_world
from zoo.play.demo import MAX_BODY_BYTES, Demo, make_server
from zoo.play.light_partner import load_partner


@pytest.fixture(scope="module")
def demo_url(play_corpus, play_cache):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ZOO_CACHE", str(play_cache))
        partner, details = load_partner(corpus=[str(play_corpus)], index_limit=200, progress=False)
    demo = Demo(partner, details, load_policies(("blocks-bandit",)), "blocks-bandit", authored_world())
    server = make_server(demo, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()
    demo.close()


def post(url: str, body) -> tuple[int, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.slow
def test_the_page_calls_play_the_same_games_as_the_terminal(demo_url):
    with urllib.request.urlopen(demo_url + "/") as response:
        assert response.status == 200 and b"LIGHT room" in response.read()
    status, room = post(demo_url + "/api/light/new", {"room": "Village graveyard", "seed": 3})
    assert status == 200 and room["panel"].startswith("== Village graveyard (Graveyard) ==") and room["seed"] == 3
    drawn = [post(demo_url + "/api/light/new", {"room": "random"})[1] for _ in range(3)]
    assert len({game["seed"] for game in drawn}) > 1  # no seed sent: a fresh one each time, returned
    _, again = post(demo_url + "/api/light/new", {"room": "random", "seed": drawn[0]["seed"]})
    assert again["panel"] == drawn[0]["panel"]  # the returned seed replays the room
    status, turn = post(demo_url + "/api/light/say", {"game": room["game"], "line": "/do get gravestone"})
    assert "You can't do that: the gravestone cannot be picked up." in turn["output"]
    status, turn = post(demo_url + "/api/light/say", {"game": room["game"], "line": "Good evening."})
    assert f'{room["partner"]}: "' in turn["output"] and turn["dialogue"][0] == f"you ({room['you']}): Good evening."

    status, board = post(demo_url + "/api/blocks/new", {"board": "procedural:4"})
    assert status == 200 and board["picture"].startswith("data:image/png;base64,")
    status, run = post(demo_url + "/api/blocks/instruct", {"game": board["game"], "instruction": board["own_instruction"]})
    gif = Image.open(io.BytesIO(base64.b64decode(run["animation"].split(",", 1)[1])))
    assert gif.format == "GIF" and gif.n_frames == len(run["moves"]) + 1
    assert run["error_before"] == board["error"]


@pytest.mark.slow
@pytest.mark.parametrize("path, body, message", [
    ("/api/light/new", {"room": "Moon base"}, "no room named 'Moon base'"),
    ("/api/light/new", {"seed": "x"}, "the seed must be a whole number"),
    ("/api/light/say", {"game": "nope", "line": "hi"}, "no LIGHT game 'nope'"),
    ("/api/blocks/new", {"board": "dev:x"}, "the example index must be a whole number"),
    ("/api/blocks/instruct", {"game": "nope", "instruction": "x"}, "no Blocks game 'nope'"),
    ("/api/light/new", b"[1, 2]", "expected a JSON object"),
    ("/api/light/new", b"{not json", "Expecting property name"),
    ("/api/light/new", b" " * (MAX_BODY_BYTES + 1), "request body over"),
    ("/api/nothing", {}, "no call /api/nothing"),
])
def test_bad_calls_get_a_clear_error_not_a_traceback(demo_url, path, body, message):
    status, reply = post(demo_url + path, body)
    assert status in (400, 404) and message in reply["error"]


def test_the_demo_serves_this_machine_only_unless_told():
    assert build_parser().parse_args(["demo"]).host == "127.0.0.1"


CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run")


@pytest.mark.slow
def test_a_person_plays_both_games_in_a_real_browser(demo_url, tmp_path):
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.skip("Debian's chromium and chromium-driver are not installed")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS + (f"--user-data-dir={tmp_path / 'profile'}",):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=webdriver.ChromeService(executable_path=driver), options=options)
    wait = WebDriverWait(browser, 60)
    try:
        browser.get(demo_url + "/")
        wait.until(lambda b: b.find_element(By.ID, "light-panel").text.startswith("=="))   # the page loaded a room
        room = browser.find_element(By.ID, "light-room")
        room.clear()
        room.send_keys("Village graveyard")
        browser.find_element(By.CSS_SELECTOR, "#light-new button").click()
        wait.until(lambda b: "Village graveyard" in b.find_element(By.ID, "light-panel").text)
        panel = browser.find_element(By.ID, "light-panel").text
        assert "Your persona:" in panel and "Who is here:" in panel
        partner = panel.split("Who is here: ")[1].split(" (your partner)")[0].split(", ")[-1].removeprefix("the ")

        browser.find_element(By.ID, "light-line").send_keys("Good evening. The mist is thick tonight.")
        browser.find_element(By.ID, "light-send").click()
        reply = wait.until(lambda b: [row.text for row in b.find_elements(By.CSS_SELECTOR, "#light-log .partner")
                                      if row.text.startswith(f'{partner}: "')])
        assert len(reply[0]) > len(partner) + 4                       # the partner said something

        wait.until(lambda b: (b.find_element(By.ID, "blocks-picture").get_attribute("src") or "")
                   .startswith("data:image/png"))                      # the start board is shown
        own = browser.find_element(By.ID, "blocks-own").text
        browser.find_element(By.ID, "blocks-instruction").send_keys(own)
        browser.find_element(By.ID, "blocks-run").click()
        wait.until(lambda b: (b.find_element(By.ID, "blocks-animation").get_attribute("src") or "")
                   .startswith("data:image/gif"))                      # the execution is shown
        assert "error" in browser.find_element(By.ID, "blocks-result").text
        assert not browser.find_element(By.ID, "light-error").text and not browser.find_element(By.ID, "blocks-error").text
    finally:
        browser.quit()
