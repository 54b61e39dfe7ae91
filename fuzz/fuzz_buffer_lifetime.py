"""Fuzz target: buffer lifetimes (catalogue M1, M3, M5): views held while buffers grow and move.

The input is a program: ``data[0]`` picks the decoder's ``max_frame_size`` (one
of LIMITS), then each byte is an operation (``byte % len(OPS)``) whose arguments
are the bytes after it. The operations, on one FrameDecoder, one FrameEncoder
and short-lived bytearrays:

* ``feed`` a frame (payloads up to 72,000 bytes, so the receive window grows past
  ``RECEIVE_CHUNK`` and shrinks back) or raw bytes, with ``feed()`` or with
  ``get_buffer()`` + ``buffer_updated()``, whole or split;
* ``take`` the next frame and hold its view (then ``shrink()`` the window,
  one time in two); ``release`` a held view; ``check`` every held view;
* ``abandon`` a ``get_buffer()`` view without committing it, and later
  ``scribble`` over every abandoned view (what a late ``recv_into`` would do);
* ``replace`` the decoder (held views outlive it);
* encoder: ``write`` a frame, hold a ``getbuffer()`` view, ``clear`` (then
  ``shrink()``), release a view, write a frame field by field (``frame()`` +
  nested ``message()``);
* ``reader``: a WireReader and its zero-copy values over a bytearray, or
  ``codec.decode(zero_copy=True)``, while the bytearray is resized;
* ``into``: ``encode_frame_into`` a bytearray that has a live view.

Properties checked by :func:`check` (see ``fuzz/README.md``):

* a held frame view keeps its bytes whatever is fed, taken, abandoned,
  scribbled or compacted afterwards, and after its decoder is gone (M5);
* frames come out equal to a model of the stream (fuzz_frame_decoder.model),
  errors are DecodeError subclasses of the model's class;
* the encoder raises BufferError exactly when it must grow, clear or shrink
  while a ``getbuffer()`` view is alive, and then holds the same bytes as
  before; a held view keeps its bytes (M1);
* a bytearray cannot be resized while a WireReader, a value it yielded or a
  zero-copy field of a decoded struct is alive (the codec holds a real buffer
  export, not a bare pointer: M3), and the values keep their bytes;
* ``encode_frame_into`` of a bytearray with a live view raises BufferError and
  leaves the bytearray as it was;
* nothing but DecodeError subclasses and these documented BufferErrors escapes.

Run: ``python fuzz/fuzz_buffer_lifetime.py [libFuzzer flags] [corpus dirs]``.
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
    from fuzz import _input, _schemas, fuzz_frame_decoder
except ImportError:  # run as ``python fuzz/fuzz_buffer_lifetime.py``: fuzz/ is sys.path[0]
    import _input  # type: ignore[no-redef]
    import _schemas  # type: ignore[no-redef]
    import fuzz_frame_decoder  # type: ignore[no-redef]

LIMITS = (4096, 100_000, 64, 1 << 20)
MAX_OPS = 64
BLOB = codec.struct(_schemas.by_name("peerbench.Blob"))


class Program(_input.InputReader):
    """Reads operation arguments from the input; past its end every read is 0."""

    def payload(self) -> bytes:
        """A payload: short ones from the input, long ones (up to 72,000 bytes) by repetition."""
        size = self.byte()
        if size >= 250:
            size = (size - 249) * 12_000
        seed = self.take(min(size, 8)) or b"\x5a"
        return (seed * (size // len(seed) + 1))[:size]


class State:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.decoder = codec.FrameDecoder(max_frame_size=limit)
        self.stream = bytearray()  # fed to the current decoder
        self.taken = 0  # frames taken from it
        self._model: tuple[int, Any] = (-1, None)
        self.poisoned = False
        self.held: list[tuple[memoryview, bytes]] = []  # frame views and their bytes
        self.abandoned: list[memoryview] = []  # get_buffer() views never committed
        self.encoder = codec.FrameEncoder(capacity=16)
        self.written = bytearray()  # what the encoder holds
        self.enc_views: list[tuple[memoryview, bytes]] = []

    # --- decoder ------------------------------------------------------------------

    def model(self) -> Any:
        """The model's frames and error for the stream so far (cached: the stream only grows)."""
        if self._model[0] != len(self.stream):
            outcome = fuzz_frame_decoder.model(bytes(self.stream), self.limit, False)
            self._model = (len(self.stream), outcome)
        return self._model[1]

    def _fail(self, exc: codec.DecodeError) -> None:
        _, error = self.model()
        if error is not None and not isinstance(exc, codec.errors.TruncatedError):
            assert type(exc) is error[0], f"{exc!r}, model {error}"
        self.poisoned = True

    def feed(self, data: bytes, via_buffer: bool, split: int) -> None:
        if self.poisoned:
            return
        cut = split % (len(data) + 1)
        for chunk in (data[:cut], data[cut:]):
            self.stream += chunk
            try:
                if via_buffer:
                    self._write_through_buffers(chunk)
                else:
                    self.decoder.feed(chunk)
            except codec.DecodeError as exc:
                self._fail(exc)
                return

    def _write_through_buffers(self, chunk: bytes) -> None:
        """Write ``chunk`` through get_buffer views, which may be shorter than asked."""
        while True:
            view = self.decoder.get_buffer(len(chunk))
            with view:
                n = min(len(view), len(chunk))
                view[:n] = chunk[:n]
                self.decoder.buffer_updated(n)
            chunk = chunk[n:]
            if not chunk:
                return

    def take(self) -> None:
        if self.poisoned:
            return
        try:
            frame = self.decoder.next_frame()
        except codec.DecodeError as exc:
            self._fail(exc)
            return
        frames, _ = self.model()
        if frame is None:
            assert self.taken == len(frames), f"next_frame() None, {len(frames) - self.taken} due"
            return
        assert self.taken < len(frames), "a frame the model does not have"
        payload = bytes(frame)
        assert payload == frames[self.taken], f"frame {self.taken}: {payload[:32].hex()}..."
        self.taken += 1
        self.held.append((frame, payload))

    def abandon(self, hint: int) -> None:
        if self.poisoned:
            return
        try:
            self.abandoned.append(self.decoder.get_buffer(hint))
        except codec.DecodeError as exc:  # a bad prefix already received (checked on arrival)
            self._fail(exc)

    def scribble(self) -> None:
        for view in self.abandoned:
            view[:] = b"\xee" * len(view)

    def replace(self) -> None:
        self.decoder = codec.FrameDecoder(max_frame_size=self.limit)
        self.stream = bytearray()
        self.taken = 0
        self.poisoned = False
        self.abandoned.clear()
        self._model = (-1, None)

    def check_views(self) -> None:
        for i, (view, payload) in enumerate(self.held):
            assert bytes(view) == payload, f"held frame view {i} changed"
        for i, (view, written) in enumerate(self.enc_views):
            assert bytes(view) == written, f"held getbuffer() view {i} changed"

    # --- encoder ------------------------------------------------------------------

    def _encoder_bytes(self) -> bytes:
        with self.encoder.getbuffer() as view:
            return bytes(view)

    def write(self, payload: bytes) -> None:
        frame = codec.varint.encode(len(payload)) + payload
        grows = len(self.encoder) + len(frame) > self.encoder.capacity
        try:
            self.encoder.write(payload)
        except BufferError:
            assert self.enc_views and grows, "BufferError without a view or without growth"
        else:
            assert not (self.enc_views and grows), "grew under a live getbuffer() view"
            self.written += frame
        assert self._encoder_bytes() == self.written

    def write_fields(self, payload: bytes, depth: int) -> None:
        before = bytes(self.written)
        try:
            with self.encoder.frame() as writer:
                writer.bytes(1, payload)
                for level in range(depth):
                    with writer.message(2 + level):
                        writer.uint64(1, len(payload) * (level + 1))
                        writer.bytes(2, payload[: level * 97])
        except BufferError:
            assert self.enc_views, "BufferError without a live view"
            assert self._encoder_bytes() == before, "a refused frame left bytes behind"
            return
        with self.encoder.getbuffer() as view:
            self.written[:] = bytes(view)
        reader_frame = self.written[len(before) :]
        size, n = codec.varint.decode(reader_frame)
        assert n + size == len(reader_frame), "frame() wrote a prefix that is not its length"
        fields = list(codec.wire.WireReader(reader_frame[n:]))
        assert fields and bytes(fields[0][2]) == payload, "frame() did not write its fields"

    def hold_encoder_view(self) -> None:
        view = self.encoder.getbuffer()
        self.enc_views.append((view, bytes(view)))

    def clear(self) -> None:
        try:
            self.encoder.clear()
        except BufferError:
            assert self.enc_views, "clear() refused without a live view"
        else:
            assert not self.enc_views, "clear() under a live getbuffer() view"
            self.written.clear()
        try:
            self.encoder.shrink()
        except BufferError:
            assert self.enc_views, "shrink() refused without a live view"
        else:
            assert not self.enc_views, "shrink() under a live getbuffer() view"
        assert self._encoder_bytes() == self.written


def _reader_op(program: Program) -> None:
    """Zero-copy values pin their bytearray; the values keep their bytes."""
    payload = program.payload()[:512]
    writer = codec.wire.WireWriter()
    writer.bytes(1, payload)
    writer.uint32(2, len(payload))
    with writer.buffer.getbuffer() as view:
        message = bytearray(view)
    mode = program.byte() % 3
    holder: list[Any] = []  # the reader, or the decoded struct
    if mode == 2:
        holder.append(codec.decode(BLOB, message, zero_copy=True))
        values: list[Any] = [holder[0].data]
    else:
        holder.append(codec.wire.WireReader(message))
        values = [value for _, _, value in holder[0]]
        if mode == 1:
            values = []  # only the reader itself pins the buffer
    _must_refuse_resize(message)
    holder.clear()
    if values:
        _must_refuse_resize(message)
        assert bytes(values[0]) == payload, "a zero-copy value changed"
        values.clear()
    message.extend(b"\x00")  # nothing holds the buffer any more
    del message[-1:]


def _must_refuse_resize(buffer: bytearray) -> None:
    try:
        buffer.extend(b"\x00" * 64)
    except BufferError:
        return
    raise AssertionError("a bytearray was resized under a live reader or value")


def _into_op(program: Program) -> None:
    payload = program.payload()[:4096]
    target = bytearray(program.take(program.byte() % 16))
    before = bytes(target)
    view = memoryview(target)
    try:
        codec.encode_frame_into(payload, target, -1)
    except BufferError:
        pass
    else:
        raise AssertionError("encode_frame_into resized a bytearray under a live view")
    assert target == before and bytes(view) == before
    view.release()
    end = codec.encode_frame_into(payload, target, -1)
    assert bytes(target[len(before) : end]) == codec.varint.encode(len(payload)) + payload


def check(data: bytes) -> None:
    """The property: raises AssertionError (or anything undocumented) on a finding."""
    data = bytes(data)
    state = State(LIMITS[(data[0] if data else 0) % len(LIMITS)])
    program = Program(data[1:])
    for _ in range(MAX_OPS):
        if program.pos >= len(program.data):
            break
        op = program.byte() % 16
        if op in (0, 1):  # a frame, fed whole or split
            payload = program.payload()
            frame = codec.varint.encode(len(payload)) + payload
            state.feed(frame, bool(op), program.byte() * 97)
        elif op == 2:  # raw bytes
            raw = program.take(program.byte() % 12)
            state.feed(raw, bool(program.byte() & 1), program.byte())
        elif op in (3, 4):
            state.take()
            if op == 4:
                state.decoder.shrink()
        elif op == 5 and state.held:
            view, _ = state.held.pop(program.byte() % len(state.held))
            view.release()
        elif op == 6:
            state.abandon(program.byte() * 300)
        elif op == 7:
            state.scribble()
        elif op == 8:
            state.replace()
        elif op == 9:
            state.write(program.payload())
        elif op == 10:
            state.hold_encoder_view()
        elif op == 11 and state.enc_views:
            view, _ = state.enc_views.pop(program.byte() % len(state.enc_views))
            view.release()
        elif op == 12:
            state.clear()
        elif op == 13:
            state.write_fields(program.payload(), program.byte() % 4)
        elif op == 14:
            _reader_op(program)
        elif op == 15:
            _into_op(program)
        state.check_views()
    # Drain: every remaining frame matches the model, then the stream must end cleanly
    # or with the model's truncation.
    while not state.poisoned:
        before = state.taken
        state.take()
        if state.taken == before:
            break
    if not state.poisoned:
        frames, error = state.model()
        try:
            state.decoder.feed_eof()
        except codec.errors.TruncatedError:
            assert error is not None and error[0] is codec.errors.TruncatedError, (
                "unexpected truncation"
            )
        else:
            assert error is None and state.taken == len(frames), "feed_eof() quiet, model not"
    state.scribble()
    state.check_views()
    for view, _ in state.held + state.enc_views:
        view.release()


def main() -> None:
    """libFuzzer entry point (only when run as a script)."""
    try:
        from fuzz._harness import run
    except ImportError:  # run as ``python fuzz/fuzz_buffer_lifetime.py``: fuzz/ is sys.path[0]
        from _harness import run

    run(atheris, check)


if __name__ == "__main__":
    main()
