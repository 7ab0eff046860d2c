# cython: language_level=3
"""Read-only memory maps of profile files that survive the file being cut short under them.

Reading a local profile into fresh memory costs a page fault, a zeroed page and a copy for every
page of the file; on a VM whose host backs guest memory lazily the faults are most of a
conversion's time (bench/measurements.md#mapped-reads). A map of the file reads the page cache
in place. Its hazard is the reason tbprof read with ``pread`` before: when another process
truncates a mapped file, touching a page past the new end raises SIGBUS, which would end the
process (the server). Here a SIGBUS handler, installed once, looks the faulting address up in
a table of the maps made by ``MappedFile``; for one of them it maps zero pages over the rest of
that map and marks it changed, and the access that faulted goes on reading zeros. The reader
then refuses what it read (``MappedFile.changed``, checked with the file's identity by
``readers/files.py``: "the file changed while it was being read"), as it refuses a short read.
A SIGBUS at any other address goes to the handler that was there before (by default it ends
the process, as without this module).

Linux only (``supported()``); elsewhere the readers read the file.
"""

from cpython.buffer cimport PyBUF_WRITABLE, PyBuffer_FillInfo
from libc.errno cimport errno
from libc.stdint cimport uintptr_t

import os

cdef extern from *:
    """
    #if defined(__linux__)
    #include <errno.h>
    #include <signal.h>
    #include <string.h>
    #include <sys/mman.h>
    #include <unistd.h>
    #define MAPPED_OK 1
    /* One slot per live map; a map that finds no free slot is not made (the file is read). */
    #define MAPPED_SLOTS 4096
    static uintptr_t mapped_base[MAPPED_SLOTS];
    static size_t mapped_span[MAPPED_SLOTS];
    static int mapped_hit[MAPPED_SLOTS];
    static struct sigaction mapped_prev;
    static size_t mapped_page = 4096;

    static void mapped_on_sigbus(int sig, siginfo_t* info, void* ctx) {
        uintptr_t a = (uintptr_t)info->si_addr;
        int i;
        (void)ctx;
        if (info->si_code > 0) {  /* raised by an access (not sent by a process) */
            for (i = 0; i < MAPPED_SLOTS; i++) {
                uintptr_t b = __atomic_load_n(&mapped_base[i], __ATOMIC_ACQUIRE);
                size_t n;
                if (b == 0 || a < b) continue;
                n = __atomic_load_n(&mapped_span[i], __ATOMIC_RELAXED);
                if (a - b >= n) continue;
                {
                    uintptr_t from = a & ~(uintptr_t)(mapped_page - 1);
                    void* r = mmap((void*)from, (size_t)(b + n - from), PROT_READ,
                                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
                    if (r != MAP_FAILED) {
                        __atomic_store_n(&mapped_hit[i], 1, __ATOMIC_RELEASE);
                        return;  /* the access is made again, and reads zeros */
                    }
                }
                break;
            }
        }
        /* Not a page of one of these maps: the handler that was there before decides. For a fault,
           returning makes the access again, which faults again; a signal sent is raised again. */
        sigaction(SIGBUS, &mapped_prev, NULL);
        if (info->si_code <= 0) raise(sig);
    }

    /* Installs the handler unless it is the one in place (another library may have replaced it
       since: it is then the one chained to). 0, or -1 with errno. */
    static int mapped_install(void) {
        struct sigaction now, act;
        if (sigaction(SIGBUS, NULL, &now) != 0) return -1;
        if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == mapped_on_sigbus) return 0;
        memset(&act, 0, sizeof act);
        act.sa_sigaction = mapped_on_sigbus;
        act.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&act.sa_mask);
        mapped_page = (size_t)sysconf(_SC_PAGESIZE);
        return sigaction(SIGBUS, &act, &mapped_prev);
    }

    /* Callers hold the GIL: registrations do not race one another, only the handler reads. */
    static int mapped_register(uintptr_t base, size_t span) {
        int i;
        for (i = 0; i < MAPPED_SLOTS; i++) {
            if (__atomic_load_n(&mapped_base[i], __ATOMIC_ACQUIRE) == 0) {
                __atomic_store_n(&mapped_hit[i], 0, __ATOMIC_RELAXED);
                __atomic_store_n(&mapped_span[i], span, __ATOMIC_RELAXED);
                __atomic_store_n(&mapped_base[i], base, __ATOMIC_RELEASE);
                return i;
            }
        }
        return -1;
    }
    static void mapped_unregister(int i) { __atomic_store_n(&mapped_base[i], 0, __ATOMIC_RELEASE); }
    static int mapped_was_hit(int i) { return __atomic_load_n(&mapped_hit[i], __ATOMIC_ACQUIRE); }
    static void* mapped_map(int fd, size_t n) {
        void* p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    static int mapped_unmap(void* p, size_t n) { return munmap(p, n); }
    static size_t mapped_page_size(void) { return mapped_page; }
    #else
    #define MAPPED_OK 0
    static int mapped_install(void) { return -1; }
    static int mapped_register(uintptr_t base, size_t span) { (void)base; (void)span; return -1; }
    static void mapped_unregister(int i) { (void)i; }
    static int mapped_was_hit(int i) { (void)i; return 0; }
    static void* mapped_map(int fd, size_t n) { (void)fd; (void)n; return NULL; }
    static int mapped_unmap(void* p, size_t n) { (void)p; (void)n; return 0; }
    static size_t mapped_page_size(void) { return 4096; }
    #endif
    """
    const bint MAPPED_OK
    int mapped_install()
    int mapped_register(uintptr_t base, size_t span)
    void mapped_unregister(int i)
    int mapped_was_hit(int i)
    void* mapped_map(int fd, size_t n)
    int mapped_unmap(void* p, size_t n)
    size_t mapped_page_size()


def supported() -> bool:
    """Whether this platform maps profile files (``MappedFile``); else they are read."""
    return bool(MAPPED_OK)


cdef class MappedFile:
    """The first ``size`` bytes of the open regular file ``fd``, mapped read-only (the descriptor
    may be closed after). Exposes them as a read-only buffer (``numpy.frombuffer``); unmapped
    when the last view of it is gone. OSError where the file cannot be mapped or every slot of
    the handler's table is taken: the caller then reads the file."""

    cdef char* base
    cdef Py_ssize_t size
    cdef int slot

    def __cinit__(self, int fd, Py_ssize_t size):
        self.base = NULL
        self.slot = -1
        if size <= 0:
            raise ValueError("nothing to map")
        if not MAPPED_OK:
            raise OSError("memory maps of profile files are not supported on this platform")
        if mapped_install() != 0:
            raise OSError(errno, os.strerror(errno))
        cdef void* p = mapped_map(fd, <size_t>size)
        if p == NULL:
            raise OSError(errno, os.strerror(errno))
        cdef size_t page = mapped_page_size()
        cdef int slot = mapped_register(<uintptr_t>p, (<size_t>size + page - 1) // page * page)
        if slot < 0:
            mapped_unmap(p, <size_t>size)
            raise OSError("too many mapped profile files")
        self.base = <char*>p
        self.size = size
        self.slot = slot

    def __dealloc__(self):
        if self.base != NULL:
            mapped_unregister(self.slot)
            mapped_unmap(self.base, <size_t>self.size)
            self.base = NULL

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        if flags & PyBUF_WRITABLE:
            raise BufferError("a mapped profile file is read-only")
        PyBuffer_FillInfo(buffer, self, self.base, self.size, 1, flags)

    def __releasebuffer__(self, Py_buffer* buffer):
        pass

    def __len__(self) -> int:
        return self.size

    @property
    def changed(self) -> bool:
        """Whether a page of the map was past the file's end when read (the file was truncated
        while mapped): what was read since is zeros, not the file."""
        return bool(mapped_was_hit(self.slot))
