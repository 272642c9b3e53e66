"""What the model was shown at each step, for the viewer's "model input" toggle, read from `<run>/calls.jsonl`.

`CallIndex` makes one streaming pass over the calls file and keeps, per episode key, the byte ranges of the
agent calls of its latest try (the record's leading `episode`, `role` and `sid` fields are read without
parsing the rest). `episode_inputs` then reads one episode's calls and returns them in the stored delta form
(see `arena.endpoints.transcript`): each call keeps `keep` messages of the previous call of the same `sid` and adds
`add`; the page rebuilds the full message list. Messages are made page-safe and bounded: text parts clipped
to `limit` characters, images as blob ids (shown as thumbnails from the viewer's image shards), system
messages and tool schemas as JSON blob ids (stored once, in the same shards), data URLs that were not stored
as blobs replaced by a note of their size.

Steps are matched to calls in order; when the counts differ (a prefix-shared episode whose first rounds were
played by its source, a forked one) the calls are aligned with the last steps. A prefix-shared episode
(`meta.prefix_key`, `meta.prefix_rounds`) gets its source's first calls before its own.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from arena.store.calls import CALLS_FILE
from arena.store.run_index import scan_lines

_HEAD = re.compile(rb'^\{"episode":("(?:[^"\\]|\\.)*"),"role":"(agent|judge)","sid":"([^"\\]*)"')


@dataclass
class CallIndex:
    """Byte ranges of the agent calls of each episode key's latest try in `path`: offset, length, offset, ...
    (a flat array: ~16 bytes a call)."""

    path: Path
    calls: dict[str, array] = field(default_factory=dict)

    @classmethod
    def of_run(cls, run_dir: Path) -> "CallIndex":
        index = cls(Path(run_dir) / CALLS_FILE)
        if not index.path.is_file():
            return index
        sids: dict[str, bytes] = {}
        for offset, line in scan_lines(index.path):
            head = _HEAD.match(line)
            if head is not None:
                if head.group(2) != b"agent":
                    continue
                key, sid = orjson.loads(head.group(1)), head.group(3)
            else:  # another field order: parse the whole line
                try:
                    item = orjson.loads(line)
                    if item.get("role") != "agent":
                        continue
                    key, sid = str(item["episode"]), str(item["sid"]).encode()
                except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
                    continue  # `arena doctor` reports torn or corrupt lines; the viewer shows what it can
            if sids.get(key) != sid:
                sids[key] = sid
                index.calls[key] = array("q")
            index.calls[key].extend((offset, len(line)))
        return index

    def read(self, key: str) -> list[dict[str, Any]]:
        ranges = self.calls.get(key)
        out: list[dict[str, Any]] = []
        if not ranges:
            return out
        with self.path.open("rb") as fh:
            for offset, length in zip(ranges[::2], ranges[1::2]):
                fh.seek(offset)
                try:
                    out.append(orjson.loads(fh.read(length)))
                except orjson.JSONDecodeError:
                    continue
        return out


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters not shown]"


def _part(part: Any, limit: int, images: list[str]) -> list[Any]:
    """One content part as `[kind, value]`: text, image (a blob id) or url (a URL that was sent as such)."""
    if not isinstance(part, dict):
        return ["text", _clip(str(part), limit)]
    if part.get("type") == "text" or "text" in part:
        return ["text", _clip(str(part.get("text", "")), limit)]
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, dict) else image
    if isinstance(url, dict) and isinstance(url.get("$image"), str):
        images.append(url["$image"])
        return ["image", url["$image"]]
    if isinstance(url, str):
        if url.startswith("data:"):
            return ["text", f"[image data URL of {len(url)} characters, kept as text in calls.jsonl]"]
        return ["url", _clip(url, 2000)]
    return ["text", _clip(orjson.dumps(part, default=str).decode(), limit)]


def _message(message: Any, limit: int, images: list[str], texts: list[str]) -> dict[str, Any]:
    if isinstance(message, dict) and set(message) == {"$json"}:
        texts.append(message["$json"])
        return {"ref": message["$json"]}
    if not isinstance(message, dict):
        return {"role": "?", "parts": [["text", _clip(str(message), limit)]]}
    content = message.get("content")
    if isinstance(content, list):
        parts = [_part(p, limit, images) for p in content]
    elif content is None:
        parts = []
    else:
        parts = [["text", _clip(str(content), limit)]]
    view: dict[str, Any] = {"role": str(message.get("role", "?")), "parts": parts}
    rest = {k: v for k, v in message.items() if k not in ("role", "content")}
    if rest:
        view["extra"] = _clip(orjson.dumps(rest, default=str).decode(), limit)
    return view


def call_view(item: dict[str, Any], sid: int, limit: int, images: list[str], texts: list[str]) -> dict[str, Any]:
    """One recorded call for the page: its messages delta, its other parameters, and what the server said of it."""
    request = dict(item.get("request") or {})
    tools = request.pop("tools", None)
    if isinstance(tools, dict) and set(tools) == {"$json"}:
        texts.append(tools["$json"])
        tools = tools["$json"]
    elif tools is not None:
        tools = _clip(orjson.dumps(tools, default=str).decode(), limit)
    response = item.get("response") if isinstance(item.get("response"), dict) else {}
    choices = response.get("choices") if isinstance(response.get("choices"), list) else []
    first = choices[0] if choices and isinstance(choices[0], dict) else {}
    return {"sid": sid, "keep": int(item.get("keep") or 0),
            "add": [_message(m, limit, images, texts) for m in item.get("add") or []],
            "params": _clip(orjson.dumps(request, default=str).decode(), 4000), "tools": tools,
            "finish": first.get("finish_reason"), "usage": response.get("usage")}


def episode_inputs(index: CallIndex, record: dict[str, Any], limit: int = 20_000
                   ) -> tuple[list[dict[str, Any]], list[int | None], list[str], list[str]]:
    """The recorded calls of an episode (page form), the call index of each step (None: none recorded), and
    the image and JSON blob ids they reference."""
    meta = record.get("meta") or {}
    items: list[tuple[int, dict[str, Any]]] = []
    source, rounds = meta.get("prefix_key"), meta.get("prefix_rounds")
    if isinstance(source, str) and isinstance(rounds, int) and rounds > 0:
        items.extend((0, item) for item in index.read(source)[:rounds])
    items.extend((1, item) for item in index.read(record["key"]))
    images: list[str] = []
    texts: list[str] = []
    calls = [call_view(item, sid, limit, images, texts) for sid, item in items]
    steps = record.get("steps") or []
    shift = len(steps) - len(calls)
    of_step = [k - shift if 0 <= k - shift < len(calls) else None for k in range(len(steps))]
    return calls, of_step, list(dict.fromkeys(images)), list(dict.fromkeys(texts))
