"""Every model call kept exactly as sent and received, without repetition (`<run>/calls.jsonl`).

A call is recorded by `Endpoint` when a `scope` is open in the calling task (the runner opens one per episode,
role `agent`, and one per judging, role `judge`): once it was answered (a retried request once, as the attempt
that was answered), or once it failed for good with a response from the server (a rejection such as a context
overflow, or the last of the retries), with that error response. One line per call:

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

import base64
import binascii
import contextlib
import contextvars
import re
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Hashable, Iterator, Literal

import httpx
import orjson

from arena.core.blobs import BlobStore
from arena.core.context_image import LRU
from arena.core.jsonl import append_line

CALLS_FILE = "calls.jsonl"
Role = Literal["agent", "judge"]
IMAGE_CACHE = 32  # data URLs remembered (the same task image goes out in every episode of it)
_MIME_EXT = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif"}


class TranscriptWriter:
    """Appends compact call records to `<run_dir>/calls.jsonl`; bytes go to the run's blob store.

    `append(path, line)` does the appending (default: `arena.core.jsonl.append_line` without fsync, here and now);
    the runner passes its writer's, which appends off the event loop and fsyncs before the episode is stored."""

    def __init__(self, run_dir: str | Path, blobs: BlobStore,
                 append: Callable[[Path, bytes], Any] | None = None):
        self.path = Path(run_dir) / CALLS_FILE
        self.blobs = blobs
        self.append = append or (lambda path, line: append_line(path, line, fsync=False))
        self._json_ids: dict[bytes, str] = {}
        self._images: OrderedDict[str, Any] = OrderedDict()

    def json_ref(self, value: Any) -> dict[str, str]:
        data = orjson.dumps(value)
        blob_id = self._json_ids.get(data)
        if blob_id is None:
            blob_id = self._json_ids[data] = self.blobs.put(data, "json")
        return {"$json": blob_id}

    def image_ref(self, url: str) -> Any:
        ref = self._images.get(url)
        if ref is None:
            ref = self._images[url] = self._image_ref(url)
            if len(self._images) > IMAGE_CACHE:
                self._images.popitem(last=False)
        else:
            self._images.move_to_end(url)
        return ref

    def _image_ref(self, url: str) -> Any:
        head, sep, b64 = url.partition(",")
        if not (sep and url.startswith("data:") and head.endswith(";base64")):
            return url
        try:
            raw = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            return url
        # strict decoding (validate=True) leaves one way to differ from the canonical text: nonzero spare bits
        # in the last group, so re-encoding that group is enough (not the whole image: ~2 ms per MB)
        if base64.b64encode(raw[len(raw) - (len(raw) % 3 or 3):]).decode("ascii") != b64[-4:]:
            return url  # not canonical: keep the text as sent
        ext = _MIME_EXT.get(head[5:-7], "bin")
        return {"$image": self.blobs.put(raw, ext), "prefix": head + ","}

    def payload_ref(self, part: "_Part", url: str) -> dict[str, str]:
        """The stored form of `url`, a data URL made from `part.payload` (`serialised_part`): the payload stored as
        it is (hashed once per process), nothing decoded."""
        head = url[:url.index(",") + 1]
        assert part.payload is not None
        part.blob_id = self.blobs.put(part.payload, _MIME_EXT.get(head[5:-8], "bin"), blob_id=part.blob_id)
        return {"$image": part.blob_id, "prefix": head}

    def compact_message(self, message: Any, payloads: dict[int, "_Part"] | None = None) -> Any:
        """`message` as stored: a system message as a JSON blob, image data URLs as blobs (`payloads`: the parts,
        by index in the content, that carry the bytes their URL encodes)."""
        if not isinstance(message, dict):
            return message
        if message.get("role") == "system":
            return self.json_ref(message)
        content = message.get("content")
        if not isinstance(content, list):
            return message
        parts = []
        for i, part in enumerate(content):
            image = part.get("image_url") if isinstance(part, dict) else None
            if isinstance(image, dict) and isinstance(image.get("url"), str):
                known = payloads.get(i) if payloads else None
                ref = self.payload_ref(known, image["url"]) if known is not None else self.image_ref(image["url"])
                part = {**part, "image_url": {**image, "url": ref}}
            parts.append(part)
        return {**message, "content": parts}

    def write(self, record: dict[str, Any]) -> None:
        self.append(self.path, orjson.dumps(record) + b"\n")


@dataclass
class Resend:
    """A recorded request (`messages`, `tools`) that stands in for the agent's own rendering of the same rounds."""

    messages: list[Any]
    tools: Any
    own: list[Any] | None = None  # the agent's own messages of its first call, once made


@dataclass
class Scope:
    writer: TranscriptWriter | None
    episode: str
    role: Role
    resend: Resend | None = None
    sid: str = field(default_factory=lambda: secrets.token_hex(6))
    calls: int = 0
    previous: list[Any] = field(default_factory=list)


_SCOPE: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("arena_transcript_scope", default=None)


@contextlib.contextmanager
def scope(writer: TranscriptWriter | None, episode: str, role: Role,
          resend: dict[str, Any] | None = None) -> Iterator[None]:
    """Record the model calls made in this task (and the tasks it starts) under `episode` and `role`; nothing is
    recorded when `writer` is None. `resend`, a recorded request body, is sent again as `resent` says."""
    again = Resend(resend["messages"], resend.get("tools")) if resend else None
    token = _SCOPE.set(Scope(writer, episode, role, again) if writer is not None or again else None)
    try:
        yield
    finally:
        _SCOPE.reset(token)


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
        _checked(current, orjson.loads(body), response, failure, parsed=True)


def record_params(params: dict[str, Any], response: Any, failure: dict[str, Any] | None = None) -> None:
    """`record` for `Endpoint`, from the fields it serialised (`orjson.dumps(params)`) into the body it sent:
    messages are compared with the previous call's as they are (cheap: the same image parts are the same
    objects) and only the new ones are serialised and read back, instead of parsing the whole body (megabytes
    of images) on every call. orjson serialises deterministically, so what is recorded is the body's JSON."""
    current = _SCOPE.get()
    if current is not None and current.writer is not None:
        _checked(current, params, response, failure, parsed=False)


def _checked(current: Scope, request: dict[str, Any], response: Any, failure: dict[str, Any] | None,
             parsed: bool) -> None:
    with _LOCK:
        try:
            orjson.dumps(response)
        except TypeError:  # lone surrogates a server sent: kept with U+FFFD, marked as such
            response = _mended(response)
            if isinstance(response, dict):
                response["arena_note"] = "invalid Unicode replaced by U+FFFD"
        _record(current, request, response, failure, parsed)


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
    if parsed:
        added = [writer.compact_message(m) for m in messages[keep:]]
    else:  # plain JSON values, as the body carried them (pre-serialised parts included)
        request = orjson.loads(orjson.dumps(request))
        added = [writer.compact_message(_plain(m), _payloads(m)) for m in messages[keep:]]
    current.calls += 1
    if isinstance(request.get("tools"), list):
        request["tools"] = writer.json_ref(request["tools"])
    writer.write({"episode": current.episode, "role": current.role, "sid": current.sid, "round": current.calls,
                  "keep": keep, "request": request, "add": added, "response": response, **(failure or {})})


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
    _PARTS.put(id(shared.fragment), shared)  # the recorder takes its value back again (and `body_pieces` its bytes)
    return shared.fragment


def body_pieces(params: dict[str, Any]) -> list[bytes]:
    """The JSON body of `params` (`orjson.dumps(params)`, byte for byte once joined) as pieces: the large parts made
    by `serialised_part` inside messages' contents go as their own bytes, between the JSON around them, so a request
    showing a 15 MB photo is not copied into a 15 MB body of its own (and its memory found) at every round."""
    pieces: list[bytes] = []
    messages = []
    for message in params.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(isinstance(p, orjson.Fragment) for p in content):
            marked = []
            for part in content:
                entry = _PARTS.get(id(part)) if isinstance(part, orjson.Fragment) else None
                if entry is not None and entry.fragment is part and len(entry.data) >= PIECE:
                    pieces.append(entry.data)
                    part = _MARK  # a NUL byte: never in orjson's output, the place of the piece
                marked.append(part)
            message = {**message, "content": marked}
        messages.append(message)
    around = orjson.dumps({**params, "messages": messages}).split(b"\0") if pieces else []
    if len(around) != len(pieces) + 1:  # no piece, or a NUL byte in a part that claimed to be JSON: all in one
        return [orjson.dumps(params)]
    return [piece for pair in zip(around, [*pieces, b""]) for piece in pair if piece]


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


def _known_part(part: orjson.Fragment) -> Any:
    """The value a `serialised_part` Fragment was made from (the same objects: their string hashes are kept)."""
    entry = _PARTS.get(id(part))
    return entry.value if entry is not None and entry.fragment is part else None


def _payloads(message: Any) -> dict[int, _Part]:
    """The parts of `message`'s content (by index) made by `serialised_part` with a payload."""
    content = message.get("content") if isinstance(message, dict) else None
    found = {}
    for i, part in enumerate(content if isinstance(content, list) else ()):
        entry = _PARTS.get(id(part)) if isinstance(part, orjson.Fragment) else None
        if entry is not None and entry.fragment is part and entry.payload is not None:
            found[i] = entry
    return found


def _plain(message: Any) -> Any:
    """A message as the plain JSON values its serialisation carries (pre-serialised parts taken back from
    `serialised_part`, else image parts read by `_image_part`, else parsed)."""
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return orjson.loads(orjson.dumps(message))
    fast = {i: _known_part(p) or _image_part(p) for i, p in enumerate(content) if isinstance(p, orjson.Fragment)}
    fast = {i: part for i, part in fast.items() if part is not None}
    plain = orjson.loads(orjson.dumps({**message, "content": [None if i in fast else p for i, p in enumerate(content)]}))
    plain["content"] = [fast.get(i, p) for i, p in enumerate(plain["content"])]
    return plain


def _expand(value: Any, blobs: BlobStore) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$json"}:
            return orjson.loads(blobs.get(value["$json"]))
        if set(value) == {"$image", "prefix"}:
            return value["prefix"] + base64.b64encode(blobs.get(value["$image"])).decode("ascii")
        return {k: _expand(v, blobs) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, blobs) for v in value]
    return value


def read_calls(run_dir: str | Path, episode: str) -> list[dict[str, Any]]:
    """The calls of `episode` (the agent calls of its latest try and the calls of every judging, in the order
    made), each `{"round", "role", "request", "response"}` (plus `"status"` and `"error"` for a failed call)
    with the exact request body rebuilt (messages in their sent order, images as their data URLs)."""
    run_dir = Path(run_dir)
    path, blobs = run_dir / CALLS_FILE, BlobStore(run_dir / "blobs")
    if not path.is_file():
        return []
    lines = []
    with path.open("rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.endswith(b"\n"):
                break  # a line cut short by a kill
            try:
                item = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not JSON ({exc})") from None
            if item.get("episode") == episode:
                lines.append(item)
    latest = [item["sid"] for item in lines if item["role"] == "agent"][-1:]
    calls, previous = [], {}
    for item in lines:
        if item["role"] == "agent" and [item["sid"]] != latest:
            continue
        kept = previous.get(item["sid"], [])[: item["keep"]]
        messages = kept + _expand(item["add"], blobs)
        previous[item["sid"]] = messages
        request = _expand(item["request"], blobs)
        request = {"model": request.pop("model", None), "messages": messages, **request}
        call = {"round": item["round"], "role": item["role"], "request": request, "response": item["response"]}
        calls.append(call | {k: item[k] for k in ("status", "error") if k in item})
    return calls
