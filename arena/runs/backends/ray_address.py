"""Whether the Ray cluster a run names (`--ray-address HOST:PORT`) can be reached, asked before anything is written.

Ray itself, given an address whose GCS does not answer, logs "Failed to connect to GCS" every 5 seconds and keeps
trying for minutes. The run instead opens a TCP connection to the GCS port first, at the address as given and at the
address Ray will actually dial (Ray replaces a loopback host, `127.0.0.1` or `localhost`, by this machine's own
interface address: a head started on 127.0.0.1 alone is then out of reach), each within `CONNECT_TIMEOUT` seconds,
and stops with one line naming the address and what to check. `auto`, `local` and no address are not probed (Ray
finds or starts the cluster itself); `ray://HOST:PORT` (Ray Client) is probed as given. A port that opens but does not
answer as Ray does (`join_cluster`) is given `JOIN_DEADLINE` seconds, then the run stops the same way.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

CONNECT_TIMEOUT = 5.0
"""Seconds each TCP connection to the GCS port may take: two of them stay well within the 30 s a run may spend
before saying a cluster cannot be reached."""
JOIN_DEADLINE = 15.0
"""Seconds `ray.init` may take to join a cluster whose port opened (with the probes, within 30 s in all)."""


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of `HOST:PORT` or `ray://HOST:PORT` (an IPv6 host in brackets), else None."""
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return None
    return host.strip("[]"), int(port)


def _reach(host: str, port: int, timeout: float) -> str | None:
    """Why a TCP connection to host:port fails (None: it opens)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except socket.timeout:
        return f"no answer within {timeout:g} s"
    except OSError as exc:
        return exc.strerror or str(exc)


def dialled_address(address: str) -> str | None:
    """The HOST:PORT Ray dials for a plain `address` (a loopback host replaced by this machine's IP), or None when it
    cannot say (Ray not installed, or an address it does not parse: Ray's own error is clearer then)."""
    try:
        from ray._private.services import canonicalize_bootstrap_address  # Ray is optional: only --backend ray
        return canonicalize_bootstrap_address(address)
    except Exception:
        return None


def ray_address_problem(address: str | None, timeout: float = CONNECT_TIMEOUT) -> str | None:
    """One line saying why the Ray cluster at `address` cannot be reached from here, or None (reachable, or an
    address Ray resolves itself)."""
    if not address or address in ("auto", "local"):
        return None
    given = _host_port(address)
    if given is None:
        return None
    check = (f"check that the cluster is up and reachable from this machine (`ray status --address {address}`), "
             "and on a machine with several network interfaces give the IP the cluster listens on "
             "(RAY_NODE_IP_ADDRESS / `ray start --node-ip-address`)")
    why = _reach(*given, timeout)
    if why is not None:
        return f"--ray-address {address}: Ray's GCS at {given[0]}:{given[1]} cannot be reached ({why}); {check}"
    dialled = None if address.startswith("ray://") else dialled_address(address)
    target = _host_port(dialled) if dialled else None
    if target is None or target == given:
        return None
    why = _reach(*target, timeout)
    if why is None:
        return None
    return (f"--ray-address {address}: Ray dials the GCS at {target[0]}:{target[1]} (it replaces a loopback address "
            f"by this machine's IP), which cannot be reached ({why}); start the head on that IP or give the address "
            f"it listens on; {check}")


def join_cluster(ray: Any, address: str, options: dict[str, Any], deadline: float = JOIN_DEADLINE) -> None:
    """`ray.init(address=address, **options)`, given `deadline` seconds: RuntimeError (one line naming the address)
    when it has not returned by then. Ray's attempt goes on in a daemon thread that ends with the process; while it
    runs Ray sets no SIGTERM handler of its own (not the main thread), so SIGTERM ends the process at once."""
    outcome: dict[str, Any] = {}

    def connect() -> None:
        try:
            ray.init(address=address, **options)
            outcome["joined"] = True
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=connect, name="ray-join", daemon=True)
    thread.start()
    thread.join(deadline)
    if "error" in outcome:
        raise outcome["error"]
    if not outcome:
        raise RuntimeError(f"--ray-address {address}: no Ray cluster answered within {deadline:g} s (the port opens "
                           f"but Ray could not join a cluster there); check it with `ray status --address {address}`, "
                           "and on a machine with several network interfaces give the IP the cluster listens on "
                           "(RAY_NODE_IP_ADDRESS / `ray start --node-ip-address`)")
