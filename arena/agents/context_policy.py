"""What a chat agent leaves out of the transcript to fit a server's image and context limits.

`plan_elision` decides, for one request, which returned images and which old
observation texts are replaced by a one-line placeholder; the task images, the
question and the latest observation always stay. `learn_limit` reads a server's
rejection and says which limit it revealed, so the agent can apply it and retry;
`learn_body_limit` reads a 413 (a proxy's or the server's body-size limit) as a
request-size budget, which the agent meets by leaving out the oldest returned images.

Wordings recognised (each server's own text, matched loosely on its numbers):
- vLLM (0.6 to 0.11, `vllm/multimodal/processing.py`, `_validate_mm_counts` / the
  per-prompt multimodal limit): "At most {limit} {modality}(s) may be provided in one
  prompt." (followed by " Set `--limit-mm-per-prompt` to increase this limit." when
  the model supports more);
- vLLM 0.10-0.11 (`vllm/entrypoints/openai/serving_engine.py`, `_validate_input`):
  "This model's maximum context length is {N} tokens. However, your request has {M}
  input tokens. Please reduce the length of the input messages.";
- vLLM before 0.10 and DeepSeek/OpenAI legacy: "This model's maximum context length is
  {N} tokens. However, you requested {T} tokens ({M} in the messages, {C} in the
  completion). Please reduce the length of the messages or completion.";
- vLLM V1 engine (the default engine from vLLM 0.8; `vllm/v1/engine/processor.py`,
  `Processor._validate_model_input`, as in 0.8-0.10): "The decoder prompt (length {M}) is
  longer than the maximum model length of {N}. Make sure that `max_model_len` is no
  smaller than the number of text tokens plus multimodal tokens. ..." (400
  `BadRequestError`; "decoder" is the prompt type, "encoder" for encoder-decoder models);
- vLLM 0.11+ (`serving_engine.py`, the completion-room check): "This model's maximum
  context length is {N} tokens. However, you requested {C} output tokens and your prompt
  contains at least {M} input tokens, for a total of at least {T} tokens. ...";
- OpenAI API (error code `context_length_exceeded`): "This model's maximum context
  length is {N} tokens. However, your messages resulted in {M} tokens. Please reduce
  the length of the messages.";
- SGLang (`python/sglang/srt/managers/tokenizer_manager.py`): "The input ({M} tokens)
  is longer than the model's context length ({N} tokens)." and "Requested token count
  exceeds the model's maximum context length of {N} tokens. You requested a total of
  {T} tokens: {M} tokens from the input messages and {C} tokens for the completion. ...";
- vLLM 0.6-0.8 (same check, older text, e.g. vllm-project/vllm#9739, #17092): "At most
  {limit} image(s) may be provided in one request.";
- Ollama (`server/prompt.go`, mllama models such as llama3.2-vision): "this model only
  supports one image while more than one image requested" (a limit of 1);
- Azure OpenAI (Azure/azure-rest-api-specs#46145): "Exceeded maximum number of images
  ({N}) allowed in the request.";
- OpenAI-compatible gateways: "Too many images in request. Max is {N}." (reported in
  the-open-agent/openagent#874), "... but the model supports a maximum of {N} images."
  (microsoft/vscode#306919);
- Anthropic API (anthropics/claude-code#24541): "too many images and documents: {A} +
  {B} > {N}" and "Too much media: {D} document pages + {A} images > {N}";
- TGI (`router/src/validation.rs`, `ValidationError`, 422 `{"error", "error_type":
  "validation"}`): "Input validation error: `inputs` tokens + `max_new_tokens` must be
  <= {N}. Given: {M} `inputs` tokens and {C} `max_new_tokens`" and "Input validation
  error: `inputs` must have less than {N} tokens. Given: {M}";
- llama.cpp server (`exceed_context_size_error`): "request ({M} tokens) exceeds the
  available context size ({N} tokens), try increasing it"; older builds without numbers:
  "the request exceeds the available context size, try increasing it" (or "... try
  increasing the context size or enable context shift");
- LM Studio 0.3: "Trying to keep the first {M} tokens when context the overflows.
  However, the model is loaded with context length of only {N} tokens, which is not
  enough. ..."; LM Studio 0.4: "Context size has been exceeded." (no numbers).
A context wording without numbers teaches a limit of `UNSTATED` times the rejected
request's estimate (each further rejection shrinks it again).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from arena.core.agent import AgentError

_IMAGE_LIMITS = [
    re.compile(r"at most (\d+) image\(s\) may be provided in one (?:prompt|request)", re.I),  # vLLM
    re.compile(r"maximum number of images \((\d+)\) allowed", re.I),  # Azure OpenAI
    re.compile(r"too many images in request\. max is (\d+)", re.I),
    re.compile(r"model supports a maximum of (\d+) images", re.I),
    re.compile(r"too many images and documents: \d+ \+ \d+ > (\d+)", re.I),  # Anthropic
    re.compile(r"too much media: \d+ document pages \+ \d+ images > (\d+)", re.I),  # Anthropic
]
_ONE_IMAGE = re.compile(r"only supports one image while more than one image requested", re.I)  # Ollama
_MAX_CONTEXT = [
    re.compile(r"maximum context length is (\d+) tokens", re.I),
    re.compile(r"longer than the model's context length \((\d+) tokens\)", re.I),
    re.compile(r"maximum context length of (\d+) tokens", re.I),
    re.compile(r"`max_new_tokens` must be <= (\d+)", re.I),  # TGI
    re.compile(r"`inputs` must have less than (\d+) tokens", re.I),  # TGI
    re.compile(r"exceeds the available context size \((\d+) tokens\)", re.I),  # llama.cpp
    re.compile(r"loaded with context length of only (\d+) tokens", re.I),  # LM Studio 0.3
    re.compile(r"prompt \(length \d+\) is longer than the maximum model length of (\d+)", re.I),  # vLLM V1
]
_INPUT_TOKENS = [
    re.compile(r"your request has (\d+) input tokens", re.I),
    re.compile(r"\((\d+) in the messages", re.I),
    re.compile(r"your messages resulted in (\d+) tokens", re.I),
    re.compile(r"the input \((\d+) tokens\)", re.I),
    re.compile(r"(\d+) tokens from the input messages", re.I),
    re.compile(r"Given: (\d+) `inputs` tokens", re.I),  # TGI
    re.compile(r"must have less than \d+ tokens\. Given: (\d+)", re.I),  # TGI
    re.compile(r"request \((\d+) tokens\) exceeds the available context size", re.I),  # llama.cpp
    re.compile(r"trying to keep the first (\d+) tokens", re.I),  # LM Studio 0.3
    re.compile(r"prompt \(length (\d+)\) is longer than the maximum model length", re.I),  # vLLM V1
    re.compile(r"your prompt contains at least (\d+) input tokens", re.I),  # vLLM 0.11+
]
_CONTEXT_UNSTATED = re.compile(r"exceeds the available context size|context size has been exceeded", re.I)
# When the server gives no input count, aim this far below its stated limit; when it states no
# limit at all, aim at this share of the rejected request.
SAFETY, UNSTATED = 0.9, 0.75


@dataclass
class Limits:
    """Image, context and request-size limits of one endpoint; context tokens in the agent's own estimate,
    `max_request_bytes` in bytes of the JSON body (a proxy's or server's body limit, learned from a 413)."""

    max_images: int | None = None
    max_context_tokens: int | None = None
    max_request_bytes: int | None = None

    def merged(self, other: "Limits") -> "Limits":
        """The tighter of two sets of limits (`self` itself when `other` sets none: limits are never changed in
        place, a learned one replaces the object)."""
        if other.max_images is None and other.max_context_tokens is None and other.max_request_bytes is None:
            return self

        def low(a: int | None, b: int | None) -> int | None:
            return b if a is None else a if b is None else min(a, b)

        return Limits(low(self.max_images, other.max_images), low(self.max_context_tokens, other.max_context_tokens),
                      low(self.max_request_bytes, other.max_request_bytes))

    def as_dict(self) -> dict[str, int]:
        return {k: v for k, v in (("max_images", self.max_images), ("max_context_tokens", self.max_context_tokens),
                                  ("max_request_bytes", self.max_request_bytes)) if v is not None}


_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(bytes|byte|b|kib|kb|k|mib|mb|m|gib|gb)\b", re.I)
_UNITS = {"b": 1, "byte": 1, "bytes": 1, "k": 1024, "kb": 1000, "kib": 1024, "m": 1 << 20, "mb": 1000 ** 2,
          "mib": 1 << 20, "gb": 1000 ** 3, "gib": 1 << 30}
BODY_SHARE = 0.5  # a 413 that names no size and follows no accepted request: aim at half the refused body


def learn_body_limit(message: str, sent: int, largest_accepted: int = 0) -> int:
    """The request-size budget (bytes) a 413 Payload Too Large reveals.

    A size the server names ("... limit of 20 MB", "max 1048576 bytes") is taken at `SAFETY`; a proxy's page names
    none (nginx's `client_max_body_size`: "413 Request Entity Too Large"), so the limit lies between the largest
    body the endpoint accepted (`largest_accepted`) and the refused one (`sent`): the budget is the middle of that
    interval (a further 413 halves it again), or `BODY_SHARE` of the refused body when none was accepted yet."""
    named = [float(n) * _UNITS[unit.lower()] for n, unit in _SIZE.findall(message)]
    named = [n for n in named if 0 < n < sent] if sent else named
    if named:
        return max(1, int(max(named) * SAFETY))
    if 0 < largest_accepted < sent:
        return (largest_accepted + sent) // 2
    return max(1, int(sent * BODY_SHARE))


def _first(patterns: list[re.Pattern], text: str) -> int | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return None


def learn_limit(message: str, estimate: int, completion_reserve: int = 0) -> Limits | None:
    """The limit a rejection reveals, or None when it is not an image or context limit.

    `estimate` is the agent's token estimate of the rejected request; a context limit is
    converted into the agent's units with the server's own count of the request when given."""
    images = _first(_IMAGE_LIMITS, message)
    if images is not None or _ONE_IMAGE.search(message):
        return Limits(max_images=images if images is not None else 1)
    limit = _first(_MAX_CONTEXT, message)
    if limit is None:
        if _CONTEXT_UNSTATED.search(message) and estimate > 0:
            return Limits(max_context_tokens=max(1, int(estimate * UNSTATED)))
        return None
    served = _first(_INPUT_TOKENS, message)
    ratio = served / estimate if served and estimate else 1.0
    room = max(limit - completion_reserve, limit // 4)
    return Limits(max_context_tokens=max(1, int(room * SAFETY / max(ratio, 1e-6))))


def learn_from_rejection(error: str, server_message: str, estimate: int, completion_reserve: int,
                         learned: Limits, applied: Limits, auto: bool) -> Limits:
    """The agent's learned limits after the server refused a request (`error`, quoting `server_message`)
    that was sent within `applied` and estimated at `estimate` tokens; the turn is then sent again.

    Raises AgentError `rejected` when the refusal states no limit, `context_overflow` when it does but
    learning is off or the tighter limit changes nothing (trimming cannot fit it)."""
    found = learn_limit(server_message, estimate, completion_reserve)
    if found is None:
        raise AgentError(error, finish_reason="rejected")
    tighter = learned.merged(found)
    if not auto or applied.merged(tighter) == applied:
        raise AgentError(f"{error} (no context trimming fits it)", finish_reason="context_overflow")
    return tighter


@dataclass
class Observed:
    """One past observation as the policy sees it: its round, text size and images (img_idx, tokens)."""

    round: int
    text_tokens: int
    images: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Elision:
    images: set[int] = field(default_factory=set)
    texts: set[int] = field(default_factory=set)
    reason: str | None = None
    over: bool = False  # still above the context limit with everything elidable gone


PLACEHOLDER_TOKENS = 30


def image_placeholder(index: int) -> str:
    return (f"[img_idx {index} left out of the context to fit the model's limits; to see it again, crop it "
            f"again (img_idx {index})]")


def text_placeholder(round_: int) -> str:
    return f"[the tool output of round {round_} was left out of the context to fit the model's context length]"


def plan_elision(limits: Limits, n_task_images: int, fixed_tokens: int, observed: list[Observed]) -> Elision:
    """Which returned images and observation texts to leave out.

    Images: keep the task images and the most recent returned ones within `max_images`.
    Tokens: drop the oldest returned images first, then the oldest observation texts,
    never the latest observation, until the estimate fits `max_context_tokens`."""
    out = Elision()
    returned = [(index, tokens) for obs in observed for index, tokens in obs.images]
    reasons = []
    if limits.max_images is not None:
        keep = max(limits.max_images - n_task_images, 0)
        dropped = returned[: max(len(returned) - keep, 0)]
        if dropped:
            out.images.update(index for index, _ in dropped)
            reasons.append(f"at most {limits.max_images} images")
    if limits.max_context_tokens is not None:
        total = fixed_tokens + sum(o.text_tokens for o in observed)
        total += sum(t if i not in out.images else PLACEHOLDER_TOKENS for i, t in returned)
        before = len(out.images)
        latest = observed[-1].round if observed else None
        for index, tokens in returned:
            if total <= limits.max_context_tokens:
                break
            if index not in out.images and (not observed or index not in dict(observed[-1].images)):
                out.images.add(index)
                total -= tokens - PLACEHOLDER_TOKENS
        for obs in observed:
            if total <= limits.max_context_tokens:
                break
            if obs.round != latest and obs.text_tokens > PLACEHOLDER_TOKENS:
                out.texts.add(obs.round)
                total -= obs.text_tokens - PLACEHOLDER_TOKENS
        if len(out.images) > before or out.texts:
            reasons.append(f"about {limits.max_context_tokens} context tokens")
        out.over = total > limits.max_context_tokens
    out.reason = " and ".join(reasons) or None
    return out
