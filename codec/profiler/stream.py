"""Profiler captures: a recorded stream, read from its first keyframe and resumed after damage.

A file is the same stream. :func:`read_capture` starts at the first keyframe
(found by the header's magic number) and, after a damaged packet, resumes at
the next keyframe, so a file cut anywhere still yields every frame after its
first whole keyframe. It splits the packets itself, straight from the file's
bytes, so a resync never copies the rest of the file again: reading is
linear in the file's size, however often it is damaged. The receivers it
starts share what the last keyframe decoded to, so a keyframe that recurs
after each damaged packet is parsed once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from codec import varint
from codec.errors import DecodeError
from codec.framing import DEFAULT_MAX_FRAME_SIZE
from codec.profiler.model import Frame, StreamError
from codec.profiler.packets import MAGIC, PacketField, Session, StreamHeaderField
from codec.profiler.receiver import DEFAULT_MAX_ELEMENTS, Receiver
from codec.wire import I32, LEN, VARINT, WireReader


def _tag(field: int, wire_type: int) -> int:
    return field << 3 | wire_type


# The header's magic as it appears in a packet: its tag, then the fixed32.
_MAGIC_FIELD = bytes([_tag(StreamHeaderField.MAGIC, I32)]) + MAGIC.to_bytes(4, "little")
# A header packet starts with its flags or with the header.
_FIRST_TAGS = (_tag(PacketField.SEQUENCE_FLAGS, VARINT), _tag(PacketField.HEADER, LEN))


def find_keyframe(data: bytes, start: int = 0) -> int:
    """The offset of the first header packet at or after ``start``, or -1 if there is none.

    It looks for the header's magic number, then for a packet that starts
    at most 14 bytes before it (a length prefix, the flags field, the
    header's tag and length) and decodes as a header, nearest first: a
    start further back whose length prefix is made of damaged bytes could
    decode as the same header inside a longer, bogus packet.
    """
    found = data.find(_MAGIC_FIELD, start)
    while found >= 0:
        for begin in range(found - 1, max(start, found - 14) - 1, -1):
            if _is_header_packet(data, begin):
                return begin
        found = data.find(_MAGIC_FIELD, found + 1)
    return -1


def _is_header_packet(data: bytes, begin: int) -> bool:
    """Whether a packet starting at ``begin`` is a header: its flags, then a header whose
    first field is the magic (the order ``PacketWriter`` writes). Only those first fields
    are read, so a hostile file full of magic numbers costs a few checks per candidate."""
    try:
        length, body = varint.decode(data, begin)
        if length > DEFAULT_MAX_FRAME_SIZE or body + length > len(data) or length < 7:
            return False
        if data[body] not in _FIRST_TAGS:
            return False
        packet = WireReader(memoryview(data)[body : body + length])
        for field, wire_type, value in itertools.islice(packet, 2):
            if field == PacketField.HEADER and wire_type == LEN:
                return next(WireReader(value), None) == (StreamHeaderField.MAGIC, I32, MAGIC)
    except DecodeError:
        return False
    return False


def read_capture(
    data: bytes,
    *,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
) -> Iterator[tuple[Receiver, Session | Frame]]:
    """Every session header and frame of a recorded stream, with the receiver that read it.

    Reading starts at the first keyframe. A damaged packet ends the current
    receiver, and reading resumes, with a new one, at the next keyframe
    after the start of that packet; a packet cut by the end of the data ends
    the capture, unless a keyframe follows its start (a damaged length
    prefix that runs past the end).

    The packets are split here, straight from ``data``, and handed to the
    receiver one by one: no byte is copied into a decoder, so each resync
    costs only what it reads, and a file of damage after damage is read in
    time linear in its size. The limits are each receiver's; a packet over
    ``max_elements`` counts as damaged.
    """
    view = memoryview(data)
    end = len(data)
    receiver = Receiver(max_frame_size=max_frame_size, max_elements=max_elements)
    start = find_keyframe(data)
    while start >= 0:
        pos = start
        try:
            while pos < end:
                packet = pos
                size, body = varint.decode(data, pos)
                pos = body + size
                if size > max_frame_size or pos > end:
                    raise StreamError("a packet runs past the end or over max_frame_size", packet)
                item = receiver.read_packet(view[body:pos], pos - packet)
                if item is not None:
                    yield receiver, item
            return
        except DecodeError:  # a damaged packet, or the last one cut short
            start = find_keyframe(data, packet + 1)
            receiver = receiver.resync()
