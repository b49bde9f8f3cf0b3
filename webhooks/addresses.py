"""Which callback URLs the platform will POST to.

In production: https only, and every address the host resolves to must be a
public one, so a webhook cannot be aimed at the platform's own network
(metadata services, databases, admin ports). Where
``WEBHOOKS_ALLOW_INSECURE`` is on (development, tests), plain http and loopback
addresses are allowed too; private ranges never are.

The check runs at registration and again before every delivery (DNS may have
changed in between). A delivery then connects to the address that was checked
(``PinnedUrl``), never resolving the name again, so a name that resolves to a
public address when checked and to a private one a moment later (DNS
rebinding) still reaches only the checked one. The request keeps the name in
its Host header and, over https, in TLS SNI and the certificate check.
Redirects are never followed.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
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


@dataclass(frozen=True)
class PinnedUrl:
    """A checked callback URL, and how to reach the address that was checked."""

    url: str  # the URL with its host replaced by the checked address
    host: str  # the Host header: the URL's own host (and port)
    server_name: str  # the name TLS asks for and checks the certificate against


def check_callback_url(url: str, *, allow_insecure: bool | None = None) -> PinnedUrl:
    """Raise RefusedUrl unless the platform may POST events to ``url``; else say
    where to connect."""
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
    target = httpx.URL(url)
    return PinnedUrl(
        url=str(target.copy_with(host=str(addresses[0]))),
        host=target.netloc.decode("ascii"),
        server_name=target.raw_host.decode("ascii"),
    )
