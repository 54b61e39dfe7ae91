"""``dump`` and ``encode``: delimited streams to JSON lines and back.

Strategy: ``dump`` reads its input with :func:`codec.read_frames`, in chunks
straight into a decoder's receive window, so a stream of any length is
decoded in constant memory, and prints each message as one JSON object per
line, the messages of each chunk before the next is read. ``encode`` reads
JSON lines, one message per line, and writes them with
:func:`codec.write_frames`: through one reusable :class:`~codec.FrameEncoder`,
to stdout in batches. Message classes are built at run time from a
serialized ``FileDescriptorSet`` (``protoc --include_imports
--descriptor_set_out=FILE``) by :mod:`codec.structs._descriptor_set`, the loader of
:func:`codec.load_structs`, so no generated ``_pb2`` module is needed; JSON
follows protobuf's canonical JSON mapping (``google.protobuf.json_format``).

A decode error names its class and the stream offset of the frame at fault;
the messages decoded before it are printed first. An encode error names the
input line; the frames of the lines before it have been written.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

from google.protobuf import descriptor_pool, json_format
from google.protobuf import message as pb_message

import codec
from codec.cli import CliError, byte_size, positive_size
from codec.errors import DecodeError, EncodeError
from codec.structs._descriptor_set import Schema, load_schema

# Bytes asked of the input per read in `dump`: the decoder's default receive
# chunk, large enough to amortise a system call, small enough to print early.
READ_CHUNK = 64 * 1024


@contextmanager
def open_input(path: str, *, buffered: bool = True) -> Iterator[BinaryIO]:
    """A binary stream of ``path``, or of stdin for ``-`` (left open)."""
    if path == "-":
        yield sys.stdin.buffer
        return
    try:
        stream: BinaryIO = open(path, "rb", buffering=-1 if buffered else 0)  # noqa: SIM115
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    with stream:
        yield stream


# --- dump ----------------------------------------------------------------------


def dump(args: argparse.Namespace) -> int:
    """Print each message of a delimited stream as one JSON object per line."""
    schema = load_schema(args.descriptor_set)
    message_class = schema.message_class(args.type)
    out = sys.stdout.buffer
    lines: list[bytes] = []  # rendered, not yet written

    def write_lines() -> None:
        out.write(b"".join(lines))
        out.flush()
        lines.clear()

    with open_input(args.input, buffered=False) as stream:
        messages = codec.read_frames(
            _WritingFirst(stream, write_lines),
            message_class,
            max_frame_size=args.max_frame_size,
            strict=args.strict,
            chunk_size=args.chunk_size,
        )
        try:
            for message in messages:  # the messages before a fault come out first
                lines.append(_json_line(message, schema.pool, args.proto_names))
        except DecodeError as exc:
            raise CliError(f"{type(exc).__name__}: {exc}") from None
        finally:
            write_lines()
    return 0


class _WritingFirst:
    """The input of ``dump``: writes the lines rendered so far before each read.

    So the messages of one read are printed together, and all of them before
    the command waits for more input.
    """

    def __init__(self, stream: Any, write_lines: Callable[[], None]) -> None:
        # One read at most (readinto1 of a buffered stdin), so a pipe's data shows at once.
        self._readinto = getattr(stream, "readinto1", stream.readinto)
        self._write_lines = write_lines

    def readinto(self, room: memoryview) -> int | None:
        self._write_lines()
        return self._readinto(room)  # type: ignore[no-any-return]


def _json_line(message: Any, pool: descriptor_pool.DescriptorPool, proto_names: bool) -> bytes:
    try:
        as_dict = json_format.MessageToDict(
            message, preserving_proto_field_name=proto_names, descriptor_pool=pool
        )
    except json_format.Error as exc:  # e.g. an Any of a type the set does not hold
        raise CliError(f"{type(exc).__name__}: {exc}") from None
    text = json.dumps(as_dict, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text.encode() + b"\n"


# --- encode --------------------------------------------------------------------


def encode(args: argparse.Namespace) -> int:
    """Write JSON lines (one message per line) as a delimited binary stream."""
    schema = load_schema(args.descriptor_set)
    message_class = schema.message_class(args.type)
    number = 0  # of the line being encoded

    def payloads(stream: BinaryIO) -> Iterator[bytes]:
        nonlocal number
        for number, line in enumerate(stream, 1):
            if line.strip():  # blank lines separate nothing
                message = _parse_line(line, number, message_class, schema, args)
                try:  # map entries in upb's deterministic order, so equal input, equal bytes
                    yield message.SerializeToString(deterministic=True)
                except pb_message.EncodeError as exc:  # a proto2 required field is missing
                    raise EncodeError(str(exc)) from None

    out = sys.stdout.buffer
    with open_input(args.input) as stream:
        try:  # the frames of the lines before an error are written
            codec.write_frames(out, payloads(stream), max_frame_size=args.max_frame_size)
        except EncodeError as exc:
            raise CliError(f"line {number}: {type(exc).__name__}: {exc}") from None
        finally:
            out.flush()
    return 0


def _parse_line(
    line: bytes,
    number: int,
    message_class: type[pb_message.Message],
    schema: Schema,
    args: argparse.Namespace,
) -> pb_message.Message:
    """The message of one JSON line, read as ``json_format.Parse`` reads JSON text.

    Any line that is not such a message is a :class:`CliError` naming the line:
    bad JSON, a duplicate key (``json_format`` refuses them, as
    :func:`codec.from_json` does), nesting too deep for the JSON reader (a
    ``RecursionError``) or for ``json_format``'s limit of 100 levels.
    """
    try:
        value = json.loads(line, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise CliError(f"line {number}: JSONDecodeError: {exc.msg} (column {exc.colno})") from None
    except UnicodeDecodeError as exc:
        raise CliError(f"line {number}: UnicodeDecodeError: {exc.reason}") from None
    except _DuplicateKey as exc:
        raise CliError(f"line {number}: ParseError: duplicate key {exc.key!r}") from None
    except RecursionError:
        raise CliError(f"line {number}: ParseError: the JSON nests too deep") from None
    if not isinstance(value, dict):
        raise CliError(f"line {number}: expected a JSON object, got {type(value).__name__}")
    message = message_class()
    try:
        json_format.ParseDict(
            value,
            message,
            ignore_unknown_fields=args.ignore_unknown_fields,
            descriptor_pool=schema.pool,
        )
    except json_format.ParseError as exc:
        raise CliError(f"line {number}: ParseError: {exc}") from None
    except RecursionError:
        raise CliError(f"line {number}: ParseError: the JSON nests too deep") from None
    return message


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's dict, refusing a key given twice (which ``json.loads`` keeps the last of)."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return value


# --- the parser ----------------------------------------------------------------


def add_commands(commands: Any) -> None:
    """Add ``dump`` and ``encode`` to the subcommands of the parser."""
    dump_parser = commands.add_parser(
        "dump",
        help="print a delimited stream as JSON lines",
        description=(
            "Decode a varint-delimited stream of messages from FILE (or stdin), reading it in "
            "chunks, and print one JSON object per message (protobuf's JSON mapping, keys "
            "sorted, UTF-8). On malformed input the messages before the fault are printed, "
            "then one line names the error and its stream offset."
        ),
    )
    _add_schema_options(dump_parser)
    dump_parser.add_argument(
        "--strict",
        action="store_true",
        help="strict varint prefixes: minimal, at most 9 bytes (multiformats, libp2p)",
    )
    dump_parser.add_argument(
        "--proto-names",
        action="store_true",
        help="keys as in the .proto file (ts_ns) instead of JSON names (tsNs)",
    )
    dump_parser.add_argument(
        "--chunk-size",
        type=positive_size,
        default=READ_CHUNK,
        metavar="SIZE",
        help="bytes read at a time (default: 64KiB)",
    )
    dump_parser.add_argument("input", nargs="?", default="-", metavar="FILE", help="default: stdin")
    dump_parser.set_defaults(handler=dump)

    encode_parser = commands.add_parser(
        "encode",
        help="write JSON lines as a delimited stream",
        description=(
            "Read JSON lines from FILE (or stdin), one message per line in protobuf's JSON "
            "mapping (blank lines are skipped), and write them to stdout as a varint-delimited "
            "binary stream. A bad line stops the run with its line number; the frames of the "
            "lines before it have been written."
        ),
    )
    _add_schema_options(encode_parser)
    encode_parser.add_argument(
        "--ignore-unknown-fields",
        action="store_true",
        help="skip JSON keys the message type does not define",
    )
    encode_parser.add_argument(
        "input", nargs="?", default="-", metavar="FILE", help="default: stdin"
    )
    encode_parser.set_defaults(handler=encode)


def _add_schema_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-d",
        "--descriptor-set",
        required=True,
        metavar="FILE",
        help="a serialized FileDescriptorSet (protoc --include_imports --descriptor_set_out=FILE)",
    )
    parser.add_argument(
        "-t",
        "--type",
        required=True,
        metavar="NAME",
        help="full name of the message type, e.g. pkg.Msg",
    )
    parser.add_argument(
        "--max-frame-size",
        type=byte_size,
        default=codec.DEFAULT_MAX_FRAME_SIZE,
        metavar="SIZE",
        help="largest payload accepted, e.g. 65536, 64KiB, 4MiB (default: 4MiB)",
    )
