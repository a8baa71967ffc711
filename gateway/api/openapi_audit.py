"""The operations and objects of operator tokens and the audit trail, for the OpenAPI document
(`gateway.api.openapi`), declared as `openapi_paths` declares the rest of the operator API
(`gateway.api.tokens`, `gateway.api.audit`; docs/audit.md in prose)."""

from __future__ import annotations

from typing import Any

from core.model.audit import ACTIONS
from core.storage.pages import DEFAULT_PAGE, MAX_PAGE
from gateway.api.openapi_paths import (
    answer,
    body,
    flag,
    limit,
    made,
    operation,
    path,
    position,
    query,
)
from gateway.api.openapi_schemas import (
    ANY_OBJECT,
    BOOLEAN,
    INTEGER,
    STRING,
    TIME,
    Schema,
    array,
    described,
    enum,
    extended,
    nullable,
    obj,
    ref,
    request_body,
)

_NAME = {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]{0,63}$"}

_TOKEN = obj(
    {
        "name": _NAME,
        "configured": described(BOOLEAN, "the gateway's configured token (`default`)"),
        "created_at": TIME,
        "last_used_at": described(nullable(TIME), "to the minute"),
        "revoked_at": nullable(TIME),
    }
)

_RECORD = obj(
    {
        "position": described(INTEGER, "increasing in commit order"),
        "at": TIME,
        "actor": described(STRING, "the name of the operator token that acted"),
        "client": described(STRING, "the address the request came from, as the edge saw it"),
        "action": enum(list(ACTIONS)),
        "detail": described(ANY_OBJECT, "the ids of what was acted on; before and after"),
        "request_id": nullable(STRING),
    }
)


def audit_schemas() -> dict[str, Schema]:
    return {
        "OperatorToken": _TOKEN,
        "OperatorTokenCreated": extended(
            _TOKEN, token=described(STRING, "`rco_…`, shown only here")
        ),
        "OperatorTokenList": obj({"tokens": array(ref("OperatorToken"))}),
        "AuditRecord": _RECORD,
        "AuditPage": obj(
            {
                "records": array(ref("AuditRecord")),
                "next": described(
                    nullable(INTEGER),
                    "forward: the `after` of the next page; backward: the `before` of the "
                    "earlier page (null: none is earlier)",
                ),
                "more": BOOLEAN,
            }
        ),
    }


def audit_paths() -> dict[str, Any]:
    tokens = "tokens"
    named = {"name": "the token's name"}
    return {
        "/api/v1/tokens": path(
            post=operation(
                "create_token",
                "Make a named operator token",
                tag=tokens,
                request=body(request_body({"name": described(_NAME, "who it acts as")})),
                answers={
                    201: made(
                        "the token, shown once", ref("OperatorTokenCreated"), "the token's listing"
                    )
                },
                failures={409: "`token_exists`", 422: "`invalid_token_name`"},
            ),
            get=operation(
                "list_tokens",
                "Every operator token, revoked ones too, oldest first (never the tokens)",
                tag=tokens,
                answers={200: answer("the tokens", ref("OperatorTokenList"))},
            ),
        ),
        "/api/v1/tokens/{name}": path(
            named,
            get=operation(
                "show_token",
                "One operator token: made, last used, revoked",
                tag=tokens,
                answers={200: answer("the token", ref("OperatorToken"))},
                failures={404: "`token_not_found`"},
            ),
            delete=operation(
                "revoke_token",
                "Revoke an operator token: refused from now on",
                tag=tokens,
                answers={200: answer("the token, revoked", ref("OperatorToken"))},
                failures={404: "`token_not_found`", 409: "`token_revoked`: revoked already"},
            ),
        ),
        "/api/v1/audit": path(
            get=operation(
                "read_audit",
                "The audit trail of operator actions",
                tag="audit",
                description=(
                    "Forward from `after` (default: the first record), or backward from "
                    "`before`, or the newest page with `latest=true`; oldest first within a "
                    "page. Records are never changed through the API."
                ),
                parameters=[
                    position("after", "read forward: the records after this position"),
                    position("before", "read backward: the records before this position", low=1),
                    flag("latest", "read the newest page"),
                    limit(DEFAULT_PAGE, MAX_PAGE),
                    query("actor", _NAME, "only this operator token's records"),
                    query("action", enum(list(ACTIONS)), "only this action's records"),
                ],
                answers={200: answer("a page", ref("AuditPage"))},
                failures={422: "`conflicting_parameters`, `invalid_action`, `invalid_token_name`"},
            ),
        ),
    }
