"""Dispatch: what a message handed to the framing layers is, decided once, here.

Strategy, writing. Everything that frames messages (``encode_frame_into``,
``FrameEncoder.encode``, and through it ``codec.aio``'s ``FramedWriter.send``
and ``codec.io.write_frames``) asks :func:`payload_of` how a message's payload
is made, and each kind has one answer:

* a struct is measured onto a tape by the struct encoder, every value
  checked before a byte is written;
* ``bytes`` is the payload as it is, and any other object with the buffer
  protocol (``bytearray``, ``memoryview``, a numpy array) is held by a flat
  byte view while it is written (a non-contiguous one is a BufferError);
* a google.protobuf message is serialized once by upb, which has no
  serialize-into-buffer API, and its bytes are the payload;
* a class, or anything else, is a :class:`TypeError` that says what is
  accepted (as msgspec's ``encode`` does for a type it cannot encode).

What comes back is a staged payload, which the framing layer handles
without knowing its kind: :func:`staged_size` (to write the length prefix
and make room), :func:`write_staged` (straight into its buffer) and
:func:`release_staged`, always, once it is done with it.

Strategy, reading. Everything that reads frames (``FrameDecoder``, and
through it ``codec.aio`` and ``codec.io.read_frames``) turns its
``message_type`` into a :class:`Parser` once, when it is made: ``None``
means raw frames (no parser); a struct class or a :class:`codec.Decoder`
parses with the struct decoder and the decoder's options; a google.protobuf
message class with its ``FromString``. Anything else is a
:class:`TypeError` at once, not at the first frame.
"""

from __future__ import annotations

from typing import Any

try:
    import cython
except ImportError:  # the uncompiled build does not need Cython
    from codec import _cython_shim as cython  # type: ignore[no-redef]

from google.protobuf.message import DecodeError as _ProtobufDecodeError
from google.protobuf.message import EncodeError as _ProtobufEncodeError

from codec._varint import byte_view
from codec.errors import DecodeError, EncodeError
from codec.structs._decode import Decoder

if not cython.compiled:  # compiled, _dispatch.pxd cimports these
    from codec._buffer import byte_pointer, copy_bytes
    from codec.structs._encode import Tape, measure, release, write_tape
    from codec.structs._struct import Struct

COMPILED: bool = cython.compiled


def payload_of(message: Any, partial: bool, deterministic: bool) -> Any:
    """``message`` staged to be framed: a struct's measured tape, bytes, or a byte view.

    ``partial`` skips the required-field check, as pb2's
    ``SerializePartialToString`` does; ``deterministic`` puts map entries in
    upb's deterministic order, as pb2's ``deterministic=True`` does. Whoever
    stages a payload releases it (:func:`release_staged`).
    """
    if isinstance(message, Struct):
        return measure(message, partial, deterministic)
    if type(message) is bytes:
        return message
    if _has_buffer(message):
        return byte_view(message, False)
    if isinstance(message, type):
        raise TypeError(
            f"cannot encode the class {message.__name__} itself: expected a message,"
            f" such as {message.__name__}(...)"
        )
    return _serialized(message, partial, deterministic)


def staged_size(staged: Any) -> int:
    """The size in bytes of a payload :func:`payload_of` staged."""
    if type(staged) is Tape:
        size: int = cython.cast(Tape, staged).size
        return size
    return len(staged)  # bytes, or a flat byte view


def write_staged(staged: Any, data: bytearray, pos: int) -> int:
    """Write a staged payload at ``data[pos]``, where room was made; return its end."""
    if type(staged) is Tape:
        return write_tape(cython.cast(Tape, staged), data, pos)
    size = len(staged)
    if cython.compiled:
        if type(staged) is bytes:
            source = cython.cast(cython.p_uchar, PyBytes_AS_STRING(staged))
        else:
            source = cython.cast(cython.p_uchar, cython.cast(MemoryViewPointer, staged).view.buf)
        copy_bytes(byte_pointer(data), pos, source, size)
    else:
        copy_bytes(byte_pointer(data), pos, staged, size)
    return pos + size


def release_staged(staged: Any) -> None:
    """Done with a staged payload: a tape goes back for the next encode, a view is released."""
    if type(staged) is Tape:
        release(cython.cast(Tape, staged))
    elif type(staged) is memoryview:
        staged.release()


def _has_buffer(value: object) -> bool:
    """Whether ``value`` exports the buffer protocol."""
    if cython.compiled:
        return PyObject_CheckBuffer(value) == 1
    try:
        memoryview(value).release()  # type: ignore[arg-type]
    except TypeError:
        return False
    return True


def _serialized(message: Any, partial: bool, deterministic: bool) -> bytes:
    """A google.protobuf message serialized once (``partial``: as pb2's ``SerializePartial``)."""
    serialize = _serializer(type(message), partial)
    try:
        if deterministic:
            return serialize(message, deterministic=True)  # type: ignore[no-any-return]
        return serialize(message)  # type: ignore[no-any-return]
    except _ProtobufEncodeError as exc:  # e.g. a proto2 required field is missing
        raise EncodeError(str(exc)) from exc


# The serializer last looked up, for each ``partial``: (message class, its method).
_last_serializers: list[tuple[type, Any] | None] = [None, None]


def _serializer(cls: type, partial: bool) -> Any:
    """The class's own ``SerializeToString`` (or ``SerializePartialToString``), unbound.

    Looking a method up on a upb message is a generic attribute lookup that
    costs more than serializing a small message; the one last found, per
    ``partial``, is kept (one (class, method) pair, read and replaced whole,
    so threads cannot see a class beside another's method).
    """
    last = _last_serializers[partial]
    if last is not None and last[0] is cls:
        return last[1]
    method = getattr(cls, "SerializePartialToString" if partial else "SerializeToString", None)
    if method is None:
        raise TypeError(
            f"cannot encode {cls.__name__}: expected a struct, a protobuf message"
            " or a bytes-like payload"
        )
    _last_serializers[partial] = (cls, method)
    return method


class Parser:
    """How one reader's frames become messages: the struct decoder, or a pb2 class."""

    def __init__(self, decoder: Decoder | None, message_type: Any) -> None:
        self.decoder = decoder
        self.message_type = message_type

    def parse(self, frame: memoryview, offset: int, prefix: int) -> Any:
        """The message in ``frame``, whose ``prefix``-byte prefix starts at stream ``offset``.

        Bad input is a :class:`DecodeError` with the stream offset: the
        struct decoder's own, or google.protobuf's ``DecodeError``
        translated (at the frame's offset: upb does not say where).
        Anything else the parser raises propagates unchanged.
        """
        decoder = self.decoder
        if decoder is not None:
            return decoder.state.run(decoder.plan, frame, offset + prefix)
        try:
            return self.message_type.FromString(frame)
        except _ProtobufDecodeError as exc:
            name = getattr(self.message_type, "__name__", "message")
            raise DecodeError(f"frame is not a valid {name}: {exc}", offset) from exc


def parser_for(message_type: Any) -> Parser | None:
    """The :class:`Parser` of a reader's ``message_type``; None for raw frames.

    ``message_type`` must be None, a struct class, a :class:`codec.Decoder`
    or a class with ``FromString`` (a google.protobuf message class):
    anything else is a :class:`TypeError` saying so.
    """
    if message_type is None:
        return None
    if isinstance(message_type, Decoder):
        decoder = message_type
        if not decoder._initialised():  # its __init__ never ran, or failed
            raise TypeError("message_type is a Decoder that is not initialised")
        return Parser(decoder, message_type)
    if isinstance(message_type, type):
        if issubclass(message_type, Struct):
            return Parser(Decoder(message_type), message_type)
        if callable(getattr(message_type, "FromString", None)):
            return Parser(None, message_type)
    given = repr(message_type) if isinstance(message_type, type) else type(message_type).__name__
    raise TypeError(
        "message_type must be a protobuf message class, a struct class, a codec.Decoder"
        f" or None, not {given}"
    )


if not cython.compiled:
    from codec._pure import fields_as_allocated

    fields_as_allocated(Parser, decoder=None, message_type=None)

__all__ = [
    "Parser",
    "parser_for",
    "payload_of",
    "release_staged",
    "staged_size",
    "write_staged",
]
