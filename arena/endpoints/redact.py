"""Credentials out of recorded URLs: userinfo and secret query parameters are masked."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

SECRET_PARAMS = {"key", "api-key", "api_key", "apikey", "token", "sig", "access_token", "auth", "password"}
_URL = re.compile(r"[a-z][a-z0-9+.-]*://[^\s'\"<>]+", re.I)


def redact_url(url: str) -> str:
    """`http://user:KEY@host/v1?key=KEY&x=1` -> `http://***@host/v1?key=***&x=1`; other text unchanged."""
    if "@" not in url and "?" not in url:
        return url  # neither userinfo nor a query: nothing to mask
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = "***@" + parts.netloc.rsplit("@", 1)[1] if "@" in parts.netloc else parts.netloc
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = urlencode([(k, "***" if k.lower() in SECRET_PARAMS else v) for k, v in pairs], safe="*") \
        if any(k.lower() in SECRET_PARAMS for k, _ in pairs) else parts.query
    same = (netloc, query) == (parts.netloc, parts.query)
    return url if same else urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_text(text: str) -> str:
    """Every URL inside `text` redacted (for error messages and logs)."""
    return _URL.sub(lambda m: redact_url(m.group(0)), text) if "://" in text else text
