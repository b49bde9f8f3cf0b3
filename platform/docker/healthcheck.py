"""Container healthcheck for the web image: exit 0 when gunicorn serves a page.

The request carries a Host that DJANGO_ALLOWED_HOSTS accepts; otherwise Django
answers 400 and logs a DisallowedHost error on every probe.
"""

import os
import sys
import urllib.request


def probe_host() -> str:
    hosts = [h.strip() for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "").split(",") if h.strip()]
    if not hosts or hosts[0] == "*":
        return "localhost"
    # ".example.com" allows example.com and its subdomains.
    return hosts[0].lstrip(".")


def main() -> int:
    request = urllib.request.Request(
        "http://127.0.0.1:8000/admin/login/", headers={"Host": probe_host()}
    )
    try:
        with urllib.request.urlopen(request, timeout=4) as response:  # noqa: S310
            return 0 if response.status == 200 else 1
    except OSError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
