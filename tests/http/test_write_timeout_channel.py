"""The write timeout's rule (http/server.py WriteTimeoutChannel), on a clock the test moves: a
connection with pending output is closed once its output moved less than WRITE_PROGRESS_BYTES
in ``write_timeout_s``, so a client that drips a few bytes at a time cannot hold a thread;
one that reads at a modest rate is never closed. tests/hostile/test_write_timeout.py runs the
real server."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from waitress.channel import HTTPChannel

from tbprof.http import server as server_mod
from tbprof.http.server import WRITE_PROGRESS_BYTES, channel_class_for, write_timeout_from_env

TIMEOUT_S = 4.0
PENDING_BYTES = 100 << 20  # a big answer waiting for the client


class _Socket:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def setsockopt(self, *args: Any) -> None:
        self.calls.append(("setsockopt", *args))

    def shutdown(self, how: int) -> None:
        self.calls.append(("shutdown", how))


class _Clock:
    now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


@pytest.fixture()
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    c = _Clock()
    monkeypatch.setattr(server_mod.time, "monotonic", c)
    return c


def _channel(monkeypatch: pytest.MonkeyPatch, clock: _Clock) -> Any:
    """A channel without a server or a socket: waitress's parts that need them are replaced by
    a flush that sends ``ch.send_per_flush`` bytes (what the client's reading lets through)."""

    def flush(self: Any, do_close: bool = True) -> bool:
        sent = min(self.send_per_flush, self.total_outbufs_len)
        self.total_outbufs_len -= sent
        return sent > 0

    monkeypatch.setattr(HTTPChannel, "__init__", lambda self, *a, **k: None)
    monkeypatch.setattr(HTTPChannel, "_flush_some", flush)
    monkeypatch.setattr(HTTPChannel, "writable", lambda self: bool(self.total_outbufs_len or self.will_close))
    ch = channel_class_for(TIMEOUT_S)()
    ch.total_outbufs_len = PENDING_BYTES
    ch.will_close = False
    ch.addr = ("127.0.0.1", 1)
    ch.socket = _Socket()
    ch.send_per_flush = 0
    return ch


def _drip(ch: Any, clock: _Clock, bytes_per_s: int, seconds: int) -> float | None:
    """The client reads ``bytes_per_s`` each second; returns when the channel was closed."""
    ch.send_per_flush = bytes_per_s
    for _ in range(seconds * 10):
        clock.now_s += 0.1
        if round(clock.now_s * 10) % 10 == 0:
            ch._flush_some()
        ch.writable()
        if ch.will_close:
            return clock.now_s
    return None


def test_a_client_that_reads_nothing_is_closed_after_the_timeout(monkeypatch: pytest.MonkeyPatch,
                                                                 clock: _Clock) -> None:
    ch = _channel(monkeypatch, clock)
    start = clock.now_s
    closed = _drip(ch, clock, 0, 10)
    assert closed is not None and TIMEOUT_S < closed - start <= TIMEOUT_S + 0.1 + 1e-9
    # Closed as a reset (linger 0), shut down so the event loop sees it at once.
    assert ("setsockopt", socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00") in ch.socket.calls
    assert ("shutdown", socket.SHUT_RDWR) in ch.socket.calls


def test_a_dripping_client_is_closed(monkeypatch: pytest.MonkeyPatch, clock: _Clock) -> None:
    # 8 KiB a second moves 32 KiB per 4 s window: under WRITE_PROGRESS_BYTES (64 KiB), so it
    # does not count as reading although some bytes move every second.
    ch = _channel(monkeypatch, clock)
    drip = WRITE_PROGRESS_BYTES // 8
    assert drip * TIMEOUT_S < WRITE_PROGRESS_BYTES
    start = clock.now_s
    closed = _drip(ch, clock, drip, 20)
    assert closed is not None and closed - start <= TIMEOUT_S + 0.1 + 1e-9


def test_a_client_that_reads_slowly_is_not_closed(monkeypatch: pytest.MonkeyPatch, clock: _Clock) -> None:
    # 32 KiB a second: 64 KiB every 2 s, well within each 4 s.
    ch = _channel(monkeypatch, clock)
    assert _drip(ch, clock, WRITE_PROGRESS_BYTES // 2, 60) is None
    assert ch.socket.calls == []


def test_the_clock_starts_when_output_becomes_pending(monkeypatch: pytest.MonkeyPatch, clock: _Clock) -> None:
    """A request that computes for longer than the timeout before answering is not closed: the
    clock starts with its first pending byte, not with the request."""
    ch = _channel(monkeypatch, clock)
    monkeypatch.setattr(HTTPChannel, "write_soon", lambda self, data: len(data))
    ch.total_outbufs_len = 0
    clock.now_s += 10 * TIMEOUT_S  # computing; nothing pending
    assert not ch.writable() and not ch.will_close
    ch.write_soon(b"x")
    ch.total_outbufs_len = PENDING_BYTES
    clock.now_s += TIMEOUT_S / 2
    assert ch.writable() and not ch.will_close


@pytest.mark.parametrize(("raw", "expected"), [("", 60.0), ("  ", 60.0), ("2.5", 2.5), ("86400", 86400.0)])
def test_write_timeout_from_env(raw: str, expected: float) -> None:
    assert write_timeout_from_env({"TBPROF_WRITE_TIMEOUT_S": raw}) == expected
    assert write_timeout_from_env({}) == 60.0


@pytest.mark.parametrize("raw", ["0", "-1", "nan", "inf", "86401", "1e309", "soon"])
def test_write_timeout_from_env_refuses(raw: str) -> None:
    with pytest.raises(ValueError, match="TBPROF_WRITE_TIMEOUT_S"):
        write_timeout_from_env({"TBPROF_WRITE_TIMEOUT_S": raw})
