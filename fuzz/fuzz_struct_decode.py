"""Fuzz target: struct decode (``codec.decode``) on several schemas, one-shot and framed.

Input layout::

    data[0]   the message type: below 128, ROOTS[data[0] % len(ROOTS)]; else
              CLASSES[data[0] % len(CLASSES)] (``fuzz/_schemas.py``: the test
              schemas everything.proto and legacy.proto, descriptor.proto, peerbench)
    data[1]   options: bit 0 zero_copy; bit 1 numpy; bits 2-3 max_depth, one of
              DEPTHS; bit 4 max_elements=SMALL_BUDGET; bits 5-6 the chunk size the
              frame is fed in, one of CHUNKS (0: whole); bit 7 lazy
    data[2:]  the message bytes

Short inputs default the missing header bytes to 0, so any byte string is an input.

Properties checked by :func:`check` (see ``fuzz/README.md``):

* only :class:`codec.DecodeError` subclasses escape, with an ``offset`` inside the input;
* ``bytes``, ``bytearray`` and an offset ``memoryview`` give the same outcome
  (error class and offset, or the same re-encoding);
* a decoded struct re-encodes without error, ``encoded_size`` is the length of
  that encoding, and decode -> encode is a fixed point from there; ``zero_copy``
  and ``numpy`` change containers, not content; a lazy decode gives the same
  outcome, its struct read field by field (``repr``) as the eager one;
* a tighter limit (``max_depth``, ``max_elements``) never accepts what the
  defaults reject, and where it accepts it reads the same content;
* ``FrameDecoder(message_type=<struct class>)`` fed the framed bytes (whole or in
  chunks) yields the same struct, or the same error class with the offset moved
  by the length of the frame prefix, then stays poisoned.

Run: ``python fuzz/fuzz_struct_decode.py [libFuzzer flags] [corpus dirs]``.
"""

from __future__ import annotations

from typing import Any

if __name__ == "__main__":
    import atheris

    with atheris.instrument_imports(include=["codec"]):
        import codec
else:
    import codec

try:
    from fuzz import _schemas
except ImportError:  # run as ``python fuzz/fuzz_struct_decode.py``: fuzz/ is sys.path[0]
    import _schemas  # type: ignore[no-redef]

DEPTHS = (100, 8, 1, 0)
SMALL_BUDGET = 16
CHUNKS = (0, 1, 7, 64)
ZERO_COPY, NUMPY, SMALL, LAZY = 0x01, 0x02, 0x10, 0x80

STRUCTS = [(name, codec.struct(cls)) for name, cls in _schemas.CLASSES]
ROOTS = [codec.struct(_schemas.by_name(name)) for name in _schemas.ROOTS]

Outcome = tuple[str, Any]  # ("ok", re-encoding) or ("error", (class, offset))


def pick(data: bytes) -> tuple[Any, dict[str, Any], int, bytes]:
    """``(struct class, decode options, chunk size, message)`` of a fuzz input."""
    which = data[0] if data else 0
    options = data[1] if len(data) > 1 else 0
    cls = ROOTS[which % len(ROOTS)] if which < 128 else STRUCTS[which % len(STRUCTS)][1]
    kwargs = {
        "zero_copy": bool(options & ZERO_COPY),
        "numpy": bool(options & NUMPY),
        "lazy": bool(options & LAZY),
        "max_depth": DEPTHS[(options >> 2) & 3],
        "max_elements": SMALL_BUDGET
        if options & SMALL
        else codec.structs._decode.DEFAULT_MAX_ELEMENTS,
    }
    return cls, kwargs, CHUNKS[(options >> 5) & 3], bytes(data[2:])


def make_input(message: bytes, root: int = 0, options: int = 0) -> bytes:
    """The fuzz input that decodes ``message`` as ``ROOTS[root]`` (for seed corpora)."""
    return bytes([root, options]) + message


def decode(cls: Any, buffer: Any, size: int, **options: Any) -> Outcome:
    try:
        decoded = codec.decode(cls, buffer, **options)
    except codec.DecodeError as exc:
        assert isinstance(exc.offset, int) and 0 <= exc.offset <= size, f"{exc!r}: bad offset"
        return "error", (type(exc), exc.offset)
    return "ok", _reencode(decoded)


def _reencode(decoded: Any) -> bytes:
    encoded = codec.encode(decoded, partial=True)  # a decoded struct must always encode
    assert codec.encoded_size(decoded) == len(encoded), "encoded_size != len(encode())"
    return encoded


def _framed(cls: Any, message: bytes, chunk: int) -> Outcome:
    prefix = codec.varint.encode(len(message))
    stream = prefix + message
    decoder = codec.FrameDecoder(message_type=cls)
    frames: list[Any] = []
    error: codec.DecodeError | None = None
    try:
        step = chunk or max(len(stream), 1)
        for start in range(0, len(stream), step):
            decoder.feed(stream[start : start + step])
            while (frame := decoder.next_frame()) is not None:
                frames.append(frame)
        decoder.feed_eof()
    except codec.DecodeError as exc:
        error = exc
    if error is not None:
        assert not frames, f"a frame before the error {error!r}"
        for call in (decoder.next_frame, decoder.feed_eof, lambda: decoder.feed(b"\x00")):
            try:
                call()
            except codec.DecodeError as again:
                assert (type(again), again.offset) == (type(error), error.offset), again
            else:
                raise AssertionError(f"a poisoned decoder accepted a call after {error!r}")
        assert isinstance(error.offset, int) and error.offset >= len(prefix), error
        return "error", (type(error), error.offset - len(prefix))
    assert len(frames) == 1, f"{len(frames)} frames from one"
    assert type(frames[0]) is cls, type(frames[0])
    return "ok", _reencode(frames[0])


def check(data: bytes) -> None:
    """The property: raises AssertionError (or any non-DecodeError) on a finding."""
    cls, options, chunk, message = pick(data)
    size = len(message)
    name = type.__getattribute__(cls, "__qualname__")
    where = f"{name} {options} {message.hex()}"

    outcome = decode(cls, message, size, **options)
    for other in (bytearray(message), memoryview(b"\x0b" + message + b"\x0c")[1 : 1 + size]):
        again = decode(cls, other, size, **options)
        assert again == outcome, f"{type(other).__name__}: {again} != {outcome}: {where}"

    default = decode(cls, message, size)
    if outcome[0] == "ok":
        assert default == outcome, f"limits accepted, defaults give {default}: {where}"
    if default[0] == "ok":
        encoded = default[1]
        assert decode(cls, encoded, len(encoded)) == default, f"no fixed point: {where}"
        for flags in ({"zero_copy": True}, {"numpy": True}, {"lazy": True}):
            assert decode(cls, message, size, **flags) == default, f"{flags}: {where}"
        lazily = repr(codec.decode(cls, message, lazy=True))
        assert lazily == repr(codec.decode(cls, message)), f"lazy repr: {where}"
    else:
        assert decode(cls, message, size, lazy=True) == default, f"lazy: {where}"

    framed = _framed(cls, message, chunk)
    assert framed == default, f"FrameDecoder: {framed} != decode(): {default}: {where}"


def main() -> None:
    """libFuzzer entry point (only when run as a script)."""
    try:
        from fuzz._harness import run
    except ImportError:  # run as ``python fuzz/fuzz_struct_decode.py``: fuzz/ is sys.path[0]
        from _harness import run

    run(atheris, check)


if __name__ == "__main__":
    main()
