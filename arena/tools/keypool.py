"""API keys of the paid web providers: a pool read from one environment variable, rotated when a key is
spent, and kept out of every log, message, cassette and run file.

A variable holds one key or a comma-separated pool (`SERPER_API_KEY=k1,k2,k3`). Keys are named by
position only ("key 2 of $SERPER_API_KEY"). A provider asks for the current key, and reports a key as
spent when the provider answers that it is out of credit or not authorised; the pool then moves to the
next key. When every key is spent the pool raises `KeysExhausted` (a `ToolOutage`: the episode ends as
an error, and `arena resume` re-runs it once new keys are set), with the same message for every later
call, which makes no request.

Every key (and anything else passed to `register_secret`) is masked by `scrub` and by a logging filter
on the `httpx` logger, which logs request URLs (SerpAPI takes its key in the query string).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import dataclass, field

from arena.core.tool import ToolOutage

from arena.tools.web_errors import WebConfigError

logger = logging.getLogger(__name__)

_SECRETS: set[str] = set()
_SECRETS_LOCK = threading.Lock()
_SIGNED_PARAMS = re.compile(r"((?:X-Amz-(?:Signature|Credential|Security-Token))|Signature|AWSAccessKeyId|api_key)"
                            r"=[^&\s\"']+", re.I)
_USERINFO = re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/@\s\"']+@", re.I)


def register_secret(value: str) -> None:
    """Mask `value` (at least 6 characters) wherever `scrub` or the log filter sees it."""
    if value and len(value) >= 6:
        with _SECRETS_LOCK:
            _SECRETS.add(value)


def scrub(text: str) -> str:
    """`text` with registered secrets, URL userinfo and signed-URL parameters replaced by `***`."""
    with _SECRETS_LOCK:
        secrets = sorted(_SECRETS, key=len, reverse=True)
    for secret in secrets:
        text = text.replace(secret, "***")
    text = _USERINFO.sub(r"\1***@", text)
    return _SIGNED_PARAMS.sub(lambda m: f"{m.group(1)}=***", text)


class _ScrubFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = scrub(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


_FILTER = _ScrubFilter()
for _name in ("httpx", "httpcore", __name__):
    logging.getLogger(_name).addFilter(_FILTER)


class KeysExhausted(ToolOutage):
    """Every key of a pool is spent: the provider can serve no more calls in this run."""


@dataclass
class KeyPool:
    """The keys of one environment variable, used in order; thread-safe (providers run in threads)."""

    env: str
    provider: str
    keys: list[str] = field(repr=False)
    spent: dict[int, str] = field(default_factory=dict)
    _current: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        for key in self.keys:
            register_secret(key)

    @classmethod
    def from_env(cls, env: str, provider: str, *, required: bool = True) -> "KeyPool":
        """The pool in `$env`; WebConfigError naming the variable when it is unset or empty and `required`
        (a replay needs no key: its pool may be empty, and any call then fails as KeysExhausted)."""
        raw = os.environ.get(env, "")
        keys = [k.strip() for k in raw.split(",") if k.strip()]
        if not keys and required:
            raise WebConfigError(f"{provider} needs an API key: set the environment variable {env} to one key or "
                                 f"a comma-separated pool (or name another variable with web_api_key_env / "
                                 f"lens_api_key_env)")
        return cls(env=env, provider=provider, keys=keys)

    def label(self, index: int) -> str:
        return f"key {index + 1} of {len(self.keys)} in ${self.env}"

    def current(self) -> tuple[int, str]:
        """(index, key) of the key to use now; KeysExhausted when none is left."""
        with self._lock:
            if self._current >= len(self.keys):
                raise KeysExhausted(self._exhausted_message())
            return self._current, self.keys[self._current]

    def spend(self, index: int, reason: str) -> None:
        """Mark key `index` spent (`reason`: what the provider answered) and move on to the next one.

        Reports for a key already left behind (two threads saw the same refusal) change nothing."""
        reason = scrub(reason)
        with self._lock:
            if index != self._current:
                return
            self.spent[index] = reason
            self._current += 1
            if self._current < len(self.keys):
                logger.warning("%s: %s is spent (%s); rotating to %s", self.provider, self.label(index), reason,
                               self.label(self._current))
            else:
                logger.error("%s", self._exhausted_message())

    def _exhausted_message(self) -> str:
        if not self.keys:
            return f"{self.provider}: no API key is set in ${self.env}"
        why = "; ".join(f"key {i + 1}: {r}" for i, r in sorted(self.spent.items()))
        return (f"{self.provider}: all {len(self.keys)} API key(s) in ${self.env} are spent ({why}); the run's "
                f"{self.provider} calls stop here. Add credit or new keys, then `arena resume` the run.")
