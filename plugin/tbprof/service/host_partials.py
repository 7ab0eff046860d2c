"""A pod's per-host partials (analyses/partials.py): what the all-hosts tools need of each host,
kept in the process-wide byte budget, persisted next to the stores (service/partials.py) and
converted on the executor when missing, so a pod's page loads no store."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

from tbprof.cache.disk_cache import cache_keys
from tbprof.cache.profile_cache import ProfileCache
from tbprof.errors import ProfileReadError
from tbprof.service.executor import Progress
from tbprof.service.logdir import Run
from tbprof.service.pod_conversion import PodConversion
from tbprof.store.memo import Memo
from tbprof.store.tables import ProfileStore

if TYPE_CHECKING:  # the partials (and the analyses they carry) load when a pod needs them
    from tbprof.analyses.partials import HostPartial, Parts, PodPartials
    from tbprof.service.partials import PartialFiles
    from tbprof.store.any_store import AnyStore


def _all_parts() -> Parts:
    from tbprof.analyses.partials import ALL_PARTS

    return ALL_PARTS


def _constant(value: Any) -> Callable[[], Any]:
    return lambda: value


def _device_stats_now(part: HostPartial) -> None:
    """Unpacks the stats of a host's device planes now, as its batch arrives: every all-hosts
    answer reads them (the run environment's device types and models), and unpacked on first
    use they were a walk over every host after the last batch, on the command's critical path."""
    from tbprof.domain.planes import device_planes_of

    for i in device_planes_of(part):
        part.planes[i].plane_stats  # noqa: B018 (unpacked and kept by the plane)


class _Miss(Exception):
    """A memo lookup that found nothing (nothing is stored)."""


def _miss() -> Any:
    raise _Miss


class HostPartials:
    """The partials of hosts by cache key, and the op tables a worker combined over a batch of
    consecutive hosts."""

    MAX_BATCHES = 65536  # worker batches remembered, by first host key
    MAX_UNREADABLE = 4096  # host files found unreadable, remembered by cache key
    MAX_HANDED = 1  # answers of background loads not yet asked for (``get``'s ``hand_over``): a command waits for one

    def __init__(self, cache: ProfileCache, conversion: PodConversion, store: Callable[[Run, str], AnyStore],
                 store_format: Callable[[Run], str]) -> None:
        self.cache = cache
        self.conversion = conversion
        self.store = store
        self.store_format = store_format
        # By host cache key (("partial", key)), in the byte budget; also the op tables a worker
        # combined over a batch of consecutive hosts, by the batch's host cache keys
        # (("combined", keys)), and the batches by first key.
        self._memo = Memo()
        self._batches: dict[str, tuple[str, ...]] = {}
        self._files_: PartialFiles | None = None
        # Host files a worker found unreadable, by cache key (a changed file has another key),
        # so an all-hosts page does not send them to be read again on every request.
        self._unreadable: dict[str, dict[str, str]] = {}
        # A background load's answer, kept for the one caller that waited for it (``get``).
        self._handed: dict[tuple[str, tuple[str, ...], frozenset[str] | None],
                           tuple[PodPartials, list[dict[str, str]]]] = {}
        self._handed_lock = threading.Lock()

    def _remember_unreadable(self, key: str, error: dict[str, str]) -> None:
        """Bounded: a logdir of many broken files forgets its oldest (they are read again)."""
        self._unreadable[key] = error
        if len(self._unreadable) > self.MAX_UNREADABLE:
            del self._unreadable[next(iter(self._unreadable))]

    def contains(self, key: str) -> bool:
        """Whether the partial of a host cache key is in memory (no I/O)."""
        return self._memo.contains(("partial", key))

    @property
    def files(self) -> PartialFiles | None:
        if self._files_ is None and self.cache.disk is not None:
            from tbprof.service.partials import PartialFiles

            self._files_ = PartialFiles(self.cache.disk.root)
        return self._files_

    def keep(self, key: str, blob: bytes, checked: bool = True) -> HostPartial | None:
        """Decodes and keeps a host's partial (``checked``: verify its checksum, as for a file)."""
        from tbprof.analyses.partials import partial_from_bytes
        from tbprof.service.partials import DECODED_BYTES_PER_BLOB_BYTE

        try:
            part = partial_from_bytes(blob, checked)
        except (ValueError, KeyError, TypeError, IndexError):  # another version, or a damaged file
            return None
        # Sized from the blob: walking the decoded objects costs time per host (bench/measurements.md#services).
        # It replaces what was kept of the host: a partial of fewer parts, converted again.
        self._memo.clear_key(("partial", key))
        return self._memo.get(("partial", key), lambda: part, lambda _: DECODED_BYTES_PER_BLOB_BYTE * len(blob))

    def keep_fresh(self, key: str, blob: bytes, part: HostPartial | None = None) -> HostPartial | None:
        """Keeps a partial a worker has just sent: ``part`` as its batch's frame built it (its
        header, steps and GPU shares from arrays: analyses/partial_batches.py), else decoded from
        ``blob`` (never on a disk: no checksum to verify) with the values every all-hosts answer
        reads decoded now, while other workers still convert (``analyses.partials.ON_ARRIVAL``)."""
        from tbprof.service.partials import DECODED_BYTES_PER_BLOB_BYTE

        if part is not None:
            # Sized from the blob, which it holds for the values a tool may still ask for.
            self._memo.clear_key(("partial", key))
            kept: HostPartial | None = self._memo.get(("partial", key), lambda: part,
                                                      lambda _: DECODED_BYTES_PER_BLOB_BYTE * len(blob))
        else:
            from tbprof.analyses.partials import decode_on_arrival

            kept = self.keep(key, blob, checked=False)
            if kept is not None:
                decode_on_arrival(kept)
        if kept is not None:
            _device_stats_now(kept)
        return kept

    def keep_combined(self, keys: tuple[str, ...], blob: bytes) -> None:
        """Keeps a batch's combined op tables (executor.convert_batch) for ``host_partials``."""
        from tbprof.analyses.partials import decode_partials
        from tbprof.service.partials import DECODED_BYTES_PER_BLOB_BYTE

        if len(keys) < 2:
            return
        try:
            combined = decode_partials(blob, checked=False).combined  # a worker's answer, never on disk
            # Decoded now, while other workers convert, not when the last batch is in (every
            # all-hosts answer of op times reads them): each value then decodes once.
            combined = {k: _constant(decode()) for k, decode in combined.items()}
        except (ValueError, KeyError, TypeError, IndexError):  # the tables are then combined host by host
            return
        self._memo.clear_key(("combined", keys))
        self._memo.get(("combined", keys), lambda: combined, lambda _: DECODED_BYTES_PER_BLOB_BYTE * len(blob))
        self._remember_batch(keys)

    def _remember_batch(self, keys: tuple[str, ...]) -> None:
        """Bounded: the memo may have dropped the tables the oldest batches name anyway."""
        self._batches[keys[0]] = keys
        if len(self._batches) > self.MAX_BATCHES:
            del self._batches[next(iter(self._batches))]

    def _segments(self, keys: list[str]) -> list[tuple[int, int, dict[Hashable, Callable[[], Any]]]]:
        """Runs of ``keys`` (the hosts of a request, in order) that a worker converted as one
        batch, with their combined tables: (start, end, values by memo key)."""
        out = []
        i = 0
        while i < len(keys):
            batch = self._batches.get(keys[i])
            if batch is not None and tuple(keys[i:i + len(batch)]) == batch:
                try:
                    combined: dict[Hashable, Callable[[], Any]] = self._memo.get(("combined", batch), _miss)
                except _Miss:
                    combined = {}
                if combined:
                    out.append((i, i + len(batch), combined))
                    i += len(batch)
                    continue
            i += 1
        return out

    def _known(self, key: str, parts: Parts, on_disk: set[str] | None = None) -> HostPartial | None:
        """The partial of a host cache key that has ``parts``, from memory, else from the disk
        cache's file (``on_disk``: the keys with a file, when the caller listed them)."""
        # Asked first: a miss through ``get`` costs a future and a raised exception, per host of a
        # pod seen first.
        if self._memo.contains(("partial", key)):
            try:
                found: HostPartial = self._memo.get(("partial", key), _miss)
                if found.holds(parts):
                    return found
            except _Miss:  # dropped from the budget since
                pass
        if on_disk is not None and key not in on_disk:
            return None
        blob = self.files.load(key) if self.files is not None else None
        part = self.keep(key, blob) if blob is not None else None
        return part if part is not None and part.holds(parts) else None

    def get(self, run: Run, hosts: Sequence[str], progress: Progress | None = None,
            parts: frozenset[str] | None = None,
            hand_over: bool = False) -> tuple[PodPartials, list[dict[str, str]]] | None:
        """The partials of the hosts (in ``hosts`` order) that have ``parts`` (analyses/partials.py
        ``Parts``; None: all, what the tools read) and the unreadable hosts, as
        ``Profiles.stores_tolerant`` reports them; None when some host cannot have one (another
        format).

        Hosts without a partial are converted on the executor, whose workers return partials
        only (no store written, none loaded here); with the in-process executor, from their
        stores. Raises as ``stores_tolerant`` when no host is readable.

        ``hand_over``: for a background load (``Profiles.load_in_background``), whose caller asks
        for the same hosts and parts once it has finished: the answer is kept for that next
        ``get``, which takes it instead of computing the cache keys and looking every host up
        again (after a pod's last batch: on the command's critical path). Taken once; at most
        ``MAX_HANDED`` kept.
        """
        handed_key = (run.name, tuple(hosts), parts)
        with self._handed_lock:
            handed = self._handed.pop(handed_key, None)
        if handed is not None:
            return handed
        got = self._get(run, hosts, progress, parts)
        if hand_over and got is not None:
            with self._handed_lock:
                self._handed[handed_key] = got
                while len(self._handed) > self.MAX_HANDED:
                    del self._handed[next(iter(self._handed))]
        return got

    def _get(self, run: Run, hosts: Sequence[str], progress: Progress | None,
             parts: frozenset[str] | None) -> tuple[PodPartials, list[dict[str, str]]] | None:
        """``get`` without the hand-over."""
        # The partials' analyses are imported once a host needs them (a cached partial, the
        # first batch back, the end): not before the hosts go to the workers.
        from tbprof.analyses.partial_formats import PARTIAL_FORMATS

        fmt = self.store_format(run)
        if fmt not in PARTIAL_FORMATS:
            return None
        wanted = parts if parts is not None else _all_parts()
        looked = time.perf_counter()
        keys = dict(zip(hosts, cache_keys([run.hosts[h] for h in hosts], fmt), strict=True))
        got: dict[str, HostPartial] = {}
        errors: dict[str, dict[str, str]] = {}
        # One listing of the partial files, not a failed open per host of a pod seen first.
        on_disk = self.files.present() if self.files is not None else None
        for h in hosts:
            part = self._known(keys[h], wanted, on_disk)
            if part is not None:
                got[h] = part
            elif keys[h] in self._unreadable:
                errors[h] = {**self._unreadable[keys[h]], "host": h}
        listed = self.cache.listed_keys() if len(hosts) > 1 else None  # one listing, not a stat per host
        missing = [h for h in hosts
                   if h not in got and h not in errors and not self.cache.contains_key(keys[h], listed)]
        if len(missing) > 1:
            self.conversion.phase_seconds = {"lookup_s": time.perf_counter() - looked}
            for r in self.conversion.prepare(run, missing, fmt, progress, write_store=False, unloaded=True,
                                             keep_partial=self.keep_fresh, keep_combined=self.keep_combined,
                                             parts=parts):
                if "error" in r:
                    errors[r["host"]] = {"host": r["host"], "file": r["file"], "error": r["error"]}
                    if "key" in r:
                        self._remember_unreadable(r["key"], errors[r["host"]])
                elif r.get("partial") is not None:
                    part = self._known(r["key"], wanted)
                    if part is not None:
                        got[r["host"]] = part
        first_error: ProfileReadError | None = None
        for h in hosts:
            if h in got or h in errors:
                continue
            started = time.perf_counter()
            try:
                store = self.store(run, h)
            except ProfileReadError as e:
                first_error = first_error or e
                errors[h] = {"host": h, "file": e.path, "error": e.reason}
                continue
            converted = time.perf_counter()
            from tbprof.service.partials import make_partial

            blob = make_partial(store, parts) if isinstance(store, ProfileStore) else None
            for name, seconds in (("convert_s", converted - started), ("partial_s", time.perf_counter() - converted)):
                self.conversion.add_seconds(name, seconds)
            part = self.keep(keys[h], blob) if blob is not None else None
            if part is None or blob is None:
                return None
            if self.files is not None:
                self.files.save(keys[h], blob)
            got[h] = part
        if not got:
            if len(hosts) == 1 and first_error is not None:
                raise first_error
            raise ProfileReadError(run.name, "no host file of this run is readable: "
                                   + "; ".join(f"{e['host']}: {e['error']}" for e in errors.values()))
        from tbprof.analyses.partials import PodPartials

        good = [h for h in hosts if h in got]
        return (PodPartials([got[h] for h in good], self._segments([keys[h] for h in good])),
                [errors[h] for h in hosts if h in errors])
