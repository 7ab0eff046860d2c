"""Worker processes forked from a one-shot command, spoken to over pipes: no multiprocessing, no
concurrent.futures, no pickle.

A command (``tbprof summary`` of a pod) forks its workers first thing, while it has no other
thread (executor.py ``ProcessPool.start_early``). A ``multiprocessing`` pool costs the command
its imports before the first fork (multiprocessing, concurrent.futures.process, pickle: ~8 ms
on the path of every worker) and, per batch, pickled tasks and answers handled by two threads of
its own beside the command's. Here each worker has two pipes: jobs in (a length and the caller's
bytes), answers out (a tag, a length and the bytes). The command hands a worker its next job as
soon as it answers, with one more queued in its pipe while there are more jobs than workers (a
worker then does not wait for the command between jobs, and the last jobs go to the workers
free first); the command's side never blocks on one worker (non-blocking pipes, one ``poll``
over all of them).

What can go wrong stays a clean answer: a worker that dies (killed, out of memory) closes its
answer pipe, and its jobs come back as ``DIED``; an exception in the work comes back as its text
(``Failed``); an answer whose header is not one comes back as ``DIED`` and its worker is ended.
A worker ignores SIGINT (the command handles Ctrl-C and ends its workers) and leaves when its
job pipe closes (the command has gone).
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

_JOB = struct.Struct("<Q")  # a job's length
_ANSWER = struct.Struct("<BQ")  # an answer's tag and length
# READY's payload: when the worker was ready, on the clock every process of the machine shares
# (``time.perf_counter``: CLOCK_MONOTONIC on Linux), for ``--timings``.
_CLOCK = struct.Struct("<d")
READY, ANSWER, FAILED = 1, 2, 3
# A length beyond any answer a worker sends (a batch's frame): a damaged pipe, not a message.
MAX_MESSAGE_BYTES = 1 << 36
QUEUED_PER_WORKER = 2  # jobs handed to a worker at once: the one it runs and the next
READ_CHUNK_BYTES = 1 << 20
# A pipe this large holds a batch's whole answer, so a worker can start its next job before the
# command has read it (Linux's default pipe-max-size; a smaller limit keeps the default size).
PIPE_BYTES = 1 << 20
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


class Died:
    """A job lost with its worker (killed, out of memory, or an answer that was not one)."""

    def __repr__(self) -> str:
        return "DIED"


DIED = Died()


@dataclass(frozen=True)
class Failed:
    """The work raised: its exception's type and message."""

    error: str


def _widen(fd: int) -> None:
    try:
        fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:  # above the system's or the user's limit: the default size works, slower
        pass


@dataclass
class _Worker:
    pid: int
    jobs_fd: int  # the write end of its job pipe (non-blocking)
    answers_fd: int  # the read end of its answer pipe (non-blocking)
    ready_at: float | None = None  # its READY's clock reading
    alive: bool = True
    reaped: bool = False
    writing: bool = False  # its job pipe is polled for room (its outbox holds what it did not take)
    inbox: bytearray | None = None  # the header of the answer being read
    tag: int = 0  # the answer's tag, once its header is read
    body: bytearray | None = None  # its payload, as far as read (``body_at``)
    body_at: int = 0
    outbox: bytearray | None = None
    running: deque[int] | None = None  # the indices of the jobs handed to it, oldest first


class ForkedWorkers:
    """``count`` processes forked now from this process, each running ``work`` (bytes in, bytes
    out) on the jobs ``run`` hands it. ``preload`` runs in each worker once every worker is
    forked (a pipe this process closes after the last fork: a worker that imported while the
    others were still being forked took the CPU and the memory locks the forks needed)."""

    def __init__(self, count: int, work: Callable[[bytes], bytes], preload: Callable[[], None]) -> None:
        self.workers: list[_Worker] = []
        # One poll set for the command's side: every live worker's answers, and its jobs while
        # its outbox holds bytes its pipe did not take.
        self._poller = select.poll()
        self._by_fd: dict[int, _Worker] = {}
        self.handed_at: float | None = None  # when the last ``run`` handed out its first jobs
        self.handed = threading.Event()  # set once a ``run`` has written its first jobs to the workers
        gate_read, gate_write = os.pipe()
        ours: list[int] = [gate_write]  # every descriptor a later worker must not keep
        try:
            for _ in range(count):
                jobs_read, jobs_write = os.pipe()
                answers_read, answers_write = os.pipe()
                _widen(answers_write)
                pid = os.fork()
                if pid == 0:  # the worker
                    for fd in (*ours, jobs_write, answers_read):
                        os.close(fd)
                    _serve(gate_read, jobs_read, answers_write, work, preload)  # never returns
                os.close(jobs_read)
                os.close(answers_write)
                os.set_blocking(jobs_write, False)
                os.set_blocking(answers_read, False)
                ours += [jobs_write, answers_read]
                self.workers.append(_Worker(pid, jobs_write, answers_read, inbox=bytearray(),
                                            outbox=bytearray(), running=deque()))
                self._poller.register(answers_read, select.POLLIN)
                self._by_fd[answers_read] = self._by_fd[jobs_write] = self.workers[-1]
        except BaseException:
            self.close(wait=False)
            raise
        finally:
            os.close(gate_read)
            os.close(gate_write)  # the workers start their preload

    def ready_at(self) -> float | None:
        """When the last of the workers was ready (``time.perf_counter``), as far as their
        answers read so far say; None before every live worker has said so."""
        times = [w.ready_at for w in self.workers if w.alive]
        return None if not times or None in times else max(t for t in times if t is not None)

    @property
    def pids(self) -> list[int]:
        return [w.pid for w in self.workers]

    def alive(self) -> int:
        """The workers not known to have died."""
        return sum(w.alive for w in self.workers)

    def wait_ready(self, timeout_s: float = 120.0) -> bool:
        """Waits until every live worker has preloaded (benchmarks, tests); whether they have."""
        deadline = time.monotonic() + timeout_s
        while any(w.alive and w.ready_at is None for w in self.workers):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            for _ in self._events(left):
                pass
        return True

    def run(self, jobs: Sequence[bytes]) -> Iterator[tuple[int, bytearray | Failed | Died]]:
        """Hands the jobs to the workers in order (each its next as it answers) and yields
        ``(job index, answer)`` as answers arrive: the work's bytes (a bytearray, read in
        place), ``Failed`` or ``DIED`` (its worker died; every job it held comes back so). Jobs
        left when every worker has died come back as ``DIED``. Not thread-safe: one ``run`` at
        a time."""
        todo = deque(range(len(jobs)))
        owner: dict[int, _Worker] = {}
        self.handed_at = time.perf_counter()
        pending = len(jobs)
        while pending:
            # A second job queued behind a worker's current one only while there are more jobs
            # than workers: the last ones go to whichever worker is free first.
            queued = QUEUED_PER_WORKER if len(todo) > self.alive() else 1
            for w in self.workers:
                while w.alive and todo and w.running is not None and len(w.running) < queued:
                    i = todo.popleft()
                    assert w.outbox is not None
                    w.outbox += _JOB.pack(len(jobs[i])) + jobs[i]
                    w.running.append(i)
                    owner[i] = w
                self._flush(w)
            self.handed.set()
            if not any(w.alive for w in self.workers):
                for i in [*todo, *owner]:
                    pending -= 1
                    yield i, DIED
                return
            for w, tag, payload in self._events(None):
                assert w.running is not None
                if tag == READY:
                    continue
                if tag is None:  # died: what it held comes back
                    for i in w.running:
                        del owner[i]
                        pending -= 1
                        yield i, DIED
                    w.running.clear()
                    continue
                i = w.running.popleft()
                del owner[i]
                pending -= 1
                yield i, (payload if tag == ANSWER else Failed(payload.decode("utf-8", "replace")))

    def _flush(self, w: _Worker) -> None:
        """Writes what the worker's outbox holds, as much as its pipe takes now."""
        if not w.alive or w.outbox is None:
            return
        if w.outbox:
            try:
                del w.outbox[:os.write(w.jobs_fd, w.outbox)]
            except BlockingIOError:
                pass
            except OSError:  # the worker has gone (EPIPE): its answer pipe says so
                w.outbox.clear()
        if w.outbox and not w.writing:
            self._poller.register(w.jobs_fd, select.POLLOUT)
            w.writing = True
        elif w.writing and not w.outbox:
            self._poller.unregister(w.jobs_fd)
            w.writing = False

    def _events(self, timeout_s: float | None) -> Iterator[tuple[_Worker, int | None, bytearray]]:
        """Waits for the workers' pipes (at most ``timeout_s``), writes what their outboxes hold
        and yields each whole answer read: (worker, tag, payload); tag None: the worker died."""
        if not any(w.alive for w in self.workers):
            return
        for fd, _ in self._poller.poll(None if timeout_s is None else max(0, int(timeout_s * 1000))):
            w = self._by_fd[fd]
            if not w.alive:  # found dead through its other descriptor in this same poll
                continue
            if fd == w.jobs_fd:
                self._flush(w)
                continue
            yield from self._read(w)

    def _read(self, w: _Worker) -> Iterator[tuple[_Worker, int | None, bytearray]]:
        """Reads what the worker's answer pipe holds now: a message's header into ``inbox``, then
        its payload straight into a buffer of its length (no copy beyond the kernel's: a pod's
        answers are megabytes); yields each message completed."""
        assert w.inbox is not None
        while True:
            try:
                if w.body is None:
                    chunk = os.read(w.answers_fd, _ANSWER.size - len(w.inbox))
                    got = len(chunk)
                    w.inbox += chunk
                else:
                    got = os.readv(w.answers_fd, [memoryview(w.body)[w.body_at:]])
                    w.body_at += got
            except BlockingIOError:
                return
            except OSError:
                got = 0
            if got == 0:
                self._lost(w)
                yield w, None, bytearray()
                return
            if w.body is None and len(w.inbox) == _ANSWER.size:
                tag, length = _ANSWER.unpack_from(w.inbox)
                if tag not in (READY, ANSWER, FAILED) or length > MAX_MESSAGE_BYTES:
                    self._lost(w)
                    yield w, None, bytearray()
                    return
                w.tag, w.body, w.body_at = tag, bytearray(length), 0
            if w.body is not None and w.body_at == len(w.body):
                tag, payload = w.tag, w.body
                w.inbox.clear()
                w.body = None
                if tag == READY:
                    w.ready_at = _CLOCK.unpack(payload)[0] if len(payload) == _CLOCK.size else time.perf_counter()
                yield w, tag, payload

    def _lost(self, w: _Worker) -> None:
        """A worker that died or broke its pipe: ended (if it still runs) and reaped."""
        self._forget(w)
        _end(w.pid, wait=True)
        w.reaped = True  # (its pid may name another process from now on)

    def release(self) -> None:
        """Closes every live worker's pipes: each leaves once it has read to their end (its
        current job done), without waiting here (``close`` reaps them). No job is run after."""
        for w in self.workers:
            if w.alive:
                self._forget(w)

    def _forget(self, w: _Worker) -> None:
        """A worker no longer spoken to: out of the poll set (before its descriptors' numbers
        can name other files), its pipes closed."""
        w.alive = False
        self._poller.unregister(w.answers_fd)
        if w.writing:
            self._poller.unregister(w.jobs_fd)
            w.writing = False
        for fd in (w.jobs_fd, w.answers_fd):
            try:
                os.close(fd)
            except OSError:
                pass

    def close(self, wait: bool = True) -> None:
        """Ends the workers: ``wait``: each leaves once its job pipe closes (its current job
        done); else (a command that has its answer) at once, by SIGTERM. They hold nothing
        unwritten: every cache file is written to a temporary name and renamed."""
        for w in self.workers:
            if w.alive:
                self._forget(w)
            if not wait and not w.reaped:  # (a released worker too: it may be in a job still)
                _end(w.pid, wait=False)
        for w in self.workers:
            if not w.reaped:
                _reap(w.pid)
        self.workers = []
        self._poller, self._by_fd = select.poll(), {}


def _end(pid: int, wait: bool) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    if wait:
        _reap(pid)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # reaped already
        pass


def _read_exact(fd: int, n: int) -> bytes | None:
    """``n`` bytes from a blocking descriptor; None at its end (or a short last message)."""
    parts, left = [], n
    while left:
        chunk = os.read(fd, min(left, READ_CHUNK_BYTES))
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _serve(gate: int, jobs: int, answers: int, work: Callable[[bytes], bytes], preload: Callable[[], None]) -> None:
    """A worker's life: wait for the last fork, preload, say so, then answer every job until the
    job pipe closes. Leaves with ``os._exit`` (never through the command's code after the fork:
    its atexit handlers, its buffered output)."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        os.read(gate, 1)  # b"" once the command has forked every worker
        os.close(gate)
        preload()
        _write_all(answers, _ANSWER.pack(READY, _CLOCK.size) + _CLOCK.pack(time.perf_counter()))
        while True:
            head = _read_exact(jobs, _JOB.size)
            if head is None:
                break
            (length,) = _JOB.unpack(head)
            payload = _read_exact(jobs, length) if length <= MAX_MESSAGE_BYTES else None
            if payload is None:
                break
            try:
                out, tag = work(payload), ANSWER
            except Exception as e:  # the command reports it for the job's hosts
                out, tag = f"{type(e).__name__}: {e}".encode("utf-8", "replace"), FAILED
            _write_all(answers, _ANSWER.pack(tag, len(out)) + out)
    except BaseException:  # the command has gone (a broken pipe) or the worker was told to end
        code = 1
    finally:
        os._exit(code)
