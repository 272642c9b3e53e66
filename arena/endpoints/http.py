"""A lean HTTP/1.1 client for model endpoints: keep-alive connections on asyncio protocols, one pool per origin.

Why not httpx: at 64-way, httpx + httpcore + anyio took ~60 % of the harness's CPU per round (py-spy, docs/benchmarks.md,
"Arena overhead baseline"): per request they build several objects, take locks, walk the pool and poll every idle
socket. A model endpoint needs much less: POST a JSON body, read one response. This module does only that.

Contract of `HTTPPool.post(body)`:
- the body (bytes, or a list of pieces sent one after the other without being joined) goes out as given, with
  `Host`, `Content-Length` and the pool's headers; the response is read whole
  (`Content-Length`, `Transfer-Encoding: chunked`, or until the server closes) and decoded if the server
  compressed it anyway (`gzip`/`deflate`; we ask for `identity`);
- connections are kept alive and reused (most recently used first) unless the server answers `Connection: close`
  or HTTP/1.0; an idle connection the server closed leaves the pool when the loop sees it close; at most
  `max_connections` are open, later requests wait for one in order;
- `timeout` bounds the connect and each silence while waiting for the response (as httpx's connect/read timeouts);
- a reused connection that the server closed before answering a byte is replaced once by a new one at once (the
  keep-alive race: servers close idle connections, e.g. uvicorn after 5 s);
- `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY`/`NO_PROXY` are honoured for http(s) proxies (as httpx does): plain http in
  absolute form, https through a `CONNECT` tunnel; the proxy URL's user:password goes as `Proxy-Authorization`;
- every failure to get a response is an `HTTPTransportError` naming what failed (`unreachable` says why when no
  connection could be made: refused, unknown host, TLS, connect timeout); a response of any status is returned,
  not raised;
- an answer that comes before the whole body was handed over (e.g. a 413 from the headers alone) ends the request
  and the connection, so that the rest of the body is never taken by the server as the start of another request
  (over TLS, "handed over" is to asyncio's transport, which may still hold the last of it to encrypt and send).

How the bytes go out: a connection without TLS (plain http, directly or through an http proxy) is driven by the
loop's reader and writer callbacks on its socket (`_SocketChannel`): a request's head and body pieces go to the
kernel straight from their memory, all in one `sendmsg` while the kernel has room, and the sender waits for the
socket to be writable only when its buffer is full, so Python copies no byte of a body (megabytes of images per
request). A TLS connection (https, a CONNECT tunnel, an https proxy) goes through asyncio's transport, which
encrypts: the body is written a slice (`SLICE`) at a time, each once the one before has gone to the kernel.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import re
import socket
import ssl
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass
from typing import Any, Awaitable, Coroutine, Union


class HTTPTransportError(OSError):
    """No response: the connection failed, timed out, or the server broke the protocol. `unanswered`: the server
    closed the connection before sending a byte of its response. `unreachable`: no connection could be made, and
    why (`connection refused`, `unknown host`, `TLS failure`, `connect timeout`, `connection failed`)."""

    def __init__(self, message: str, unanswered: bool = False, unreachable: str | None = None):
        super().__init__(message)
        self.unanswered = unanswered
        self.unreachable = unreachable


def unreachable_kind(exc: BaseException) -> str:
    """Why a connection could not be made, in a few words (see `HTTPTransportError.unreachable`)."""
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return "unknown host"
    if isinstance(exc, ssl.SSLError):
        return "TLS failure"
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "connect timeout"
    return "connection failed"


@dataclass
class HTTPResponse:
    status: int
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    body: bytes

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)


_DEFAULT_PORTS = {"http": 80, "https": 443}
_END_OF_HEAD = b"\r\n\r\n"
_STATUS_LINE = re.compile(r"(HTTP/1\.[^ ]*) ([0-9]+)(?: |\Z)")  # version, status code, then a space or the end
SLICE = 1 << 20  # through a transport (TLS), bodies at least this large are written a slice at a time (`_send`)
READ_SIZE = 1 << 18  # bytes asked of the kernel per read (as asyncio's transports ask)
MAX_BUFFERS = 64  # memory regions handed to one `sendmsg` (the kernel takes up to IOV_MAX, 1024 on Linux)
DIRECT_SOCKETS = hasattr(socket.socket, "sendmsg")  # `_SocketChannel` needs it (not on Windows)
Buffer = Union[bytes, memoryview]


class _SocketChannel:
    """A connection without TLS, driven by the loop's callbacks on its socket instead of an asyncio transport: what
    arrives goes to the protocol as a transport would give it (`data_received`, `eof_received`, `connection_lost`),
    and `send` hands bytes to the kernel straight from the caller's memory, nothing buffered (`get_write_buffer_size`
    is always 0). `close` and `abort` both close at once: nothing is ever left to flush."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket, protocol: "_Connection"):
        self.loop, self.sock, self.protocol = loop, sock, protocol
        self.closed = False
        self._fd = sock.fileno()
        self._writable: asyncio.Future[None] | None = None
        loop.add_reader(self._fd, self._read)
        protocol.connection_made(self)

    def send(self, pieces: list[Buffer]) -> list[Buffer]:
        """Hand `pieces` to the kernel, as much of them as it takes now (one system call); what is left of them:
        nothing once all went, and nothing when the socket failed (the failure closes the channel)."""
        batch = pieces[:MAX_BUFFERS]
        try:
            sent = self.sock.sendmsg(batch)
        except (BlockingIOError, InterruptedError):
            return pieces
        except OSError as exc:
            self._close(exc)
            return []
        if sent == sum(map(len, batch)):
            return pieces[MAX_BUFFERS:]
        for index, piece in enumerate(batch):
            if sent < len(piece):
                return [memoryview(piece)[sent:], *pieces[index + 1:]]
            sent -= len(piece)
        return []  # not reached: the kernel took less than it was given

    def writable(self) -> asyncio.Future[None]:
        """A future done once the kernel can take more bytes (or the channel closed)."""
        self._writable = self.loop.create_future()
        if not self.closed:
            self.loop.add_writer(self._fd, self._wake_writer)
        else:
            self._writable.set_result(None)
        return self._writable

    def get_write_buffer_size(self) -> int:
        return 0

    def close(self) -> None:
        self._close(None)

    abort = close

    def _read(self) -> None:
        try:
            data = self.sock.recv(READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._close(exc)
            return
        if data:
            try:
                self.protocol.data_received(data)
            except Exception as exc:  # a protocol error of ours: the connection cannot be trusted (as a transport does)
                self._close(exc)
                raise
        else:
            self.protocol.eof_received()
            self._close(None)

    def _wake_writer(self) -> None:
        self.loop.remove_writer(self._fd)
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def _close(self, exc: Exception | None) -> None:
        if self.closed:
            return
        self.closed = True
        self.loop.remove_reader(self._fd)
        self._wake_writer()
        self.sock.close()
        self.loop.call_soon(self.protocol.connection_lost, exc)


def _numeric_address(host: str, port: int) -> tuple[socket.AddressFamily, tuple] | None:
    """The address of a host given as an IPv4 or IPv6 literal (no name to look up), else None."""
    for family, address in ((socket.AF_INET, (host, port)), (socket.AF_INET6, (host, port, 0, 0))):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        return family, address
    return None


async def _open_socket(loop: asyncio.AbstractEventLoop, host: str, port: int) -> socket.socket:
    """A connected non-blocking TCP socket to `host`:`port` (TCP_NODELAY, as asyncio's transports set it), each of
    the host's addresses tried in turn; the last one's error when none could be reached. A host given as an IP
    address is not looked up (as asyncio's own connections skip the resolver for one: no thread, no IDNA codec)."""
    error: OSError | None = None
    numeric = _numeric_address(host, port)
    addresses = [(numeric[0], socket.SOCK_STREAM, socket.IPPROTO_TCP, "", numeric[1])] if numeric else \
        await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    for family, kind, proto, _, address in addresses:
        sock = socket.socket(family, kind, proto)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            await loop.sock_connect(sock, address)
            return sock
        except OSError as exc:
            sock.close()
            error = exc
        except BaseException:  # cancelled (the connect timeout)
            sock.close()
            raise
    raise error or OSError(f"no address found for {host}")


class _Connection(asyncio.Protocol):
    """One keep-alive connection; `request` sends a request, and what it returns is awaited for the whole response."""

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout: float):
        self.loop, self.timeout = loop, timeout
        self.transport: Union[asyncio.Transport, _SocketChannel, None] = None
        self.closed = False
        self.answered_before = False  # a response was read on it: a failure before any byte is the keep-alive race
        self._buffer = bytearray()
        self._waiter: asyncio.Future[HTTPResponse] | None = None
        self._head: tuple[int, str, dict[str, str]] | None = None
        self._length: int | None = None  # body length, -1 chunked, None until close
        self._chunks: list[bytes] = []
        self._got_bytes = False
        self._last = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._head_only = False
        self._sending = False  # a body is still being written
        self._drained: asyncio.Future[None] | None = None  # set once the transport's buffer is empty again

    # asyncio.Protocol
    def connection_made(self, transport: Union[asyncio.BaseTransport, _SocketChannel]) -> None:
        self.transport = transport  # type: ignore[assignment]
        if isinstance(transport, asyncio.WriteTransport):
            # paused while anything is left unsent (`_send`); high 1, not 0: asyncio's TLS transport pauses at a size
            # >= high, so 0 paused it after every write, and when the socket had taken it all nothing resumed it
            transport.set_write_buffer_limits(high=1, low=0)

    def pause_writing(self) -> None:
        if self._drained is None or self._drained.done():
            self._drained = self.loop.create_future()

    def resume_writing(self) -> None:
        self._last = self.loop.time()  # the server is reading: not silent
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._waiter.done():
            self._abort()  # bytes nobody asked for: the connection cannot be trusted again
            return
        self._got_bytes = True
        self._buffer += data
        try:
            self._parse()
        except HTTPTransportError as exc:
            self._fail(exc)
            self._abort()
            return
        if self._waiter is not None:  # more of the response to come (a whole one ended the request): not silent
            self._last = self.loop.time()

    def eof_received(self) -> bool:
        return False  # close the transport; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._cancel_timer()
        self.resume_writing()
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        if self._head is not None and self._length is None:  # body delimited by the close
            try:
                self._finish(bytes(self._buffer), keep_alive=False)
            except HTTPTransportError as error:
                self._fail(error)
        else:
            reason = f": {exc}" if exc else ""
            what = "before answering" if not self._got_bytes else "in the middle of its response"
            self._fail(HTTPTransportError(f"RemoteProtocolError: the server closed the connection {what}{reason}",
                                          unanswered=not self._got_bytes))

    # requests
    def request(self, head: bytes, body: list[bytes], head_only: bool = False) -> Awaitable[HTTPResponse]:
        """Send `head` and the `body` pieces; the response, to await (`head_only`: a CONNECT answer, no body). What
        the kernel takes at once goes out now: when that is all of it (most requests), what is awaited is the
        response's own future, with no coroutine between; else the rest goes out as the kernel makes room."""
        assert self.transport is not None and not self.closed
        self._buffer.clear()
        self._head, self._length, self._chunks, self._got_bytes = None, None, [], False
        self._head_only = head_only
        self._waiter = waiter = self.loop.create_future()
        self._last = self.loop.time()
        if self._timer is None:  # one left by an earlier request is due sooner and moves itself on (`_check_timeout`)
            self._timer = self.loop.call_at(self._last + self.timeout, self._check_timeout)
        if isinstance(self.transport, _SocketChannel):
            left = self.transport.send([head, *body])
            return self._answer_after(self._send_rest(self.transport, left), waiter) if left else waiter
        if len(body) == 1 and len(body[0]) < SLICE:
            self.transport.write(head + body[0])
            return waiter
        self.transport.write(head)
        return self._answer_after(self._send(body), waiter)

    @staticmethod
    async def _answer_after(sending: Coroutine[Any, Any, None], waiter: asyncio.Future[HTTPResponse]) -> HTTPResponse:
        """The response, awaited once the rest of its request went out (`sending`)."""
        try:
            await sending
        except BaseException:  # cancelled while sending: nobody will await the response (nor a failure of it)
            waiter.cancel()
            raise
        return await waiter

    async def _send_rest(self, channel: _SocketChannel, left: list[Buffer]) -> None:
        """Hand `left`, what the kernel did not take of a request at once, to it from its own memory, each time its
        buffer has room again. Stops early when the server answered or the connection ended (the response or the
        error is the waiter's)."""
        self._sending = True
        try:
            while left and not self.closed and self._waiter is not None and not self._waiter.done():
                await channel.writable()
                self._last = self.loop.time()  # the server is reading: not silent
                left = channel.send(left)
        finally:
            self._sending = False

    async def _send(self, body: list[bytes]) -> None:
        """Write the `body` pieces a slice at a time, each once the one before has gone to the kernel: the transport
        copies only what the socket did not take at once (<= a slice), not the megabytes of an image request twice
        over (asyncio's transport slices and buffers the rest of a large write). Stops early when the server
        answered or the connection ended (the response or the error is the waiter's)."""
        self._sending = True
        try:
            for piece in map(memoryview, body):
                for start in range(0, len(piece), SLICE):
                    if self.closed or self._waiter is None or self._waiter.done():
                        return
                    self.transport.write(piece[start:start + SLICE])  # type: ignore[union-attr]
                    if self._drained is not None and not self._drained.done():
                        await self._drained
        finally:
            self._sending = False

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    # internals
    def _abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check_timeout(self) -> None:
        """The silence timer: a request that heard nothing for `timeout` fails; an idle connection drops the timer."""
        if self._waiter is None or self._waiter.done():
            self._timer = None
            return
        silent = self.loop.time() - self._last
        if silent >= self.timeout:
            self._timer = None
            self._fail(HTTPTransportError(f"ReadTimeout: no response for {self.timeout:g} s"))
            self._abort()
        else:
            self._timer = self.loop.call_at(self._last + self.timeout, self._check_timeout)

    def _fail(self, exc: BaseException) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc)
        self._waiter = None  # the request is over (its awaiter holds the future)

    def _finish(self, body: bytes, keep_alive: bool) -> None:
        status, _, headers = self._head  # type: ignore[misc]
        encoding = headers["content-encoding"].lower() if "content-encoding" in headers else "identity"
        if encoding in ("gzip", "deflate", "x-gzip"):
            try:
                body = zlib.decompress(body, 47 if encoding != "deflate" else 15)
            except zlib.error:
                try:
                    body = zlib.decompress(body, -15)  # raw deflate, as some servers send it
                except zlib.error as exc:
                    raise HTTPTransportError(f"DecodingError: a {encoding} body that does not decompress: {exc}")
        if self._sending or (self.transport is not None and self.transport.get_write_buffer_size()):
            self._abort()  # an answer before the whole request was sent (e.g. a 413): the rest must not follow
        elif not keep_alive:
            self.close()
        self.answered_before = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(HTTPResponse(status, headers, body))
        self._waiter = None  # the request is over (its awaiter holds the future)

    def _parse(self) -> None:
        while self._head is None:
            end = self._buffer.find(_END_OF_HEAD)
            if end < 0:
                if len(self._buffer) > 1 << 20:
                    raise HTTPTransportError("RemoteProtocolError: response headers longer than 1 MiB")
                return
            head = self._buffer[:end].decode("latin-1")
            del self._buffer[:end + 4]
            status_line, *lines = head.split("\r\n")
            start = _STATUS_LINE.match(status_line)
            if start is None:
                raise HTTPTransportError(f"RemoteProtocolError: not an HTTP/1.x status line: {status_line[:100]!r}")
            version, code = start.groups()
            status = int(code)
            if 100 <= status < 200:
                continue  # an interim response (100 Continue, 103 Early Hints): the real one follows
            headers: dict[str, str] = {}
            for line in lines:
                name, sep, value = line.partition(":")
                if not sep:
                    raise HTTPTransportError(f"RemoteProtocolError: a header line without ':': {line[:100]!r}")
                name, value = name.strip().lower(), value.strip()
                headers[name] = f"{headers[name]}, {value}" if name in headers else value
            self._head = (status, version, headers)
            if self._head_only:
                self._finish(b"", keep_alive=True)
                return
            if status in (204, 304):
                self._length = 0
            elif "chunked" in headers.get("transfer-encoding", "").lower():
                self._length = -1
            elif "content-length" in headers:
                try:
                    self._length = int(headers["content-length"].split(",")[0])
                except ValueError:
                    raise HTTPTransportError(f"RemoteProtocolError: Content-Length {headers['content-length']!r}")
            else:
                self._length = None
        if self._length is None:
            return  # read until the server closes
        if self._length == -1:
            self._parse_chunks()
            return
        if len(self._buffer) >= self._length:
            body = bytes(self._buffer[:self._length])
            del self._buffer[:self._length]
            self._finish(body, self._keep_alive())

    def _parse_chunks(self) -> None:
        buffer = self._buffer
        while True:
            line_end = buffer.find(b"\r\n")
            if line_end < 0:
                return
            size_text = bytes(buffer[:line_end]).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise HTTPTransportError(f"RemoteProtocolError: a chunk size that is not hex: {size_text[:40]!r}")
            if size == 0:
                trailers_end = buffer.find(b"\r\n", line_end + 2)
                while trailers_end > line_end + 2:  # skip trailer lines up to the empty line
                    next_end = buffer.find(b"\r\n", trailers_end + 2)
                    if next_end < 0:
                        return
                    line_end, trailers_end = trailers_end, next_end
                if trailers_end < 0:
                    return
                del buffer[:trailers_end + 2]
                self._finish(b"".join(self._chunks), self._keep_alive())
                return
            if len(buffer) < line_end + 2 + size + 2:
                return
            start = line_end + 2
            self._chunks.append(bytes(buffer[start:start + size]))
            del buffer[:start + size + 2]

    def _keep_alive(self) -> bool:
        _, version, headers = self._head  # type: ignore[misc]
        connection = headers.get("connection", "").lower()
        if version == "HTTP/1.0":
            return "keep-alive" in connection
        return "close" not in connection


@dataclass(frozen=True)
class _Origin:
    scheme: str
    host: str
    port: int

    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == _DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"


def _origin(url: urllib.parse.SplitResult) -> _Origin:
    scheme = url.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ValueError(f"not an http(s) URL: {urllib.parse.urlunsplit(url._replace(netloc=url.hostname or ''))}")
    return _Origin(scheme, url.hostname or "", url.port or _DEFAULT_PORTS[scheme])


def proxy_for(url: str) -> str | None:
    """The http(s) proxy the environment names for `url`, or None (direct, or a NO_PROXY match)."""
    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme.lower()) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass_environment(parts.hostname or "", proxies):
        return None
    if "://" not in proxy:
        proxy = f"http://{proxy}"
    if urllib.parse.urlsplit(proxy).scheme.lower() not in ("http", "https"):
        raise ValueError(f"only http(s) proxies are supported for model endpoints, not {proxy.split('://')[0]}://")
    return proxy


class HTTPPool:
    """Keep-alive connections to one URL's origin; `post(body)` sends `body` to that URL."""

    def __init__(self, url: str, headers: dict[str, str], timeout: float, max_connections: int,
                 ssl_context: ssl.SSLContext | None = None):
        self.url = urllib.parse.urlsplit(url)
        self.origin = _origin(self.url)
        self.timeout, self.max_connections = timeout, max_connections
        self.ssl_context = (ssl_context or ssl.create_default_context()) if self.origin.scheme == "https" else None
        proxy = proxy_for(url)
        self.proxy = urllib.parse.urlsplit(proxy) if proxy else None
        target = urllib.parse.urlunsplit(self.url._replace(netloc=self.origin.authority(), fragment="")) \
            if self.proxy and self.origin.scheme == "http" else \
            (self.url.path or "/") + (f"?{self.url.query}" if self.url.query else "")
        fixed = {"Host": self.origin.authority(), "Accept-Encoding": "identity", **headers}
        if self.proxy and self.origin.scheme == "http" and self.proxy.username is not None:
            fixed["Proxy-Authorization"] = self._proxy_auth()
        self._head = f"POST {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fixed.items())
        self._idle: list[_Connection] = []
        self._open = 0
        self._waiters: collections.deque[asyncio.Future[_Connection | None]] = collections.deque()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def post(self, body: bytes | list[bytes]) -> HTTPResponse:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # connections belong to the loop that opened them
            self._loop, self._idle, self._open, self._waiters = loop, [], 0, collections.deque()
        body = [body] if isinstance(body, bytes) else body
        head = f"{self._head}Content-Length: {sum(map(len, body))}\r\n\r\n".encode("latin-1")
        fresh = False
        while True:
            # most requests: the connection used last is free and open, nothing to wait for
            connection = (None if fresh else self._take_idle()) or await self._acquire()
            reused = connection.answered_before
            try:
                response = await connection.request(head, body)
            except HTTPTransportError as exc:
                self._release(connection)  # the failure closed it
                if fresh or not (reused and exc.unanswered):
                    raise
                # the keep-alive race (the server closed an idle connection as we reused it): once more, on a new one
                fresh = True
                continue
            except BaseException:  # cancelled, e.g. by the caller's own timeout: the connection's state is unknown
                connection.close()
                self._release(connection)
                raise
            self._release(connection)
            return response

    async def aclose(self) -> None:
        for connection in self._idle:
            connection.close()
        self._idle.clear()

    # pool
    def _take_idle(self) -> _Connection | None:
        """An open idle connection, the one used last first (those found closed on the way are let go), or None."""
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed:
                return connection
            self._open -= 1
        return None

    async def _acquire(self) -> _Connection:
        """A new connection, or one a release hands over, once the pool's limit allows (after `_take_idle`)."""
        if self._open >= self.max_connections:
            waiter: asyncio.Future[_Connection | None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                handed = await waiter
            except BaseException:  # cancelled while waiting: pass on what it was handed
                if waiter.done() and not waiter.cancelled():
                    if waiter.result() is not None:
                        self._release(waiter.result())  # type: ignore[arg-type]
                    else:
                        self._open -= 1
                        self._wake()
                raise
            if handed is not None and not handed.closed:
                return handed
            # a slot (None, or a connection that closed meanwhile): already counted, open a new connection in it
        else:
            self._open += 1  # counted while connecting, so the limit holds
        try:
            return await self._connect()
        except BaseException:
            self._open -= 1
            self._wake()
            raise

    def _release(self, connection: _Connection) -> None:
        if connection.closed:
            self._open -= 1
            self._wake()
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(connection)
                return
        self._idle.append(connection)

    def _wake(self) -> None:
        """A slot freed: let the first waiter open a connection of its own."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._open += 1
                waiter.set_result(None)
                return

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        origin = self.origin
        host, port = (self.proxy.hostname or "", self.proxy.port or _DEFAULT_PORTS[self.proxy.scheme]) \
            if self.proxy else (origin.host, origin.port)
        to_proxy_tls = self.proxy is not None and self.proxy.scheme == "https"
        tls = ssl.create_default_context() if to_proxy_tls else self.ssl_context if not self.proxy else None
        where = f"{'proxy ' if self.proxy else ''}{host}:{port}"
        plain = tls is None and not (self.proxy and origin.scheme == "https")  # no TLS now nor in a tunnel later
        try:
            if plain and DIRECT_SOCKETS and isinstance(loop, asyncio.SelectorEventLoop):
                sock = await asyncio.wait_for(_open_socket(loop, host, port), self.timeout)
                connection = _Connection(loop, self.timeout)
                _SocketChannel(loop, sock, connection)
            else:
                _, connection = await asyncio.wait_for(loop.create_connection(
                    lambda: _Connection(loop, self.timeout), host, port, ssl=tls,
                    server_hostname=host if tls else None), self.timeout)
        except asyncio.TimeoutError as exc:
            raise HTTPTransportError(f"ConnectTimeout: connecting to {where} took more than {self.timeout:g} s",
                                     unreachable=unreachable_kind(exc)) from None
        except (OSError, ssl.SSLError) as exc:
            raise HTTPTransportError(f"ConnectError: connecting to {where}: {exc}",
                                     unreachable=unreachable_kind(exc)) from None
        if self.proxy and origin.scheme == "https":
            await self._tunnel(loop, connection, where)
        return connection

    async def _tunnel(self, loop: asyncio.AbstractEventLoop, connection: _Connection, where: str) -> None:
        """CONNECT through the proxy, then TLS to the origin inside the tunnel."""
        authority = self.origin.authority() if ":" in self.origin.authority() else \
            f"{self.origin.authority()}:{self.origin.port}"
        auth = f"Proxy-Authorization: {self._proxy_auth()}\r\n" if self.proxy.username is not None else ""  # type: ignore[union-attr]
        head = f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n{auth}\r\n".encode("latin-1")
        try:
            answer = await connection.request(head, [b""], head_only=True)
            if answer.status != 200:
                raise HTTPTransportError(f"ProxyError: {where} answered CONNECT {authority} with HTTP {answer.status}")
            connection.answered_before = False
            transport = await loop.start_tls(connection.transport, connection, self.ssl_context,  # type: ignore[arg-type]
                                             server_hostname=self.origin.host)
        except (OSError, ssl.SSLError) as exc:
            connection.close()
            raise exc if isinstance(exc, HTTPTransportError) else \
                HTTPTransportError(f"ConnectError: TLS to {self.origin.host} through {where}: {exc}",
                                   unreachable=unreachable_kind(exc)) from None
        connection.connection_made(transport)  # the TLS transport inside the tunnel, set up as a new one

    def _proxy_auth(self) -> str:
        user = urllib.parse.unquote(self.proxy.username or "")  # type: ignore[union-attr]
        password = urllib.parse.unquote(self.proxy.password or "")  # type: ignore[union-attr]
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
