"""The receiving end of a profiler stream: packets in order, out come sessions and frames.

Strategy: :class:`Receiver` is sans-IO. Bytes go into a
:class:`~codec.FrameDecoder` (limits, split invariance), or a reader that
splits the stream itself hands over one packet at a time; each packet is
read by :mod:`codec.profiler.packets`, and the receiver applies the rules
that span packets. Registry packets go into :attr:`Receiver.registry`; a
header starts a keyframe, and a header flagged ``STATE_CLEARED`` or with a
new ``session_id`` starts a new registry (a restarted producer reuses ids
for other scopes). Frames that need a registry before any keyframe was read
(a file cut mid-stream) are skipped and counted; a stats packet updates the
count of frames the sender dropped for this reader.

A keyframe repeats the header and every definition so far, so a header, or
a registry packet into an empty registry, that is byte for byte the last one
read takes what that one decoded to instead of being parsed again: a
comparison of bytes and a copy of the tables, with no definition decoded
twice. Receivers started one after another on the same data
(:meth:`Receiver.resync`, as :func:`~codec.profiler.capture.read_capture`
does after damage) share those last packets. Every error is a
:class:`~codec.DecodeError`; a bad packet raises
:class:`~codec.profiler.model.StreamError` with the stream offset of the
packet.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from codec import varint
from codec.errors import DecodeError, StreamError
from codec.framing import DEFAULT_MAX_FRAME_SIZE, FrameDecoder
from codec.profiler.model import Frame, Registry
from codec.profiler.packets import (
    NEEDS_STATE,
    STATE_CLEARED,
    PacketField,
    Session,
    read_envelope,
    read_frame,
    read_header,
    read_registry,
    read_stats,
)

__all__ = ["DEFAULT_MAX_ELEMENTS", "Receiver"]

# The most tracks and scopes one frame, definitions one session, and features one
# header may hold: a frame keeps 21 bytes per scope and 12 per track (at most 21 MiB
# then), a definition about 100-150; the number is the struct decoder's element budget.
DEFAULT_MAX_ELEMENTS = 1_000_000


class Receiver:
    """Reads a profiler stream: applies registry packets, yields sessions and frames.

    Feed bytes with :meth:`feed` (or ``get_buffer``/``buffer_updated`` of
    :attr:`decoder`), then iterate: each item is a :class:`Session` (every
    header: the start of the stream or of a keyframe; a new ``session_id``
    means a restarted producer) or a :class:`~codec.profiler.model.Frame`.
    A reader that splits the stream itself hands over one packet at a time
    with :meth:`read_packet` instead.

    ``max_elements`` bounds what a peer can make the receiver keep: the
    tracks and scopes of one frame together, and the definitions (strings,
    scopes, tracks) of one session; past it, :class:`StreamError`. A frame
    is kept as columns shared by its tracks
    (:class:`~codec.profiler.model.TrackColumns`), so what it costs follows
    its bytes on the wire.
    """

    def __init__(
        self,
        *,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_elements: int = DEFAULT_MAX_ELEMENTS,
    ) -> None:
        self.decoder = FrameDecoder(max_frame_size)
        self.max_elements = max_elements
        self.registry = Registry()
        self.session: Session | None = None
        self.has_state = False  # a keyframe of the current session has been read
        self.packets = 0
        self.frames = 0
        self.frames_skipped = 0  # frames before the first keyframe
        self.frames_dropped = 0  # frames the sender dropped for this reader (its stats)
        self._offset = 0  # stream offset of the next packet
        self._repeats = _Repeats()

    def resync(self) -> Receiver:
        """A new receiver with this one's limits, to read the same data again from a later
        keyframe: it shares the last header and registry packet read, so a keyframe that
        repeats them is copied, not parsed again."""
        receiver = type(self)(
            max_frame_size=self.decoder.max_frame_size, max_elements=self.max_elements
        )
        receiver._repeats = self._repeats
        return receiver

    def feed(self, data: Any) -> None:
        self.decoder.feed(data)

    def feed_eof(self) -> None:
        self.decoder.feed_eof()

    def __iter__(self) -> Iterator[Session | Frame]:
        decoder = self.decoder
        while True:
            before = decoder.buffered
            payload = decoder.next_frame()
            if payload is None:
                return
            # The bytes the packet took in the stream: its prefix may be padded.
            item = self.read_packet(payload, before - decoder.buffered)
            if item is not None:
                yield item

    def read_packet(
        self, payload: memoryview | bytes, size: int | None = None
    ) -> Session | Frame | None:
        """Apply one packet, given as its payload (the bytes after the length prefix).

        For readers that split the stream themselves (a socket's own frame
        decoder, a recorder that also keeps each packet's bytes). Returns the
        header's :class:`Session`, a frame, or ``None`` for a registry or
        stats packet, a skipped frame, or a packet this version does not know.
        ``size`` is what the packet took in the stream, its length prefix
        included, which error offsets count; by default, a minimal prefix.
        """
        if size is None:
            size = varint.size(len(payload)) + len(payload)
        offset = self._offset
        self._offset += size
        self.packets += 1
        try:
            return self._packet(payload)
        except StreamError as exc:
            if exc.offset is None:
                raise StreamError(exc.message, offset) from exc
            raise
        except DecodeError as exc:
            raise StreamError(
                f"malformed packet: {exc.message} at byte {exc.offset} of the packet", offset
            ) from exc

    def _packet(self, payload: memoryview | bytes) -> Session | Frame | None:
        flags, kind, body = read_envelope(payload)
        if body is None:
            return None  # a packet this version does not know: skipped
        if kind == PacketField.HEADER:
            return self._header(body, flags)
        if kind == PacketField.REGISTRY:
            self._registry(body)
        elif kind == PacketField.FRAME:
            if flags & NEEDS_STATE and not self.has_state:
                self.frames_skipped += 1
                return None
            self.frames += 1
            return read_frame(body, self.registry, self.max_elements)
        else:
            self.frames_dropped = read_stats(body)
        return None

    def _header(self, body: memoryview, flags: int) -> Session:
        key = (self.max_elements, bytes(body))
        session: Session | None = self._repeats.get(PacketField.HEADER, key)
        if session is None:
            session = read_header(body, self.max_elements)
            self._repeats.put(PacketField.HEADER, key, session)
        if flags & STATE_CLEARED or self.session is None or session != self.session:
            self.registry = Registry()
        self.session = session
        self.has_state = True
        return session

    def _registry(self, body: memoryview) -> None:
        """Apply a registry packet; into an empty registry, a repeat of the last one is copied."""
        registry = self.registry
        if not registry.empty:
            read_registry(body, registry, self.max_elements)
            return
        key = (self.max_elements, bytes(body))
        known = self._repeats.get(PacketField.REGISTRY, key)
        if known is None:
            read_registry(body, registry, self.max_elements)
            self._repeats.put(PacketField.REGISTRY, key, (registry, registry.marks()))
        else:
            registry.copy_from(*known)


class _Repeats:
    """The last header, and the last registry packet read into an empty registry, each
    with what it decoded to.

    A keyframe repeats the header and every definition so far, so the
    keyframes of a capture are mostly copies of the one before: a repeat
    costs a comparison of its bytes and a copy of the tables, not a parse of
    every definition. The receivers of one capture share one
    (:meth:`Receiver.resync`), so a resync after damage does not parse the
    same keyframe again. A key holds the receiver's ``max_elements`` with the
    bytes, since the limit decides what a packet decodes to. One entry per
    kind: a copy of the packet's bytes, and its session, or the registry it
    went into with the marks it reached (ids only grow, so the registry's
    first definitions stay what the packet defined, however many come after).
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[tuple[int, bytes], Any]] = {}

    def get(self, kind: int, key: tuple[int, bytes]) -> Any:
        """What the last packet of ``kind`` decoded to, if its key was ``key``; else None."""
        entry = self._entries.get(kind)
        return entry[1] if entry is not None and entry[0] == key else None

    def put(self, kind: int, key: tuple[int, bytes], value: Any) -> None:
        self._entries[kind] = (key, value)
