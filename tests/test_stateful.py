"""Stateful tests (hypothesis ``RuleBasedStateMachine``) of FrameEncoder + FrameDecoder together.

One machine drives an encoder and a decoder joined by a "wire" (the bytes the
encoder has flushed that the decoder has not yet received), next to a model:
the payloads encoded, flushed, received. Rules (``docs/bad-inputs.md``
§3.4): ``encode`` (a raw payload with ``write``, a struct with ``encode``, or a
frame written field by field with ``frame()``), ``flush`` (take the encoder's
bytes, then ``clear``), ``feed`` some wire bytes (``feed`` or
``get_buffer``/``buffer_updated``, in random chunks) and take the frames out,
``deliver`` (flush, then feed the whole wire), ``feed_eof`` (then reconnect:
a fresh decoder, the unsent wire dropped), ``clear`` the encoder, hold frame
views (the four most recent stay alive) and hold or release views of the
encoder's buffer. Invariants, after every step:

* the frames decoded so far are the model's, in order (whatever the chunking);
* the decoder buffers at most ``max_frame_size`` + 10 bytes (one partial frame
  and its prefix: frames are taken out after every feed), and
  ``frame_in_progress`` is true exactly when it buffers anything;
* the encoder holds exactly the frames encoded since the last flush;
* every held view still shows the bytes it showed when it was taken;
* while a view of the encoder's buffer is alive, growing or clearing it raises
  ``BufferError`` and changes nothing; a frame over the limit raises
  ``FrameTooLargeError`` and changes nothing.

``StructMachine`` runs the same rules with ``FrameDecoder(message_type=<struct>)``
and ``FrameEncoder.encode`` of structs (peerbench ``Sample``): the decoder must
yield equal structs. Examples per run follow the hypothesis profile of
``conftest.py`` (``HYPOTHESIS_PROFILE``).
"""

from __future__ import annotations

from typing import Any

from helpers.peerbench import Sample
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

import codec

LIMIT = 300  # small, so that frames over the limit and multi-byte prefixes are common
PREFIX_MAX = 10
SampleStruct = codec.struct(Sample)

payloads = st.one_of(
    st.binary(max_size=40),
    st.binary(min_size=120, max_size=LIMIT + 40),
    st.sampled_from([b"", b"\x00" * LIMIT, b"\xff" * (LIMIT + 1)]),
)
samples = st.builds(
    SampleStruct,
    ts_ns=st.integers(0, 2**64 - 1),
    scope_id=st.integers(0, 2**32 - 1),
    value=st.integers(-(2**63), 2**63 - 1),
    name=st.text(max_size=30),
)


class FramingMachine(RuleBasedStateMachine):
    """Encoder and decoder over one connection, against a list model."""

    message_type: Any = None

    @initialize(strict=st.booleans(), capacity=st.sampled_from([0, 16, 4096]))
    def start(self, strict: bool, capacity: int) -> None:
        self.strict = strict
        self.encoder = codec.FrameEncoder(LIMIT, capacity=capacity)
        self.pending: list[Any] = []  # encoded since the last flush (payloads or structs)
        self.wire = bytearray()  # flushed, not yet received
        self.in_flight: list[Any] = []  # flushed, not yet decoded, in order
        self.decoded: list[Any] = []  # what the decoder gave, as comparable values
        self.expected: list[Any] = []  # what it should have given
        self.frame_views: list[tuple[memoryview, bytes]] = []
        self.encoder_views: list[tuple[memoryview, bytes]] = []
        self._connect()

    def _connect(self) -> None:
        self.decoder = codec.FrameDecoder(LIMIT, strict=self.strict, message_type=self.message_type)

    # --- helpers -------------------------------------------------------------------------

    def _encoder_bytes(self) -> bytes:
        with self.encoder.getbuffer() as view:
            return bytes(view)

    def _payload_of(self, item: Any) -> bytes:
        return codec.encode(item) if self.message_type is not None else item

    def _expect_refused(self, call: Any, error: type[BaseException]) -> None:
        before = self._encoder_bytes()
        try:
            call()
        except error:
            pass
        else:
            raise AssertionError(f"expected {error.__name__}")
        assert self._encoder_bytes() == before, f"{error.__name__} left the encoder changed"

    def _grows(self, payload_size: int) -> bool:
        frame = len(codec.varint.encode(payload_size)) + payload_size
        return len(self.encoder) + frame > self.encoder.capacity

    def _encode(self, payload_size: int, item: Any, write: Any) -> None:
        if payload_size > LIMIT:
            self._expect_refused(write, codec.FrameTooLargeError)
        elif self.encoder_views and self._grows(payload_size):
            self._expect_refused(write, BufferError)
        else:
            write()
            self.pending.append(item)

    # --- rules ------------------------------------------------------------------------------

    @precondition(lambda self: self.message_type is None)
    @rule(payload=payloads, how=st.sampled_from(["write", "frame"]))
    def encode_payload(self, payload: bytes, how: str) -> None:
        def write() -> None:
            if how == "write":
                assert self.encoder.write(payload) == len(codec.varint.encode(len(payload))) + len(
                    payload
                )
            else:
                with self.encoder.frame() as writer:
                    writer.raw(payload)

        if how == "frame" and self.encoder_views:
            # frame() reserves one prefix byte, grows as the body is written, and checks
            # the limit only on exit (before making room for a longer prefix): a needed
            # growth is refused first.
            needed = 1 + len(payload)
            if len(payload) <= LIMIT:
                needed += len(codec.varint.encode(len(payload))) - 1
            if len(self.encoder) + needed > self.encoder.capacity:
                self._expect_refused(write, BufferError)
                return
        self._encode(len(payload), payload, write)

    @precondition(lambda self: self.message_type is not None)
    @rule(message=samples)
    def encode_struct(self, message: Any) -> None:
        size = codec.encoded_size(message)
        self._encode(size, message, lambda: self.encoder.encode(message))

    @rule()
    def flush(self) -> None:
        if self.encoder_views:
            self._expect_refused(self.encoder.clear, BufferError)
            return
        self.wire += self._encoder_bytes()
        self.encoder.clear()
        self.in_flight.extend(self.pending)
        self.pending.clear()

    @rule(data=st.data(), hold=st.booleans())
    def deliver(self, data: st.DataObject, hold: bool) -> None:
        """Flush, then feed the whole wire in random chunks (the common case)."""
        self.flush()
        while self.wire:
            self.feed(data, data.draw(st.sampled_from(["feed", "buffer"])), hold)

    @rule()
    def clear(self) -> None:
        if self.encoder_views:
            self._expect_refused(self.encoder.clear, BufferError)
        else:
            self.encoder.clear()
            self.pending.clear()

    @precondition(lambda self: self.wire)
    @rule(data=st.data(), via=st.sampled_from(["feed", "buffer"]), hold=st.booleans())
    def feed(self, data: st.DataObject, via: str, hold: bool) -> None:
        size = data.draw(st.integers(1, len(self.wire)), label="bytes")
        chunk = bytes(self.wire[:size])
        del self.wire[:size]
        if via == "feed":
            self.decoder.feed(data.draw(st.sampled_from([bytes, bytearray, memoryview]))(chunk))
        else:
            hint = data.draw(st.sampled_from([len(chunk), -1, len(chunk) + 7]), label="hint")
            with self.decoder.get_buffer(hint) as window:
                assert len(window) >= len(chunk)
                window[: len(chunk)] = chunk
            self.decoder.buffer_updated(len(chunk))
        self._drain(hold)
        while len(self.frame_views) > 4:  # release the oldest held frames
            self.frame_views.pop(0)[0].release()

    def _drain(self, hold: bool) -> None:
        for frame in self.decoder:
            expected = self.in_flight.pop(0)
            self.expected.append(self._payload_of(expected))
            if self.message_type is None:
                payload = bytes(frame)
                self.decoded.append(payload)
                if hold:
                    self.frame_views.append((frame, payload))
                else:
                    frame.release()
            else:
                assert type(frame) is self.message_type
                assert frame == expected
                self.decoded.append(codec.encode(frame))

    @rule()
    def feed_eof(self) -> None:
        in_frame = self.decoder.frame_in_progress
        assert in_frame == (self.decoder.buffered > 0)
        if in_frame:
            try:
                self.decoder.feed_eof()
            except codec.errors.TruncatedError as exc:
                assert exc.missing is None or exc.missing > 0
            else:
                raise AssertionError("feed_eof() inside a frame did not raise")
        else:
            self.decoder.feed_eof()
            assert self.decoder.next_frame() is None
        # Reconnect: what was on the wire, or half received, is lost.
        lost = self.in_flight
        self.in_flight = []
        self.wire.clear()
        del lost
        self._connect()

    @rule(index=st.integers(0, 10**6))
    def hold_or_release_encoder_view(self, index: int) -> None:
        """Hold a view of the encoder's pending bytes, or release one held before."""
        if self.encoder_views and index % 3:
            view, _ = self.encoder_views.pop(index % len(self.encoder_views))
            view.release()
        else:
            view = self.encoder.getbuffer()
            self.encoder_views.append((view, bytes(view)))

    # --- invariants ------------------------------------------------------------------------

    @invariant()
    def frames_match_the_model(self) -> None:
        assert self.decoded == self.expected

    @invariant()
    def decoder_holds_at_most_one_partial_frame(self) -> None:
        buffered = self.decoder.buffered
        assert buffered <= LIMIT + PREFIX_MAX, buffered
        assert self.decoder.frame_in_progress == (buffered > 0)

    @invariant()
    def encoder_holds_the_pending_frames(self) -> None:
        expected = b"".join(
            codec.varint.encode(len(p)) + p for p in map(self._payload_of, self.pending)
        )
        assert self._encoder_bytes() == expected

    @invariant()
    def held_views_keep_their_bytes(self) -> None:
        for view, payload in self.frame_views + self.encoder_views:
            assert bytes(view) == payload

    def teardown(self) -> None:
        for view, _ in getattr(self, "frame_views", []) + getattr(self, "encoder_views", []):
            view.release()


class StructMachine(FramingMachine):
    message_type = SampleStruct


FramingMachine.TestCase.settings = settings(stateful_step_count=40)
StructMachine.TestCase.settings = settings(stateful_step_count=30)
TestFraming = FramingMachine.TestCase
TestStructFraming = StructMachine.TestCase
