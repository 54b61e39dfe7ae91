"""What type checkers see of :class:`codec.Decoder` and :class:`codec.FrameDecoder`: generics.

Both classes are compiled extension types, which cannot derive from
``typing.Generic``. Their own modules are type-checked as written; this stub
gives the public names ``codec.Decoder`` and ``codec.FrameDecoder`` their
type parameter, the type of what comes out (``Decoder[Sample].decode()`` is a
``Sample``; ``FrameDecoder(message_type=Sample)`` yields ``Sample``, without
a ``message_type`` ``memoryview``, with ``copy=True`` ``bytes``). At run time
both classes are subscriptable (``codec.FrameDecoder[Sample]``), for
annotations evaluated then. tests/test_generic_stub.py keeps the names and
parameters here those of the classes.
"""

import builtins
from collections.abc import Iterator
from typing import Any, Generic, Literal, TypeVar, overload

from typing_extensions import Buffer

M = TypeVar("M")
F = TypeVar("F")

class Decoder(Generic[M]):
    @property
    def type(self) -> type[M]: ...
    @property
    def zero_copy(self) -> bool: ...
    @property
    def numpy(self) -> bool: ...
    @property
    def max_depth(self) -> int: ...
    @property
    def max_elements(self) -> int: ...
    def __init__(
        self,
        type: builtins.type[M],
        *,
        zero_copy: bool = False,
        numpy: bool = False,
        max_depth: int = ...,
        max_elements: int = ...,
    ) -> None: ...
    def decode(self, buffer: Buffer, *, base: int = 0) -> M: ...

class FrameDecoder(Generic[F]):
    @overload
    def __init__(
        self: FrameDecoder[memoryview],
        max_frame_size: int = ...,
        *,
        strict: bool = False,
        message_type: None = None,
        copy: Literal[False] = False,
    ) -> None: ...
    @overload
    def __init__(
        self: FrameDecoder[bytes],
        max_frame_size: int = ...,
        *,
        strict: bool = False,
        message_type: None = None,
        copy: Literal[True],
    ) -> None: ...
    @overload
    def __init__(
        self: FrameDecoder[F],
        max_frame_size: int = ...,
        *,
        strict: bool = False,
        message_type: type[F] | Decoder[F],
        copy: bool = False,
    ) -> None: ...
    @property
    def max_frame_size(self) -> int: ...
    @property
    def message_type(self) -> Any: ...
    @property
    def frame_in_progress(self) -> bool: ...
    @property
    def buffered(self) -> int: ...
    def get_buffer(self, sizehint: int = -1) -> memoryview: ...
    def buffer_updated(self, nbytes: int) -> None: ...
    def feed(self, data: Buffer) -> None: ...
    def feed_eof(self) -> None: ...
    def next_frame(self) -> F | None: ...
    def shrink(self) -> None: ...
    def __iter__(self) -> Iterator[F]: ...
    def __next__(self) -> F: ...
