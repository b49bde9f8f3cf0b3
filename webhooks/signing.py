"""Standard Webhooks signatures.

Headers: ``webhook-id``, ``webhook-timestamp`` (Unix seconds) and
``webhook-signature`` = ``v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``,
keyed with the base64-decoded part of the ``whsec_<base64>`` secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"  # noqa: S105 - a marker, not a secret


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def sign(secret: str, message_id: str, timestamp: int, body: str) -> str:
    digest = hmac.new(
        _key(secret), f"{message_id}.{timestamp}.{body}".encode(), hashlib.sha256
    ).digest()
    return "v1," + base64.b64encode(digest).decode()


def headers(secret: str, message_id: str, timestamp: int, body: str) -> dict[str, str]:
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, message_id, timestamp, body),
        "content-type": "application/json",
    }
