"""The one exception hierarchy of codec.

Strategy: every decoder in the library raises only :class:`DecodeError` or one
of its subclasses, and every decode error says where in the input it happened
(``offset``, counted in bytes from the start of the buffer or stream the
decoder was given). Encoders raise :class:`EncodeError`. A frame over the size
limit is refused by both sides, so :class:`FrameTooLargeError` is both. A
schema that cannot become struct classes raises :class:`SchemaError`. The
products' own errors live here too: :class:`FrameTimeoutError` of
:mod:`codec.aio`, and :class:`StreamError` of the profiler's stream reader, a
decode error.

Each error is also what code written for google.protobuf catches, so that
switching a pb2 class for a struct keeps every ``except`` clause working:

* :class:`DecodeError` (and so every decode error) is an instance of
  ``google.protobuf.message.DecodeError``, which pb2's ``FromString`` and
  ``ParseFromString`` raise on any bad input;
* :class:`EncodeError` is an instance of ``google.protobuf.message.EncodeError``,
  which pb2's ``SerializeToString`` raises when a required field is missing;
* both are also :class:`ValueError`, so code that already catches
  ``ValueError`` around parsing or encoding keeps working.

google.protobuf's classes come after :class:`CodecError` and before
:class:`ValueError` in each method resolution order and carry no state, so
``message``, ``offset`` and pickling stay codec's own. ``except
google.protobuf.message.Error`` catches every decode and encode error;
:class:`SchemaError` and the :class:`TypeError` of a misused argument are not
protobuf errors.
"""

from __future__ import annotations

from google.protobuf import message as _protobuf

# The one warning, that the compiled core is not loaded, is defined where the
# build is chosen (codec._pure, which setup.py reads before codec can be
# imported) and named here with the errors.
from codec._pure import PurePythonWarning

__all__ = [
    "CodecError",
    "DecodeError",
    "DepthLimitError",
    "EncodeError",
    "FrameTimeoutError",
    "FrameTooLargeError",
    "PurePythonWarning",
    "SchemaError",
    "StreamError",
    "TruncatedError",
    "VarintError",
    "WireFormatError",
]


class CodecError(Exception):
    """Base class of every error raised by codec."""


class DecodeError(CodecError, _protobuf.DecodeError, ValueError):
    """Input bytes that cannot be decoded; also a google.protobuf ``DecodeError``.

    ``offset`` is the position in the input where the problem was found, or
    ``None`` when no position applies.
    """

    def __init__(self, message: str, offset: int | None = None) -> None:
        self.message = message
        self.offset = offset
        super().__init__(message if offset is None else f"{message} (at offset {offset})")

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return type(self), (self.message, self.offset)


class TruncatedError(DecodeError):
    """The input ended inside a varint, a fixed-width value or a frame.

    ``missing`` is how many more bytes were needed, when that is known.
    """

    def __init__(self, message: str, offset: int | None = None, missing: int | None = None):
        super().__init__(message, offset)
        self.missing = missing

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return type(self), (self.message, self.offset, self.missing)


class VarintError(DecodeError):
    """A malformed varint: too long, over 64 bits, or not minimal in the strict profile."""


class WireFormatError(DecodeError):
    """Protobuf wire-format violation: bad tag, reserved wire type, bad length, group mismatch."""


class DepthLimitError(DecodeError):
    """Messages or groups nested deeper than the decoder's ``max_depth``."""


class EncodeError(CodecError, _protobuf.EncodeError, ValueError):
    """A value that cannot be encoded: out of range, wrong type, a required field missing,
    or no room in the buffer; also a google.protobuf ``EncodeError``."""


class FrameTooLargeError(DecodeError, EncodeError):
    """A frame whose payload is larger than the ``max_frame_size`` limit.

    Raised by encoders before anything is written and by decoders as soon as
    the length prefix is complete, before any byte of the body is buffered.
    """

    def __init__(self, size: int, limit: int, offset: int | None = None) -> None:
        self.size = size
        self.limit = limit
        DecodeError.__init__(
            self, f"frame of {size} bytes exceeds the limit of {limit} bytes", offset
        )

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return type(self), (self.size, self.limit, self.offset)


class SchemaError(CodecError, ValueError):
    """A schema that cannot become struct classes.

    A descriptor set that cannot be read or built, a type it does not define,
    or a name that a struct class cannot give a field.
    """


class StreamError(DecodeError):
    """A profiler stream that breaks its protocol (decodable protobuf, wrong content).

    Raised for a bad magic number or major version, registry ids that are not
    dense or are redefined, a scope or track id never defined, and columns
    whose lengths or depths disagree.
    """


class FrameTimeoutError(CodecError, TimeoutError):
    """A frame started arriving but was not complete within ``frame_timeout`` seconds.

    The connection is closed. ``timeout`` is the limit that was exceeded.
    """

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(f"frame not completed within {timeout} s")

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return type(self), (self.timeout,)
