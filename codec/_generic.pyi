"""What type checkers see of codec's compiled generic classes: the decoders and the containers.

The classes are compiled extension types, which cannot derive from
``typing.Generic``. Their own modules are type-checked as written; this stub
gives their public names in ``codec`` their type parameters. For
``codec.Decoder`` and ``codec.FrameDecoder``, the type of what comes out
(``Decoder[Sample].decode()`` is a ``Sample``; ``FrameDecoder(message_type=Sample)``
yields ``Sample``, without a ``message_type`` ``memoryview``, with
``copy=True`` ``bytes``). For the containers a repeated or map field of a
struct reads as, the type of their elements: ``codec.Repeated[int]`` is a
``list[int]`` with ``MergeFrom``, ``codec.RepeatedMessages[Event]`` adds
``add()`` (an ``Event``), ``codec.Entries[str, int]`` is a ``dict[str, int]``
with ``MergeFrom``, ``codec.MessageEntries[str, Event]`` adds
``get_or_create()``. A container of messages also takes a dict of a
message's fields where it takes a message, as the run time does. At run time
each class is subscriptable (``codec.FrameDecoder[Sample]``), for
annotations evaluated then. tests/test_generic_stub.py keeps the names and
parameters here those of the classes.

``S`` and ``P`` are the type variables of the functions that return a
message of the class they are given, a struct (``codec.decode``,
``codec.from_json``, ...) or a google.protobuf message (``codec.to_pb2``),
which import them for type checkers; tests/test_typing.py checks what those
functions return.
"""

import builtins
from collections.abc import Iterable, Iterator
from typing import Any, Generic, Literal, Self, SupportsIndex, TypeVar, overload

from _typeshed import SupportsKeysAndGetItem
from google.protobuf import message as pb2_message
from typing_extensions import Buffer

from codec.structs._message import Message

# A struct class's instances: codec.decode(Span, data) is a Span.
S = TypeVar("S", bound=Message)
# A google.protobuf message class's instances: codec.to_pb2(span, span_pb2.Span) is one.
P = TypeVar("P", bound=pb2_message.Message)
M = TypeVar("M")
# A Decoder only gives messages out, so a Decoder[Span] is a Decoder[codec.Message] too: the
# frames of a FrameDecoder or read_frames() given it go where an Iterable[Message] is expected.
M_co = TypeVar("M_co", covariant=True)
F = TypeVar("F")
T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")

class Decoder(Generic[M_co]):
    @property
    def type(self) -> type[M_co]: ...
    @property
    def zero_copy(self) -> bool: ...
    @property
    def numpy(self) -> bool: ...
    @property
    def max_depth(self) -> int: ...
    @property
    def max_elements(self) -> int: ...
    @property
    def lazy(self) -> bool: ...
    def __init__(
        self,
        type: builtins.type[M_co],
        *,
        zero_copy: bool = False,
        numpy: bool = False,
        max_depth: int = ...,
        max_elements: int = ...,
        lazy: bool = False,
    ) -> None: ...
    def decode(self, buffer: Buffer, *, base: int = 0) -> M_co: ...

class FrameDecoder(Generic[F]):
    @overload
    def __init__(
        self: FrameDecoder[memoryview],
        max_frame_size: int = ...,
        *,
        strict: bool = False,
        message_type: None = None,
        copy: Literal[False] = False,
        offset: int = 0,
    ) -> None: ...
    @overload
    def __init__(
        self: FrameDecoder[bytes],
        max_frame_size: int = ...,
        *,
        strict: bool = False,
        message_type: None = None,
        copy: Literal[True],
        offset: int = 0,
    ) -> None: ...
    @overload
    def __init__(
        self: FrameDecoder[F],
        max_frame_size: int = ...,
        *,
        strict: bool = False,
        message_type: type[F] | Decoder[F],
        copy: bool = False,
        offset: int = 0,
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
    def take_frames(self, limit: int) -> memoryview: ...
    def shrink(self) -> None: ...
    def __iter__(self) -> Iterator[F]: ...
    def __next__(self) -> F: ...

# A message's fields as a dict, which a container of messages takes for a message.
_Fields = dict[str, Any]

class Repeated(list[T]):
    def MergeFrom(self, other: Iterable[T]) -> None: ...

class RepeatedMessages(Repeated[M]):
    def add(self, **fields: Any) -> M: ...
    def append(self, value: M | _Fields) -> None: ...
    def insert(self, index: SupportsIndex, value: M | _Fields) -> None: ...
    def extend(self, values: Iterable[M | _Fields]) -> None: ...
    def __iadd__(self, values: Iterable[M | _Fields], /) -> Self: ...  # type: ignore[misc, override]
    @overload
    def __setitem__(self, index: SupportsIndex, value: M | _Fields, /) -> None: ...
    @overload
    def __setitem__(self, index: slice, value: Iterable[M | _Fields], /) -> None: ...
    def MergeFrom(self, other: Iterable[M | _Fields]) -> None: ...

class Entries(dict[K, V]):
    def __missing__(self, key: K, /) -> V: ...
    def MergeFrom(self, other: SupportsKeysAndGetItem[K, V] | Iterable[tuple[K, V]]) -> None: ...

class MessageEntries(Entries[K, M]):
    def get_or_create(self, key: K) -> M: ...
    def __setitem__(self, key: K, value: M | _Fields, /) -> None: ...
    @overload
    def update(
        self, pairs: SupportsKeysAndGetItem[K, M | _Fields] | Iterable[tuple[K, M | _Fields]], /
    ) -> None: ...
    @overload
    def update(
        self: MessageEntries[str, M],
        pairs: SupportsKeysAndGetItem[str, M | _Fields] | Iterable[tuple[str, M | _Fields]] = ...,
        /,
        **named: M | _Fields,
    ) -> None: ...
    def MergeFrom(
        self, other: SupportsKeysAndGetItem[K, M | _Fields] | Iterable[tuple[K, M | _Fields]]
    ) -> None: ...
