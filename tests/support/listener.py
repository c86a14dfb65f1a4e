"""A plain TCP socket listening on 127.0.0.1 that counts the connections it
accepts: the target a test expects the server never to reach. Each
connection it accepts is answered with a body no client may ever see."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

# What the listener answers: a test asserts that it reaches no client.
SECRET_ANSWER = "INTERNAL-ONLY: the listener's answer"


@dataclass
class Listener:
    url: str  # as a model endpoint's base URL: http://127.0.0.1:PORT/v1
    port: int
    accepted: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)


def _serve(sock: socket.socket, listener: Listener) -> None:
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:  # the socket was closed: the test is over
            return
        with listener._lock:
            listener.accepted += 1
        with conn:
            body = SECRET_ANSWER.encode()
            conn.sendall(
                b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
                + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )


@contextmanager
def local_listener() -> Iterator[Listener]:
    """A listener on a free port of 127.0.0.1, closed on leaving."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    listener = Listener(url=f"http://127.0.0.1:{port}/v1", port=port)
    thread = threading.Thread(target=_serve, args=(sock, listener), daemon=True)
    thread.start()
    try:
        yield listener
    finally:
        # shutdown wakes the accept() waiting in the thread (close alone does
        # not, on Linux: the join would wait its whole timeout).
        with suppress(OSError):  # (not connected: Linux wakes the accept anyway)
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
        thread.join(5)
        assert not thread.is_alive(), "the listener's thread did not end"
