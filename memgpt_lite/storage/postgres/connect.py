"""Connections: one pool per process and database, and what PostgreSQL's
errors about the server mean for people.

psycopg raises OperationalError alike for a server that is down, a wrong
password, a missing database and a connection lost mid-way, and an
InterfaceError for a closed connection: `server_problem` words them in one line
naming the host and database (never the password). Errors in our SQL keep
their tracebacks.
"""

from __future__ import annotations

import atexit
import functools
import threading
import time
import weakref
from contextlib import AbstractContextManager

import psycopg
import psycopg_pool

from memgpt_lite.errors import BusyError, ReadOnlyError, StoreError
from memgpt_lite.storage.core.errors import NOTHING_CHANGED, worded
from memgpt_lite.storage.location import describe, redacted

CONNECT_TIMEOUT_SECONDS = 10
DRIVER_ERRORS = (psycopg.Error, psycopg_pool.PoolTimeout)  # what psycopg raises
POOL_MAX_SIZE = 10  # connections one process keeps to one database
_pools: dict[str, psycopg_pool.ConnectionPool] = {}
_pools_lock = threading.Lock()


def _configure(conn: psycopg.Connection) -> None:
    # Times come back in UTC, as the store wrote them.
    conn.execute("SET TIME ZONE 'UTC'")
    if "synchronous_commit" not in conn.info.get_parameters().get("options", ""):
        # A commit does not wait for the server's disk flush (a step commits
        # four times: 5 ms each here): the durability of SQLite's WAL with
        # synchronous=NORMAL. Our process crashing loses nothing; the server's
        # machine crashing may lose its last fraction of a second of commits,
        # never corrupt them. `options=-c synchronous_commit=on` in the URL
        # keeps the server's setting.
        conn.execute("SET synchronous_commit = off")


# Every connection: autocommit (the store begins its own transactions), and
# none of psycopg's automatic prepared statements: psycopg deallocates all of
# a session's prepared statements after any ROLLBACK, the store's own
# (batch.py) with them. The statements that run often (a step's, searches,
# inserts) go through batch.py, prepared as psycopg would have.
_CONNECTION_OPTIONS = {
    "autocommit": True,
    "connect_timeout": CONNECT_TIMEOUT_SECONDS,
    "prepare_threshold": None,
}


def connect(url: str) -> psycopg.Connection:
    """A new connection, or a one-line StoreError."""
    with server_errors(url):
        conn = psycopg.connect(url, **_CONNECTION_OPTIONS)
    _configure(conn)
    return conn


# When each pooled connection was last given back (time.monotonic()).
_returned: weakref.WeakKeyDictionary[psycopg.Connection, float] = weakref.WeakKeyDictionary()
CHECK_AFTER_IDLE_SECONDS = 5.0


def _check_if_idle(conn: psycopg.Connection) -> None:
    """Check a connection idle for a while before handing it out (the server
    may have restarted, or a firewall dropped it): one round trip, paid only
    by the first call after a pause, not by every call of a busy process."""
    if time.monotonic() - _returned.get(conn, 0.0) > CHECK_AFTER_IDLE_SECONDS:
        psycopg_pool.ConnectionPool.check_connection(conn)


def give_back(url: str, conn: psycopg.Connection) -> None:
    """Return a connection taken with `pool(url).getconn()`."""
    _returned[conn] = time.monotonic()
    pool(url).putconn(conn)


def pool(url: str) -> psycopg_pool.ConnectionPool:
    """This process's pool for `url`, opened on first use. Connections are
    checked when taken, so one the server dropped is replaced, not handed out."""
    with _pools_lock:
        found = _pools.get(url)
        if found is None or found.closed:
            found = psycopg_pool.ConnectionPool(
                url,
                min_size=1,
                max_size=POOL_MAX_SIZE,
                kwargs=_CONNECTION_OPTIONS,
                configure=_configure,
                check=_check_if_idle,
                name="memgpt-lite",
                open=True,
            )
            _pools[url] = found
        return found


def server_problem(url: str, exc: BaseException) -> StoreError | None:
    """A one-line StoreError for an error about the server or the connection
    (unreachable, refused login, missing database, read-only, lock timeout,
    connection lost); None for any other (an SQL bug keeps its traceback)."""
    where = describe(url)
    if isinstance(exc, psycopg_pool.PoolTimeout):
        return BusyError(f"{where}: no free connection in time; {NOTHING_CHANGED}, try again")
    if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
        return ReadOnlyError(f"{where} is read-only; {NOTHING_CHANGED}")
    if isinstance(exc, psycopg.errors.LockNotAvailable | psycopg.errors.QueryCanceled):
        return BusyError(
            f"{where} is busy: another connection held a lock too long; "
            f"{NOTHING_CHANGED}, try again"
        )
    if isinstance(exc, psycopg.errors.DiskFull):
        return StoreError(f"the disk of the server holding {where} is full; {NOTHING_CHANGED}")
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return StoreError(f"cannot use PostgreSQL {where}: {_reason(url, exc)}")
    return None


def _reason(url: str, exc: BaseException) -> str:
    """The server's words, on one line, without the password or the URL."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    password = psycopg.conninfo.conninfo_to_dict(url).get("password")
    if password:
        text = text.replace(str(password), "***")
    if url in text:
        text = text.replace(url, redacted(url))
    return text


def server_errors(url: str) -> AbstractContextManager[None]:
    """Raise psycopg's errors about the server as `server_problem` words them."""
    return worded(DRIVER_ERRORS, functools.partial(server_problem, url))


def close_pool(url: str) -> None:
    """Close this process's pool for `url` (its connections end)."""
    with _pools_lock:
        found = _pools.pop(url, None)
    if found is not None:
        found.close()


@atexit.register
def close_pools() -> None:
    """Close every pool, so the server sees the connections end at once."""
    for url in list(_pools):
        close_pool(url)
