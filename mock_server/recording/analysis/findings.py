"""Findings (docs/recording.md, "The report"): a `Finding` is one difference between a
recorded answer and the sandbox's, `{seq, order, request, pointer, kind, recorded,
sandbox}`.

`shape_findings` turns `conformance.compare`'s differences (status, error code, field
set, JSON types) into findings; `order_values` and `money_finding` add the values
compared beyond the shape: enums, echoed request fields (`same`: a redacted
placeholder matches any text), money.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ...conformance import compare as compare_answers
from .values import cents, is_number

#: Request fields an order answer echoes, compared as values (`fields` as the labels
#: the catalog gives choice ids).
ECHOED = ("merchant_order_id", "item", "quantity", "fields")


@dataclass
class Finding:
    """One difference between a recorded answer and the sandbox's."""

    seq: int | None
    order: str | None
    request: str
    pointer: str
    kind: str
    recorded: Any
    sandbox: Any

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "order": self.order,
            "request": self.request,
            "pointer": self.pointer,
            "kind": self.kind,
            "recorded": self.recorded,
            "sandbox": self.sandbox,
        }


_STATUS = re.compile(r"^status: service (\S+), sandbox (\S+)$")
_CODE = re.compile(r"^code: service (.*), sandbox (.*)$")
_FIELD = re.compile(r"^field (.+): only the (service|sandbox) has it$")
_TYPE = re.compile(r"^type of (.+): service (.+), sandbox (.+)$")
_BODY = re.compile(r"^body: service (.*), sandbox (.*)$")


def shape_findings(
    recorded: tuple[int, Any], sandbox: tuple[int, Any], **where: Any
) -> list[Finding]:
    """`conformance.compare`'s differences as findings: its words for kinds, its dotted
    paths as JSON pointers (a list's elements as `/0`: it compares the first)."""
    found = []
    for difference in compare_answers(recorded, sandbox):
        if match := _STATUS.match(difference):
            found.append(
                Finding(
                    pointer="", kind="status", recorded=recorded[0], sandbox=sandbox[0], **where
                )
            )
        elif match := _CODE.match(difference):
            found.append(
                Finding(
                    pointer="/code",
                    kind="code",
                    recorded=_literal(match[1]),
                    sandbox=_literal(match[2]),
                    **where,
                )
            )
        elif match := _FIELD.match(difference):
            recorded_has = match[2] == "service"
            found.append(
                Finding(
                    pointer=_pointer(match[1]),
                    kind="missing field" if recorded_has else "extra field",
                    recorded="present" if recorded_has else "absent",
                    sandbox="absent" if recorded_has else "present",
                    **where,
                )
            )
        elif match := _TYPE.match(difference):
            pointer = "" if match[1] == "body" else _pointer(match[1])
            found.append(
                Finding(pointer=pointer, kind="type", recorded=match[2], sandbox=match[3], **where)
            )
        elif match := _BODY.match(difference):
            found.append(
                Finding(pointer="", kind="body", recorded=match[1], sandbox=match[2], **where)
            )
        else:
            found.append(
                Finding(pointer="", kind="shape", recorded=difference, sandbox=None, **where)
            )
    return found


def _pointer(dotted: str) -> str:
    return "/" + "/".join(part.replace("[]", "/0") for part in dotted.split("."))


def _literal(text: str) -> Any:
    return None if text == "None" else text.strip("'\"")


# -- values beyond the shape: enums, echoes, money --------------------------------------------


def order_values(
    findings: list[Finding], recorded: dict[str, Any], answer: dict[str, Any], where: dict
) -> list[Finding]:
    """Values compared in an order answer: `item_product_type`, the echoed request
    fields, what was charged; what refunded, and a field's null-or-not, only where both
    answers show the order in the same status (and its webhook in the same state):
    otherwise the two lives ran a little apart, which the lifecycles judge."""
    same_status = recorded.get("status") == answer.get("status")
    same_webhook = _webhook_state(recorded) == _webhook_state(answer)
    kept = []
    for finding in findings:
        timing = not same_status or (finding.pointer.startswith("/webhook") and not same_webhook)
        if timing and finding.kind == "type" and "null" in (finding.recorded, finding.sandbox):
            continue
        kept.append(finding)
    if recorded.get("item_product_type") != answer.get("item_product_type"):
        kept.append(
            Finding(
                pointer="/item_product_type",
                kind="value",
                recorded=recorded.get("item_product_type"),
                sandbox=answer.get("item_product_type"),
                **where,
            )
        )
    return kept + echoes_and_money(recorded, answer, where, same_status=same_status)


def echoes_and_money(
    recorded: dict[str, Any], answer: dict[str, Any], where: dict, *, same_status: bool
) -> list[Finding]:
    """An order's (or its event's) echoed request fields that differ, and what it
    charged; what it refunded only where both show the same status."""
    found = [
        Finding(
            pointer=f"/{name}", kind="echo", recorded=recorded[name], sandbox=answer[name], **where
        )
        for name in ECHOED
        if name in recorded and name in answer and not same(recorded[name], answer[name])
    ]
    found += money_finding(recorded, answer, "price", where)
    if same_status:
        found += money_finding(recorded, answer, "refund_amount", where)
    return found


def _webhook_state(order: dict[str, Any]) -> Any:
    webhook = order.get("webhook")
    return (webhook.get("status"), webhook.get("attempts")) if isinstance(webhook, dict) else None


def money_finding(
    recorded: dict[str, Any], answer: dict[str, Any], name: str, where: dict
) -> list[Finding]:
    theirs, mine = recorded.get(name), answer.get(name)
    if is_number(theirs) and is_number(mine) and cents(theirs) != cents(mine):
        return [Finding(pointer=f"/{name}", kind="money", recorded=theirs, sandbox=mine, **where)]
    return []


PLACEHOLDER = re.compile(r"<[a-z_]+:[0-9A-Za-z_-]+>")


def same(left: Any, right: Any) -> bool:
    """Equal values; a recorded string holding placeholders (`<email:...>`: redacted)
    matches any text in their place."""
    if isinstance(left, str) and isinstance(right, str) and PLACEHOLDER.search(left):
        parts = [re.escape(part) for part in PLACEHOLDER.split(left)]
        return re.fullmatch(".*".join(parts), right, re.DOTALL) is not None
    if is_number(left) and is_number(right):
        return math.isclose(float(left), float(right), rel_tol=0, abs_tol=1e-9)
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same(left[k], right[k]) for k in left)
    return left == right
