"""One error tree for everything the sandbox refuses.

Domain code raises these with plain values; `edge.refusals` renders them in the spec's
envelope `{"detail", "code"}` (section 2.6). Every spec error code has a constructor,
and every detail says what to change.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A refusal with its HTTP status, stable `code` and human `detail`."""

    def __init__(
        self, status: int, code: str, detail: str, *, cause: str | None = None, **extra: Any
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.extra = extra
        #: What went wrong, for coverage (`validation_error: quantity`); not rendered.
        self.cause = cause

    def body(self) -> dict[str, Any]:
        return {"detail": self.detail, "code": self.code, **self.extra}


class TokenError(Exception):
    """A token-exchange failure: the token endpoint answers `{"error": ...}` (spec 4.1)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class StateFileError(Exception):
    """The `--state` file cannot be used; the message names it, says why and what to do."""


def validation_error(detail: str, cause: str | None = None) -> ApiError:
    return ApiError(400, "validation_error", detail, cause=cause)


def insufficient_balance(detail: str) -> ApiError:
    return ApiError(400, "insufficient_balance", detail)


def price_mismatch(detail: str, actual_price: float) -> ApiError:
    return ApiError(400, "price_mismatch", detail, actual_price=actual_price)


def not_authenticated(
    detail: str = "Missing, invalid or expired access token", cause: str | None = None
) -> ApiError:
    return ApiError(401, "not_authenticated", detail, cause=cause)


def not_found(detail: str = "Not found") -> ApiError:
    return ApiError(404, "not_found", detail)


def already_exists(detail: str) -> ApiError:
    return ApiError(409, "already_exists", detail)


def rate_limited(detail: str) -> ApiError:
    return ApiError(429, "rate_limited", detail)


def payload_too_large(limit: int) -> ApiError:
    return ApiError(413, "payload_too_large", f"Request body is larger than {limit} bytes")
