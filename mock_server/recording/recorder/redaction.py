"""What a recording never holds (docs/recording.md, "What is redacted"): each event is
redacted before it reaches the file. What the client sends and receives is never
touched: the rules work on the event, a copy parsed from the bytes.

A secret becomes a placeholder `<kind:hash>`, `hash` a short hex of an HMAC-SHA256 of
the value keyed by a key made for this recording alone and never written: the same
secret gets the same placeholder throughout the file, two different ones get two, and
nobody can test a guess against a placeholder. The rules (`RULES`, their names go into
the file's header):

* `authorization`: the `Authorization` (and `Proxy-Authorization`) header: a bearer
  token becomes `Bearer <token:...>`; any other credentials `<authorization:...>`.
* `api_key`: `api_key` in a JSON body (the token exchange's request, spec 4.1) or in a
  form or query string, and each of an `api_keys` list (a sandbox's accounts).
* `access_token`: `access_token` in a JSON body (the token exchange's answer, spec 2.5),
  as kind `token` like the bearer token, so a token and its uses share one placeholder.
* `client_code`: `code` of a `POST .../orders/{id}/client-code` body (spec 4.5).
* `codes`: each delivered code of a `codes` list (order answers, spec 2.1 and 4.3-4.4,
  and webhook bodies, spec 6), each its own placeholder, so the count is kept.
* `signature_headers`: `X-Webhook-Signature` and `X-Signature` (spec 6).
* `cookies`: `Cookie` and `Set-Cookie`, each whole value.
* `emails`: e-mail addresses anywhere in a header, a query string, a JSON body's
  strings and keys (a field named `email` or `..._email` whole) or a text body:
  `created_by.email`, `GET .../account/me`'s `email`, a login top-up's `login_email`.
* `sandbox_secrets`: `webhook_secret` and `control_token` in a JSON body: what a
  sandbox's control API answers (docs/control-api.md) when the upstream is a hosted
  sandbox rather than production.

Every secret value a rule finds is also kept, in memory only, by kind (`Redactor.
secrets`); a rule left out of a `Redactor` still finds and keeps its values, it only
stops replacing them. One pass over each event applies them all.

After the run `scan` searches the finished file for each value, independently of the
rules: a plain substring search for the value and for its JSON-escaped form. A value
under `SHORT_VALUE` characters (a six-digit client code) counts only where it does not
sit inside a longer run of letters and digits, so it is not "found" inside an order id
or a timestamp; one under `MIN_SCANNED` characters is not searched.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: Placeholders carry this many hex digits of the keyed hash (48 bits).
HASH_DIGITS = 12
#: Values shorter than this are not searched for by `scan`: three characters are found
#: by chance in any file.
MIN_SCANNED = 4
#: Values shorter than this count as found only on a word's boundaries.
SHORT_VALUE = 8

#: `hide(kind, value)` returns what stands in the event for a secret value: its
#: placeholder, or the value itself for a rule that only keeps what it finds.
Hide = Callable[[str, str], str]

#: Every rule, in the order they apply to a value (a header's whole-value rules before
#: `emails`, which replaces parts of what they leave).
RULES: tuple[str, ...] = (
    "authorization",
    "signature_headers",
    "cookies",
    "api_key",
    "access_token",
    "client_code",
    "codes",
    "emails",
    "sandbox_secrets",
)

_EMAIL = re.compile(
    r"[A-Za-z0-9._%+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+"
)
#: In a raw query string the `@` may be percent-encoded.
_QUERY_EMAIL = re.compile(
    r"[A-Za-z0-9._+-]+(?:@|%40)[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+"
)
_AUTHORIZATION = frozenset({"authorization", "proxy-authorization"})
_SIGNATURES = frozenset({"x-webhook-signature", "x-signature"})
_COOKIES = frozenset({"cookie", "set-cookie"})
_RULED_HEADERS = _AUTHORIZATION | _SIGNATURES | _COOKIES
#: JSON members whose string value `_string` may change besides one holding an `@`:
#: those named here, and those whose name holds `email`.
_SECRET_MEMBERS = frozenset({"api_key", "access_token", "webhook_secret", "control_token"})
_CLIENT_CODE_PATH = re.compile(r"/orders/[^/]+/client-code/?$")
#: `name=value` fields of a form body or a query string that hold secrets: the field
#: and the placeholder's kind.
_FORM_FIELDS = (("api_key", "api_key"), ("access_token", "token"))
_FORM_FIELD = {
    field: re.compile(rf"(?:^|(?<=[&?;\s])){re.escape(field)}=([^&;\s]+)")
    for field in ("api_key", "access_token", "code")
}


def rules_without(*names: str) -> tuple[str, ...]:
    """`RULES` less the named ones (a test defeating a rule on purpose)."""
    unknown = set(names) - set(RULES)
    if unknown:
        raise ValueError(f"no such rule: {', '.join(sorted(unknown))}")
    return tuple(rule for rule in RULES if rule not in names)


def _is_email_field(key: str) -> bool:
    return key == "email" or key.endswith("_email")


class Redactor:
    """Applies the rules named in `rules` to events, in place, and keeps every secret
    value seen (`secrets`: value -> kind). Every rule runs on every event: one left out
    of `rules` only keeps the values it finds (for `scan`) and replaces none."""

    def __init__(self, rules: Iterable[str] = RULES, *, key: bytes | None = None) -> None:
        enabled = set(rules)
        unknown = enabled - set(RULES)
        if unknown:
            raise ValueError(f"no such rule: {', '.join(sorted(unknown))}")
        #: The rules applied, as the file's header names them.
        self.names = [rule for rule in RULES if rule in enabled]
        self._key = key if key is not None else secrets.token_bytes(32)
        self.secrets: dict[str, str] = {}
        self._placeholders: dict[str, str] = {}
        do = {rule: self._hide if rule in enabled else self._keep for rule in RULES}
        self._authorization = do["authorization"]
        self._signature = do["signature_headers"]
        self._cookie = do["cookies"]
        self._api_key = do["api_key"]
        self._access_token = do["access_token"]
        self._client_code = do["client_code"]
        self._code = do["codes"]
        self._email = do["emails"]
        self._sandbox_secret = do["sandbox_secrets"]
        self._by_form_field = {"api_key": self._api_key, "access_token": self._access_token}

    def placeholder(self, kind: str, value: str) -> str:
        """`<kind:hash>` for `value`: the hash depends on the value and the key alone."""
        found = self._placeholders.get(value)
        if found is None:
            digest = hmac.new(self._key, value.encode("utf-8"), hashlib.sha256).hexdigest()
            found = self._placeholders[value] = digest[:HASH_DIGITS]
        return f"<{kind}:{found}>"

    def _hide(self, kind: str, value: str) -> str:
        self.secrets.setdefault(value, kind)
        return self.placeholder(kind, value)

    def _keep(self, kind: str, value: str) -> str:
        self.secrets.setdefault(value, kind)
        return value

    # -- events ---------------------------------------------------------------------------------

    def redact(self, event: dict[str, Any]) -> dict[str, Any]:
        """Redact an event of the file (`fileformat`) in place, and return it."""
        if event.get("kind") == "exchange":
            request = event["request"]
            self._message(request)
            self._message(event["response"])
            self._query(request)
            if request.get("method") == "POST" and _CLIENT_CODE_PATH.search(request["path"]):
                self._submitted_code(request)
        else:
            self._message(event)
        return event

    def _message(self, message: dict[str, Any]) -> None:
        for pair in message.get("headers", ()):
            name = pair[0].lower()
            if name in _RULED_HEADERS:
                if name in _AUTHORIZATION:
                    pair[1] = self._credentials(pair[1])
                elif name in _SIGNATURES:
                    if pair[1]:
                        pair[1] = self._signature("signature", pair[1])
                else:
                    pair[1] = self._cookies(name, pair[1])
            if "@" in pair[1]:
                pair[1] = self._emails_in(pair[1])
        if "body" in message:
            message["body"] = self._json(message["body"])
        elif "body_text" in message:
            text = message["body_text"]
            for field, kind in _FORM_FIELDS:
                if field + "=" in text:
                    text = self._form_field(text, field, kind, self._by_form_field[field])
            if "@" in text:
                text = self._emails_in(text)
            message["body_text"] = text

    def _credentials(self, value: str) -> str:
        scheme, _, credentials = value.strip().partition(" ")
        credentials = credentials.strip()
        if scheme.lower() == "bearer" and credentials:
            return f"{scheme} {self._authorization('token', credentials)}"
        return self._authorization("authorization", value) if value else value

    def _cookies(self, name: str, value: str) -> str:
        if not value:
            return value
        # Each cookie's own value is a secret too: found anywhere else, it leaks.
        crumbs = value.split(";") if name == "cookie" else value.split(";")[:1]
        for crumb in crumbs:
            _, sep, own = crumb.strip().partition("=")
            own = own.strip('"')
            if sep and own:
                self._cookie("cookie", own)
        return self._cookie("cookie", value)

    def _query(self, request: dict[str, Any]) -> None:
        query = request["query"]
        if not query:
            return
        for field, kind in _FORM_FIELDS:
            if field + "=" in query:
                query = self._form_field(query, field, kind, self._by_form_field[field])
        if "@" in query or "%40" in query:
            query = _QUERY_EMAIL.sub(
                lambda m: self._email("email", urllib.parse.unquote(m.group())), query
            )
        request["query"] = query

    def _submitted_code(self, request: dict[str, Any]) -> None:
        body = request.get("body")
        if isinstance(body, dict):
            code = body.get("code")
            if isinstance(code, str | int | float) and not isinstance(code, bool) and str(code):
                body["code"] = self._client_code("client_code", str(code))
        elif "body_text" in request and "code=" in request["body_text"]:
            request["body_text"] = self._form_field(
                request["body_text"], "code", "client_code", self._client_code
            )

    @staticmethod
    def _form_field(text: str, field: str, kind: str, hide: Hide) -> str:
        def swap(match: re.Match[str]) -> str:
            return f"{field}={hide(kind, urllib.parse.unquote_plus(match.group(1)))}"

        return _FORM_FIELD[field].sub(swap, text)

    def _emails_in(self, text: str) -> str:
        return _EMAIL.sub(lambda m: self._email("email", m.group()), text)

    def _string(self, key: str, value: str) -> str:
        """A JSON object's string member, by its key."""
        if key == "api_key" and value:
            value = self._api_key("api_key", value)
        elif key == "access_token" and value:
            value = self._access_token("token", value)
        elif key in ("webhook_secret", "control_token") and value:
            value = self._sandbox_secret(key, value)
        if _is_email_field(key) and value:
            return self._email("email", value)
        return self._emails_in(value) if "@" in value else value

    def _json(self, value: Any) -> Any:
        """A JSON body, redacted in place (a bare string is returned redacted)."""
        if isinstance(value, dict):
            renamed = []
            for key, item in value.items():
                if isinstance(item, str):
                    if "@" in item or key in _SECRET_MEMBERS or "email" in key:
                        value[key] = self._string(key, item)
                elif key == "api_keys" and isinstance(item, list):
                    value[key] = [
                        self._api_key("api_key", key_) if isinstance(key_, str) and key_ else key_
                        for key_ in item
                    ]
                elif key == "codes" and isinstance(item, list):
                    value[key] = [
                        self._code("code", str(code))
                        if isinstance(code, str | int) and not isinstance(code, bool)
                        else self._json(code)
                        for code in item
                    ]
                elif isinstance(item, dict | list):
                    self._json(item)
                if "@" in key:
                    renamed.append(key)
            for key in renamed:
                value[self._emails_in(key)] = value.pop(key)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, str):
                    if "@" in item:
                        value[index] = self._emails_in(item)
                elif isinstance(item, dict | list):
                    self._json(item)
        elif isinstance(value, str) and "@" in value:
            return self._emails_in(value)
        return value


# -- the scan -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Leak:
    """A secret value found in the file: its kind, the file's line (1: the header), the
    `seq` of the event on that line (None for the header) and the field that holds it
    (a JSON pointer, RFC 6901; "" where no one string of the line holds it whole).
    Never the value."""

    kind: str
    line: int
    seq: int | None = None
    pointer: str = ""

    def where(self) -> str:
        """`event seq 7 at /response/body/detail`: where the secret stands."""
        event = f"event seq {self.seq}" if self.seq is not None else f"line {self.line}"
        return f"{event} at {self.pointer}" if self.pointer else event


def _forms(value: str) -> set[str]:
    """The value as it may stand in a JSON file: raw, and JSON-escaped both ways."""
    return {
        value,
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(value, ensure_ascii=True)[1:-1],
    }


def _inside_a_word(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    return before.isalnum() or after.isalnum()


def scan(text: str, found: Mapping[str, str]) -> Leak | None:
    """The first secret of `found` (value -> kind) that `text` holds, or None."""
    hits: list[tuple[int, str, str]] = []  # (offset, kind, value)
    for value, kind in found.items():
        if len(value) < MIN_SCANNED:
            continue
        for form in _forms(value):
            start = _find(text, form, len(value) < SHORT_VALUE)
            if start != -1:
                hits.append((start, kind, value))
    if not hits:
        return None
    start, kind, value = min(hits)
    line = text.count("\n", 0, start) + 1
    first = text.rfind("\n", 0, start) + 1
    end = text.find("\n", start)
    seq, pointer = _field_of(text[first : end if end != -1 else len(text)], value)
    return Leak(kind, line, seq, pointer)


def _find(text: str, form: str, short: bool, start: int = 0) -> int:
    """Where `form` stands in `text` (-1: nowhere); a short value only on its own."""
    found = text.find(form, start)
    while found != -1 and short and _inside_a_word(text, found, found + len(form)):
        found = text.find(form, found + 1)
    return found


def _field_of(line: str, value: str) -> tuple[int | None, str]:
    """The `seq` of the event on `line`, and the JSON pointer of the first key or string
    that holds `value` ("" where none does: the line is no JSON, or the value spans
    several strings)."""
    try:
        record = json.loads(line)
    except ValueError:
        return None, ""
    seq = record.get("seq") if isinstance(record, dict) else None
    pointer = _pointer_to(record, value, "", len(value) < SHORT_VALUE)
    return (seq if isinstance(seq, int) else None), pointer or ""


def _pointer_to(node: Any, value: str, at: str, short: bool) -> str | None:
    if isinstance(node, str):
        return at if _find(node, value, short) != -1 else None
    items: Iterable[tuple[Any, Any]] = ()
    if isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    for key, child in items:
        here = f"{at}/{str(key).replace('~', '~0').replace('/', '~1')}"
        if isinstance(key, str) and _find(key, value, short) != -1:
            return here
        if (found := _pointer_to(child, value, here, short)) is not None:
            return found
    return None
