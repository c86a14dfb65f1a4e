"""The fake server's HTTP side: a threading server that tracks its
connections, and the handler that writes each answer: whole, streamed event
by event, dripped, cut off, or never (a hang). What to answer is the fake
server's business (server.py), reached through `Hooks`."""

from __future__ import annotations

import contextlib
import select
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memgpt_lite.testing.script import Cut, Drip
from memgpt_lite.testing.wire import Response, StreamPiece, encode_body, encode_head

# How often a hung answer looks whether the client has hung up.
HANG_POLL_SECONDS = 0.02


@dataclass(frozen=True)
class Hooks:
    """What the handler needs from the server it answers for."""

    # The answer to a request: (method, path, lower-cased headers, body bytes).
    respond: Callable[[str, str, dict[str, str], bytes], Response]
    stopping: threading.Event  # set when the server stops: every wait ends at once
    count_hang: Callable[[int], None]  # +1 when a hang starts, -1 when it ends
    piece_seconds: Callable[[], float]  # the pause before each streamed event but the first


def _client_gone(sock: socket.socket) -> bool:
    """True once the client has closed its end of the connection."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and not sock.recv(1, socket.MSG_PEEK)
    except OSError:
        return True


class AnswerServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that tracks open connections so stop() can close
    kept-alive ones instead of leaving threads blocked on them."""

    daemon_threads = True

    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls getfqdn(), a reverse DNS lookup that can
        # stall on machines with no network.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._open_lock:
            sockets = list(self._open)
        for sock in sockets:
            with contextlib.suppress(OSError):  # already closed by the client
                sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (timeouts, drop tests) is normal here.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the openai client expects
    # Headers and body go out in two writes; with Nagle's algorithm on, the
    # second waits for the client's delayed ACK, adding ~40 ms to every reply.
    disable_nagle_algorithm = True
    server: AnswerServer

    def do_GET(self) -> None:  # noqa: N802 - name required by BaseHTTPRequestHandler
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # keep test output clean

    def _handle(self, method: str) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length, self.close_connection = 0, True
        raw = self.rfile.read(length) if length > 0 else b""
        if len(raw) < length:
            # The client went away mid-request (killed, say): nothing to
            # answer, and nothing it sent was a request to judge.
            self.close_connection = True
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        hooks = self.server.hooks
        response = hooks.respond(method, self.path.split("?", 1)[0], headers, raw)
        # Wake early when the server stops, so stop() never waits on a sleeper.
        if response.delay > 0 and hooks.stopping.wait(response.delay):
            response.body, response.hang = None, False
        if response.hang:
            self._hang()
        if response.body is None:
            self.close_connection = True
            return
        try:
            self._send(response)
        except OSError:  # the client gave up: normal for drips, cuts and timeouts
            self.close_connection = True

    def _send(self, response: Response) -> None:
        if response.events is not None:
            head, body = encode_head(response, None), b"".join(e.data for e in response.events)
        else:
            body = encode_body(response)
            head = encode_head(response, len(body))
        if response.drip is not None:
            self._drip(head + body, response.drip)
        elif response.events is not None:
            self._stream(head, response)
        elif response.cut is not None:  # a plain answer broken off: half its body
            self.wfile.write(head + body[: len(body) // 2])
            self._end_cut(response.cut)
        else:
            self.wfile.write(head + body)

    def _stream(self, head: bytes, response: Response) -> None:
        """Write the events one by one as they would be generated, noting when
        each piece of text went out."""
        hooks = self.server.hooks
        events = response.events or []
        if response.cut is not None:
            events = events[: response.cut.after]
        self.wfile.write(head)
        for n, event in enumerate(events):
            pause = hooks.piece_seconds() if n else 0.0
            if pause and hooks.stopping.wait(pause):
                self.close_connection = True
                return
            if event.text and response.pieces is not None:
                response.pieces.append(StreamPiece(time.perf_counter(), event.index, event.text))
            self.wfile.write(event.data)
        if response.cut is not None:
            self._end_cut(response.cut)

    def _end_cut(self, cut: Cut) -> None:
        if cut.hang:
            self._hang()
        self.close_connection = True  # closed mid-body: the client sees it break off

    def _hang(self) -> None:
        """Say nothing until the client hangs up or the server stops."""
        hooks = self.server.hooks
        hooks.count_hang(1)
        try:
            while not hooks.stopping.wait(HANG_POLL_SECONDS):
                if _client_gone(self.connection):
                    break
        finally:
            hooks.count_hang(-1)

    def _drip(self, data: bytes, drip: Drip) -> None:
        for start in range(0, len(data), drip.chunk):
            if start and self.server.hooks.stopping.wait(drip.interval):
                self.close_connection = True
                return
            self.wfile.write(data[start : start + drip.chunk])
