"""calls.jsonl: every model call of a run, compact (images and repeated JSON as blobs), and read back exactly.

The line format (what `arena.endpoints.transcript` records while an episode is played, through the `CallSink` it is
given; `TranscriptWriter` here is the run directory's sink):

    {"episode": KEY, "role": "agent"|"judge", "sid": SCOPE, "round": K, "keep": N,
     "request": {...body without messages...}, "add": [...new messages...], "response": {...raw body...}}

plus `"status"` and `"error"` for a failed call (`CallRecord`). `keep` is how many leading messages are the same as
the previous call's of the same scope, `add` the messages after them. Inside stored messages an image `data:` URL
becomes `{"$image": BLOB_ID, "prefix": "data:...;base64,"}` (its decoded bytes a blob) when base64 re-encoding
gives back the very same text; a system message and the `tools` list become `{"$json": BLOB_ID}`. `read_calls`
reverses all of it, so a request comes back as the parsed body the server got. Headers (the key) are never kept.
"""

from __future__ import annotations

import base64
import binascii
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Protocol

import orjson
from pydantic import ValidationError

from arena.core.blobs import BlobStore
from arena.core.jsonl import append_line

from .records import CallRecord

CALLS_FILE = "calls.jsonl"
IMAGE_CACHE = 32  # data URLs remembered (the same task image goes out in every episode of it)
_MIME_EXT = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif"}


class PayloadPart(Protocol):
    """A pre-serialised part (`arena.endpoints.transcript._Part`): `value`, the part it was made from, and for an image
    part the bytes its data URL encodes, which the writer stores as they are, remembering the blob id on the part."""

    value: Any
    payload: bytes | None
    blob_id: str | None


class TranscriptWriter:
    """Appends compact call records to `<run_dir>/calls.jsonl`; bytes go to the run's blob store.

    `append(path, data)` does the appending of one or more whole lines (default: `arena.core.jsonl.append_line`
    without fsync, here and now); the runner passes its writer's, which appends off the event loop and fsyncs before
    the episode is stored."""

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

    def payload_ref(self, part: "PayloadPart", url: str) -> dict[str, str]:
        """The stored form of `url`, a data URL made from `part.payload` (`serialised_part`): the payload stored as
        it is (hashed once per process), nothing decoded."""
        head = url[:url.index(",") + 1]
        assert part.payload is not None
        part.blob_id = self.blobs.put(part.payload, _MIME_EXT.get(head[5:-8], "bin"), blob_id=part.blob_id)
        return {"$image": part.blob_id, "prefix": head}

    def compact_message(self, message: Any, payloads: dict[int, "PayloadPart"] | None = None) -> Any:
        """`message` as stored: a system message as a JSON blob, image data URLs as blobs (`payloads`: pre-serialised
        parts by index in the content; a part that is the `value` of its entry, whose `payload` is not None, is
        stored from the bytes its URL encodes)."""
        if not isinstance(message, dict):
            return message
        if message.get("role") == "system":
            return self.json_ref(message)
        content = message.get("content")
        if not isinstance(content, list):
            return message
        parts = list(content)
        for i, part in enumerate(content):
            known = payloads[i] if payloads and i in payloads else None
            if known is not None and known.value is part and known.payload is not None:  # a data URL part
                image = part["image_url"]
                parts[i] = {**part, "image_url": {**image, "url": self.payload_ref(known, image["url"])}}
                continue
            image = part["image_url"] if isinstance(part, dict) and "image_url" in part else None
            if isinstance(image, dict) and isinstance(image.get("url"), str):
                parts[i] = {**part, "image_url": {**image, "url": self.image_ref(image["url"])}}
        return {**message, "content": parts}

    def compact_messages(self, messages: list[Any],
                         payloads: "list[dict[int, PayloadPart] | None] | None" = None) -> list[Any]:
        """`compact_message` of each message, with `payloads[i]` as its payloads when given."""
        if payloads is None:
            return [self.compact_message(message) for message in messages]
        return [self.compact_message(message, parts) for message, parts in zip(messages, payloads)]

    def write(self, record: dict[str, Any]) -> None:
        """Append a call record's calls.jsonl line; TypeError, with nothing written, for a string JSON cannot carry
        (a lone surrogate)."""
        self.append(self.path, orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))




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
            if isinstance(item, dict) and item.get("episode") == episode:
                try:
                    CallRecord.model_validate(item)
                except ValidationError as exc:
                    err = exc.errors()[0]
                    field = ".".join(str(p) for p in err["loc"]) or "(line)"
                    raise ValueError(f"{path}:{lineno}: not a valid call record: field {field}: {err['msg']}") from None
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
