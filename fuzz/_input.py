"""Reading a fuzz input as a stream of choices, for the targets that build from it.

:class:`InputReader` hands out the input's bytes in order; past the end every
read is 0 (``byte``) or short (``take``), so that any byte string is an input.
``fuzz_buffer_lifetime`` reads its program with it, ``fuzz_roundtrip`` the
values of the structs it builds.
"""

from __future__ import annotations


class InputReader:
    """Reads the fuzz input in order; past its end every read is 0."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        """The next byte, or 0 past the end."""
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def take(self, n: int) -> bytes:
        """The next ``n`` bytes, fewer near the end."""
        chunk = self.data[self.pos : self.pos + n]
        self.pos += len(chunk)
        return chunk
