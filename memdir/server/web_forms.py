"""The web view's forms: reading a posted form, and the token that proves it came from our own page.

Every change the web view makes is a POST of a form this server rendered. Each form carries a
CSRF token: an HMAC, under a secret made when the server starts, of the client the page was
rendered for (its token's name). A page on another site cannot read it, so it cannot post
a form that passes, on top of what already stops it (the ``Origin`` check of
`memdir.server.http_guard` and the SameSite=Strict cookie). A form body is read up to a limit
and parsed as ``application/x-www-form-urlencoded`` (what an HTML form sends).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import parse_qsl

from starlette.requests import Request

from memdir.core.errors import InputValidationError, MemdirError
from memdir.server.state import HTTP_CLIENT

FIELD = "csrf"
FORM_TYPE = "application/x-www-form-urlencoded"


class FormRefused(MemdirError):
    """A posted form that is not ours (no or wrong CSRF token) or too large: nothing was changed."""

    def __init__(self, message: str, hint: str, status: int) -> None:
        super().__init__(message, hint)
        self.status = status


class Forms:
    """Makes and checks the CSRF tokens of one running server."""

    def __init__(self) -> None:
        self._secret = secrets.token_bytes(32)

    def token(self) -> str:
        """The token the forms of a page rendered for the current client carry."""
        client = HTTP_CLIENT.get()
        who = b"" if client is None else client.name.encode("utf-8", "surrogatepass")
        return hmac.new(self._secret, who, hashlib.sha256).hexdigest()

    async def read(self, request: Request, limit: int) -> dict[str, str]:
        """The posted form's fields, once its CSRF token is checked.

        Raises:
            FormRefused: not a form, larger than ``limit`` bytes (413), or without this client's token (403).
        """
        if request.headers.get("content-type", "").split(";")[0].strip() != FORM_TYPE:
            raise FormRefused("This address takes a form sent from the web view's own pages.",
                              "Use the buttons on the entry, edit or health page.", 415)
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise FormRefused(f"The form is larger than {limit:,} bytes.", "Shorten the entry.", 413)
        try:
            fields = dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False))
        except UnicodeDecodeError as exc:
            raise InputValidationError("The form is not UTF-8 text.", "Send it from the web view's page.") from exc
        if not hmac.compare_digest(fields.get(FIELD, ""), self.token()):
            raise FormRefused("This form did not come from this web view (its security token is missing or old).",
                              "Reload the page and send the form again.", 403)
        return fields


__all__ = ["FIELD", "FormRefused", "Forms"]
