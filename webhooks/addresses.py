"""Which callback URLs the platform will POST to.

In production: https only, and every address the host resolves to must be a
public one, so a webhook cannot be aimed at the platform's own network
(metadata services, databases, admin ports). Where
``WEBHOOKS_ALLOW_INSECURE`` is on (development, tests), plain http and loopback
addresses are allowed too; private ranges never are.

The check runs at registration and again before every delivery (DNS may have
changed in between). Redirects are never followed. A name that resolves to a
public address when checked and to a private one a moment later (DNS
rebinding) is not caught here: production web and worker hosts should also
filter egress to private ranges.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class RefusedUrl(ValueError):
    """The URL may not receive webhooks; the message says why."""


def _resolve(host: str, port: int) -> list[Address]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise RefusedUrl(f"cannot resolve {host!r}: {exc}") from None
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


def check_callback_url(url: str, *, allow_insecure: bool | None = None) -> None:
    """Raise RefusedUrl unless the platform may POST events to ``url``."""
    if allow_insecure is None:
        allow_insecure = bool(settings.WEBHOOKS_ALLOW_INSECURE)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise RefusedUrl(f"not a valid URL: {exc}") from None
    schemes = {"https", "http"} if allow_insecure else {"https"}
    if parts.scheme not in schemes:
        raise RefusedUrl("the callback URL must use https")
    if not parts.hostname:
        raise RefusedUrl("the callback URL has no host")
    if parts.username or parts.password:
        raise RefusedUrl("credentials in the URL are not allowed; verify the signature instead")
    addresses = _resolve(parts.hostname, port or (443 if parts.scheme == "https" else 80))
    if not addresses:
        raise RefusedUrl(f"{parts.hostname!r} resolves to no address")
    for address in addresses:
        if address.is_loopback and allow_insecure:
            continue
        if not address.is_global or address.is_multicast:
            raise RefusedUrl(f"{parts.hostname!r} resolves to a non-public address ({address})")
