"""The gate in front of `memdir serve --http`: Host and Origin allow-lists, then the bearer token.

Every request passes here before it reaches the MCP transport or the web view:

1. ``Host`` must name this server: a loopback name, the address it listens on, or one of
   ``http_allowed_hosts``. A page on another site whose name was re-pointed at 127.0.0.1
   (DNS rebinding) sends its own name as Host, and is refused (403).
2. ``Origin``, when a browser sends one, must be ``http(s)://`` one of those hosts or one of
   ``http_allowed_origins`` (403 otherwise): another site's script cannot call the server.
3. The token: ``Authorization: Bearer <token>``; the web view also takes the
   ``memdir_token`` cookie, which ``/?token=<token>`` sets once (HttpOnly, SameSite=Strict)
   before redirecting to the same page without the token in its address. No token, or one
   that is not (or no longer) in the token file: 401. The MCP endpoint never takes the
   cookie, so a page the user opens cannot spend it there.

A token is always required, on every address: with no token configured (the last one
revoked while the server runs) every request is refused, the server never falls open.
(`memdir.server.http` creates a first token when it starts without any.)

A request that passes carries the token's name as its user (``scope["user"]``, the SDK's
`AuthenticatedUser`), with the role and agent the token gives as scopes: the SDK binds each
MCP session to the token that opened it, so another token cannot take over a session id it
learnt.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode, urlsplit

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from memdir.server.state import HTTP_CLIENT
from memdir.server.tokens import HttpClient, TokenFile

log = logging.getLogger(__name__)

COOKIE = "memdir_token"
MCP_PATH = "/mcp"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
REFUSED = -32001
"""JSON-RPC error code of a refused MCP request (the implementation-defined server-error range)."""


def _hostname(value: str) -> str:
    """The name in a Host header or origin's netloc, without the port (IPv6 without brackets), lower case."""
    if value.startswith("["):
        return value[1:].partition("]")[0].lower()
    return value.rpartition(":")[0].lower() if value.count(":") == 1 else value.lower()


@dataclass(frozen=True)
class Gate:
    """Who may talk to the server: accepted Host names, extra Origins, and the tokens."""

    hosts: frozenset[str]
    origins: frozenset[str]
    tokens: TokenFile

    @classmethod
    def for_address(cls, host: str, tokens: TokenFile, extra_hosts: tuple[str, ...] = (),
                    extra_origins: tuple[str, ...] = ()) -> Gate:
        """The gate of a server listening on ``host``: loopback names, ``host`` itself (unless a wildcard), extras."""
        names = set(LOOPBACK_NAMES) | {name.lower().strip("[]") for name in extra_hosts}
        if host not in ("0.0.0.0", "::", ""):
            names.add(host.lower().strip("[]"))
        return cls(frozenset(names), frozenset(o.rstrip("/") for o in extra_origins), tokens)

    def host_ok(self, host: str | None) -> bool:
        return host is not None and bool(host) and _hostname(host) in self.hosts

    def origin_ok(self, origin: str | None) -> bool:
        if origin is None:  # not a browser's cross-site request (CLI clients, same-origin navigations)
            return True
        if origin.rstrip("/") in self.origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and _hostname(parts.netloc) in self.hosts


class GuardMiddleware:
    """ASGI middleware applying a `Gate` to every HTTP request (each refusal is logged with its reason)."""

    def __init__(self, app: ASGIApp, gate: Gate) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        response = self._check(scope)
        if response is not None:
            await response(scope, receive, send)
            return
        user = scope.get("user")
        client = HTTP_CLIENT.set(_client(user) if isinstance(user, AuthenticatedUser) else None)
        try:
            await self.app(scope, receive, send)
        finally:
            HTTP_CLIENT.reset(client)

    def _refuse(self, scope: Scope, reason: str, status: int, text: str) -> Response:
        """The refusal: a JSON-RPC error on the MCP endpoint (MCP clients show its message), else plain text."""
        log.warning("memdir http: refused a request (%s)", reason)
        headers = {"WWW-Authenticate": 'Bearer realm="memdir"'} if status == 401 else None
        if _is_mcp(scope):
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": REFUSED, "message": text}}
            return JSONResponse(error, status_code=status, headers=headers)
        return PlainTextResponse(text + "\n", status_code=status, headers=headers)

    def _check(self, scope: Scope) -> Response | None:
        """None when the request may go on (``scope["user"]`` set when a token was checked), else the refusal."""
        headers = Headers(scope=scope)
        host = headers.get("host")
        if not self.gate.host_ok(host):
            return self._refuse(scope, "host", 403, f"Host {host!r} is not one this memdir server answers to. "
                                "Use its address, or add the name to http_allowed_hosts (MEMDIR_HTTP_ALLOWED_HOSTS).")
        origin = headers.get("origin")
        if not self.gate.origin_ok(origin):
            return self._refuse(scope, "origin", 403, f"Origin {origin!r} may not call this memdir server. "
                                "Add it to http_allowed_origins (MEMDIR_HTTP_ALLOWED_ORIGINS) if it should.")
        is_mcp = _is_mcp(scope)
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        given, source = _bearer(headers), "header"
        if given is None and not is_mcp:
            if "token" in query:
                given, source = query["token"], "query"
            else:
                given, source = _cookie(headers), "cookie"
        if given is None:
            hint = ("Send `Authorization: Bearer <token>` (`memdir token create NAME` makes one)." if is_mcp else
                    "Open this page once as /?token=<token> (`memdir token create NAME` makes one).")
            return self._refuse(scope, "missing token", 401, f"This memdir server needs a token. {hint}")
        client = self.gate.tokens.client_of(given)
        if client is None:
            return self._refuse(scope, "bad token", 401, "That token is not valid (mistyped, or revoked). "
                                "`memdir token list` shows the tokens; `memdir token create NAME` makes a new one.")
        if source == "query":  # keep it in a cookie, and out of the address bar and history
            rest = urlencode([(key, value) for key, value in query.items() if key != "token"])
            response = RedirectResponse(scope["path"] + (f"?{rest}" if rest else ""), status_code=303)
            response.set_cookie(COOKIE, given, httponly=True, samesite="strict", path="/")
            return response
        scopes = [] if client.role is None else [ROLE_SCOPE + client.role]
        scopes += [] if client.agent is None else [AGENT_SCOPE + client.agent]
        scope["user"] = AuthenticatedUser(AccessToken(token="", client_id=client.name, scopes=scopes))
        return None


ROLE_SCOPE = "memdir-role:"
AGENT_SCOPE = "memdir-agent:"
"""The scopes a token's role and agent travel in from the check to the request's `HttpClient`."""


def _client(user: AuthenticatedUser) -> HttpClient:
    def scoped(prefix: str) -> str | None:
        return next((scope.removeprefix(prefix) for scope in user.scopes if scope.startswith(prefix)), None)

    return HttpClient(user.display_name, scoped(ROLE_SCOPE), scoped(AGENT_SCOPE))


def _is_mcp(scope: Scope) -> bool:
    return scope["path"].rstrip("/") == MCP_PATH


def _bearer(headers: Headers) -> str | None:
    value = headers.get("authorization")
    if value is None:
        return None
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _cookie(headers: Headers) -> str | None:
    raw = headers.get("cookie")
    if not raw:
        return None
    morsel = SimpleCookie(raw).get(COOKIE)
    return morsel.value if morsel is not None else None


__all__ = ["COOKIE", "MCP_PATH", "Gate", "GuardMiddleware"]
