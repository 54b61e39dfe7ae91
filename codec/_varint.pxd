# C types for _varint.py (Cython pure-Python mode). Functions that other compiled
# modules cimport take a raw byte pointer and never raise.
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.pyport cimport PY_SSIZE_T_MAX
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.string cimport memcpy

ctypedef unsigned char uchar
ctypedef unsigned int uint

cdef enum:
    _MAX_LEN = 10  # MAX_LEN
    _STRICT_MAX_LEN = 9  # STRICT_MAX_LEN
    # negative answers of varint_scan (0 means "incomplete")
    _TOO_LONG = -1
    _OVERFLOW = -2
    _NOT_MINIMAL = -3

cdef object varint_error(Py_ssize_t status, Py_ssize_t offset)

# The smallest primitives, with their bodies here: every compiled module that cimports
# them inlines them (a cdef function of another module is an indirect call). _varint.py
# keeps their uncompiled twins, behind ``if not cython.compiled``.
cdef extern from *:
    """
    /* The leading zero bits of a value that is not 0: a bit scan with GCC, Clang and
       64-bit MSVC, a loop elsewhere. */
    #if defined(__GNUC__) || defined(__clang__)
    #define codec_clzll(value) __builtin_clzll(value)
    #elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64))
    #include <intrin.h>
    static CYTHON_INLINE int codec_clzll(unsigned long long value) {
        unsigned long index;
        _BitScanReverse64(&index, value);
        return 63 - (int)index;
    }
    #else
    static CYTHON_INLINE int codec_clzll(unsigned long long value) {
        int zeros = 0;
        while (!(value & 0x8000000000000000ULL)) { value <<= 1; zeros++; }
        return zeros;
    }
    #endif
    /* The byte count of a varint at p, from a load of its first 8 bytes (and of the 2
       after them if those 8 go on and 10 bytes are left): the first byte without its high
       bit, plus one; minus the bytes read when none of them ends it (-8 or -10); 0 when
       fewer than 8 bytes are left or the platform is not a little-endian GCC or Clang
       one. The rules of a varint's length are the caller's. */
    static CYTHON_INLINE Py_ssize_t codec_varint_word(const unsigned char *p, Py_ssize_t left) {
    #if (defined(__GNUC__) || defined(__clang__)) && defined(__BYTE_ORDER__) && \
        __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        unsigned long long word, stops;
        unsigned short tail;
        if (left < 8) return 0;
        memcpy(&word, p, 8);
        stops = ~word & 0x8080808080808080ULL;
        if (stops) return (Py_ssize_t)(__builtin_ctzll(stops) >> 3) + 1;
        if (left < 10) return -8;
        memcpy(&tail, p + 8, 2);  /* a negative number's last 2 bytes */
        stops = ~tail & 0x8080u;
        return stops ? (Py_ssize_t)(__builtin_ctzll(stops) >> 3) + 9 : -10;
    #else
        (void)p; (void)left;
        return 0;
    #endif
    }
    /* Where the varint at p ends, read byte by byte after the first `known`, which go on:
       its byte count; 0 if it goes on past `left` bytes; `limit` + 1 if `limit` bytes go
       on. Kept out of line: the inlined scan stays short, and this is for a varint cut
       short, or long, or one that fewer than 10 bytes are left for. */
    #if defined(__GNUC__) || defined(__clang__)
    __attribute__((noinline))
    #endif
    static Py_ssize_t codec_varint_end(const unsigned char *p, Py_ssize_t known,
                                       Py_ssize_t left, Py_ssize_t limit) {
        for (Py_ssize_t n = known; n < limit; n++) {
            if (n >= left) return 0;
            if (p[n] < 0x80) return n + 1;
        }
        return limit + 1;
    }
    """
    int codec_clzll(unsigned long long value) nogil
    Py_ssize_t codec_varint_word(const unsigned char *p, Py_ssize_t left) nogil
    Py_ssize_t codec_varint_end(const unsigned char *p, Py_ssize_t known, Py_ssize_t left,
                                Py_ssize_t limit) nogil


cdef inline Py_ssize_t varint_size(uint64_t value) noexcept nogil:
    # 1 byte per 7 bits of the highest set bit, without a loop
    return (9 * (63 - codec_clzll(value | 1)) + 73) >> 6


cdef inline Py_ssize_t varint_scan(const unsigned char *data, Py_ssize_t pos, Py_ssize_t end,
                                   bint strict) noexcept nogil:
    # the one check of every varint: see _varint.py
    return varint_scan_in(data, pos, end, end, strict)


cdef inline Py_ssize_t varint_scan_in(const unsigned char *data, Py_ssize_t pos, Py_ssize_t end,
                                      Py_ssize_t readable, bint strict) noexcept nogil:
    # varint_scan, where the bytes up to readable (at or past end) may be loaded, so that a
    # varint near end (a message's last field, a map entry's value) takes one load too
    cdef Py_ssize_t limit = _STRICT_MAX_LEN if strict else _MAX_LEN
    cdef Py_ssize_t n
    cdef unsigned char last
    if pos < end and data[pos] < 0x80:  # one byte: most tags, lengths and small numbers
        return 1
    n = codec_varint_word(data + pos, readable - pos)  # at once (else 0, or -8 or -10)
    if n <= 0 or n > end - pos:  # byte by byte, after the bytes known to go on
        n = codec_varint_end(data + pos, min(-n, end - pos) if n < 0 else 0, end - pos, limit)
        if n == 0:
            return 0
    # the rules, on the varint's n bytes
    if n > limit:
        return _TOO_LONG
    last = data[pos + n - 1]
    if strict:
        if last == 0 and n > 1:
            return _NOT_MINIMAL
    elif n == _MAX_LEN and last > 1:
        return _OVERFLOW
    return n


cdef extern from *:
    """
    /* A 4- or 8-byte little-endian value in one load or store on a little-endian
       host (memcpy of a constant size compiles to a single move); byte by byte
       elsewhere. Widths are 4 or 8 only. */
    #include <string.h>
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ \
        || defined(_M_X64) || defined(_M_ARM64) || defined(_M_IX86)
    #define CODEC_LITTLE_ENDIAN 1
    #else
    #define CODEC_LITTLE_ENDIAN 0
    #endif
    static CYTHON_INLINE uint64_t codec_read_le(const unsigned char *data, Py_ssize_t width) {
        uint64_t value = 0;
        if (CODEC_LITTLE_ENDIAN) {
            if (width == 8) { memcpy(&value, data, 8); }
            else { uint32_t low; memcpy(&low, data, 4); value = low; }
            return value;
        }
        for (Py_ssize_t i = 0; i < width; i++) value |= (uint64_t)data[i] << (8 * i);
        return value;
    }
    static CYTHON_INLINE void codec_write_le(unsigned char *out, uint64_t value, Py_ssize_t width) {
        if (CODEC_LITTLE_ENDIAN) {
            if (width == 8) { memcpy(out, &value, 8); }
            else { uint32_t low = (uint32_t)value; memcpy(out, &low, 4); }
            return;
        }
        for (Py_ssize_t i = 0; i < width; i++) out[i] = (unsigned char)(value >> (8 * i));
    }
    """
    uint64_t codec_read_le(const unsigned char *data, Py_ssize_t width) noexcept nogil
    void codec_write_le(unsigned char *out, uint64_t value, Py_ssize_t width) noexcept nogil


cdef extern from *:
    """
    /* The 7-bit groups of a varint's first 8 bytes (the low group first), packed into
       56 bits in three halving steps: the inverse of codec_spread56. */
    static CYTHON_INLINE uint64_t codec_gather56(uint64_t word) {
        uint64_t x = word & 0x7F7F7F7F7F7F7F7FULL;
        x = (x & 0x007F007F007F007FULL) | ((x & 0x7F007F007F007F00ULL) >> 1);
        x = (x & 0x00003FFF00003FFFULL) | ((x & 0x3FFF00003FFF0000ULL) >> 2);
        return (x & 0x000000000FFFFFFFULL) | ((x & 0x0FFFFFFF00000000ULL) >> 4);
    }
    /* The value of the valid n-byte varint at p, reading only its bytes: 3 to 8 of them
       from two overlapping loads, gathered at once, not a byte at a time. */
    static CYTHON_INLINE uint64_t codec_varint_value(const unsigned char *p, Py_ssize_t n) {
        uint64_t word;
        if (n == 1) return p[0];  /* most tags and lengths */
        if (n == 2) return (p[0] & 0x7Fu) | ((uint64_t)p[1] << 7);
        if (n >= 8) {  /* a timestamp in ns, a negative number */
            word = codec_gather56(codec_read_le(p, 8));
            if (n > 8) word |= (uint64_t)(p[8] & 0x7F) << 56;
            if (n > 9) word |= (uint64_t)(p[9] & 0x7F) << 63;
            return word;
        }
        if (n >= 4) word = codec_read_le(p, 4) | (codec_read_le(p + n - 4, 4) << (8 * (n - 4)));
        else word = p[0] | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16);
        return codec_gather56(word);
    }
    """
    uint64_t codec_varint_value(const unsigned char *p, Py_ssize_t n) noexcept nogil


cdef inline uint64_t varint_value(const unsigned char *data, Py_ssize_t pos,
                                  Py_ssize_t n) noexcept nogil:
    return codec_varint_value(data + pos, n)


cdef inline uint64_t read_le(const unsigned char *data, Py_ssize_t pos,
                             Py_ssize_t width) noexcept nogil:
    # width is 4 or 8
    return codec_read_le(data + pos, width)


cdef inline Py_ssize_t write_le(unsigned char *out, Py_ssize_t pos, uint64_t value,
                                Py_ssize_t width) noexcept nogil:
    # width is 4 or 8
    codec_write_le(out + pos, value, width)
    return pos + width


cdef extern from *:
    """
    /* The low 56 bits of a value, 7 to a byte of a word (the low 7 bits first): the
       groups of a varint's first 8 bytes, spread in three halving steps. */
    static CYTHON_INLINE uint64_t codec_spread56(uint64_t value) {
        uint64_t x = (value & 0x000000000FFFFFFFULL) | ((value & 0x00FFFFFFF0000000ULL) << 4);
        x = (x & 0x00003FFF00003FFFULL) | ((x & 0x0FFFC0000FFFC000ULL) << 2);
        return (x & 0x007F007F007F007FULL) | ((x & 0x3F803F803F803F80ULL) << 1);
    }
    """
    uint64_t codec_spread56(uint64_t value) noexcept nogil


cdef inline Py_ssize_t varint_write(unsigned char *out, Py_ssize_t pos,
                                    uint64_t value) noexcept nogil:
    if value >> 56:  # 9 or 10 bytes (a timestamp in ns, a negative int): the first 8 in a store
        codec_write_le(out + pos, codec_spread56(value) | 0x8080808080808080ULL, 8)
        value >>= 56
        pos += 8
    while value >= 0x80:
        out[pos] = <unsigned char>(value | 0x80)
        value >>= 7
        pos += 1
    out[pos] = <unsigned char>value
    return pos + 1


cdef inline Py_ssize_t varint_write_padded(unsigned char *out, Py_ssize_t pos,
                                           uint64_t value) noexcept nogil:
    # varint_write where 8 bytes of room follow pos: a varint of up to 8 bytes in one store,
    # with no branch on its length (data of mixed magnitudes make such a branch a coin
    # toss); what it stores past the varint's end is room, written over next
    cdef uint64_t high
    cdef bint two
    cdef Py_ssize_t size
    if value < 0x4000:  # one or two bytes, the common case, in fewer instructions
        high = value >> 7
        two = high != 0
        # two bytes: the low 7 bits and the continuation bit, then the high 7 bits
        codec_write_le(out + pos, value + ((high + two) << 7), 4)
        return pos + 1 + two
    if value >> 56:
        return varint_write(out, pos, value)
    size = varint_size(value)  # 3 to 8: the continuation bits of all but the last byte
    codec_write_le(out + pos,
                   codec_spread56(value) | (0x0080808080808080ULL >> (8 * (8 - size))), 8)
    return pos + size


# The bit patterns of the scalar kinds: IEEE binary32 and binary64, and ZigZag.
cdef inline uint64_t float64_bits(double value) noexcept nogil:
    cdef uint64_t bits
    memcpy(&bits, &value, 8)
    return bits


cdef inline uint64_t float32_bits(double value) noexcept nogil:
    # rounded to single precision by C; a finite value beyond its range becomes infinity;
    # a NaN keeps its sign and the high bits of its payload (C would quiet a signaling one)
    cdef float single
    cdef uint32_t bits
    cdef uint64_t wide
    if value != value:
        wide = float64_bits(value)
        bits = <uint32_t>((wide >> 32) & 0x80000000u) | 0x7F800000u
        bits |= <uint32_t>((wide >> 29) & 0x7FFFFFu)
        return bits if bits & 0x7FFFFFu else bits | 0x400000u
    single = <float>value
    memcpy(&bits, &single, 4)
    return bits


cdef inline double bits_float64(uint64_t bits) noexcept nogil:
    cdef double value
    memcpy(&value, &bits, 8)
    return value


cdef inline double bits_float32(uint64_t bits) noexcept nogil:
    # a NaN widened bit by bit, its payload kept (C would quiet a signaling one)
    cdef uint32_t low = <uint32_t>bits
    cdef float single
    if (low & 0x7F800000u) == 0x7F800000u and (low & 0x7FFFFFu):
        return bits_float64((<uint64_t>(low & 0x80000000u) << 32) | 0x7FF0000000000000ULL
                            | (<uint64_t>(low & 0x7FFFFFu) << 29))
    memcpy(&single, &low, 4)
    return single


cdef inline uint64_t twos_complement(int64_t number) noexcept nogil:
    # the 64-bit pattern of a signed value (int32 and enum: negative ones take 10 bytes)
    return <uint64_t>number


cdef inline uint64_t zigzag(int64_t number) noexcept nogil:
    # 0, -1, 1, -2 -> 0, 1, 2, 3; for the int32 range this is sint32's ZigZag too
    return (<uint64_t>number << 1) ^ <uint64_t>(number >> 63)


cdef inline int64_t unzigzag(uint64_t value) noexcept nogil:
    return <int64_t>((value >> 1) ^ (0 - (value & 1)))


cdef extern from "Python.h":
    Py_buffer *PyMemoryView_GET_BUFFER(object view)

cdef inline bint is_flat_bytes(object view, bint writable) noexcept:
    # a memoryview that byte_view hands out as it is: one dimension of contiguous unsigned
    # bytes ("B", or no format, which means "B"), writable if asked
    cdef Py_buffer *info = PyMemoryView_GET_BUFFER(view)
    return (
        info.ndim == 1 and info.itemsize == 1 and info.suboffsets == NULL
        and (info.strides == NULL or info.strides[0] == 1)
        and (info.format == NULL or (info.format[0] == b'B' and info.format[1] == 0))
        and not (writable and info.readonly)
    )

cdef int acquire(object buffer, Py_buffer *view, int flags) except -1
cdef Py_ssize_t position(object offset) except -1
@cython.locals(number=Py_ssize_t, limit=Py_ssize_t)
cdef Py_ssize_t stream_base(object base, Py_ssize_t length) except -1

@cython.locals(view=Py_buffer, start=Py_ssize_t)
cpdef Py_ssize_t _store(uint64_t value, object buffer, object offset, Py_ssize_t width) except -1

@cython.locals(n=Py_ssize_t)
cdef Py_ssize_t _store_at(unsigned char *out, Py_ssize_t length, Py_ssize_t offset,
                          uint64_t value, Py_ssize_t width) except -1

@cython.locals(view=Py_buffer, start=Py_ssize_t)
cpdef tuple _load(object buffer, object offset, Py_ssize_t width, bint strict)

@cython.locals(n=Py_ssize_t)
cdef tuple _load_at(const unsigned char *data, Py_ssize_t length, Py_ssize_t offset,
                    Py_ssize_t width, bint strict)
