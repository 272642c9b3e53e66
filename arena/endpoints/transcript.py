"""Every model call kept exactly as sent and received, without repetition: the recording side (scopes).

The HTTP layer records into a `CallSink` (a small protocol below); the run directory provides the sink that writes
`<run>/calls.jsonl` and reads it back (`arena.store.calls`: the line format, `TranscriptWriter`, `read_calls`).

A call is recorded by `Endpoint` when a `scope` is open in the calling task (the runner opens one per episode,
role `agent`, and one per judging, role `judge`): once it was answered (a retried request once, as the attempt
that was answered), or once it failed for good with a response from the server (a rejection such as a context
overflow, or the last of the retries), with that error response. Each call's line goes to the sink as the call
ends (the run writer holds appended lines until its next write: one hand-off per episode's calls). One line per
call:

    {"episode": KEY, "role": "agent"|"judge", "sid": SCOPE, "round": K, "keep": N,
     "request": {...body without messages...}, "add": [...new messages...], "response": {...raw body...}}

plus, for a failed call, `"status"` (the HTTP status) and `"error"` (the client's message); its `response` is
the error body as sent (parsed JSON, or the text). A request that got no response (connection refused, timeout)
is not a call the server answered and is not recorded.

`round` is the call's ordinal (1, 2, ...) among the calls of that role in the scope; `keep` is how many
leading messages are the same as the previous call's of the same scope, `add` the messages after them.
Inside stored messages, an image `data:` URL becomes `{"$image": BLOB_ID, "prefix": "data:...;base64,"}`
(its decoded bytes are a blob) when base64 re-encoding gives back the very same text; a system message and
the `tools` list become `{"$json": BLOB_ID}` (stored once per run per distinct value, as JSON blobs).
`read_calls` reverses all of it, so the request is the parsed body the server got. Headers (the key) are not
part of a body and are never kept.

A scope may carry a recorded request to send again (`arena fork`): see `resent`; a backend playing the episode in
another process ships it with the job (`recorded_request`) and opens its scope there with it.
"""

from __future__ import annotations

import contextvars
import os
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Hashable, Literal, Protocol

import httpx
import orjson

from arena.core.lru import LRU

Role = Literal["agent", "judge"]


class CallSink(Protocol):
    """Where a scope's calls go (the run directory's `arena.store.calls.TranscriptWriter`): `compact_messages` gives
    messages as stored (`payloads`: per message, content index -> the part `serialised_part` made there, or None
    for a message without a content list), `json_ref` a value stored once by reference, `write` appends a call
    record's line (TypeError, with nothing written, for a string JSON cannot carry: a lone surrogate)."""

    def compact_messages(self, messages: list[Any],
                         payloads: "list[dict[int, _Part] | None] | None" = None) -> list[Any]: ...

    def json_ref(self, value: Any) -> dict[str, str]: ...

    def write(self, record: dict[str, Any]) -> None: ...


@dataclass
class Resend:
    """A recorded request (`messages`, `tools`) that stands in for the agent's own rendering of the same rounds."""

    messages: list[Any]
    tools: Any
    own: list[Any] | None = None  # the agent's own messages of its first call, once made


@dataclass
class Scope:
    writer: CallSink | None
    episode: str
    role: Role
    resend: Resend | None = None
    sid: str = ""  # made with the scope's first call line (`_first_sid`): a scope without a call needs none
    calls: int = 0
    previous: list[Any] = field(default_factory=list)
    tools: tuple[list[Any], dict[str, str]] | None = None  # the last `tools` list recorded, and its stored reference
    # the messages of the last body built in the scope and their parts (`_known`; replaced, never changed in place)
    sent: "tuple[list[Any], list[dict[int, _Part] | None]]" = ([], [])


_SCOPE: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("arena_transcript_scope", default=None)


class scope:  # noqa: N801 (named as the function it replaced is called: `with transcript.scope(...)`)
    """Record the model calls made in this task (and the tasks it starts) under `episode` and `role`; nothing is
    recorded when `writer` is None. `resend`, a recorded request body, is sent again as `resent` says. Each call's
    line goes to `writer` as the call ends (so before the episode or verdict it belongs to is stored: the runner
    stores it after the scope)."""

    __slots__ = ("current", "token")

    def __init__(self, writer: CallSink | None, episode: str, role: Role, resend: dict[str, Any] | None = None):
        again = Resend(resend["messages"], resend.get("tools")) if resend else None
        self.current = Scope(writer, episode, role, again) if writer is not None or again else None

    def __enter__(self) -> None:
        self.token = _SCOPE.set(self.current)

    def __exit__(self, *_: Any) -> None:
        _SCOPE.reset(self.token)


def recorded_request() -> dict[str, Any] | None:
    """The recorded request the current scope sends again (`{"messages", "tools"}`, as `scope` takes it), or None:
    what a backend that plays the episode in another process ships with the job, for the scope it opens there."""
    current = _SCOPE.get()
    again = current.resend if current is not None else None
    return {"messages": again.messages, "tools": again.tools} if again is not None else None


def resent(messages: list[Any], tools: Any) -> tuple[list[Any], Any]:
    """The messages and tools to send, given the caller's own (called by `Endpoint` before it builds a body).

    Outside a scope with a recorded request: the caller's own. Inside one (a forked episode), the first call
    sends the recorded messages and tools instead of the caller's `messages` (its own rendering of the same
    rounds), and every later call whose messages start with that first rendering gets the recorded messages in
    its place, so the continuation extends what was really sent. The other body fields (model, sampling,
    extra body) stay the caller's. A caller whose tool mode differs from the recording's (tools sent by one
    and not the other) sends its own messages throughout."""
    current = _SCOPE.get()
    again = current.resend if current is not None else None
    if again is None:
        return messages, tools
    if again.own is None:
        if (tools is None) != (again.tools is None):
            current.resend = None  # type: ignore[union-attr]
            return messages, tools
        again.own = list(messages)
    n = len(again.own)
    if messages[:n] != again.own:
        return messages, tools
    return again.messages + messages[n:], again.tools if tools is not None else None


_LOCK = threading.Lock()  # the smolagents agent records from worker threads


def record(body: bytes, response: Any, failure: dict[str, Any] | None = None) -> None:
    """Record a call from the exact body sent and the parsed response body (for a failed call, the error body,
    and `failure` = `{"status": HTTP status, "error": message}`); no-op outside a recording scope."""
    current = _SCOPE.get()
    if current is not None and current.writer is not None:
        with _LOCK:
            _record(current, orjson.loads(body), response, failure, parsed=True)


def record_params(params: dict[str, Any], response: Any, failure: dict[str, Any] | None = None) -> None:
    """`record` for `Endpoint`, from the fields it serialised (`orjson.dumps(params)`) into the body it sent:
    messages are compared with the previous call's as they are (cheap: the same image parts are the same
    objects) and only the new ones go into the line (a content list read back as plain values from the parts
    `body_pieces` found in it, its image parts stored as blobs), instead of parsing the whole body (megabytes of
    images) on every call. The line is serialised
    from those values at once, and orjson serialises deterministically, so what is recorded is the body's JSON."""
    current = _SCOPE.get()
    if current is not None and current.writer is not None:
        with _LOCK:
            _record(current, params, response, failure, parsed=False)


def _mended_response(response: Any) -> Any:
    """A response holding lone surrogates (a server sent them; its line cannot be written): kept with U+FFFD,
    marked as such."""
    response = _mended(response)
    if isinstance(response, dict):
        response["arena_note"] = "invalid Unicode replaced by U+FFFD"
    return response


def error_body(raw: bytes) -> Any:
    """An error response body as stored: its JSON, else its text."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw.decode("utf-8", "replace")


def _mended(value: Any) -> Any:
    """`value` with every string's lone surrogates replaced by U+FFFD (the response is otherwise as sent)."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {_mended(k): _mended(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mended(v) for v in value]
    return value


def record_exchange(response: httpx.Response) -> None:
    """An httpx response hook (for clients that are not an `Endpoint`, e.g. the openai SDK's under smolagents):
    records an answered chat completion with its exact request body, and a refusal the client will not retry
    (a 4xx other than 408/409/429) with its error body; no-op outside a scope."""
    status = response.status_code
    if _SCOPE.get() is None or not response.url.path.endswith("/chat/completions"):
        return
    if status != 200:
        if 400 <= status < 500 and status not in (408, 409, 429):
            response.read()
            record(response.request.content, error_body(response.content),
                   {"status": status, "error": f"HTTP {status}"})
        return
    response.read()
    try:
        data = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        return  # not a completion: the client raises its own error
    if isinstance(data, dict) and data.get("choices"):
        record(response.request.content, data)


def _record(current: Scope, request: dict[str, Any], response: Any, failure: dict[str, Any] | None,
            parsed: bool) -> None:
    request = dict(request)
    messages = request.pop("messages", [])
    keep = 0
    for old, new in zip(current.previous, messages):
        if old != new:
            break
        keep += 1
    current.previous = messages
    writer = current.writer
    assert writer is not None
    tools = request.get("tools")
    if isinstance(tools, list):
        request["tools"] = None  # stored by reference below, in its place among the fields
    if parsed:
        added = writer.compact_messages(messages[keep:])
    else:  # the values serialised into the body; the line is serialised from them at once, the same JSON
        before, found = current.sent  # the body's messages, as a rule these: their parts as the body found them
        known = found if before == messages else _known(messages, current.sent)  # (each checked where it is used)
        new = known[keep:]  # None: a message without a content list, nothing to make plain
        added = writer.compact_messages([m if p is None else _plain(m, p) for m, p in zip(messages[keep:], new)], new)
    current.calls += 1
    if isinstance(tools, list):
        request["tools"] = _tools_ref(current, writer, tools)
    sid = current.sid or _first_sid(current)
    record = {"episode": current.episode, "role": current.role, "sid": sid, "round": current.calls, "keep": keep,
              "request": request, "add": added, "response": response, **(failure or {})}
    try:
        writer.write(record)
    except TypeError:  # the request was sent as JSON: what JSON cannot carry came with the response
        record["response"] = _mended_response(response)
        writer.write(record)


def _first_sid(current: Scope) -> str:
    """The scope's id (12 random hex digits: unique across the processes and resumes writing one calls.jsonl),
    made with its first call line (`_record` runs under `_LOCK`: calls of one scope may end in other threads)."""
    current.sid = os.urandom(6).hex()  # (what `secrets.token_hex` reads, without its three layers of calls)
    return current.sid


def _tools_ref(current: Scope, writer: CallSink, tools: list[Any]) -> dict[str, str]:
    """The stored reference of a `tools` list: the previous call's of the scope when the list is equal to it (the
    agent sends the same schema objects every round, so the comparison is by identity, item by item), else
    `json_ref` of the list as its JSON carries it. The list is serialised once per scope, not once per call."""
    if current.tools is not None and current.tools[0] == tools:
        return current.tools[1]
    ref = writer.json_ref(tools)
    current.tools = (list(tools), ref)
    return ref


_IMAGE_PART = b'{"type":"image_url","image_url":{"url":"data:'


@dataclass(eq=False)
class _Part:
    """A part made by `serialised_part`: the Fragment, the value it was made from, its bytes, and for an image part
    the bytes its data URL encodes (`payload`, stored by the recorder under `blob_id` once hashed)."""

    fragment: orjson.Fragment
    value: Any
    data: bytes
    payload: bytes | None = None
    blob_id: str | None = None

    def weight(self) -> int:
        return len(self.data) + len(self.payload or b"")


# pre-serialised parts made by `serialised_part`, by id of their Fragment
_PARTS: LRU[int, _Part] = LRU(256, 160 << 20, _Part.weight)
# the same, by the key their callers gave (`serialised_part`)
_SHARED_PARTS: LRU[Hashable, _Part] = LRU(256, 320 << 20, _Part.weight)
PIECE = 1 << 16  # a known part at least this large is sent as its own bytes (`body_pieces`)


_BASE64_DATA_URL = re.compile(r"data:[\w.+-]+/[\w.+-]+;base64,")
_TO_ESCAPE = '"\\\n\r\t\0'  # what could stray into a payload and would need escaping (line breaks: MIME base64)


def serialised_part(part: Any, key: Hashable | None = None, payload: bytes | None = None) -> orjson.Fragment:
    """`part` serialised once, to enter request bodies as it is; the recorder takes `part` itself back for it instead
    of reading megabytes of base64 out of its bytes. `part` must not be changed afterwards. With a `key` (all that
    decides the part's value, such as an image's content address and size setting), `shared_part(key)` gives it
    again while it stays cached, so the episodes showing one image share one copy of its megabytes. `payload`: for
    an image part, the bytes its data URL encodes (the caller vouches for them), which the recorder stores as they
    are instead of decoding the URL.

    An image part `{"type": "image_url", "image_url": {"url": URL}}` (and an optional `"detail"` after the URL)
    whose URL is a base64 `data:` URL with nothing to escape is joined as bytes around its URL: the same JSON as
    orjson's, without orjson's reservation for the worst-case escaping of every character (nine times the URL's
    length, a fresh memory mapping whose pages the kernel must hand over one by one: ~3,600 page faults for a
    4K photo). The caller vouches that such a payload is base64 as `base64.b64encode` writes it (no control
    character); quotes, backslashes, line breaks, tabs and NUL bytes are checked all the same."""
    inner = part.get("image_url") if isinstance(part, dict) and part.get("type") == "image_url" and len(part) == 2 \
        else None
    url = inner.get("url") if isinstance(inner, dict) and set(inner) <= {"url", "detail"} else None
    safe = isinstance(url, str) and url.isascii() and _BASE64_DATA_URL.match(url)
    if safe and not any(c in url for c in _TO_ESCAPE):
        detail = b',"detail":' + orjson.dumps(inner["detail"]) if "detail" in inner else b""
        data = b"".join((b'{"type":"image_url","image_url":{"url":"', url.encode("ascii"), b'"', detail, b"}}"))
    else:
        data = orjson.dumps(part)
    fragment = orjson.Fragment(data)
    made = _Part(fragment, part, data, payload if safe else None)
    _PARTS.put(id(fragment), made)
    if key is not None:
        _SHARED_PARTS.put(key, made)
    return fragment


def shared_part(key: Hashable) -> orjson.Fragment | None:
    """The part `serialised_part` made under `key`, if still cached."""
    shared = _SHARED_PARTS.get(key)
    if shared is None:
        return None
    if _PARTS.get(id(shared.fragment)) is not shared:  # the recorder takes its value back (and `body_pieces` its bytes)
        _PARTS.put(id(shared.fragment), shared)
    return shared.fragment


def body_pieces(params: dict[str, Any]) -> list[bytes]:
    """The JSON body of `params` (`orjson.dumps(params)`, byte for byte once joined) as pieces: the large parts made
    by `serialised_part` inside messages' contents go as their own bytes, between the JSON around them, so a request
    showing a 15 MB photo is not copied into a 15 MB body of its own (and its memory found) at every round. In a
    scope, the parts of the messages the previous body sent already are not looked for again (`_known`)."""
    pieces: list[bytes] = []
    messages = params.get("messages") or []
    current = _SCOPE.get()
    if current is None:
        known = [_known_parts(message) for message in messages]
    else:
        known = _known(messages, current.sent)
        current.sent = (messages[:], known)
    marked_messages = None  # `messages` with the places of the pieces marked, once one is found
    for index, parts in enumerate(known):
        if not parts:
            continue
        message = messages[index]
        content = message["content"]
        marked = None
        for at, entry in parts.items():
            if len(entry.data) >= PIECE and content[at] is entry.fragment:  # (an equal message: the same parts)
                pieces.append(entry.data)
                marked = marked or list(content)
                marked[at] = _MARK  # a NUL byte: never in orjson's output, the place of the piece
        if marked is not None:
            marked_messages = marked_messages or list(messages)
            marked_messages[index] = {**message, "content": marked}
    around = orjson.dumps({**params, "messages": marked_messages}).split(b"\0") if pieces else []
    if len(around) != len(pieces) + 1:  # no piece, or a NUL byte in a part that claimed to be JSON: all in one
        return [orjson.dumps(params)]
    return [piece for pair in zip(around, [*pieces, b""]) for piece in pair if piece]


def _known(messages: list[Any], sent: "tuple[list[Any], list[dict[int, _Part] | None]]") \
        -> list[dict[int, _Part] | None]:
    """`_known_parts` of each message, those of the leading messages equal to the ones `sent` (the scope's previous
    body: a conversation grows by appending) taken from it instead of looked for again. Equal contents hold the very
    same parts (a Fragment equals itself only); a message sent again as the same object with parts is looked at
    again, in case it was changed in place since."""
    before, parts = sent
    keep = 0
    for old, new in zip(before, messages):
        if old != new or (old is new and parts[keep]):
            break
        keep += 1
    return parts[:keep] + [_known_parts(message) for message in messages[keep:]]


def _known_parts(message: Any) -> dict[int, _Part] | None:
    """The parts of `message`'s content list made by `serialised_part` (by index), found by their Fragments; None for
    a message without a content list."""
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return None
    parts = {}
    for at, part in enumerate(content):
        entry = _PARTS.get(id(part)) if isinstance(part, orjson.Fragment) else None
        if entry is not None and entry.fragment is part:  # else not ours (an id reused)
            parts[at] = entry
    return parts


_MARK = orjson.Fragment(b"\0")


def _image_part(part: orjson.Fragment) -> dict[str, Any] | None:
    """A pre-serialised part that is exactly `{"type":"image_url","image_url":{"url":"data:..."}}` with nothing
    to unescape, read without parsing its megabytes of base64; None for any other part."""
    raw = orjson.dumps(part)  # a copy of its bytes (a Fragment shows no other way to them)
    if not (raw.startswith(_IMAGE_PART) and raw.endswith(b'"}}')):
        return None
    url = raw[len(_IMAGE_PART) - 5:-3]
    if b'"' in url or b"\\" in url or not url.isascii():
        return None
    return {"type": "image_url", "image_url": {"url": url.decode("ascii")}}


def _plain(message: Any, parts: dict[int, _Part] | None = None) -> Any:
    """A message that serialises as `message` does, with a content list as the plain JSON values its serialisation
    carries, so that the sink sees its image parts: its `parts` made by `serialised_part` (`_known_parts` when not
    given) taken back as the values they were made from, other Fragments that are image parts read by `_image_part`,
    dict parts as they are; when anything else is left (another Fragment, a value other than a dict), the message
    parsed back from its JSON with those values put in. Any other message as it is."""
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return message
    parts = (_known_parts(message) or {}) if parts is None else parts
    values, unread = list(content), False
    for at, part in enumerate(content):
        if isinstance(part, orjson.Fragment):
            entry = parts.get(at)
            value = entry.value if entry is not None and entry.fragment is part else _image_part(part)
            if value is None:
                unread = True
            else:
                values[at] = value
        elif not isinstance(part, dict):
            unread = True
    if not unread:
        return {**message, "content": values}
    taken = [value is not part for value, part in zip(values, content)]  # the parts not left to read back
    plain = orjson.loads(orjson.dumps({**message, "content": [None if t else p for t, p in zip(taken, content)]}))
    for at, value in enumerate(values):
        if taken[at]:
            plain["content"][at] = value
    return plain
