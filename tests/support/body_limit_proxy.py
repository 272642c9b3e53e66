"""A reverse proxy on 127.0.0.1 with a request-body limit, answering as nginx does when a body exceeds
`client_max_body_size` (default 1 MB; set lower here): `413 Request Entity Too Large`, nginx's own HTML page,
`Connection: close`, the rest of the body read and thrown away before the connection closes (nginx's lingering
close), so the client can read the answer. Requests within the limit go to `upstream` and its answer comes back.

    with BodyLimitProxy(upstream_base_url, limit=300_000) as proxy:
        ... point the arena at proxy.base_url ...

Source of the page and the headers: nginx 1.24 `src/http/ngx_http_special_response.c` (`ngx_http_error_413_page`
followed by `ngx_http_error_tail`, "nginx/1.24.0" with `server_tokens on`), and `ngx_http_request_body.c` /
`ngx_http_core_module.c` (the length is checked against `client_max_body_size` from the `Content-Length` header,
before the body is read).
"""

from __future__ import annotations

import http.client
import socketserver
import threading
import urllib.parse
from typing import Any

NGINX_413_PAGE = (b"<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n"
                  b"<center><h1>413 Request Entity Too Large</h1></center>\r\n"
                  b"<hr><center>nginx/1.24.0</center>\r\n</body>\r\n</html>\r\n")


class BodyLimitProxy:
    def __init__(self, upstream: str, limit: int):
        self.upstream = urllib.parse.urlsplit(upstream)
        self.limit = limit
        self.refused: list[int] = []  # Content-Length of each refused request
        self.passed: list[int] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                while True:
                    line = self.rfile.readline(65536)
                    if not line:
                        return
                    method, target, _ = line.decode("latin-1").split(" ", 2)
                    headers: dict[str, str] = {}
                    while (header := self.rfile.readline(65536)) not in (b"\r\n", b"\n", b""):
                        name, _, value = header.decode("latin-1").partition(":")
                        headers[name.strip().lower()] = value.strip()
                    length = int(headers.get("content-length", "0"))
                    if length > proxy.limit:
                        with proxy._lock:
                            proxy.refused.append(length)
                        self.wfile.write(b"HTTP/1.1 413 Request Entity Too Large\r\nServer: nginx/1.24.0\r\n"
                                         b"Content-Type: text/html\r\nContent-Length: "
                                         + str(len(NGINX_413_PAGE)).encode() + b"\r\nConnection: close\r\n\r\n"
                                         + NGINX_413_PAGE)
                        self.wfile.flush()
                        left = length
                        while left > 0 and (chunk := self.rfile.read(min(left, 65536))):  # lingering close
                            left -= len(chunk)
                        return
                    body = self.rfile.read(length)
                    with proxy._lock:
                        proxy.passed.append(length)
                    status, reason, content_type, answer = proxy.forward(method, target, headers, body)
                    self.wfile.write(f"HTTP/1.1 {status} {reason}\r\nServer: nginx/1.24.0\r\nContent-Type: "
                                     f"{content_type}\r\nContent-Length: {len(answer)}\r\n\r\n".encode("latin-1")
                                     + answer)
                    self.wfile.flush()

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def forward(self, method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, str, str, bytes]:
        connection = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=60)
        try:
            sent = {k: v for k, v in headers.items() if k not in ("host", "connection", "content-length")}
            connection.request(method, target, body=body, headers=sent)
            response = connection.getresponse()
            return (response.status, response.reason, response.getheader("Content-Type", "application/json"),
                    response.read())
        finally:
            connection.close()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{self.upstream.path}"

    def __enter__(self) -> "BodyLimitProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
