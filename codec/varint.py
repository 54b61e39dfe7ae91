"""Varints, zigzag and fixed-width values at an offset of any contiguous buffer.

Readers take ``bytes``, ``bytearray``, ``memoryview``, numpy ``uint8`` arrays or
any other C-contiguous buffer and return ``(value, end_offset)``; writers take
a writable buffer and an offset and return the end offset, leaving the buffer
unchanged when they raise. Nothing here allocates a buffer of its own, except
:func:`encode`.

Two varint profiles: the default ``protobuf`` profile (up to 10 bytes, values
below 2**64, a 10th byte above 1 rejected as overflow, non-minimal encodings
accepted) and ``strict=True`` (multiformats unsigned-varint: up to 9 bytes,
minimal encodings only). A buffer that ends inside a varint raises
:class:`~codec.errors.TruncatedError`; a malformed one raises
:class:`~codec.errors.VarintError`.
"""

from codec._varint import (
    MAX_LEN,
    STRICT_MAX_LEN,
    decode,
    decode_double,
    decode_fixed32,
    decode_fixed64,
    decode_float,
    decode_sfixed32,
    decode_sfixed64,
    encode,
    encode_double_into,
    encode_fixed32_into,
    encode_fixed64_into,
    encode_float_into,
    encode_into,
    encode_sfixed32_into,
    encode_sfixed64_into,
    size,
    zigzag_decode,
    zigzag_decode32,
    zigzag_encode,
    zigzag_encode32,
)

__all__ = [
    "MAX_LEN",
    "STRICT_MAX_LEN",
    "decode",
    "decode_double",
    "decode_fixed32",
    "decode_fixed64",
    "decode_float",
    "decode_sfixed32",
    "decode_sfixed64",
    "encode",
    "encode_double_into",
    "encode_fixed32_into",
    "encode_fixed64_into",
    "encode_float_into",
    "encode_into",
    "encode_sfixed32_into",
    "encode_sfixed64_into",
    "size",
    "zigzag_decode",
    "zigzag_decode32",
    "zigzag_encode",
    "zigzag_encode32",
]
