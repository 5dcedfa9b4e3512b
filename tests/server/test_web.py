"""The web view's pages as HTML, without a browser: entry content is escaped, never markup or script."""

from __future__ import annotations

from types import SimpleNamespace

from memdir.core.settings import Settings
from memdir.server.http_guard import Gate
from memdir.server.tokens import TokenFile
from memdir.server.web import WebView
from memdir.server.web_graph import layout
from memdir.server import web_browse as browse

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
