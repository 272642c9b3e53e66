"""The model endpoints' HTTP/1.1 client (`arena.endpoints.http`) against raw servers that answer the way real ones do:
chunked bodies with trailers (Starlette's StreamingResponse, nginx), gzip despite `Accept-Encoding: identity`,
HTTP/1.0 bodies delimited by the close (`http.server`'s default), 100 Continue, keep-alive connections closed by
the server while idle (uvicorn closes them after 5 s: `timeout_keep_alive`), a server that never answers, a refused
port, a pool limit, TLS with a certificate from `SSL_CERT_FILE`, and http(s) proxies (absolute form and CONNECT)."""

from __future__ import annotations

import asyncio
import gc
import gzip
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from arena.endpoints.client import Endpoint, EndpointConfig, TransientEndpointError, _ssl_context
from arena.endpoints.http import HTTPPool, HTTPTransportError, proxy_for
from tests.support.openai_server import OpenAIStub

COMPLETION = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                                      "finish_reason": "stop"}]}).encode()


def read_request(conn: socket.socket, pending: bytearray) -> bytes | None:
    """One request (head + Content-Length body) from `conn`, or None when the peer closed."""
    while b"\r\n\r\n" not in pending:
        data = conn.recv(65536)
        if not data:
            return None
        pending += data
    end = pending.index(b"\r\n\r\n") + 4
    head = bytes(pending[:end]).decode("latin-1")
    length = next((int(line.split(":", 1)[1]) for line in head.split("\r\n")
                   if line.lower().startswith("content-length:")), 0)
    while len(pending) < end + length:
        data = conn.recv(65536)
        if not data:
            return None
        pending += data
    request = bytes(pending[:end + length])
    del pending[:end + length]
    return request


Script = Callable[[int, int, bytes], "bytes | tuple[bytes] | None"]  # (connection no., request no., request) -> answer


class Listener:
    """A TCP listener on 127.0.0.1 serving each connection in a thread of its own (`serve(conn, number)`);
    `connections` counts the accepted ones."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port, self.connections = self.sock.getsockname()[1], 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            number, self.connections = self.connections, self.connections + 1
            threading.Thread(target=self.serve, args=(conn, number), daemon=True).start()

    def serve(self, conn: socket.socket, number: int) -> None:
        raise NotImplementedError


class RawServer(Listener):
    """A server whose answers are written byte by byte by `script`; None closes the connection without answering,
    `(answer,)` answers and then closes it (no `Connection: close`: an idle timeout). `requests` keeps every
    request's bytes."""

    def __init__(self, script: Script, tls: ssl.SSLContext | None = None):
        self.script, self.tls = script, tls
        self.requests, self.open_now, self.most_open = [], 0, 0
        self.lock = threading.Lock()
        super().__init__()

    def serve(self, conn: socket.socket, number: int) -> None:
        with self.lock:
            self.open_now += 1
            self.most_open = max(self.most_open, self.open_now)
        try:
            if self.tls:
                conn = self.tls.wrap_socket(conn, server_side=True)
            pending = bytearray()
            for index in range(10**6):
                request = read_request(conn, pending)
                if request is None:
                    return
                with self.lock:
                    self.requests.append(request)
                answer = self.script(number, index, request)
                if answer is None:
                    return
                conn.sendall(answer[0] if isinstance(answer, tuple) else answer)
                if isinstance(answer, tuple):
                    return
        except (OSError, ssl.SSLError):
            return
        finally:
            with self.lock:
                self.open_now -= 1
            conn.close()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/v1/chat/completions"

    def close(self) -> None:
        self.sock.close()


def ok(body: bytes = COMPLETION, *headers: str) -> bytes:
    extra = "".join(f"{h}\r\n" for h in headers)
    return f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


def post(url: str, body: bytes = b"{}", *, timeout: float = 5.0, max_connections: int = 8, times: int = 1,
         ssl_context: ssl.SSLContext | None = None, gap: float = 0.0) -> list:
    async def main() -> list:
        pool = HTTPPool(url, {"Content-Type": "application/json"}, timeout, max_connections, ssl_context)
        results = []
        for _ in range(times):
            results.append(await pool.post(body))
            await asyncio.sleep(gap)
        await pool.aclose()
        return results
    return asyncio.run(main())


def test_content_length_keep_alive_reuses_one_connection() -> None:
    server = RawServer(lambda c, i, r: ok())
    responses = post(server.url, b'{"a": 1}', times=5)
    assert [r.status for r in responses] == [200] * 5 and responses[0].body == COMPLETION
    assert server.connections == 1
    head = server.requests[0].decode()
    assert head.startswith("POST /v1/chat/completions HTTP/1.1\r\n") and f"Host: 127.0.0.1:{server.port}" in head
    assert "Content-Length: 8\r\n" in head and head.endswith('\r\n\r\n{"a": 1}')


def test_chunked_body_with_extensions_and_trailers() -> None:
    def chunked(c: int, i: int, r: bytes) -> bytes:
        parts = [COMPLETION[:10], COMPLETION[10:11], COMPLETION[11:]]
        body = b"".join(f"{len(p):x};ext=1\r\n".encode() + p + b"\r\n" for p in parts)
        return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body + b"0\r\nX-Trailer: t\r\n\r\n"
    server = RawServer(chunked)
    responses = post(server.url, times=2)
    assert all(r.body == COMPLETION for r in responses) and server.connections == 1


def test_gzip_body_though_identity_was_asked() -> None:
    server = RawServer(lambda c, i, r: ok(gzip.compress(COMPLETION), "Content-Encoding: gzip"))
    (response,) = post(server.url)
    assert response.body == COMPLETION
    assert b"Accept-Encoding: identity" in server.requests[0]


def test_http10_body_until_close_and_interim_100() -> None:
    sock = socket.create_server(("127.0.0.1", 0))  # answers with no length, then closes (http.server's HTTP/1.0)

    def serve() -> None:
        for _ in range(2):
            conn, _ = sock.accept()
            read_request(conn, bytearray())
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n")
            time.sleep(0.05)
            conn.sendall(COMPLETION)
            conn.close()
    threading.Thread(target=serve, daemon=True).start()
    responses = post(f"http://127.0.0.1:{sock.getsockname()[1]}/v1/chat/completions", times=2)
    assert [r.body for r in responses] == [COMPLETION, COMPLETION]
    sock.close()


def test_idle_connection_closed_by_the_server_is_replaced() -> None:
    # uvicorn-like: the server closes a kept-alive connection after its idle timeout (here after each answer)
    server = RawServer(lambda c, i, r: (ok(),))
    responses = post(server.url, times=3, gap=0.1)  # the loop sees each close before the next request
    assert [r.status for r in responses] == [200] * 3
    assert server.connections == len(server.requests) == 3  # no request was sent on a closed connection


def test_keep_alive_race_the_server_closes_as_the_request_arrives() -> None:
    # the close is only seen once the request was sent: the request goes once more, on a new connection
    server = RawServer(lambda c, i, r: ok() if i == 0 else None)
    responses = post(server.url, times=2)  # no gap: the second request is written on the reused connection
    assert [r.status for r in responses] == [200, 200]
    assert len(server.requests) == 3 and server.connections == 2


def test_a_fresh_connection_closed_unanswered_is_an_error_not_retried() -> None:
    server = RawServer(lambda c, i, r: None)
    with pytest.raises(HTTPTransportError, match="closed the connection before answering") as caught:
        post(server.url)
    assert caught.value.unanswered and len(server.requests) == 1


def test_server_that_never_answers_times_out() -> None:
    server = RawServer(lambda c, i, r: (time.sleep(3), ok())[1])
    started = time.perf_counter()
    with pytest.raises(HTTPTransportError, match=r"ReadTimeout: no response for 0.5 s"):
        post(server.url, timeout=0.5)
    assert time.perf_counter() - started < 2.5


def test_refused_port_and_endpoint_message() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    with pytest.raises(HTTPTransportError, match=f"ConnectError: connecting to 127.0.0.1:{port}"):
        post(f"http://127.0.0.1:{port}/v1/chat/completions")
    endpoint = Endpoint(EndpointConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=1,
                                       retry_initial=0.01, retry_max=0.01))
    with pytest.raises(TransientEndpointError, match=r"m at http://127.0.0.1:\d+/v1: endpoint unreachable \(connection "
                                                     r"refused\) at http://127.0.0.1:\d+/v1: ConnectError: .* "
                                                     r"\(after 2 attempts\)"):
        asyncio.run(endpoint.chat([{"role": "user", "content": "x"}]))


def test_pool_limit_holds_under_concurrency() -> None:
    server = RawServer(lambda c, i, r: (time.sleep(0.05), ok())[1])

    async def main() -> list:
        pool = HTTPPool(server.url, {}, 5.0, 3)
        results = await asyncio.gather(*(pool.post(b"{}") for _ in range(24)))
        await pool.aclose()
        return results
    results = asyncio.run(main())
    assert len(results) == 24 and all(r.status == 200 for r in results)
    assert server.most_open <= 3 and server.connections == 3


def test_caller_cancellation_frees_the_slot() -> None:
    server = RawServer(lambda c, i, r: (time.sleep(0.3), ok())[1])

    async def main() -> int:
        pool = HTTPPool(server.url, {}, 5.0, 1)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(pool.post(b"{}"), 0.05)
        return (await pool.post(b"{}")).status
    assert asyncio.run(main()) == 200


def test_a_caller_cancelled_while_its_body_is_still_going_out_leaves_no_failure_unretrieved(caplog) -> None:
    """The kernel's buffer is full (the server reads nothing), so the request is still sending when its caller gives
    up: the connection is closed, and the response it will never have fails nobody's future ("Future exception was
    never retrieved", logged by asyncio when such a future is collected)."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True).start()

    async def main() -> None:
        pool = HTTPPool(f"http://127.0.0.1:{listener.getsockname()[1]}/v1", {}, 5.0, 1)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(pool.post(b"x" * (64 << 20)), 0.3)
        await asyncio.sleep(0.05)  # the connection's end is seen
        gc.collect()
    try:
        asyncio.run(main())
    finally:
        listener.close()
        for conn in accepted:
            conn.close()
    assert "never retrieved" not in caplog.text


def test_responses_of_any_status_are_returned_with_headers() -> None:
    server = RawServer(lambda c, i, r: b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\nretry-after-ms: 1500\r\n"
                                       b"Content-Length: 2\r\n\r\n{}")
    (response,) = post(server.url)
    assert response.status == 429 and response.get("Retry-After") == "2" and response.headers["retry-after-ms"] == "1500"


def test_garbage_instead_of_http_is_a_protocol_error() -> None:
    server = RawServer(lambda c, i, r: b"SSH-2.0-OpenSSH_9.2\r\n\r\n")
    with pytest.raises(HTTPTransportError, match="RemoteProtocolError: not an HTTP/1.x status line: 'SSH-2.0"):
        post(server.url)


def test_a_status_line_is_a_version_and_a_three_digit_code_then_a_space_or_its_end() -> None:
    server = RawServer(lambda c, i, r: b"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\n{}")  # no reason phrase
    (response,) = post(server.url)
    assert response.status == 200 and response.body == b"{}"
    for line in (b"HTTP/1.1  200 OK", b"HTTP/1.1 200OK", b"HTTP/2 200 OK", "HTTP/1.1 \u00b200 OK".encode("latin-1")):
        server = RawServer(lambda c, i, r, line=line: line + b"\r\nContent-Length: 2\r\n\r\n{}")
        with pytest.raises(HTTPTransportError, match="not an HTTP/1.x status line"):  # (a superscript digit: a
            post(server.url)  # ValueError before, from int())


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if not shutil.which("openssl"):
        pytest.skip("openssl is needed to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "2", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


def tls_server_context(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*map(str, certificate))
    return context


def test_tls_with_a_certificate_from_ssl_cert_file(certificate, monkeypatch) -> None:
    server = RawServer(lambda c, i, r: ok(), tls=tls_server_context(certificate))
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with pytest.raises(HTTPTransportError, match="CERTIFICATE_VERIFY_FAILED"):
        post(server.url, ssl_context=ssl.create_default_context())  # the system's CAs do not know it
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    _ssl_context.cache_clear()
    try:
        endpoint = Endpoint(EndpointConfig(base_url=server.url.removesuffix("/chat/completions"), model="m"))
        assert asyncio.run(endpoint.chat([{"role": "user", "content": "x"}])).content == "hi"
    finally:
        _ssl_context.cache_clear()


class Proxy(Listener):
    """A forward proxy: absolute-form requests are relayed to their origin, CONNECT opens a tunnel. It records the
    request lines and Proxy-Authorization headers it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []
        super().__init__()

    def serve(self, conn: socket.socket, number: int) -> None:
        pending = bytearray()
        request = read_request(conn, pending)
        if request is None:
            return
        line, *headers = request.split(b"\r\n\r\n")[0].decode().split("\r\n")
        auth = next((h.split(":", 1)[1].strip() for h in headers if h.lower().startswith("proxy-authorization")), None)
        self.seen.append((line, auth))
        method, target, _ = line.split(" ")
        if method == "CONNECT":
            host, port = target.rsplit(":", 1)
            upstream = socket.create_connection((host, int(port)))
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            self._pipe(conn, upstream, bytes(pending))
        else:
            authority = target.split("/")[2]
            host, port = authority.rsplit(":", 1)
            upstream = socket.create_connection((host, int(port)))
            path = "/" + target.split("/", 3)[3]
            upstream.sendall(request.replace(target.encode(), path.encode(), 1) + bytes(pending))
            self._pipe(conn, upstream, b"")

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket, first: bytes) -> None:
        if first:
            b.sendall(first)

        def copy(src: socket.socket, dst: socket.socket) -> None:
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
        threading.Thread(target=copy, args=(b, a), daemon=True).start()
        copy(a, b)


def test_http_proxy_from_the_environment_with_credentials(monkeypatch) -> None:
    proxy = Proxy()
    with OpenAIStub(lambda request: "through the proxy") as server:
        monkeypatch.setenv("HTTP_PROXY", f"http://us%40er:p%3Ass@127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        endpoint = Endpoint(EndpointConfig(base_url=server.base_url, model="m"))
        assert asyncio.run(endpoint.chat([{"role": "user", "content": "x"}])).content == "through the proxy"
    (line, auth), = proxy.seen
    assert line == f"POST {server.base_url}/chat/completions HTTP/1.1"
    assert auth == "Basic dXNAZXI6cDpzcw=="  # base64 of "us@er:p:ss"


def test_https_through_a_connect_tunnel(certificate, monkeypatch) -> None:
    proxy = Proxy()
    server = RawServer(lambda c, i, r: ok(), tls=tls_server_context(certificate))
    monkeypatch.setenv("HTTPS_PROXY", f"127.0.0.1:{proxy.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    context = ssl.create_default_context(cafile=str(certificate[0]))
    responses = post(server.url, times=2, ssl_context=context)
    assert [r.body for r in responses] == [COMPLETION] * 2
    assert proxy.seen == [(f"CONNECT 127.0.0.1:{server.port} HTTP/1.1", None)]  # one tunnel, kept alive
    assert server.requests[0].startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")


def test_no_proxy_and_unsupported_proxies(monkeypatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    assert proxy_for("http://127.0.0.1:8000/v1") is None
    assert proxy_for("http://models.internal/v1") == "http://proxy.invalid:3128"
    monkeypatch.setenv("HTTP_PROXY", "socks5://proxy.invalid:1080")
    with pytest.raises(ValueError, match="only http\\(s\\) proxies"):
        proxy_for("http://models.internal/v1")


@pytest.mark.parametrize("tls", [False, True], ids=["plain socket", "TLS transport"])
def test_an_answer_before_the_whole_body_was_sent_retires_the_connection(tls: bool, request) -> None:
    # a server that refuses a large body from its headers alone (413) and stops reading, keeping the socket open:
    # the unsent rest of that body must never be taken as the start of the next request
    sock = socket.create_server(("127.0.0.1", 0))
    seen: list[bytes] = []
    context = tls_server_context(request.getfixturevalue("certificate")) if tls else None

    def accept() -> socket.socket:
        conn, _ = sock.accept()
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        return context.wrap_socket(conn, server_side=True) if context else conn

    def serve() -> None:
        first = accept()
        head = b""
        while b"\r\n\r\n" not in head:
            head += first.recv(1024)
        first.sendall(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 2\r\n\r\n{}")
        second = accept()
        seen.append(read_request(second, bytearray()) or b"")
        second.sendall(ok())
        time.sleep(30)  # `first` stays open, unread: the client must not wait for it
        first.close()
        second.close()
    threading.Thread(target=serve, daemon=True).start()
    url = f"http{'s' * tls}://127.0.0.1:{sock.getsockname()[1]}/v1/chat/completions"
    client_context = ssl.create_default_context(cafile=str(request.getfixturevalue("certificate")[0])) if tls else None

    async def main() -> list[int]:
        pool = HTTPPool(url, {}, 5.0, 4, client_context)
        big = await pool.post(b"x" * (8 << 20))
        small = await pool.post(b'{"small": true}')
        return [big.status, small.status]
    assert asyncio.run(asyncio.wait_for(main(), 10)) == [413, 200]
    assert seen[0].endswith(b'\r\n\r\n{"small": true}') and seen[0].startswith(b"POST ")


class SlowServer(RawServer):
    """A `RawServer` reading through a small receive buffer: the client's bytes wait for room in the kernel."""

    def serve(self, conn: socket.socket, number: int) -> None:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        super().serve(conn, number)


@pytest.mark.parametrize("tls", [False, True], ids=["plain socket", "TLS transport"])
def test_a_large_body_reaches_a_slow_reader_whole_and_in_order(tls: bool, request) -> None:
    # plain http: handed to the kernel as it makes room (`_SocketChannel`); TLS: several slices
    # (`arena.endpoints.http.SLICE`) written as the server drains a small receive buffer; twice on one connection, so
    # the second request starts exactly where the first body ended
    body = bytes(range(256)) * (12 << 12)  # 12 MiB
    certificate = request.getfixturevalue("certificate") if tls else None
    server = SlowServer(lambda number, index, request: ok(), tls=tls_server_context(certificate) if certificate else None)
    context = ssl.create_default_context(cafile=str(certificate[0])) if certificate else None
    try:
        assert [r.status for r in post(server.url, body, times=2, ssl_context=context)] == [200, 200]
    finally:
        server.close()
    assert server.connections == 1 and len(server.requests) == 2
    assert all(r.endswith(b"\r\n\r\n" + body) for r in server.requests)


# a few pieces, one large, some empty; and more pieces than one `sendmsg` takes (`MAX_BUFFERS`), of many sizes, to a
# slow reader: the kernel takes a part at a time, and what it did not take resumes exactly where it stopped, inside a
# piece or between two
PIECES = {"few": ([b'{"a":', b"x" * (3 << 20), b"", b',"b":', b"y" * 100, b"}"], RawServer),
          "many, slow reader": ([bytes([i % 251]) * (i * 7919 % 120000) for i in range(300)], SlowServer)}  # 18 MB


@pytest.mark.parametrize("case", sorted(PIECES))
def test_a_body_in_pieces_goes_out_joined_with_its_whole_length(case: str) -> None:
    pieces, server_class = PIECES[case]
    server = server_class(lambda number, index, request: ok())
    try:
        assert [r.status for r in post(server.url, pieces, times=2)] == [200, 200]  # type: ignore[arg-type]
    finally:
        server.close()
    joined = b"".join(pieces)
    assert all(r.endswith(b"\r\n\r\n" + joined) and f"Content-Length: {len(joined)}\r\n".encode() in r
               for r in server.requests) and server.connections == 1 and len(server.requests) == 2


def test_plain_http_goes_through_the_socket_channel_and_tls_through_the_transport(certificate) -> None:
    """Which way a connection's bytes go (`arena.endpoints.http` docstring): a plain connection is a `_SocketChannel`
    (the body handed to the kernel from its own memory), a TLS one asyncio's transport."""
    from arena.endpoints.http import _SocketChannel

    async def kind(url: str, context: ssl.SSLContext | None) -> type:
        pool = HTTPPool(url, {}, 5.0, 1, context)
        assert (await pool.post([b"{", b"}"])).status == 200
        (connection,) = pool._idle
        await pool.aclose()
        return type(connection.transport)
    plain, tls = RawServer(lambda c, i, r: ok()), RawServer(lambda c, i, r: ok(), tls=tls_server_context(certificate))
    try:
        assert asyncio.run(kind(plain.url, None)) is _SocketChannel
        context = ssl.create_default_context(cafile=str(certificate[0]))
        assert issubclass(asyncio.run(kind(tls.url, context)), asyncio.Transport)
    finally:
        plain.close()
        tls.close()


def test_an_ip_literal_is_not_looked_up_and_a_name_is(monkeypatch) -> None:
    """A host given as an IP address connects without the resolver (no thread hop, no IDNA codec per connection, as
    asyncio's own connections skip it); a name goes through getaddrinfo."""
    server = RawServer(lambda c, i, r: ok())
    looked_up: list[str] = []
    real = asyncio.BaseEventLoop.getaddrinfo

    async def spy(self, host, *args, **kwargs):
        looked_up.append(host)
        return await real(self, host, *args, **kwargs)
    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", spy)
    assert [r.status for r in post(server.url, times=2)] == [200, 200]
    assert looked_up == []
    assert [r.status for r in post(server.url.replace("127.0.0.1", "localhost"))] == [200]
    assert looked_up == ["localhost"]
    server.close()
