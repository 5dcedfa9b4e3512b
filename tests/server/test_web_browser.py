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
from datetime import UTC
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


def archived_entry() -> None:
    """An archived entry, written before the server starts (archival is the evolution jobs' to do)."""
    from datetime import datetime

    from memdir.core.settings import Settings
    from memdir.memory import Memory

    with Memory.open(Settings(), load_model=False) as memory:
        memory.write("fact/deploy/old-targets.md", "Deploy targets were staging, qa and production.",
                     title="Old deploy targets", metadata={"type": "fact", "tags": ["deploy"],
                                                            "archived_at": datetime(2026, 1, 2, tzinfo=UTC)})


def architecture_episode() -> str:
    """An episode of a kind a reviewer's view leaves out (written before the server starts); its path."""
    import re

    from memdir.core.settings import Settings
    from memdir.memory import Memory
    from memdir.tools.episode_record import episode_record

    with Memory.open(Settings(), load_model=False) as memory:
        said = episode_record(memory, None, "Choose the queue design", "success",
                              "Picked a single writer queue over sharded locks.", tags=["design"])
        path = re.search(r"memory://(\S+)", said).group(1)
        memory.update_metadata(path, {"kind": "architecture"})
    return path


@pytest.fixture
def served(tmp_path):
    tokens = TokenFile(tmp_path / "http-tokens.json")
    # Tokens made for agents (a plain token would act as the server itself): what each writes is its own.
    token, other = tokens.create("viewer", agent="viewer"), tokens.create("other", agent="other")
    reviewer = tokens.create("rita", role="reviewer")
    archived_entry()
    architecture_episode()
    with running_server(["--mode", "researcher"], cwd=tmp_path) as server:
        async def fill():
            async with mcp_client(server.url, token) as client:
                for entry in [*ENTRIES, PLAN, BUG, *DUPLICATES]:
                    result = await client.call_tool("MemoryWrite", entry)
                    assert not result.is_error, result.content[0].text
                episode = {"name": "Fix the flaky deploy test", "outcome": "success", "tags": ["deploy", "pytest"],
                           "summary": "The deploy test raced the release job; it now waits for the job to finish."}
                assert not (await client.call_tool("EpisodeRecord", episode)).is_error
                for role, content in THREAD:
                    result = await client.call_tool("ThreadAppend", {"thread": "release-42", "role": role, "content": content})
                    assert not result.is_error, result.content[0].text
            async with mcp_client(server.url, other) as client:
                assert not (await client.call_tool("MemoryWrite", OTHERS)).is_error

        anyio.run(fill)
        yield server, token, reviewer, tmp_path


PLAN = {"file_path": "concept/deploy/roadmap.md", "title": "Deploy roadmap", "type": "concept", "domain": "ops",
        "content": "Blue-green deploys next quarter.", "tags": ["deploy"], "related": [], "kind": "architecture"}
BUG = {"file_path": "fact/deploy/flaky-bug.md", "title": "Flaky deploy bug", "type": "fact", "domain": "ops",
       "content": "The deploy job times out when the registry is slow.", "tags": ["deploy", "bug"], "related": [],
       "kind": "bug"}
OTHERS = {"file_path": "fact/deploy/owned.md", "title": "Another agent's note", "type": "fact", "domain": "ops",
          "content": "Only the other agent may change this.", "tags": ["deploy"], "related": []}
DUPLICATES = [{"file_path": f"fact/deploy/freeze-{n}.md", "title": "Deploy freeze", "type": "fact", "domain": "ops",
               "content": "No deploys on Fridays after noon, and none during the December freeze.", "tags": ["deploy"],
               "related": []} for n in (1, 2)]
THREAD = [("user", "Prepare release 42: bump the version and write the changelog."),
          ("assistant", "Bumped to 4.2.0; the changelog lists the deploy fixes."),
          ("user", "Now tag it and start the deploy.")]


def test_the_web_view_in_a_real_browser(served, browser, artifacts):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    server, token, reviewer, home = served

    def shot(name: str) -> None:
        assert browser.save_screenshot(str(artifacts / f"{name}.png")), name

    def body() -> str:
        return browser.find_element(By.TAG_NAME, "body").text

    def submit(form_id: str) -> None:
        old = browser.find_element(By.TAG_NAME, "html")
        browser.find_element(By.CSS_SELECTOR, f"#{form_id} button[type=submit]").click()
        WebDriverWait(browser, 60).until(lambda driver: old.id != driver.find_element(By.TAG_NAME, "html").id)

    browser.get(server.base + "/")  # no token yet
    assert "needs a token" in body()

    browser.get(f"{server.base}/?token={token}")  # once: the cookie keeps it, the address drops it
    assert browser.current_url == server.base + "/"
    cookie = browser.get_cookie("memdir_token")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert browser.find_element(By.ID, "who").text.startswith("viewer")
    rows = browser.find_elements(By.CSS_SELECTOR, "#entries tbody tr")
    paths = [row.find_element(By.CLASS_NAME, "path").text for row in rows]
    assert "concept/deploy/pipeline.md" in paths and "experience/deploy/hostile.md" in paths
    assert browser.find_element(By.ID, "count").text.startswith(f"{len(paths)} entries")
    assert str(home) not in body()  # no absolute path of the memory on the page
    shot("entries")

    browser.get(server.base + "/?type=skill")
    assert [row.find_element(By.CLASS_NAME, "path").text for row in
            browser.find_elements(By.CSS_SELECTOR, "#entries tbody tr")] == ["skill/deploy/rollback.md"]
    browser.get(server.base + "/?tag=ci")
    assert [row.find_element(By.CLASS_NAME, "path").text for row in
            browser.find_elements(By.CSS_SELECTOR, "#entries tbody tr")] == ["concept/deploy/pipeline.md"]
    browser.get(server.base + "/?sort=recent")
    recent = [row.find_element(By.CLASS_NAME, "path").text for row in browser.find_elements(By.CSS_SELECTOR, "#entries tbody tr")]
    assert recent[0].startswith("experience/episodes/") or recent[0] == "fact/deploy/owned.md"
    assert recent[-1] == "fact/deploy/old-targets.md"  # written first, dated January
    shot("entries-recent")

    search = browser.find_element(By.NAME, "q")
    search.send_keys("deploy targets\n")
    # Enter starts the form's navigation and returns before it is done: wait for the results page.
    WebDriverWait(browser, 10).until(lambda driver: "/search?q=" in driver.current_url)
    first = browser.find_element(By.CSS_SELECTOR, "#results li")
    assert "fact/deploy/targets.md" in first.text
    assert "Deploy targets are staging and production." in first.find_element(By.CLASS_NAME, "line").text
    breakdown = first.find_element(By.CSS_SELECTOR, "details.breakdown")
    assert not breakdown.find_element(By.TAG_NAME, "table").is_displayed()  # folded away
    breakdown.find_element(By.TAG_NAME, "summary").click()
    header = breakdown.find_element(By.TAG_NAME, "table").text
    for signal in ("Score", "Semantic", "BM25", "Keyword", "Tag", "Relevance"):
        assert signal in header
    assert "old-targets" not in browser.find_element(By.ID, "results").text  # archived: out of search
    shot("search")
    below = browser.find_element(By.ID, "below-floor")  # weaker matches are left out, and can be shown
    assert "weaker match" in below.text and len(browser.find_elements(By.CSS_SELECTOR, "#results li")) == 1
    below.find_element(By.TAG_NAME, "a").click()
    WebDriverWait(browser, 10).until(lambda driver: "floor=0" in driver.current_url)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#results li")) > 1 and not browser.find_elements(By.ID, "below-floor")

    browser.get(server.base + "/entry/concept/deploy/pipeline.md")
    content = browser.find_element(By.ID, "content")
    assert content.find_element(By.TAG_NAME, "strong").text == "deploy"  # markdown rendered
    assert len(content.find_elements(By.TAG_NAME, "li")) == 3
    assert "tags deploy, ci" in browser.find_element(By.ID, "metadata").text
    links = browser.find_element(By.ID, "links").text
    for line in ("links to references Deploy targets fact/deploy/targets.md",
                 "links to references fact/deploy/gone.md (no such entry)",
                 "linked from references Deploy targets fact/deploy/targets.md"):
        assert line in links, links
    picture = browser.find_element(By.CSS_SELECTOR, "#neighbourhood svg")
    titles = {node.get_attribute("textContent").strip() for node in picture.find_elements(By.CSS_SELECTOR, "a.node title")}
    assert {"fact/deploy/targets.md", "skill/deploy/rollback.md", "experience/deploy/hostile.md",
            "fact/deploy/gone.md (no such entry)"} <= titles
    assert len(picture.find_elements(By.CSS_SELECTOR, "line.edge")) == 5
    assert picture.size["width"] > 300 and picture.size["height"] > 200  # drawn, not collapsed
    shot("entry-with-links")
    browser.execute_script("arguments[0].scrollIntoView()", picture)
    assert picture.screenshot(str(artifacts / "link-neighbourhood.png"))

    # Edit: the form shows the entry; saving changes it, as this token's agent, into the audit trail.
    browser.get(server.base + "/entry/fact/deploy/targets.md")
    browser.find_element(By.ID, "edit").click()
    WebDriverWait(browser, 10).until(lambda driver: "/edit/" in driver.current_url)
    area = browser.find_element(By.NAME, "content")
    assert area.get_attribute("value") == "Deploy targets are staging and production."
    area.clear()
    area.send_keys("Deploy targets are staging, canary and production.")
    tags = browser.find_element(By.NAME, "tags")
    tags.clear()
    tags.send_keys("deploy, canary")
    shot("edit")
    submit("edit-form")
    assert browser.current_url.endswith("/entry/fact/deploy/targets.md?done=edited"), body()
    assert browser.find_element(By.ID, "done").text == "Saved."
    assert browser.find_element(By.ID, "content").text == "Deploy targets are staging, canary and production."
    assert "tags deploy, canary" in browser.find_element(By.ID, "metadata").text
    browser.find_element(By.LINK_TEXT, "History").click()
    WebDriverWait(browser, 10).until(lambda driver: "/audit/" in driver.current_url)
    history = browser.find_elements(By.CSS_SELECTOR, "#audit tbody tr")
    newest, oldest = history[0].find_elements(By.TAG_NAME, "td"), history[-1].find_elements(By.TAG_NAME, "td")
    assert (newest[1].text, newest[2].text) == ("viewer", "update") and (oldest[1].text, oldest[2].text) == ("viewer", "create")
    history[0].find_element(By.TAG_NAME, "summary").click()
    assert "+Deploy targets are staging, canary and production." in history[0].find_element(By.TAG_NAME, "pre").text
    shot("history")

    # Read-before-edit: a change made after the form was opened is not overwritten.
    browser.get(server.base + "/edit/fact/deploy/targets.md")

    async def change_meanwhile():
        async with mcp_client(server.url, token) as client:
            await client.call_tool("MemoryRead", {"file_path": "fact/deploy/targets.md"})
            result = await client.call_tool("MemoryEdit", {"file_path": "fact/deploy/targets.md",
                                                           "old_string": "canary", "new_string": "preview"})
            assert not result.is_error, result.content[0].text

    anyio.run(change_meanwhile)
    browser.find_element(By.NAME, "content").send_keys(" Stale.")
    submit("edit-form")
    assert "has changed since you last read it" in body() and "open it again" in body()
    shot("stale-edit-refused")
    browser.get(server.base + "/entry/fact/deploy/targets.md")
    assert "preview" in browser.find_element(By.ID, "content").text and "Stale" not in body()

    # Ownership: another agent's entry may be read, not changed.
    browser.get(server.base + "/edit/fact/deploy/owned.md")
    browser.find_element(By.NAME, "content").send_keys(" Taken over.")
    submit("edit-form")
    assert "belongs to other; viewer may not update it" in body()
    shot("not-owner-refused")

    # Unarchive: back into search.
    browser.get(server.base + "/entry/fact/deploy/old-targets.md")
    assert "archived" in browser.find_element(By.CLASS_NAME, "path").text
    shot("archived-entry")
    submit("unarchive")
    assert browser.find_element(By.ID, "done").text == "Back in search and discovery."
    assert not browser.find_elements(By.ID, "unarchive")

    # Delete: needs the box ticked; then the entry and the links to it are gone.
    browser.get(server.base + "/entry/skill/deploy/rollback.md")
    browser.find_element(By.CSS_SELECTOR, "#delete input[name=confirm]").click()
    submit("delete")
    assert browser.current_url.endswith("/?done=deleted") and browser.find_element(By.ID, "done").text == "Deleted."
    assert "skill/deploy/rollback.md" not in browser.find_element(By.ID, "entries").text
    browser.get(server.base + "/entry/skill/deploy/rollback.md")
    assert "not found" in body() and "Search for it, or browse the entries." in body()

    browser.get(server.base + "/entry/experience/deploy/hostile.md")  # nothing the entry holds runs
    assert browser.execute_script("return window.pwned === undefined")
    content = browser.find_element(By.ID, "content")
    assert "<script>window.pwned = 1</script>" in content.text  # shown as text
    assert not content.find_elements(By.TAG_NAME, "script") and not content.find_elements(By.TAG_NAME, "img")
    assert not browser.find_elements(By.CSS_SELECTOR, "#content a[href^='javascript']")
    assert browser.find_element(By.TAG_NAME, "h1").text == "<script>window.pwned=4</script>"
    shot("hostile-entry")

    browser.get(server.base + "/")
    listed = int(browser.find_element(By.ID, "count").text.split()[0])
    browser.get(server.base + "/health")
    assert browser.find_element(By.ID, "health-score").text.endswith("/100")
    report = browser.find_element(By.ID, "report").text
    assert "Dangling Links" in report  # fact/deploy/gone.md
    assert f"Total entries: {listed}" in report  # health and the listing count the same entries
    shot("health")
    browser.find_element(By.ID, "preview-merge_duplicates").click()
    WebDriverWait(browser, 60).until(lambda driver: "/defrag/merge_duplicates" in driver.current_url)
    preview = browser.find_element(By.ID, "report").text
    assert "fact/deploy/freeze-1.md" in preview and "nothing was changed" in preview
    assert "Press “Run merge duplicates” below to apply it." in preview  # the page's words, not the tool's
    assert "dry_run" not in preview and "--live" not in preview and "MemoryDefrag" not in preview
    shot("defrag-preview")
    submit("run")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Defrag: merge duplicates"
    assert "memory://fact/deploy/freeze-1.md's text is replaced by a redirect" in browser.find_element(By.ID, "report").text
    shot("defrag-run")
    browser.get(server.base + "/")
    assert int(browser.find_element(By.ID, "count").text.split()[0]) == listed - 1  # one of the pair is a stub now

    browser.get(server.base + "/threads")
    assert "release-42" in browser.find_element(By.ID, "threads").text
    browser.find_element(By.LINK_TEXT, "release-42").click()
    WebDriverWait(browser, 10).until(lambda driver: "/threads/release-42" in driver.current_url)
    assert "Strategy virtual" in browser.find_element(By.ID, "thread-facts").text
    assert "Now tag it and start the deploy." in browser.find_element(By.ID, "window").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#chunks tbody tr")) == 3
    shot("thread")

    browser.get(server.base + "/episodes")
    episodes = browser.find_element(By.ID, "episodes").text
    assert "Fix the flaky deploy test" in episodes and "success" in episodes
    assert "Choose the queue design" in episodes
    shot("episodes")

    # A reviewer's token: the listing and search keep to the reviewer's view, as over MCP.
    browser.delete_all_cookies()
    browser.get(f"{server.base}/?token={reviewer}")
    listed = browser.find_element(By.ID, "entries").text
    assert "fact/deploy/flaky-bug.md" in listed and "concept/deploy/roadmap.md" not in listed
    assert "reviewer view" in browser.find_element(By.ID, "who").text
    browser.get(server.base + "/search?q=deploy+roadmap+blue-green+flaky+bug&floor=0")
    found = [item.find_element(By.CLASS_NAME, "path").text for item in browser.find_elements(By.CSS_SELECTOR, "#results li")]
    assert "fact/deploy/flaky-bug.md" in found and "concept/deploy/roadmap.md" not in found
    shot("reviewer-view")
    browser.get(server.base + "/episodes")  # episodes too, in the page and over MCP
    episodes = browser.find_element(By.ID, "episodes").text
    assert "Fix the flaky deploy test" in episodes and "Choose the queue design" not in episodes
    shot("reviewer-episodes")

    async def reviewer_episodes() -> str:
        async with mcp_client(server.url, reviewer) as client:
            result = await client.call_tool("EpisodeList", {})
            assert not result.is_error, result.content[0].text
            return result.content[0].text

    listed = anyio.run(reviewer_episodes)
    assert "Fix the flaky deploy test" in listed and "Choose the queue design" not in listed

    for name in ("entries", "entries-recent", "search", "entry-with-links", "link-neighbourhood", "edit", "history",
                 "stale-edit-refused", "not-owner-refused", "archived-entry", "hostile-entry", "health", "defrag-preview",
                 "defrag-run",
                 "thread", "episodes", "reviewer-view", "reviewer-episodes"):
        assert (artifacts / f"{name}.png").stat().st_size > 5_000


POST_FORMS = "form[method=post], form[method=POST]"


def test_the_read_only_web_view_in_a_real_browser(tmp_path, browser, artifacts):
    """``--read-only``: every page shows without a form that changes memory, and a change posted
    anyway (a form the page never offered, made in the page) is refused with 403, changing nothing."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    from memdir.core.settings import Settings
    from memdir.memory import Memory

    token = TokenFile(tmp_path / "http-tokens.json").create("viewer", agent="viewer")
    archived_entry()
    episode = architecture_episode()
    with Memory.open(Settings(), load_model=False) as memory:
        for entry in [*ENTRIES[:3], *DUPLICATES]:
            memory.write(entry["file_path"], entry["content"], title=entry["title"],
                         metadata={"type": entry["type"], "tags": entry["tags"], "related": entry["related"]})
    with running_server(["--read-only"], cwd=tmp_path) as server:
        browser.get(f"{server.base}/?token={token}")
        pages = {"read-only-entries": "/", "read-only-entry": "/entry/concept/deploy/pipeline.md",
                 "read-only-archived": "/entry/fact/deploy/old-targets.md", "read-only-edit": "/edit/fact/deploy/targets.md",
                 "read-only-history": "/audit/fact/deploy/targets.md", "read-only-search": "/search?q=deploy&floor=0",
                 "read-only-health": "/health", "read-only-defrag": "/defrag/merge_duplicates",
                 "read-only-threads": "/threads", "read-only-episodes": "/episodes", "read-only-episode": f"/entry/{episode}"}
        for name, page in pages.items():
            browser.get(server.base + page)
            text = browser.find_element(By.TAG_NAME, "body").text
            assert "needs a token" not in text and "not found" not in text, (page, text)
            assert not browser.find_elements(By.CSS_SELECTOR, POST_FORMS), page
            assert browser.save_screenshot(str(artifacts / f"{name}.png")), name
        browser.get(server.base + "/defrag/merge_duplicates")
        preview = browser.find_element(By.ID, "report").text
        assert "fact/deploy/freeze-1.md" in preview and "memdir defrag --action merge_duplicates --live" in preview
        assert "Press" not in preview and not browser.find_elements(By.ID, "run")

        browser.get(server.base + "/entry/fact/deploy/targets.md")
        browser.execute_script("""
            const form = document.createElement("form");
            form.method = "post";
            form.action = "/edit/fact/deploy/targets.md";
            for (const [name, value] of [["content", "Taken over."], ["title", "T"], ["seen", "x"], ["csrf", "x"]]) {
                const field = document.createElement("input");
                field.name = name;
                field.value = value;
                form.appendChild(field);
            }
            document.body.appendChild(form);
            form.submit();""")
        WebDriverWait(browser, 30).until(lambda driver: "/edit/" in driver.current_url)
        assert "This web view is read-only." in browser.find_element(By.TAG_NAME, "body").text
        status = browser.execute_script("return performance.getEntriesByType('navigation')[0].responseStatus")
        assert status == 403
        assert browser.save_screenshot(str(artifacts / "read-only-refused.png"))
    with Memory.open(Settings(), load_model=False, read_only=True) as memory:
        assert memory.read("fact/deploy/targets.md").content == ENTRIES[1]["content"]
    for name in [*pages, "read-only-refused"]:
        assert (artifacts / f"{name}.png").stat().st_size > 5_000
