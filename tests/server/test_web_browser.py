"""The web view in a real browser: Debian's headless Chromium, driven by selenium through chromedriver.

A real `memdir serve --http` process (token required) is filled over MCP, then the browser logs
in with ``/?token=`` (the cookie carries it from then on), browses, searches, opens an entry
with its link picture, the health report and the episodes. An entry full of script tries to
run in the page and must not. A screenshot of each page is kept (the directory is printed;
``MEMDIR_TEST_ARTIFACTS`` chooses it, default ``test-artifacts/`` in the project).

Chromium missing skips these tests with one line saying what to install, except in CI
(``CI=true``: `.ci/run` installs ``chromium`` and ``chromium-driver``), where it fails them; a
Chromium that is there but cannot start always fails them, with the reason.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import anyio
import pytest

from memdir.server.tokens import TokenFile
from tests.prerequisites import missing_prerequisite
from tests.server.http_process import mcp_client, running_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
HOSTILE = (
    "# Hostile entry\n\n<script>window.pwned = 1</script>\n\n<img src=x onerror=\"window.pwned = 2\">\n\n"
    "[click me](javascript:window.pwned=3)\n\nA **bold** claim about deployments.\n"
)
ENTRIES = [
    {"file_path": "concept/deploy/pipeline.md", "title": "Deploy pipeline", "type": "concept", "domain": "ops",
     "content": "# Pipeline\n\nThe **deploy** pipeline builds, tests and ships.\n\n- build\n- test\n- ship\n",
     "tags": ["deploy", "ci"], "related": ["fact/deploy/targets.md", "skill/deploy/rollback.md", "fact/deploy/gone.md"]},
    {"file_path": "fact/deploy/targets.md", "title": "Deploy targets", "type": "fact", "domain": "ops",
     "content": "Deploy targets are staging and production.", "tags": ["deploy"], "related": ["concept/deploy/pipeline.md"]},
    {"file_path": "skill/deploy/rollback.md", "title": "Rollback a deploy", "type": "skill", "domain": "ops",
     "content": "1. Stop the deploy.\n2. Revert the release.", "tags": ["deploy"], "related": []},
    {"file_path": "experience/deploy/hostile.md", "title": "<script>window.pwned=4</script>", "type": "experience",
     "domain": "ops", "content": HOSTILE, "tags": ["<b>tag</b>"], "related": ["concept/deploy/pipeline.md"]},
]


@pytest.fixture(scope="module")
def artifacts() -> Path:
    folder = Path(os.environ.get("MEMDIR_TEST_ARTIFACTS", PROJECT / "test-artifacts")) / "web-view"
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nweb view screenshots: {folder}")
    return folder


def start_chromium():
    """Headless Chromium through chromedriver, with a fresh profile; fails the test clearly when it cannot start."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:
        missing_prerequisite(f"selenium is not installed ({exc}): pip install -e '.[test]'")
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not Path(binary).exists():
            missing_prerequisite(f"{binary} is missing: apt-get install -y chromium chromium-driver (as .ci/run does)")
    profile = tempfile.mkdtemp(prefix="memdir-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", "--window-size=1200,1000",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    try:
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    except Exception as exc:
        shutil.rmtree(profile, ignore_errors=True)
        pytest.fail(f"Chromium could not start through {CHROMEDRIVER}: {type(exc).__name__}: {exc}")
    driver.set_page_load_timeout(60)
    return driver, profile


@pytest.fixture
def browser():
    driver, profile = start_chromium()
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def served(tmp_path):
    token = TokenFile(tmp_path / "http-tokens.json").create("viewer")
    with running_server(["--mode", "researcher"], cwd=tmp_path) as server:
        async def fill():
            async with mcp_client(server.url, token) as client:
                for entry in ENTRIES:
                    result = await client.call_tool("MemoryWrite", entry)
                    assert not result.is_error, result.content[0].text
                episode = {"name": "Fix the flaky deploy test", "outcome": "success", "tags": ["deploy", "pytest"],
                           "summary": "The deploy test raced the release job; it now waits for the job to finish."}
                assert not (await client.call_tool("EpisodeRecord", episode)).is_error

        anyio.run(fill)
        yield server, token


def test_the_web_view_in_a_real_browser(served, browser, artifacts):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    server, token = served

    def shot(name: str) -> None:
        assert browser.save_screenshot(str(artifacts / f"{name}.png")), name

    browser.get(server.base + "/")  # no token yet
    assert "needs a token" in browser.find_element(By.TAG_NAME, "body").text

    browser.get(f"{server.base}/?token={token}")  # once: the cookie keeps it, the address drops it
    assert browser.current_url == server.base + "/"
    cookie = browser.get_cookie("memdir_token")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    rows = browser.find_elements(By.CSS_SELECTOR, "#entries tbody tr")
    paths = [row.find_element(By.CLASS_NAME, "path").text for row in rows]
    assert "concept/deploy/pipeline.md" in paths and "experience/deploy/hostile.md" in paths
    shot("entries")

    search = browser.find_element(By.NAME, "q")
    search.send_keys("deploy targets\n")
    # Enter starts the form's navigation and returns before it is done: wait for the results page.
    WebDriverWait(browser, 10).until(lambda driver: "/search?q=" in driver.current_url)
    assert "/search?q=deploy+targets" in browser.current_url
    first = browser.find_element(By.CSS_SELECTOR, "#results tbody tr")
    assert "fact/deploy/targets.md" in first.text
    header = browser.find_element(By.CSS_SELECTOR, "#results thead").text
    for signal in ("Score", "Semantic", "BM25", "Keyword", "Tag", "Relevance"):
        assert signal in header
    shot("search")

    browser.get(server.base + "/entry/concept/deploy/pipeline.md")
    content = browser.find_element(By.ID, "content")
    assert content.find_element(By.TAG_NAME, "strong").text == "deploy"  # markdown rendered
    assert len(content.find_elements(By.TAG_NAME, "li")) == 3
    metadata = browser.find_element(By.ID, "metadata").text
    assert "tags deploy, ci" in metadata
    picture = browser.find_element(By.CSS_SELECTOR, "#neighbourhood svg")
    titles = {node.get_attribute("textContent").strip() for node in picture.find_elements(By.CSS_SELECTOR, "a.node title")}
    assert {"fact/deploy/targets.md", "skill/deploy/rollback.md", "experience/deploy/hostile.md",
            "fact/deploy/gone.md (no such entry)"} <= titles
    assert len(picture.find_elements(By.CSS_SELECTOR, "line.edge")) == 5
    assert picture.size["width"] > 300 and picture.size["height"] > 200  # drawn, not collapsed
    shot("entry-with-links")
    assert picture.screenshot(str(artifacts / "link-neighbourhood.png"))

    browser.get(server.base + "/entry/experience/deploy/hostile.md")  # nothing the entry holds runs
    assert browser.execute_script("return window.pwned === undefined")
    content = browser.find_element(By.ID, "content")
    assert "<script>window.pwned = 1</script>" in content.text  # shown as text
    assert not content.find_elements(By.TAG_NAME, "script") and not content.find_elements(By.TAG_NAME, "img")
    assert not browser.find_elements(By.CSS_SELECTOR, "#content a[href^='javascript']")
    assert browser.find_element(By.TAG_NAME, "h1").text == "<script>window.pwned=4</script>"
    shot("hostile-entry")

    browser.get(server.base + "/health")
    assert browser.find_element(By.ID, "health-score").text.endswith("/100")
    assert "Dangling Links" in browser.find_element(By.ID, "report").text  # fact/deploy/gone.md
    shot("health")

    browser.get(server.base + "/episodes")
    episodes = browser.find_element(By.ID, "episodes").text
    assert "Fix the flaky deploy test" in episodes and "success" in episodes
    shot("episodes")

    for name in ("entries", "search", "entry-with-links", "link-neighbourhood", "hostile-entry", "health", "episodes"):
        assert (artifacts / f"{name}.png").stat().st_size > 5_000
