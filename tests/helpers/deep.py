"""Messages nested as deep as a test asks, for the depth limits of every decoder.

:func:`nested` builds ``levels`` messages, each the only field of its parent,
inside out in linear time, so 100,000 levels are cheap; :func:`map_levels`
nests them through a map instead.
"""

from __future__ import annotations

from codec.varint import encode as varint


def nested(levels: int, field: bytes = b"\x0a", inner: bytes = b"") -> tuple[bytes, list[int]]:
    """The bytes of ``levels`` nested messages around ``inner``, and each header's offset.

    ``field`` is the tag of the one field each level has; the header at depth
    ``d`` is that tag and the length of everything below it.
    """
    sizes = [len(inner)]
    for _ in range(levels):
        sizes.append(len(field) + len(varint(sizes[-1])) + sizes[-1])
    sizes.reverse()  # sizes[d]: the payload size of the message at depth d
    headers = [field + varint(sizes[d + 1]) for d in range(levels)]
    offsets = []
    position = 0
    for header in headers:
        offsets.append(position)
        position += len(header)
    return b"".join(headers) + inner, offsets


def map_levels(levels: int) -> bytes:
    """``everything.Tree.named`` (field 5) nested ``levels`` deep: entry {key "", value Tree}."""
    payload = b""
    for _ in range(levels):
        entry = b"\x12" + varint(len(payload)) + payload  # the value (field 2), a Tree
        payload = b"\x2a" + varint(len(entry)) + entry
    return payload
