"""Checking (and, for `rolecall hook test`, making) the signatures of inbound deliveries.

Two schemes, chosen by the source's kind:

- **Standard Webhooks** (`standard`): `webhook-id`, `webhook-timestamp` and `webhook-signature`,
  one or more space-separated `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` (a sender
  rotating its key signs with both); the timestamp within 5 minutes of now. The
  `standardwebhooks` package does the checking; the secret is `whsec_<base64>`.
- **`X-Hub-Signature-256`** (`github`, `generic`): `sha256=<hex HMAC-SHA256 of the body>`,
  compared in constant time. The delivery id is `X-GitHub-Delivery` (GitHub, which also names
  its event in `X-GitHub-Event`) or `X-Delivery-Id` (`generic`). This scheme has no timestamp:
  a replayed delivery is caught by its recorded id.

The signature is checked before anything else is read: `SignatureError` (401) for a bad or
missing one; `MissingHeader` (400) for a signed request without its delivery id or event.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from core.model.webhooks import SourceKind

HUB_SIGNATURE = "X-Hub-Signature-256"
GITHUB_DELIVERY = "X-GitHub-Delivery"
GITHUB_EVENT = "X-GitHub-Event"
GENERIC_DELIVERY = "X-Delivery-Id"
MAX_DELIVERY_ID = 200
"""The longest delivery id kept (`webhook_deliveries.delivery_id`)."""


class SignatureError(Exception):
    """The delivery is not signed with the source's secret (or too long ago)."""


class MissingHeader(Exception):
    """A signed delivery without a header the source's kind needs."""


class BadSecret(ValueError):
    """The secret cannot be used with the source's kind."""


@dataclass(frozen=True, slots=True)
class Delivered:
    """A verified delivery: its id, and GitHub's event name."""

    delivery_id: str
    event: str | None = None


class Verifier(Protocol):
    def verify(self, body: bytes, headers: Mapping[str, str]) -> Delivered: ...


class StandardVerifier:
    def __init__(self, secret: str) -> None:
        self._webhook = Webhook(standard_key(secret))

    def verify(self, body: bytes, headers: Mapping[str, str]) -> Delivered:
        wanted = ("webhook-id", "webhook-timestamp", "webhook-signature")
        given = {name: headers[name] for name in wanted if name in headers}
        try:
            self._webhook.verify(body, given, json_parse=False)
        except WebhookVerificationError as exc:
            reason = str(exc) or "no matching signature"
            raise SignatureError(
                f"the Standard Webhooks signature does not verify: {reason}"
            ) from None
        except (ValueError, UnicodeDecodeError):  # a malformed header, a body that is not UTF-8
            raise SignatureError(
                "the Standard Webhooks signature does not verify: malformed "
                "webhook-signature (space-separated 'v1,<base64>') or a body that is not UTF-8"
            ) from None
        return Delivered(_delivery_id(given["webhook-id"], "webhook-id"))


class HubVerifier:
    """`X-Hub-Signature-256`, with GitHub's headers or the generic kind's."""

    def __init__(self, secret: str, *, github: bool) -> None:
        if not secret:
            raise BadSecret("the secret is empty")
        self._key = secret.encode()
        self._github = github

    def verify(self, body: bytes, headers: Mapping[str, str]) -> Delivered:
        offered = headers.get(HUB_SIGNATURE, "").strip().lower()
        if not offered:
            raise SignatureError(f"the request has no {HUB_SIGNATURE} header")
        expected = hub_signature(self._key, body)
        if not hmac.compare_digest(offered.encode("utf-8", "replace"), expected.encode()):
            raise SignatureError(f"{HUB_SIGNATURE} does not match the body")
        delivery = GITHUB_DELIVERY if self._github else GENERIC_DELIVERY
        if not headers.get(delivery, "").strip():
            raise MissingHeader(f"a signed delivery needs the {delivery} header (its id)")
        event = None
        if self._github:
            event = headers.get(GITHUB_EVENT, "").strip()
            if not event:
                raise MissingHeader(f"a GitHub delivery needs the {GITHUB_EVENT} header")
        return Delivered(_delivery_id(headers[delivery], delivery), event)


def verifier(kind: SourceKind, secret: str) -> Verifier:
    """How deliveries of a source of this kind are checked (`BadSecret` for a secret that
    cannot be one of its kind)."""
    if kind is SourceKind.STANDARD:
        return StandardVerifier(secret)
    return HubVerifier(secret, github=kind is SourceKind.GITHUB)


def standard_key(secret: str) -> bytes:
    """The key of a Standard Webhooks secret, `whsec_<base64>` (`BadSecret` otherwise: the
    package would skip what is not base64, so a typo would make another key)."""
    encoded = secret.strip().removeprefix("whsec_")
    try:
        key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not key:
        raise BadSecret("a Standard Webhooks secret is 'whsec_' followed by base64")
    return key


def _delivery_id(raw: str, header: str) -> str:
    value = raw.strip()
    if not value or len(value) > MAX_DELIVERY_ID:
        raise MissingHeader(f"{header} must be 1 to {MAX_DELIVERY_ID} characters")
    return value


# --- signing, as senders do --------------------------------------------------------------------


def hub_signature(key: bytes, body: bytes) -> str:
    return "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()


def signed_headers(
    kind: SourceKind,
    secret: str,
    body: bytes,
    *,
    delivery_id: str,
    at: datetime,
    event: str | None = None,
) -> dict[str, str]:
    """The headers a sender of this kind puts on `body` (`at`: the Standard Webhooks
    timestamp; `event`: GitHub's event name)."""
    if kind is SourceKind.STANDARD:
        signature = Webhook(standard_key(secret)).sign(delivery_id, at, body.decode())
        return {
            "webhook-id": delivery_id,
            "webhook-timestamp": str(int(at.timestamp())),
            "webhook-signature": signature,
        }
    headers = {HUB_SIGNATURE: hub_signature(secret.encode(), body)}
    if kind is SourceKind.GITHUB:
        return headers | {GITHUB_DELIVERY: delivery_id, GITHUB_EVENT: event or "ping"}
    return headers | {GENERIC_DELIVERY: delivery_id}
