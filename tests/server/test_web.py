"""The web view's pages as HTML, without a browser: entry content is escaped, never markup or script; a change
needs the page's own form (CSRF token, same origin) and a server that is not read-only."""

from __future__ import annotations

import re
from types import SimpleNamespace

import httpx2
import pytest

from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.server import web_browse as browse
from memdir.server.http_guard import Gate
from memdir.server.tokens import TokenFile
from memdir.server.web import WebView
from memdir.server.web_graph import layout
from tests.server.http_process import running_server

HOSTILE = "# Title\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n[x](javascript:alert(3))\n\n**bold**"


def test_an_entry_page_shows_markup_from_the_entry_as_text(memory, tmp_path):
    memory.write("fact/evil.md", HOSTILE, title="<b>evil</b>", metadata={"tags": ["<i>t</i>"], "related": ["fact/x.md"]})
    view = WebView(SimpleNamespace(app_state=None), Settings(root=tmp_path))
    entry = browse.read_entry(memory, "fact/evil.md")
    html = view.render("entry.html", entry=entry, content_html=view.markdown_html(entry.content),
                       picture=layout(browse.neighbourhood(memory, "fact/evil.md"))).body.decode()
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<strong>bold</strong>" in html  # markdown itself is rendered
    assert "&lt;b&gt;evil&lt;/b&gt;" in html and "&lt;i&gt;t&lt;/i&gt;" in html
    assert '<a href="javascript' not in html


def test_the_gate_accepts_this_servers_names_only(tmp_path):
    gate = Gate.for_address("127.0.0.1", TokenFile(tmp_path / "t.json"), ("memory.lan",), ("https://tools.example",))
    assert gate.host_ok("127.0.0.1:8765") and gate.host_ok("localhost:1") and gate.host_ok("[::1]:8765")
    assert gate.host_ok("memory.lan:8765") and not gate.host_ok("attacker.example:8765") and not gate.host_ok(None)
    assert gate.origin_ok(None) and gate.origin_ok("http://localhost:8765") and gate.origin_ok("https://tools.example")
    assert not gate.origin_ok("http://attacker.example") and not gate.origin_ok("null")
    assert not gate.origin_ok("file://localhost")


def _csrf(html: str) -> str:
    return re.search(r'name="csrf" value="([0-9a-f]+)"', html).group(1)


def _seen(html: str) -> str:
    return re.search(r'name="seen" value="([0-9a-f]+)"', html).group(1)


@pytest.mark.slow
@pytest.mark.parametrize("read_only", [False, True])
def test_a_change_needs_the_pages_own_form_and_a_server_that_allows_changes(tmp_path, read_only):
    token = TokenFile(tmp_path / "http-tokens.json").create("viewer")
    with Memory.open(Settings(), load_model=False) as memory:
        memory.write("fact/a.md", "Alpha.", title="A")
    with running_server(["--read-only"] if read_only else [], cwd=tmp_path) as server:
        with httpx2.Client(base_url=server.base, headers={"Authorization": f"Bearer {token}"}) as http:
            page = http.get("/edit/fact/a.md").text
            entry = http.get("/entry/fact/a.md").text
            if read_only:
                assert "<form method=\"post\"" not in page + entry and "read-only" in entry
                refused = http.post("/edit/fact/a.md", data={"csrf": "x", "seen": "x", "content": "Taken."})
                assert refused.status_code == 403 and "This web view is read-only." in refused.text
            else:
                fields = {"csrf": _csrf(page), "seen": _seen(page), "title": "A", "tags": "", "content": "Changed."}
                forged = http.post("/edit/fact/a.md", data={**fields, "csrf": "0" * 64})
                assert forged.status_code == 403 and "did not come from this web view" in forged.text
                other_site = http.post("/edit/fact/a.md", data=fields, headers={"Origin": "http://attacker.example"})
                assert other_site.status_code == 403
                assert "Alpha." in http.get("/entry/fact/a.md").text  # nothing changed so far
                done = http.post("/edit/fact/a.md", data=fields)
                assert done.status_code == 303 and done.headers["location"] == "/entry/fact/a.md?done=edited"
                assert "Changed." in http.get("/entry/fact/a.md").text
                again = http.post("/edit/fact/a.md", data={**fields, "content": "Lost update."})
                assert again.status_code == 409  # the form saw "Alpha.", the entry now says "Changed."
    with Memory.open(Settings(), load_model=False, read_only=True) as memory:
        assert memory.read("fact/a.md").content == ("Alpha." if read_only else "Changed.")
