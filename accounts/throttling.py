"""Request-rate throttles: fixed windows counted in the cache (Redis in production).

DRF's stock throttles keep a list of timestamps per client and rewrite it on
every request, which grows with the rate; an atomic counter per window is
O(1) and safe across web processes.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.cache import cache
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from .access import request_token

PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def parse_rate(rate: str) -> tuple[int, int]:
    """``"600/m"`` -> (600, 60)."""
    count, _, period = rate.partition("/")
    return int(count), PERIODS[period.strip()[:1]]


class ApiRateThrottle(BaseThrottle):
    """``read`` for safe methods, ``write`` for the rest, ``anon`` per address."""

    def __init__(self) -> None:
        self._wait: float | None = None

    def scope_and_ident(self, request: Request) -> tuple[str, str]:
        token = request_token(request)
        if token is not None:
            ident = f"token:{token.pk}"
        elif request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            return "anon", f"addr:{self.get_ident(request)}"
        return ("read" if request.method in SAFE_METHODS else "write"), ident

    def allow_request(self, request: Request, view: Any) -> bool:
        scope, ident = self.scope_and_ident(request)
        rate = settings.API_RATES.get(scope)
        if not rate:
            return True
        limit, period = parse_rate(rate)
        now = time.time()
        window = int(now // period)
        key = f"throttle:{scope}:{ident}:{period}:{window}"
        try:
            count = cache.incr(key)  # one round trip in the common case
        except ValueError:  # the window's first request
            count = 1 if cache.add(key, 1, timeout=period + 1) else cache.incr(key)
        if count <= limit:
            return True
        self._wait = (window + 1) * period - now
        return False

    def wait(self) -> float | None:
        return self._wait
