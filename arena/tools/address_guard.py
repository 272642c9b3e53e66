"""The address guard of the live-web tools: which URLs a page fetch or thumbnail download may touch.

Only http(s) URLs; and, unless the run sets `allow_private_hosts` (tests serving pages on 127.0.0.1 do),
none on loopback, private, link-local, reserved, multicast or unspecified IP literals, nor `localhost`
names: a page the agent found on the web must not make the arena read the machine's own network.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from arena.tools.web_errors import PageError


def is_private_host(url: str) -> bool:
    """Loopback, private, link-local or unspecified IP literals, and `localhost` names."""
    host = (urlsplit(url).hostname or "").lower()
    if not host or host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_private or address.is_loopback or address.is_link_local or address.is_unspecified \
        or address.is_reserved or address.is_multicast


def check_fetchable(url: str, allow_private_hosts: bool) -> None:
    """Raise PageError, saying why, for a URL the live-web tools must not fetch."""
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise PageError(f"not an http(s) URL: {url!r}")
    if not allow_private_hosts and is_private_host(url):
        raise PageError(f"refused: {url} is on a loopback or private address")
