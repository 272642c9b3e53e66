"""The benchmarks' scripted model server, made to cost as little as a server can for this work (issue 38).

A real model server runs on other hardware; on the 2-core benchmark machine this stub shares the cores with the
harness it answers, so every microsecond it spends is taken from the harness's wall time. It therefore does only
what answering needs:
- one thread per connection, blocking: the request head is read with one `recv_into` into a preallocated buffer,
  the body by its Content-Length with `recv_into(..., MSG_WAITALL)` into a buffer borrowed from a pool shared by
  all connections and given back as soon as the reply is chosen, before the delay (the kernel copies each body
  once; no Python-level copy, no header parser, no json parse). A buffer per connection would cost every new
  connection a zero-filled body-sized allocation, made with the GIL held: ~3 ms for 4 MiB of fresh pages, which
  64 connections opened at once pay in turn (~0.2 s before the last of the first bodies is read). The pool starts
  with `READY` buffers whose pages are touched before the first request (64 x 4 MiB; `ARENA_STUB_BUFFERS`), so
  the first wave's bodies are not read into pages the kernel must fault in and zero first (~15 ms of its 64 reads);
- the benchmark's reply is chosen (`bench/peers.py`) by counting the assistant messages by substring search
  outside the base64 payloads (`bytes.find` of `"assistant"`, each hit checked to be a `"role"` value, as the
  regex `"role"\\s*:\\s*"assistant"` would; the payloads, which hold no quote, skipped by `memchr`) and
  whether the body names `"final_answer"`;
- the replies are encoded once at start-up (the same JSON bytes the `json.dumps` server sent).
`GET .../stats` answers the requests and request-body bytes seen so far, and the server's CPU seconds (`cpu`);
`GET .../timeline` answers, for every request so far, [connection number, when its head was whole, when its body
was read] (seconds since the epoch, `time.time()`), from which `bench/wall_timeline.py` tells when each wave of a
run reached the server.

    serve(delay, answer)   # answer(buffer, length) -> the whole HTTP response, from replies encoded beforehand

`bench/overhead.py` serves its tiny dataset's script with it too (`bench/tiny_stub.py`: a delay drawn per request;
`port` + `reuse_port`: several processes share one port; `buffer`: body buffers sized for its ~20 KB requests).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from typing import Callable, Iterator

HEAD_LIMIT = 1 << 16
BUFFER = 1 << 22  # a body buffer's size (a larger body gets one of its own size)
READY = int(os.environ.get("ARENA_STUB_BUFFERS", "64"))
"""Body buffers made (and their pages touched) before the server answers: as many as bodies arrive at once in the
benchmarks' widest wave, so that no body is read into pages the kernel must first fault in and zero."""
WHITESPACE = b" \t\n\r\f\v"
Answer = Callable[[bytearray, int], bytes]
"""A reply chooser: (the buffer holding the body, the body's length) -> the whole HTTP response."""


def _outside_base64(body: bytes | bytearray, end: int) -> Iterator[tuple[int, int]]:
    """The spans of `body[:end]` outside base64 payloads (from a `;base64,` to the next quote), found by one
    substring search per payload and a `memchr` over it: everything JSON-quoted lies in these spans."""
    at = 0
    while True:
        marker = body.find(b";base64,", at, end)
        if marker < 0:
            yield at, end
            return
        yield at, marker + 8
        at = body.find(b'"', marker + 8, end)
        if at < 0:
            return


def names(body: bytes | bytearray, end: int, needle: bytes) -> bool:
    """Whether `needle`, which starts with a quote, is in `body[:end]` (base64 payloads skipped: they hold no
    quote)."""
    return any(body.find(needle, start, stop) >= 0 for start, stop in _outside_base64(body, end))


def assistant_messages(body: bytes | bytearray, end: int) -> int:
    """How many times `"role"\\s*:\\s*"assistant"` occurs in `body[:end]`, found by substring search outside the
    base64 payloads (a request body is megabytes of base64, which a regex or a substring search walks byte by
    byte: ~0.8 ms per 2.7 MB body)."""
    count = 0
    for start, stop in _outside_base64(body, end):
        at = body.find(b'"assistant"', start, stop)
        while at >= 0:
            count += _is_role_value(body, at)
            at = body.find(b'"assistant"', at + 11, stop)
    return count


def _is_role_value(body: bytes | bytearray, at: int) -> bool:
    """Whether the string at `at` follows `"role"\\s*:\\s*`."""
    j = at
    while j > 0 and body[j - 1] in WHITESPACE:
        j -= 1
    if j == 0 or body[j - 1] != 58:  # ':'
        return False
    j -= 1
    while j > 0 and body[j - 1] in WHITESPACE:
        j -= 1
    return body.endswith(b'"role"', 0, j)


def response(data: bytes, status: bytes = b"200 OK") -> bytes:
    """A whole HTTP/1.1 response answering the JSON `data`."""
    return (b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(data)).encode() + b"\r\n\r\n" + data)


class _Buffers:
    """Body buffers shared by all connections: the `ready` made at start-up, and more whenever more bodies than that
    are read at the same moment."""

    def __init__(self, ready: int = 0, size: int = BUFFER) -> None:
        self.size = size
        self.free: list[bytearray] = [bytearray(size) for _ in range(ready)]  # zero-filled, so already paged in
        self.lock = threading.Lock()

    def take(self, length: int) -> bytearray:
        """A free buffer of at least `length` bytes (a new one if none is free, or the one taken is too small)."""
        with self.lock:
            buffer = self.free.pop() if self.free else None
        return buffer if buffer is not None and len(buffer) >= length else bytearray(max(length, self.size))

    def give(self, buffer: bytearray) -> None:
        with self.lock:
            self.free.append(buffer)


class _Connection:
    """One client connection: reads requests one after the other and answers each."""

    def __init__(self, sock: socket.socket, delay: Callable[[], float], answer: Answer, stats: dict[str, int],
                 lock: threading.Lock, buffers: _Buffers, number: int, arrivals: list[tuple[int, float, float]]):
        self.sock, self.delay, self.answer, self.stats, self.lock = sock, delay, answer, stats, lock
        self.buffers, self.number, self.arrivals = buffers, number, arrivals
        self.head = bytearray(HEAD_LIMIT)

    def serve(self) -> None:
        try:
            kept = 0
            while True:
                kept = self._one(kept)
                if kept < 0:
                    return
        except OSError:
            return
        finally:
            self.sock.close()

    def _one(self, kept: int) -> int:
        """Answer one request whose first `kept` bytes are already in the head buffer; the bytes of the next
        request read along (kept for it), or -1 when the client hung up."""
        head, got = self.head, kept
        end = head.find(b"\r\n\r\n", 0, got)
        while end < 0:
            if got == HEAD_LIMIT:
                raise OSError("request head over 64 KiB")
            n = self.sock.recv_into(memoryview(head)[got:])
            if n == 0:
                return -1
            got += n
            end = head.find(b"\r\n\r\n", 0, got)
        lines = bytes(head[:end]).split(b"\r\n")
        length = next((int(line.split(b":", 1)[1]) for line in lines[1:]
                       if line[:15].lower() == b"content-length:"), 0)
        if lines[0].startswith(b"GET"):
            with self.lock:
                shown = self.arrivals if b"/timeline" in lines[0] else {**self.stats, "cpu": time.process_time()}
                data = json.dumps(shown).encode()
            self.sock.sendall(response(data))
            return self._shift(end + 4, got)
        seen = time.time()
        body = self.buffers.take(length)
        try:
            self._read_body(body, end + 4, got, length)
            read = time.time()
            reply = self.answer(body, length)
        finally:
            self.buffers.give(body)
        with self.lock:
            self.stats["requests"] += 1
            self.stats["bytes"] += length
            self.arrivals.append((self.number, seen, read))
        wait = self.delay()
        if wait:
            time.sleep(wait)
        self.sock.sendall(reply)
        return self._shift(end + 4 + length, got)

    def _read_body(self, body: bytearray, start: int, got: int, length: int) -> None:
        """Read the body into `body[:length]`: what the head's read brought along, then the rest by one `recv_into`
        (MSG_WAITALL)."""
        view = memoryview(body)
        have = min(got - start, length)
        view[:have] = memoryview(self.head)[start:start + have]
        while have < length:
            n = self.sock.recv_into(view[have:length], length - have, socket.MSG_WAITALL)
            if n == 0:
                raise OSError("client hung up mid-body")
            have += n
        view.release()

    def _shift(self, used: int, got: int) -> int:
        """Move the bytes read past this request to the head buffer's start; their number."""
        rest = max(got - used, 0)
        if rest:
            self.head[:rest] = self.head[used:got]
        return rest


def serve(delay: float | Callable[[], float], answer: Answer, *, port: int = 0, reuse_port: bool = False,
          buffer: int = BUFFER, ready: int = READY) -> None:
    """Listen on 127.0.0.1 (the URL, ending in /v1, printed on the first line) and answer every POST with
    `answer(buffer, length)` (the body is `buffer[:length]`; a whole HTTP response, pre-encoded) after `delay`
    seconds (a function: drawn per request). `port` with `reuse_port`: share the port with other processes (Linux
    SO_REUSEPORT spreads the connections over them). `buffer`: the least size of a body buffer, `ready` of them made
    at start-up."""
    stats, lock, buffers = {"requests": 0, "bytes": 0}, threading.Lock(), _Buffers(ready, buffer)
    arrivals: list[tuple[int, float, float]] = []
    wait = delay if callable(delay) else (lambda: delay)
    listener = socket.create_server(("127.0.0.1", port), backlog=512, reuse_port=reuse_port)
    print(f"http://127.0.0.1:{listener.getsockname()[1]}/v1", flush=True)
    number = 0
    while True:
        sock, _ = listener.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        number += 1
        connection = _Connection(sock, wait, answer, stats, lock, buffers, number, arrivals)
        threading.Thread(target=connection.serve, daemon=True).start()
