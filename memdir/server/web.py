"""The web view `memdir serve --http` serves beside the MCP endpoint, from the same memory.

Pages: the entries (by folder, type and tag, by path or most recently changed), one entry (its
markdown rendered, its metadata, its links both ways as a list and a picture), its audit trail,
its edit form, search (each result with the line that matched best, results below a relevance
floor left out, the score breakdown folded away), health (and, one page per defrag action, what
it would do, with a button that does it), the working-memory threads (each with its strategy and the context window it assembles)
and the recent episodes. Reads run on the memory's read pool (`MemoryHost.run(read_only=True)`)
through `memdir.server.web_browse`; changes (edit, delete, unarchive, a defrag action) on its writer
thread through `memdir.tools.curate`, acting as the client whose token the browser holds, so
ownership, role views, read-before-edit and the audit trail are those of the MCP tools.
``--read-only`` (or the read-only ``retrieval`` mode) shows no form and refuses every change.

Nothing an entry holds can run in the browser: templates escape every value (Jinja2
autoescape), markdown is rendered with raw HTML off and markdown-it's link check (no
``javascript:`` links), and every page carries a Content-Security-Policy that allows no script
at all (the page needs none: folding is ``<details>``). Forms post only to this server
(``form-action 'self'``) and carry a CSRF token (`memdir.server.web_forms`). The token check is
`memdir.server.http_guard`'s, as for the MCP endpoint.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from memdir.core.errors import (
    EntryNotFoundError,
    InputValidationError,
    MemdirError,
    NotOwnerError,
    ReadOnlyEntryError,
    StaleEditError,
    ThreadNotFoundError,
)
from memdir.server import web_browse as browse
from memdir.server.state import HTTP_CLIENT
from memdir.server.web_forms import FIELD, FormRefused, Forms
from memdir.server.web_graph import layout
from memdir.tools import curate

if TYPE_CHECKING:
    from memdir.core.settings import Settings
    from memdir.server.app import MemdirServer

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
                               "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # (no-referrer would make form posts send Origin: null)
    "Cache-Control": "no-store",
}
EPISODES_SHOWN = 30
THREAD_BUDGET = 2000
"""Tokens of the context window a thread's page shows unless the page asks for another budget."""
DONE = {"edited": "Saved.", "deleted": "Deleted.", "unarchived": "Back in search and discovery."}
"""What a change that redirects says on the page it lands on (``?done=``)."""
STATUS = {EntryNotFoundError: 404, ThreadNotFoundError: 404, InputValidationError: 400, NotOwnerError: 403,
          ReadOnlyEntryError: 403, StaleEditError: 409}
WEB_HINTS: dict[type[MemdirError], str] = {StaleEditError: "Someone changed it after you opened the page: open it again, then make your change.",
                                              EntryNotFoundError: "Search for it, or browse the entries.",
                                              ThreadNotFoundError: "The threads page lists the threads there are."}
"""Hints said in the web view's words where the error's own speaks to an MCP client."""


def entry_url(path: str) -> str:
    return "/entry/" + quote(path)


def _templates() -> Environment:
    environment = Environment(loader=PackageLoader("memdir.server", "templates"),
                              autoescape=select_autoescape(["html", "svg"]), trim_blocks=True, lstrip_blocks=True)
    environment.globals.update(entry_url=entry_url, quote=quote, urlencode=urlencode)
    return environment


def _markdown() -> MarkdownIt:
    """CommonMark plus tables; raw HTML in an entry is shown as text, never passed through."""
    return MarkdownIt("commonmark", {"html": False}).enable("table")


class WebView:
    """The pages and the changes, on the running server's memory."""

    def __init__(self, server: MemdirServer, settings: Settings) -> None:
        self.server, self.settings = server, settings
        self.templates, self.markdown = _templates(), _markdown()
        self.forms = Forms()
        self.read_only = settings.server.web_read_only or settings.server.mode == "retrieval"

    def render(self, template: str, status: int = 200, **values: Any) -> HTMLResponse:
        client = HTTP_CLIENT.get()
        html = self.templates.get_template(template).render(
            read_only=self.read_only, csrf_field=FIELD, csrf=self.forms.token(),
            who=None if client is None else client.name, role=(client.role if client else None) or self.settings.roles.role,
            **values)
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)

    def markdown_html(self, text: str) -> Markup:
        return Markup(self.markdown.render(text))  # noqa: S704 - raw HTML is off: markdown-it escapes it

    def _host(self) -> Any:
        state = self.server.app_state
        if state is None:
            raise MemdirError("The server is still starting.", "Reload the page in a moment.")
        return state.host

    async def read(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await self._host().run(fn, *args, read_only=True, **kwargs)

    async def change(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn`` on the writer thread, acting as this client (after `form` checked the request)."""
        return await self._host().run(fn, *args, **kwargs)

    async def form(self, request: Request) -> dict[str, str]:
        """The posted form of a change, when this web view makes changes and the form is one of its own."""
        if self.read_only:
            raise FormRefused("This web view is read-only.", "It was started with --read-only (or in the retrieval "
                              "mode); change memory through an agent, or restart `memdir serve --http` without it.", 403)
        limit = self.settings.storage.max_entry_size * 3 + 65_536  # percent-encoding triples a byte at most (ASCII)
        return await self.forms.read(request, limit)

    def page(self, handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        """``handler`` with memdir's errors shown as a page with the fitting status."""

        async def guarded(request: Request) -> Response:
            try:
                return await handler(request)
            except FormRefused as exc:
                return self.render("error.html", exc.status, message=exc.message, hint=exc.hint)
            except MemdirError as exc:
                kind = next((kind for kind in STATUS if isinstance(exc, kind)), None)
                hint = WEB_HINTS.get(type(exc), exc.hint)
                return self.render("error.html", STATUS.get(kind, 503) if kind else 503, message=exc.message, hint=hint)

        return guarded

    # ------------------------------------------------------------------ pages
    async def entries(self, request: Request) -> Response:
        query = request.query_params
        listing = await self.read(browse.list_entries, query.get("folder") or None, _number(request, "page"),
                                  self.settings.server.web_page_size, type=query.get("type") or None,
                                  tag=query.get("tag") or None, sort=query.get("sort") or "path")
        return self.render("entries.html", listing=listing, done=DONE.get(query.get("done", "")))

    async def entry(self, request: Request) -> Response:
        path = request.path_params["path"]
        entry = await self.read(browse.read_entry, path)
        graph = await self.read(browse.neighbourhood, entry.path)
        return self.render("entry.html", entry=entry, content_html=self.markdown_html(entry.content),
                           picture=layout(graph), version=curate.content_version(entry.content),
                           done=DONE.get(request.query_params.get("done", "")))

    async def edit_form(self, request: Request) -> Response:
        entry = await self.read(browse.read_entry, request.path_params["path"])
        return self.render("edit.html", entry=entry, version=curate.content_version(entry.content),
                           tags=", ".join(entry.metadata.get("tags", [])))

    async def audit(self, request: Request) -> Response:
        path = request.path_params["path"]
        records = await self.read(browse.audit_trail, path)
        return self.render("audit.html", path=path, records=records)

    async def search(self, request: Request) -> Response:
        query = request.query_params.get("q", "").strip()
        floor = _fraction(request, "floor")
        results = await self.read(browse.search_entries, query, floor) if query else None
        return self.render("search.html", query=query, results=results)

    async def health(self, request: Request) -> Response:
        stats, report = await self.read(browse.health)
        return self.render("health.html", stats=stats, report_html=self.markdown_html(report), actions=_defrag_actions())

    async def defrag_preview(self, request: Request) -> Response:
        action = request.path_params["action"]
        if action not in _defrag_actions():
            raise InputValidationError(f"{action!r} is not a defrag action that changes memory; they are "
                                       f"{', '.join(_defrag_actions())}.", "Follow a link on the health page.")
        preview = await self.read(browse.defrag_preview, action, self.read_only)
        return self.render("defrag.html", action=action, report_html=self.markdown_html(preview), preview=True)

    async def threads(self, request: Request) -> Response:
        return self.render("threads.html", threads=await self.read(browse.threads))

    async def thread(self, request: Request) -> Response:
        budget = _number(request, "budget", THREAD_BUDGET)
        state, window = await self.read(browse.thread_window, request.path_params["thread"], budget)
        return self.render("thread.html", thread=request.path_params["thread"], state=state, window=window, budget=budget)

    async def episodes(self, request: Request) -> Response:
        episodes = await self.read(browse.recent_episodes, EPISODES_SHOWN)
        return self.render("episodes.html", episodes=episodes)

    # ------------------------------------------------------------------ changes (POST)
    async def edit(self, request: Request) -> Response:
        fields = await self.form(request)
        entry = await self.change(curate.edit_entry, request.path_params["path"], seen=fields.get("seen", ""),
                                  content=fields.get("content", ""), title=fields.get("title", ""),
                                  tags=fields.get("tags", ""))
        return RedirectResponse(entry_url(entry.path) + "?done=edited", status_code=303)

    async def delete(self, request: Request) -> Response:
        fields = await self.form(request)
        if fields.get("confirm") != "yes":
            raise InputValidationError("Deleting needs the box ticked.", "Tick “Yes, delete this entry”, then Delete.")
        await self.change(curate.delete_entry, request.path_params["path"], seen=fields.get("seen", ""))
        return RedirectResponse("/?done=deleted", status_code=303)

    async def unarchive(self, request: Request) -> Response:
        await self.form(request)
        entry = await self.change(curate.unarchive_entry, request.path_params["path"])
        return RedirectResponse(entry_url(entry.path) + "?done=unarchived", status_code=303)

    async def defrag(self, request: Request) -> Response:
        fields = await self.form(request)
        action = fields.get("action", "")
        report = await self.change(curate.run_defrag, action)
        return self.render("defrag.html", action=action, report_html=self.markdown_html(report), preview=False)


def _defrag_actions() -> tuple[str, ...]:
    """Defrag's actions that change memory (imported on first use: defrag's modules load numpy)."""
    from memdir.optimization.options import ACTIVE_ACTIONS

    return ACTIVE_ACTIONS


def _number(request: Request, name: str, default: int = 1) -> int:
    text = request.query_params.get(name, str(default))
    if not text.isdigit() or int(text) < 1:
        raise InputValidationError(f"{name} must be a whole number from 1, got {text!r}.", f"Use e.g. ?{name}={default}.")
    return int(text)


def _fraction(request: Request, name: str) -> float | None:
    text = request.query_params.get(name)
    if text is None or text == "":
        return None
    try:
        return float(text)
    except ValueError:
        raise InputValidationError(f"{name} must be a number from 0 to 1, got {text!r}.", f"Use e.g. ?{name}=0.25.") from None


def register(server: MemdirServer, settings: Settings) -> None:
    """Add the web view's routes to ``server``: the pages (GET) and the changes (POST)."""
    view = WebView(server, settings)
    for path, handler in (("/", view.entries), ("/entry/{path:path}", view.entry), ("/edit/{path:path}", view.edit_form),
                          ("/audit/{path:path}", view.audit), ("/search", view.search), ("/health", view.health),
                          ("/defrag/{action}", view.defrag_preview), ("/threads", view.threads),
                          ("/threads/{thread}", view.thread), ("/episodes", view.episodes)):
        server.custom_route(path, methods=["GET"])(view.page(handler))
    for path, handler in (("/edit/{path:path}", view.edit), ("/delete/{path:path}", view.delete),
                          ("/unarchive/{path:path}", view.unarchive), ("/defrag", view.defrag)):
        server.custom_route(path, methods=["POST"])(view.page(handler))


__all__ = ["SECURITY_HEADERS", "WebView", "entry_url", "register"]
