"""The types a program gets from codec's functions that take a message class.

``codec.decode``, ``codec.from_json``, ``codec.from_dict`` and ``codec.from_pb2``
return a struct of the class they are given, ``codec.to_pb2`` a message of the
google.protobuf class it is given, and ``codec.read_frames`` yields what a
``codec.FrameDecoder`` of the same arguments does. Without a class, the result
is as precise as can be known before run time: a ``codec.Message`` for a
struct, a ``google.protobuf.message.Message`` for a pb2 message, ``type[codec.Message]``
for ``codec.struct()``. A program using each of them, with the classes of
``codec.wellknown``, passes ``mypy --strict`` with ``assert_type`` on every call
and runs; one misusing them gets an error for each misuse. The mypy tests are
marked ``mypy``: each runs mypy in a subprocess, two runs in all, sharing one cache.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.typecheck import errors, mypy, program_dir

import codec

ROOT = Path(codec.__file__).resolve().parent.parent

GOOD_PROGRAM = """\
import io
from collections.abc import Iterable, Iterator
from typing import Any, assert_type

from google.protobuf import message, timestamp_pb2

import codec
from codec.wellknown.source_context_structs import SourceContext
from codec.wellknown.timestamp_structs import Timestamp


def kinds(values: Iterable[object]) -> set[type]:
    return {type(value) for value in values}


stamp = Timestamp(seconds=5, nanos=6)
data = stamp.SerializeToString()
pb2 = timestamp_pb2.Timestamp(seconds=5, nanos=6)

# Given a struct class, a struct of that class.
decoded = assert_type(codec.decode(Timestamp, data), Timestamp)
viewed = assert_type(codec.decode(Timestamp, memoryview(data), zero_copy=True), Timestamp)
parsed = assert_type(codec.from_json(Timestamp, '"1970-01-01T00:00:05.000000006Z"'), Timestamp)
converted = assert_type(codec.from_pb2(pb2, Timestamp), Timestamp)
context = assert_type(codec.from_dict(SourceContext, {"fileName": "a.proto"}), SourceContext)
assert kinds([decoded, viewed, parsed, converted]) == {Timestamp}
assert decoded == viewed == parsed == converted == stamp
assert type(context) is SourceContext and context.file_name == "a.proto"

# Without one, a struct class made at run time: a codec.Message.
made = assert_type(codec.struct(timestamp_pb2.Timestamp), type[codec.Message])
assert_type(codec.struct(timestamp_pb2.Timestamp.DESCRIPTOR), type[codec.Message])
unnamed = assert_type(codec.from_pb2(pb2), codec.Message)
again = assert_type(codec.decode(made, data), codec.Message)
assert issubclass(made, codec.Message) and kinds([unnamed, again]) == {made}
loaded = assert_type(codec.load_structs(timestamp_pb2), dict[str, type[Any]])
assert_type(codec.decode(loaded["google.protobuf.Timestamp"], data), Any)

# A pb2 message: of the class given, else of the struct's descriptor.
back = assert_type(codec.to_pb2(stamp, timestamp_pb2.Timestamp), timestamp_pb2.Timestamp)
plain = assert_type(codec.to_pb2(stamp), message.Message)
assert type(back) is timestamp_pb2.Timestamp and back == pb2
assert isinstance(plain, message.Message)

# Frames: the message type's messages, else memoryview (bytes with copy=True).
sink = io.BytesIO()
codec.write_frames(sink, [stamp, pb2])
decoder = codec.Decoder(Timestamp, zero_copy=True)


def source() -> io.BytesIO:
    return io.BytesIO(sink.getvalue())


def frames(copy: bool) -> Iterator[memoryview | bytes]:
    return codec.read_frames(source(), copy=copy)


structs = assert_type(codec.read_frames(source(), Timestamp), Iterator[Timestamp])
decoded_by = assert_type(codec.read_frames(source(), decoder), Iterator[Timestamp])
messages = assert_type(
    codec.read_frames(source(), timestamp_pb2.Timestamp), Iterator[timestamp_pb2.Timestamp]
)
views = assert_type(codec.read_frames(source()), Iterator[memoryview])
also_views = assert_type(codec.read_frames(source(), copy=False), Iterator[memoryview])
copies = assert_type(codec.read_frames(source(), copy=True), Iterator[bytes])
assert kinds(structs) == kinds(decoded_by) == {Timestamp}
assert kinds(messages) == {timestamp_pb2.Timestamp}
assert kinds(views) == kinds(also_views) == kinds(frames(False)) == {memoryview}
assert kinds(copies) == kinds(frames(True)) == {bytes}
assert kinds(codec.read_frames(source(), decoder)) == {Timestamp}  # an iterable of objects
"""

BAD_PROGRAM = """\
import io

from google.protobuf import source_context_pb2, timestamp_pb2

import codec
from codec.wellknown.timestamp_structs import Timestamp

data = b""
pb2 = timestamp_pb2.Timestamp()
codec.decode(source_context_pb2.SourceContext, data)
seconds: str = codec.decode(Timestamp, data).seconds
codec.from_json(Timestamp, "{}").second
codec.from_dict(Timestamp, {}).nanos + "x"
codec.from_pb2(pb2, Timestamp).nano
codec.from_pb2(pb2).seconds
codec.struct(timestamp_pb2.Timestamp)(seconds=1).seconds
codec.to_pb2(Timestamp(), source_context_pb2.SourceContext).seconds
codec.to_pb2(Timestamp(), Timestamp)
codec.to_pb2(Timestamp()).seconds
for frame in codec.read_frames(io.BytesIO(), Timestamp):
    frame.file_name
next(codec.read_frames(io.BytesIO(), codec.Decoder(Timestamp))).file_name
next(codec.read_frames(io.BytesIO())).decode()
next(codec.read_frames(io.BytesIO(), copy=True)).release()
"""

BAD_ERRORS = [
    'bad.py:10: error: Value of type variable "S" of "decode" cannot be "SourceContext"',
    'bad.py:11: error: Incompatible types in assignment (expression has type "int", variable has '
    'type "str")',
    'bad.py:12: error: "Timestamp" has no attribute "second"; maybe "seconds"?',
    'bad.py:13: error: Unsupported operand types for + ("int" and "str")',
    'bad.py:14: error: "Timestamp" has no attribute "nano"; maybe "nanos"?',
    'bad.py:15: error: "Message" has no attribute "seconds"',
    'bad.py:16: error: "Message" has no attribute "seconds"',
    'bad.py:17: error: "SourceContext" has no attribute "seconds"',
    'bad.py:18: error: Value of type variable "P" of "to_pb2" cannot be "Timestamp"',
    'bad.py:19: error: "Message" has no attribute "seconds"',
    'bad.py:21: error: "Timestamp" has no attribute "file_name"',
    'bad.py:22: error: "Timestamp" has no attribute "file_name"',
    'bad.py:23: error: "memoryview[int]" has no attribute "decode"',
    'bad.py:24: error: "bytes" has no attribute "release"',
]


@pytest.fixture(scope="module")
def mypy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The programs' directory: mypy strict, codec found in this checkout (its errors its own
    checks' business)."""
    where = tmp_path_factory.mktemp("typing")
    return program_dir(where, {"good.py": GOOD_PROGRAM, "bad.py": BAD_PROGRAM})


@pytest.mark.mypy
def test_mypy_strict_passes_the_program_with_the_types_it_asserts(mypy_dir: Path) -> None:
    done = mypy(mypy_dir, "good.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found in 1 source file" in done.stdout


def test_the_program_runs() -> None:
    """What the types say the functions return, they return."""
    exec(compile(GOOD_PROGRAM, "good.py", "exec"), {"__name__": "good"})


@pytest.mark.mypy
def test_mypy_strict_reports_each_misuse(mypy_dir: Path) -> None:
    assert errors(mypy(mypy_dir, "bad.py")) == BAD_ERRORS
