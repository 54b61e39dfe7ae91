"""Command line: ``python -m codec demo | record | view | dump | encode | bench``.

Strategy: the commands are thin shells around the library, so they behave as
the library does and show it in use. ``dump`` reads its input with
:func:`codec.read_frames`, in chunks straight into a decoder's receive
window, so a stream of any length is decoded in constant memory, and prints
each message as one JSON object per line, the messages of each chunk before
the next is read. ``encode`` reads JSON lines, one message per line, and
writes them with :func:`codec.write_frames`: through one reusable
:class:`~codec.FrameEncoder`, to stdout in batches. Message classes are
built at run time from a serialized ``FileDescriptorSet`` (``protoc
--include_imports --descriptor_set_out=FILE``), so no generated ``_pb2``
module is needed; JSON follows protobuf's canonical JSON mapping
(``google.protobuf.json_format``).

Errors never end in a traceback: every failure is one line on stderr,
``codec <command>: <what went wrong>``, and exit status 1 (2 for a bad
command line, as argparse does). A decode error names its class and the
stream offset of the frame at fault; the messages decoded before it are
printed first. An encode error names the input line; the frames of the lines
before it have been written.

``demo`` runs the profiler's demo (:mod:`codec.profiler.demo`): a profiled
workload streamed over loopback TCP to a viewer in the same process, ending
with a table of what it measured. ``record`` saves the stream of a running
profile server to a file, with periodic keyframes; ``view`` reads such a
file (from its first whole keyframe, so a cut file works) and prints the
top scopes, and can export a Chrome trace, a native Perfetto trace
(:mod:`codec.profiler.perfetto`, every frame, streamed) and an SVG flame graph
(:mod:`codec.profiler.flame`); ``demo`` can write the last two as well.

``bench`` times the library against the naive loops it replaces, in this
process, with ``timeit`` and nothing but the package installed, and prints
same-run ratios (``--suite`` runs the pytest-benchmark suite of a checkout
instead).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from google.protobuf import descriptor_pool, json_format
from google.protobuf import message as pb_message

import codec
from codec._descriptor_set import Schema, SchemaError, load_schema
from codec.errors import CodecError, DecodeError, EncodeError

if TYPE_CHECKING:
    from codec.profiler import Frame, PerfettoStats, Registry

PROG = "python -m codec"

# Bytes asked of the input per read in `dump`: the decoder's default receive
# chunk, large enough to amortise a system call, small enough to print early.
READ_CHUNK = 64 * 1024

_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gib": 1 << 30,
}


class CliError(Exception):
    """A failure reported as one line on stderr, with exit status 1."""


# --- input and output ------------------------------------------------------------


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


def byte_size(text: str) -> int:
    """A size in bytes: ``65536``, ``64KiB``, ``4MiB``, ``1G`` (binary units)."""
    match = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    if match is None or match[2].lower() not in _SIZE_UNITS:
        raise argparse.ArgumentTypeError(
            f"not a size in bytes: {text!r} (examples: 65536, 64KiB, 4MiB)"
        )
    return int(match[1]) * _SIZE_UNITS[match[2].lower()]


def _positive_size(text: str) -> int:
    size = byte_size(text)
    if size < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte, got {text!r}")
    return size


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
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CliError(f"line {number}: JSONDecodeError: {exc.msg} (column {exc.colno})") from None
    except UnicodeDecodeError as exc:
        raise CliError(f"line {number}: UnicodeDecodeError: {exc.reason}") from None
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
    return message


# --- bench ---------------------------------------------------------------------


# The columns of the ratio table, after group and name.
_BENCH_COLUMNS = ("ns/msg", "x baseline", "(median)", "target")


def bench(args: argparse.Namespace) -> int:
    """Print same-run ratios of codec against the naive loops, or run benches/."""
    if args.suite:
        return _run_suite()
    from codec import _peerbench

    rounds, min_round = (3, 0.002) if args.quick else (7, 0.05)
    corpus = _peerbench.sample_corpus(args.messages)
    ops = len(corpus.messages)
    size = sum(map(len, corpus.payloads)) / ops
    cases = _peerbench.bench_cases(corpus)
    wrong = [case.name for case in cases if not case.is_right()]
    if wrong:
        raise CliError(f"wrong output, nothing timed: {', '.join(wrong)}")
    print(
        f"codec bench: {ops} codec._peerbench.Sample records (~{size:.0f} bytes each), "
        f"{rounds} rounds{' (--quick)' if args.quick else ''}, timeit (garbage collector off)"
    )
    print(_peerbench.describe_build())
    print(flush=True)
    _peerbench.measure(cases, rounds, min_round)
    for line in _peerbench.ratio_table([case.timing(ops) for case in cases], _BENCH_COLUMNS):
        print(line)
    print()
    print(
        "These are same-run ratios on this machine: every row was timed in this process, "
        "interleaved\nround by round with its group's baseline; 'x baseline' divides the "
        "baseline's best round by\nthe row's (median rounds in parentheses; when the two "
        "disagree, the machine was busy).\nAbsolute ns/msg describe this run only. Targets "
        "are DESIGN.md's, for the compiled build."
    )
    return 0


def _run_suite() -> int:
    root = Path(codec.__file__).resolve().parent.parent
    if not (root / "benches" / "conftest.py").is_file():
        raise CliError(
            f"no benches/ in {root}: the pytest-benchmark suite runs from a source checkout"
        )
    command = [sys.executable, "-m", "pytest", "benches/", "--benchmark-only", "-q"]
    print(f"running {' '.join(command[1:])} in {root}", flush=True)
    return subprocess.call(command, cwd=root)


# --- command line --------------------------------------------------------------


def demo(args: argparse.Namespace) -> int:
    from codec.profiler.demo import DEFAULT_TRACE, run_demo

    _check_flame_options(args)
    host, port = args.listen
    on_terminal = sys.stderr.isatty()

    def progress(line: str) -> None:
        if args.quiet:
            return
        if on_terminal:
            print("\r" + line.ljust(78), end="", file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr)

    result = asyncio.run(
        run_demo(
            args.seconds,
            workers=args.workers,
            fps=args.fps,
            trace=Path(args.trace) if args.trace else DEFAULT_TRACE,
            host=host,
            port=port,
            fixed_columns=args.fixed_columns,
            progress=progress,
        )
    )
    if on_terminal and not args.quiet:
        print(file=sys.stderr)
    print(result.table(top=args.top))
    if args.perfetto:
        from codec.profiler.perfetto import write_perfetto_trace

        stats = write_perfetto_trace(result.kept, result.registry, args.perfetto)
        _report_perfetto(args.perfetto, stats)
    _write_flame(args, result.kept, result.registry)
    return 0


def record(args: argparse.Namespace) -> int:
    from codec.profiler.transport import record as record_stream

    host, port = args.address
    stats = asyncio.run(
        record_stream(
            host,
            port,
            args.file,
            keyframe_every=args.keyframe_every,
            duration=args.seconds,
            frames=args.frames,
        )
    )
    print(
        f"recorded {stats.frames:,} frames, {stats.keyframes:,} keyframes, "
        f"{stats.bytes_written:,} bytes to {args.file}"
        + (
            f" ({stats.frames_dropped:,} frames dropped by the server)"
            if stats.frames_dropped
            else ""
        )
    )
    return 0


def view(args: argparse.Namespace) -> int:
    from codec.profiler import Frame, Registry, read_capture
    from codec.profiler.viewer import FrameStore, format_summary, write_chrome_trace

    _check_flame_options(args)
    data = Path(args.file).read_bytes()
    store = FrameStore(args.frames)
    registry = Registry()
    sessions: set[int] = set()
    for receiver, item in read_capture(data):
        registry = receiver.registry
        if isinstance(item, Frame):
            store.add(item)
        else:
            if sessions and item.session_id not in sessions:
                store.clear()  # a restarted producer: its ids mean other scopes
            sessions.add(item.session_id)
    if not sessions:
        raise CliError(f"{args.file}: no keyframe found: not a profiler stream, or cut short")
    frames = store.frames
    print(
        f"{args.file}: {len(data):,} bytes, {store.frames_added:,} frames, "
        f"{store.scopes_added:,} scopes, {len(sessions)} session(s); showing the last "
        f"{len(frames):,} frames"
    )
    print(format_summary(frames, registry, top=args.top))
    if args.chrome:
        write_chrome_trace(frames, registry, args.chrome)
        print(f"Chrome trace: {args.chrome}")
    if args.perfetto:
        from codec.profiler.perfetto import write_perfetto_capture

        _report_perfetto(args.perfetto, write_perfetto_capture(data, args.perfetto))
    _write_flame(args, frames, registry)
    return 0


def _check_flame_options(args: argparse.Namespace) -> None:
    if args.icicle and not args.flame:
        raise CliError("--icicle draws the --flame graph upside down: give --flame OUT.svg too")


def _report_perfetto(path: str, stats: PerfettoStats) -> None:
    print(
        f"Perfetto trace: {path} ({stats.slices:,} slices, {stats.bytes_written:,} bytes; "
        "open it in https://ui.perfetto.dev)"
    )


def _write_flame(args: argparse.Namespace, frames: Sequence[Frame], registry: Registry) -> None:
    if not args.flame:
        return
    from codec.profiler.flame import write_flame_graph

    write_flame_graph(frames, registry, args.flame, icicle=args.icicle)
    print(f"{'Icicle' if args.icicle else 'Flame'} graph: {args.flame}")


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host or "127.0.0.1", int(port)


def _bounded(
    convert: Callable[[str], float], low: float, low_allowed: bool, expected: str
) -> Callable[[str], Any]:
    """An argument type: a finite number above ``low`` (or equal to it, if allowed)."""

    def parse(text: str) -> Any:
        value = convert(text)
        if not (math.isfinite(value) and (value > low or (low_allowed and value == low))):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text}")
        return value

    parse.__name__ = convert.__name__  # argparse names it in "invalid int value: 'x'"
    return parse


_positive_int = _bounded(int, 0, False, "a positive number")
_positive_float = _bounded(float, 0, False, "a positive number")
_count = _bounded(int, 0, True, "0 or more")
_rate = _bounded(float, 0, True, "0 or a positive number")


def _output_path(text: str) -> str:
    """A file to write: its directory must exist and be writable, checked before any work."""
    directory = Path(text).parent
    if not directory.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text}: no directory {directory}")
    if not os.access(directory, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot write {text}: {directory} is not writable")
    if Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text}: it is a directory")
    return text


def _add_profiler_commands(commands: Any) -> None:
    demo_parser = commands.add_parser(
        "demo",
        help="profile a synthetic workload, stream it to a viewer, print what was measured",
        description=(
            "Run an instrumented game-loop-like workload (a main thread and job workers) for "
            "a few seconds, stream its frames over loopback TCP to a viewer in this process, "
            "then print frames/s, scopes/s, wire bytes per scope against Chrome trace JSON "
            "and puffin's layout, the memory recording and encoding allocate, the top scopes, "
            "and where the Chrome trace of the last frames was written."
        ),
    )
    demo_parser.add_argument(
        "--seconds", type=_positive_float, default=3.0, help="how long to run (default: 3)"
    )
    demo_parser.add_argument(
        "--workers", type=_count, default=2, metavar="N", help="job worker threads (default: 2)"
    )
    demo_parser.add_argument(
        "--fps",
        type=_rate,
        default=1000,
        help="frames per second the workload aims at; 0 runs flat out (default: 1000)",
    )
    demo_parser.add_argument(
        "--trace",
        type=_output_path,
        metavar="PATH",
        help="where to write the Chrome trace (default: codec-demo-trace.json in the "
        "temporary directory)",
    )
    demo_parser.add_argument(
        "--listen",
        type=_address,
        default=("127.0.0.1", 0),
        metavar="HOST:PORT",
        help="where the profile server listens, e.g. for 'record' (default: a free local port)",
    )
    demo_parser.add_argument(
        "--fixed-columns", action="store_true", help="fixed-width columns instead of varints"
    )
    demo_parser.add_argument(
        "--top", type=_positive_int, default=8, metavar="N", help="scopes per table (default: 8)"
    )
    demo_parser.add_argument("--quiet", action="store_true", help="no progress lines")
    _add_export_options(demo_parser, "the frames the viewer kept", "the frames the viewer kept")
    demo_parser.set_defaults(handler=demo)

    record_parser = commands.add_parser(
        "record",
        help="save the stream of a profile server to a file",
        description=(
            "Connect to a profile server as a viewer and write its stream to FILE as "
            "received, with a keyframe (header and every definition) every N frames, so "
            "'view' can read the file even if it is cut. Stops after --seconds or --frames, "
            "or when the server closes the connection."
        ),
    )
    record_parser.add_argument("address", type=_address, metavar="HOST:PORT")
    record_parser.add_argument("file", metavar="FILE")
    record_parser.add_argument("--seconds", type=_positive_float, default=None)
    record_parser.add_argument("--frames", type=_positive_int, default=None, metavar="N")
    record_parser.add_argument(
        "--keyframe-every",
        type=_positive_int,
        default=300,
        metavar="N",
        help="frames between keyframes (default: 300)",
    )
    record_parser.set_defaults(handler=record)

    view_parser = commands.add_parser(
        "view",
        help="summarise a recorded profile, optionally as a Chrome trace",
        description=(
            "Read a recorded profiler stream from its first whole keyframe (a cut file "
            "works), keep its last frames, and print the top scopes by total and self time."
        ),
    )
    view_parser.add_argument("file", metavar="FILE")
    view_parser.add_argument(
        "--chrome", metavar="OUT.json", help="also write the kept frames as a Chrome trace"
    )
    view_parser.add_argument(
        "--frames",
        type=_positive_int,
        default=1000,
        metavar="N",
        help="frames kept, the last ones (default: 1000)",
    )
    view_parser.add_argument(
        "--top", type=_positive_int, default=20, metavar="N", help="scopes per table (default: 20)"
    )
    _add_export_options(view_parser, "every frame of the file", "the kept frames")
    view_parser.set_defaults(handler=view)


def _add_export_options(parser: argparse.ArgumentParser, traced: str, drawn: str) -> None:
    """``--perfetto`` (writes ``traced``), ``--flame`` and ``--icicle`` (draw ``drawn``)."""
    parser.add_argument(
        "--perfetto",
        type=_output_path,
        metavar="OUT.pftrace",
        help=f"also write {traced} as a native Perfetto trace (ui.perfetto.dev)",
    )
    parser.add_argument(
        "--flame",
        type=_output_path,
        metavar="OUT.svg",
        help=f"also draw {drawn} as an SVG flame graph",
    )
    parser.add_argument(
        "--icicle",
        action="store_true",
        help="draw the flame graph upside down: top-level scopes at the top",
    )


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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m codec``."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Varint-delimited protobuf streams: run the profiler demo, record and view "
            "profiles, print streams as JSON lines, write them from JSON lines, and time the "
            "library."
        ),
        epilog=(
            "Errors are one line on stderr and exit status 1. "
            f"'{PROG} COMMAND --help' describes a command."
        ),
    )
    core = "compiled core" if codec.COMPILED else "uncompiled source"
    parser.add_argument(
        "--version", action="version", version=f"codec {codec.__version__} ({core})"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_profiler_commands(commands)

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
        type=_positive_size,
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

    bench_parser = commands.add_parser(
        "bench",
        help="print same-run ratios against the naive loops",
        description=(
            "Time framed encode (pb2 messages and structs), frame splitting and typed decode of "
            "1000 ~35-byte Sample records against the naive SerializeToString + _VarintBytes "
            "and _DecodeVarint32 + slice loops, in this process, and print the ratios."
        ),
    )
    bench_parser.add_argument(
        "--quick", action="store_true", help="a short run (well under a second when compiled)"
    )
    bench_parser.add_argument(
        "--messages", type=int, default=1000, metavar="N", help="records per batch (default: 1000)"
    )
    bench_parser.add_argument(
        "--suite",
        action="store_true",
        help="run the pytest-benchmark suite of a checkout (benches/) instead",
    )
    bench_parser.set_defaults(handler=bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "bench" and args.messages < 1:
        parser.error("--messages must be at least 1")
    try:
        return int(args.handler(args))
    except (CliError, SchemaError) as exc:
        return _fail(args.command, str(exc))
    except CodecError as exc:  # a bad profiler stream in record or view
        return _fail(args.command, f"{type(exc).__name__}: {exc}")
    except BrokenPipeError:
        _silence_stdout()  # the reader went away (| head): stop quietly
        return 1
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(args.command, f"{where}{exc.strerror or exc}")
    except KeyboardInterrupt:
        return 130


def _fail(command: str, message: str) -> int:
    with suppress(OSError, ValueError):
        sys.stdout.flush()
    one_line = re.sub(r"\s*\n\s*", " ", message.strip())  # protobuf's messages span lines
    print(f"codec {command}: {one_line}", file=sys.stderr)
    return 1


def _silence_stdout() -> None:
    """Point stdout at devnull so the interpreter's final flush cannot fail again."""
    with suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
