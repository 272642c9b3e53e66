"""Token counts for `arena serve`'s `usage`, counted as a vision-language server counts them, by a stated rule
instead of a model's tokenizer: every word and every punctuation mark of a text is a token; each message adds 4
(its role and the chat template's markers); the request's native tool schemas count as their JSON text; an image
counts as a Qwen-VL processor counts it, one token per 28 x 28 patch of the image smart-resized (factor 28, 3,136 to
12,845,056 pixels), plus 2 for its start and end markers. Its size is read from the image's header (a data URL's
bytes); an image that cannot be read counts its 2 markers only.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import re
from typing import Any

from PIL import Image, UnidentifiedImageError

from arena.core.images import IMAGE_FACTOR, MAX_PIXELS, MIN_PIXELS, smart_resize

PER_MESSAGE = 4
IMAGE_MARKERS = 2
_TOKEN = re.compile(r"\w+|[^\w\s]")


def text_tokens(text: str | None) -> int:
    """The tokens of a text: its words and punctuation marks."""
    return len(_TOKEN.findall(text or ""))


def image_tokens(url: str) -> int:
    """The tokens of an image sent as a data URL (see the module docstring)."""
    head, _, data = url.partition(",")
    if not head.startswith("data:") or ";base64" not in head:
        return IMAGE_MARKERS
    try:
        with Image.open(io.BytesIO(base64.b64decode(data))) as image:
            width, height = image.size
    except (binascii.Error, ValueError, OSError, UnidentifiedImageError):
        return IMAGE_MARKERS
    h, w = smart_resize(height, width, IMAGE_FACTOR, MIN_PIXELS, MAX_PIXELS)
    return (h * w) // (IMAGE_FACTOR * IMAGE_FACTOR) + IMAGE_MARKERS


def _content_tokens(content: Any) -> int:
    if isinstance(content, str):
        return text_tokens(content)
    total = 0
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            total += text_tokens(str(part.get("text", "")))
        elif part.get("type") == "image_url":
            url = part.get("image_url")
            total += image_tokens(str(url.get("url", "") if isinstance(url, dict) else url or ""))
    return total


def prompt_tokens(request: dict[str, Any]) -> int:
    """The prompt tokens of a chat request: its messages (texts, images, tool calls) and its tool schemas."""
    total = text_tokens(json.dumps(request["tools"])) if request.get("tools") else 0
    for message in request.get("messages", []):
        if not isinstance(message, dict):
            continue
        total += PER_MESSAGE + _content_tokens(message.get("content"))
        for call in message.get("tool_calls") or []:
            total += text_tokens(json.dumps(call.get("function", {})) if isinstance(call, dict) else "")
    return total
