"""The read-only web view `memdir serve --http` serves beside the MCP endpoint, from the same memory.

Pages: the entries (by folder, paged), one entry (its markdown rendered, its metadata, what
links to it and a picture of its link neighbourhood), search with each result's score
breakdown, the health report, and the recent episodes. Everything is read on the memory's
read pool (`MemoryHost.run(read_only=True)`) through `memdir.server.web_browse`, so a page waits
for the writes sent before it and never for a slow grep.

Nothing an entry holds can run in the browser: templates escape every value (Jinja2
autoescape), markdown is rendered with raw HTML off and markdown-it's link check (no
``javascript:`` links), and every page carries a Content-Security-Policy that allows no
script at all. The token check is `memdir.server.http_guard`'s, as for the MCP endpoint.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from memdir.core.errors import EntryNotFoundError, InputValidationError, MemdirError
from memdir.server.web_graph import layout
from memdir.server import web_browse as browse

if TYPE_CHECKING:
    from memdir.core.settings import Settings
    from memdir.server.app import MemdirServer

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
                               "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
EPISODES_SHOWN = 30


def entry_url(path: str) -> str:
    return "/entry/" + quote(path)


def _templates() -> Environment:
    environment = Environment(loader=PackageLoader("memdir.server", "templates"),
                              autoescape=select_autoescape(["html", "svg"]), trim_blocks=True, lstrip_blocks=True)
    environment.globals["entry_url"] = entry_url
    return environment


def _markdown() -> MarkdownIt:
    """CommonMark plus tables; raw HTML in an entry is shown as text, never passed through."""
    return MarkdownIt("commonmark", {"html": False}).enable("table")


class WebView:
    """The pages, rendered from the running server's memory."""

    def __init__(self, server: MemdirServer, settings: Settings) -> None:
        self.server, self.settings = server, settings
        self.templates, self.markdown = _templates(), _markdown()

    def render(self, template: str, status: int = 200, **values: Any) -> HTMLResponse:
        html = self.templates.get_template(template).render(**values)
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)

    def markdown_html(self, text: str) -> Markup:
        return Markup(self.markdown.render(text))  # noqa: S704 - raw HTML is off: markdown-it escapes it

    async def read(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        state = self.server.app_state
        if state is None:
            raise MemdirError("The server is still starting.", "Reload the page in a moment.")
        return await state.host.run(fn, *args, read_only=True, **kwargs)

    def page(self, handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        """``handler`` with memdir's errors shown as a page (404 for a missing entry, 400 for bad input)."""

        async def guarded(request: Request) -> Response:
            try:
                return await handler(request)
            except MemdirError as exc:
                status = 404 if isinstance(exc, EntryNotFoundError) else 400 if isinstance(exc, InputValidationError) else 503
                return self.render("error.html", status, message=exc.message, hint=exc.hint)

        return guarded

    # ------------------------------------------------------------------ pages
    async def entries(self, request: Request) -> Response:
        page = _number(request, "page")
        folder = request.query_params.get("folder") or None
        listing = await self.read(browse.list_entries, folder, page, self.settings.web_page_size)
        return self.render("entries.html", listing=listing, folders=listing.folders, root=self.settings.store_root)

    async def entry(self, request: Request) -> Response:
        path = request.path_params["path"]
        entry = await self.read(browse.read_entry, path)
        graph = await self.read(browse.neighbourhood, entry.path)
        return self.render("entry.html", entry=entry, content_html=self.markdown_html(entry.content), picture=layout(graph))

    async def search(self, request: Request) -> Response:
        query = request.query_params.get("q", "").strip()
        results = await self.read(browse.search_entries, query) if query else None
        return self.render("search.html", query=query, results=results)

    async def health(self, request: Request) -> Response:
        stats, report = await self.read(browse.health)
        return self.render("health.html", stats=stats, report_html=self.markdown_html(report))

    async def episodes(self, request: Request) -> Response:
        episodes = await self.read(browse.recent_episodes, EPISODES_SHOWN)
        return self.render("episodes.html", episodes=episodes)


def _number(request: Request, name: str) -> int:
    text = request.query_params.get(name, "1")
    if not text.isdigit() or int(text) < 1:
        raise InputValidationError(f"{name} must be a whole number from 1, got {text!r}.", f"Use e.g. ?{name}=1.")
    return int(text)


def register(server: MemdirServer, settings: Settings) -> None:
    """Add the web view's routes (GET only) to ``server``."""
    view = WebView(server, settings)
    for path, handler in (("/", view.entries), ("/entry/{path:path}", view.entry), ("/search", view.search),
                          ("/health", view.health), ("/episodes", view.episodes)):
        server.custom_route(path, methods=["GET"])(view.page(handler))


__all__ = ["SECURITY_HEADERS", "WebView", "entry_url", "register"]
