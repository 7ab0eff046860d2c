# 64-bit hashing shared by the compiled modules (cimported; no module of its own).

from libc.stdint cimport uint64_t


cdef inline uint64_t fmix64(uint64_t h) noexcept nogil:
    """MurmurHash3's 64-bit finaliser: every input bit reaches every output bit (a key's bits
    spread over a hash table's slot index)."""
    h ^= h >> 33
    h *= 0xFF51AFD7ED558CCDULL
    h ^= h >> 33
    h *= 0xC4CEB9FE1A85EC53ULL
    h ^= h >> 33
    return h
