"""Fuzz target: FrameDecoder gives the same frames and error for every way of feeding it.

Input layout (a small header, then the stream)::

    data[0]        flags: bit 0 strict prefixes; bits 1-2 max_frame_size, one of
                   LIMITS; bit 3 keep every frame view alive to the end;
                   bit 4 ask get_buffer() for exactly the chunk size (else -1)
    data[1] % 8    k, the number of chunk sizes that follow
    data[2:2+k]    chunk sizes (each byte % 64; 0 means an empty feed), cycled
    data[2+k:]     the byte stream

Short inputs default the missing header fields to 0, so any byte string is an
input. The stream is decoded seven ways: whole, one byte at a time and in the
fuzzer's chunks, each via ``feed()`` and via ``get_buffer()`` +
``buffer_updated()``, and the chunks once more alternating the two. After
each chunk ``next_frame()`` is drained until ``None``, then ``feed_eof()``.

Properties checked by :func:`check` (see ``fuzz/README.md``):

* only :class:`codec.DecodeError` subclasses escape;
* every way gives the same frames and the same error (class, stream offset,
  message, ``missing`` / declared size), equal to a small model of the format
  (catalogue 1.6 I1, I3);
* after an error, the frames completed before it can still be read, then
  every call raises the same error (I2, poisoning);
* ``frame_in_progress`` is true before ``feed_eof()`` exactly when the stream
  ends inside a frame;
* frame views kept alive while more bytes arrive still hold their bytes.

Run: ``python fuzz/fuzz_frame_decoder.py [libFuzzer flags] [corpus dirs]``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

if __name__ == "__main__":
    import atheris

    with atheris.instrument_imports(include=["codec"]):
        import codec
else:
    import codec

LIMITS = (4096, 255, 16, 0)
MAX_CHUNK_SIZES = 8

STRICT = 0x01
KEEP_VIEWS = 0x08
EXACT_HINT = 0x10

# An outcome: the frames (as bytes) and the error, as (class, offset, detail, message);
# detail is ``missing`` for TruncatedError and the declared size for FrameTooLargeError.
Error = tuple[type, int | None, int | None, str | None]
Outcome = tuple[list[bytes], Error | None]


def make_input(
    stream: bytes,
    *,
    strict: bool = False,
    limit: int = 4096,
    keep_views: bool = False,
    exact_hint: bool = False,
    chunk_sizes: tuple[int, ...] = (),
) -> bytes:
    """The fuzz input that decodes ``stream`` with these settings (for seed corpora)."""
    assert len(chunk_sizes) < MAX_CHUNK_SIZES and all(0 <= n < 64 for n in chunk_sizes)
    flags = (
        (STRICT if strict else 0)
        | (LIMITS.index(limit) << 1)
        | (KEEP_VIEWS if keep_views else 0)
        | (EXACT_HINT if exact_hint else 0)
    )
    return bytes([flags, len(chunk_sizes), *chunk_sizes]) + stream


def _error_key(exc: codec.DecodeError, with_message: bool = True) -> Error:
    if isinstance(exc, codec.FrameTooLargeError):
        detail = exc.size
    elif isinstance(exc, codec.errors.TruncatedError):
        detail = exc.missing
    else:
        detail = None
    return type(exc), exc.offset, detail, str(exc) if with_message else None


# --- the model --------------------------------------------------------------


def _model_prefix(stream: bytes, pos: int, strict: bool) -> tuple[int, int] | type:
    """``(size, body_start)`` of the prefix at ``pos``, or the expected error class."""
    limit = 9 if strict else 10
    value = 0
    for n in range(1, limit + 1):
        if pos + n > len(stream):
            return codec.errors.TruncatedError
        byte = stream[pos + n - 1]
        value |= (byte & 0x7F) << (7 * (n - 1))
        if byte < 0x80:
            if (strict and n > 1 and byte == 0) or (not strict and n == 10 and byte > 1):
                return codec.errors.VarintError
            return value, pos + n
    return codec.errors.VarintError


def model(stream: bytes, limit: int, strict: bool) -> Outcome:
    """What the decoder must produce for ``stream`` (messages are not modelled)."""
    frames: list[bytes] = []
    pos = 0
    while pos < len(stream):
        prefix = _model_prefix(stream, pos, strict)
        if isinstance(prefix, type):
            return frames, (prefix, pos, None, None)
        size, body = prefix
        if size > limit:
            return frames, (codec.FrameTooLargeError, pos, size, None)
        if body + size > len(stream):
            return frames, (codec.errors.TruncatedError, pos, body + size - len(stream), None)
        frames.append(stream[body : body + size])
        pos = body + size
    return frames, None


# --- the ways of feeding ----------------------------------------------------


def _chunks(stream: bytes, sizes: list[int]) -> Iterator[bytes]:
    """``stream`` cut into ``sizes`` (cycled); a 0 is an empty chunk."""
    if not any(sizes):
        sizes = [*sizes, max(len(stream), 1)]
    pos = 0
    i = 0
    while pos < len(stream):
        size = sizes[i % len(sizes)]
        i += 1
        yield stream[pos : pos + size]
        pos += size


def _run(
    chunks: Iterator[bytes],
    use_feed: Callable[[int], bool],
    limit: int,
    strict: bool,
    keep_views: bool,
    exact_hint: bool,
) -> Outcome:
    """Decode ``chunks`` with one FrameDecoder; ``use_feed(i)`` picks the API for chunk i."""
    decoder = codec.FrameDecoder(max_frame_size=limit, strict=strict)
    frames: list[bytes] = []
    kept: list[tuple[memoryview, bytes]] = []

    def take(frame: object) -> None:
        assert isinstance(frame, memoryview), f"next_frame returned {type(frame).__name__}"
        payload = bytes(frame)
        frames.append(payload)
        if keep_views:
            kept.append((frame, payload))
        else:
            frame.release()

    def drain() -> None:
        while (frame := decoder.next_frame()) is not None:
            take(frame)

    error: codec.DecodeError | None = None
    in_progress: bool | None = None
    try:
        for i, chunk in enumerate(chunks):
            if use_feed(i):
                decoder.feed(chunk)
            else:
                window = decoder.get_buffer(len(chunk) if exact_hint else -1)
                try:
                    assert len(window) >= len(chunk), (len(window), len(chunk))
                    window[: len(chunk)] = chunk
                    decoder.buffer_updated(len(chunk))
                finally:
                    window.release()
            drain()
        in_progress = decoder.frame_in_progress
        decoder.feed_eof()
        drain()
        assert decoder.next_frame() is None
    except codec.DecodeError as exc:
        error = exc

    if error is None:
        assert in_progress is False, "frame_in_progress was true, yet feed_eof() succeeded"
    else:
        if in_progress is not None:  # the error came from feed_eof()
            assert in_progress is isinstance(error, codec.errors.TruncatedError), (
                f"frame_in_progress={in_progress} before feed_eof() raised {error!r}"
            )
        key = _error_key(error)
        # Frames completed before the error are still readable, then the error repeats.
        while True:
            try:
                frame = decoder.next_frame()
            except codec.DecodeError as again:
                assert _error_key(again) == key, f"{again!r} after {error!r}"
                break
            assert frame is not None, f"next_frame() returned None before repeating {error!r}"
            take(frame)
        # Poisoned: every further call raises the same error.
        calls: tuple[Callable[[], object], ...] = (
            lambda: decoder.feed(b"\x00"),
            lambda: decoder.get_buffer(1),
            lambda: decoder.buffer_updated(0),
            decoder.feed_eof,
            decoder.next_frame,
        )
        for call in calls:
            try:
                call()
            except codec.DecodeError as again:
                assert _error_key(again) == key, f"{again!r} after {error!r}"
            else:
                raise AssertionError(f"a poisoned decoder accepted a call after {error!r}")
        assert not decoder.frame_in_progress

    for view, payload in kept:
        assert bytes(view) == payload, "a kept frame view changed under later input"
        view.release()
    return frames, None if error is None else _error_key(error)


def check(data: bytes) -> None:
    """The property: raises AssertionError (or any non-DecodeError) on a finding."""
    data = bytes(data)
    flags = data[0] if data else 0
    count = data[1] % MAX_CHUNK_SIZES if len(data) > 1 else 0
    sizes = [b % 64 for b in data[2 : 2 + count]]
    stream = data[2 + count :]

    strict = bool(flags & STRICT)
    limit = LIMITS[(flags >> 1) & 3]
    options = (limit, strict, bool(flags & KEEP_VIEWS), bool(flags & EXACT_HINT))

    def feed(_: int) -> bool:
        return True

    def buffer(_: int) -> bool:
        return False

    def alternate(i: int) -> bool:
        return i % 2 == 0

    ways = {
        "whole/feed": (lambda: iter([stream]), feed),
        "whole/get_buffer": (lambda: iter([stream]), buffer),
        "bytes/feed": (lambda: _chunks(stream, [1]), feed),
        "bytes/get_buffer": (lambda: _chunks(stream, [1]), buffer),
        "chunks/feed": (lambda: _chunks(stream, sizes), feed),
        "chunks/get_buffer": (lambda: _chunks(stream, sizes), buffer),
        "chunks/alternate": (lambda: _chunks(stream, sizes), alternate),
    }
    where = f"strict={strict} limit={limit} sizes={sizes} stream={stream.hex()}"

    expected_frames, expected_error = model(stream, limit, strict)
    first: tuple[str, Outcome] | None = None
    for name, (chunks, use_feed) in ways.items():
        outcome = _run(chunks(), use_feed, *options)
        frames, error = outcome
        assert frames == expected_frames, (
            f"{name}: frames {[f.hex() for f in frames]}, "
            f"model {[f.hex() for f in expected_frames]}: {where}"
        )
        got = None if error is None else (*error[:3], None)
        assert got == expected_error, f"{name}: error {error}, model {expected_error}: {where}"
        if first is None:
            first = name, outcome
        else:
            assert outcome == first[1], f"{name}: {outcome} != {first[0]}: {first[1]}: {where}"


def main() -> None:
    """libFuzzer entry point (only when run as a script)."""
    try:
        from fuzz._harness import run
    except ImportError:  # run as ``python fuzz/fuzz_frame_decoder.py``: fuzz/ is sys.path[0]
        from _harness import run

    run(atheris, check)


if __name__ == "__main__":
    main()
