"""The small builders the document is written with: typed schemas, objects closed by
default, nullable types, the error envelope, responses, request bodies, parameters and
operations."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..edge.jsonio import YAML_TYPES

Schema = dict[str, Any]

DELIVERY_STATUSES = ["pending", "retrying", "delivered", "failed"]
#: Every `code` an error envelope in the document carries, each with a schema of its own
#: (`price_mismatch` has one too, with `actual_price`: `PriceMismatchError`).
ENVELOPE_CODES = (
    "validation_error",
    "insufficient_balance",
    "not_authenticated",
    "not_found",
    "method_not_allowed",
    "already_exists",
    "already_decided",
    "payload_too_large",
    "too_many_sandboxes",
    "rate_limited",
    "quota_exceeded",
    "internal_error",
)
MERCHANT_AUTH = [{"bearerAuth": []}]
ADMIN_AUTH = [{"adminToken": []}, {}]  # the admin token only when --admin-token is set
NO_AUTH: list[dict[str, list[str]]] = []

# -- schema helpers -----------------------------------------------------------------------


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def _typed(type_: str, description: str | None, **keywords: Any) -> Schema:
    schema: Schema = {"type": type_, **keywords}
    if description:
        schema["description"] = description
    return schema


def string(description: str | None = None, **keywords: Any) -> Schema:
    return _typed("string", description, **keywords)


def integer(description: str | None = None, **keywords: Any) -> Schema:
    return _typed("integer", description, **keywords)


def number(description: str | None = None, **keywords: Any) -> Schema:
    return _typed("number", description, **keywords)


def boolean(description: str | None = None, **keywords: Any) -> Schema:
    return _typed("boolean", description, **keywords)


def array(items: Schema, description: str | None = None, **keywords: Any) -> Schema:
    return _typed("array", description, items=items, **keywords)


def enum(values: Iterable[str], description: str | None = None) -> Schema:
    return string(description, enum=list(values))


def nullable(schema: Schema) -> Schema:
    """`schema` or null: a type array for a plain type, `oneOf` around a `$ref`."""
    if isinstance(schema.get("type"), str):
        result = dict(schema, type=[schema["type"], "null"])
        if "enum" in result:
            result["enum"] = [*result["enum"], None]
        return result
    return {"oneOf": [schema, {"type": "null"}]}


def obj(
    properties: dict[str, Schema],
    required: Iterable[str] | None = None,
    *,
    extra: bool | Schema = False,
    description: str | None = None,
) -> Schema:
    """An object with these properties. Every property is required unless `required`
    says otherwise (responses always carry all their fields); `extra` is what
    `additionalProperties` allows (nothing, by default)."""
    schema = _typed("object", description, properties=properties)
    schema["required"] = list(properties) if required is None else list(required)
    if not schema["required"]:
        del schema["required"]
    if extra is not True:
        schema["additionalProperties"] = extra
    return schema


def money(description: str) -> Schema:
    return number(f"{description} Major currency units, at most 2 decimals.", minimum=0)


def timestamp(description: str) -> Schema:
    return string(
        f"{description} ISO 8601 UTC with milliseconds and `Z`, on the virtual clock.",
        format="date-time",
    )


def uuid(description: str) -> Schema:
    return string(description, format="uuid")


def error_schema_name(code: str) -> str:
    """The schema of the envelope with this code: `not_found` is `NotFoundError`,
    `validation_error` is `ValidationError`."""
    name = "".join(part.title() for part in code.split("_"))
    return name if name.endswith("Error") else f"{name}Error"


def envelope(*codes: str) -> Schema:
    """The error envelope `{detail, code}` with `code` one of `codes`: a reference to each
    code's own complete schema, `oneOf` them for several. Not `allOf` of a shared envelope
    plus a narrowed `code`: client generators merge `allOf` property by property, and
    openapi-python-client cannot merge `string` with a constant, so it dropped every such
    response from the client it generated."""
    unknown = [code for code in codes if code not in ENVELOPE_CODES]
    if unknown:
        raise ValueError(f"no error schema for {unknown}: add them to ENVELOPE_CODES")
    refs = [ref(error_schema_name(code)) for code in codes]
    return refs[0] if len(refs) == 1 else {"oneOf": refs}


# -- response and operation helpers -------------------------------------------------------


def json_content(schema: Schema, example: Any = None) -> dict[str, Any]:
    media: dict[str, Any] = {"schema": schema}
    if example is not None:
        media["example"] = example
    return {"application/json": media}


def response(
    description: str,
    schema: Schema | None = None,
    *,
    example: Any = None,
    headers: dict[str, Any] | None = None,
) -> dict[str, Any]:
    result: dict[str, Any] = {"description": description}
    if headers:
        result["headers"] = headers
    if schema is not None:
        result["content"] = json_content(schema, example)
    return result


def error(description: str, *codes: str) -> dict[str, Any]:
    return response(description, envelope(*codes))


def use(name: str) -> dict[str, str]:
    """A response defined once under `components/responses`."""
    return {"$ref": f"#/components/responses/{name}"}


def body(
    schema: Schema,
    example: Any = None,
    *,
    required: bool = True,
    yaml: bool = False,
) -> dict[str, Any]:
    """A request body: JSON, and YAML too for configuration documents.

    YAML is said in the description, not as a media type: client generators refuse a
    media type they cannot encode (openapi-python-client warns about `application/yaml`),
    and JSON is YAML too, so a JSON-only client loses nothing."""
    result: dict[str, Any] = {"required": required, "content": json_content(schema, example)}
    if yaml:
        alternatives = ", ".join(f"`{media_type}`" for media_type in YAML_TYPES[1:])
        result["description"] = (
            f"JSON, or the same document as YAML sent with `Content-Type: {YAML_TYPES[0]}` "
            f"(also {alternatives}); a YAML mistake names its line."
        )
    return result


def path_param(name: str, description: str, schema: Schema | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": schema or string(),
    }


def query_param(name: str, description: str, schema: Schema) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
    }


def operation(
    operation_id: str,
    summary: str,
    *,
    tag: str,
    responses: dict[str, Any],
    description: str | None = None,
    security: list[dict[str, list[str]]] = NO_AUTH,
    parameters: Iterable[dict[str, Any]] = (),
    request_body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    op: dict[str, Any] = {"operationId": operation_id, "summary": summary, "tags": [tag]}
    if description:
        op["description"] = description
    op["security"] = security
    if parameters:
        op["parameters"] = list(parameters)
    if request_body is not None:
        op["requestBody"] = request_body
    op["responses"] = responses
    return op


def merchant_errors(*, reads_body: bool, authenticated: bool = True) -> dict[str, Any]:
    """Responses every merchant operation can give besides its own."""
    errors: dict[str, Any] = {}
    if authenticated:
        errors["401"] = use("NotAuthenticated")
    errors["405"] = use("MethodNotAllowed")
    if reads_body:
        errors["413"] = use("PayloadTooLarge")
    errors["429"] = use("RateLimited")
    errors["5XX"] = use("InternalError")
    return errors


#: What a call past one of a sandbox's quotas answers (docs/hosting.md, "Quotas").
QUOTA_EXCEEDED = (
    "The sandbox holds what its quota allows (`--sandbox-max-orders`, `-codes`, `-scenarios`, "
    "`-accounts`, `-catalog`, `-faults`, `-queue`, `-tokens`, `-api-keys`, `-adjustments`, "
    "`-redeliveries`; a created sandbox has them "
    "by default): the detail names the quota and how to free room. Nothing was made, "
    "charged or stored."
)


def quota_errors(*flags: str) -> dict[str, Any]:
    """429 `quota_exceeded`; `flags`: the quotas this operation can meet, when it is
    not every one a whole document can (`--sandbox-max-faults`)."""
    if not flags:
        return {"429": error(QUOTA_EXCEEDED, "quota_exceeded")}
    named = ", ".join(f"`{flag}`" for flag in flags)
    description = (
        f"The sandbox holds what its quota allows ({named}; a created sandbox has it by "
        "default): the detail names the quota and how to free room. Nothing was stored."
    )
    return {"429": error(description, "quota_exceeded")}


def control_errors(*, reads_body: bool = False, protected: bool = True) -> dict[str, Any]:
    """Responses every `/_mock` operation can give besides its own."""
    errors: dict[str, Any] = {}
    if reads_body:
        errors["400"] = use("ValidationError")
    if protected:
        errors["401"] = use("AdminNotAuthenticated")
    errors["405"] = use("MethodNotAllowed")
    if reads_body:
        errors["413"] = use("PayloadTooLarge")
    errors["5XX"] = use("InternalError")
    return errors
