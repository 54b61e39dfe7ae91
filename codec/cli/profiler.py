"""``demo``, ``record`` and ``view``: the profiler from the command line.

Strategy: each command is a thin shell around :mod:`codec.profiler`.
``demo`` runs the profiler's demo (:mod:`codec.profiler.demo`): a profiled
workload streamed over loopback TCP to a viewer in the same process, ending
with a table of what it measured. ``record`` saves the stream of a running
profile server to a file, with periodic keyframes; ``view`` reads such a
file (from its first whole keyframe, so a cut file works) and prints the
top scopes, and can export a Chrome trace, a native Perfetto trace
(:mod:`codec.profiler.perfetto`, every frame, streamed) and an SVG flame graph
(:mod:`codec.profiler.flame`); ``demo`` can write the last two as well. The
profiler is imported when a command runs, so the other commands never load it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codec.cli import (
    CliError,
    address,
    count,
    output_path,
    positive_float,
    positive_int,
    rate,
)

if TYPE_CHECKING:
    from codec.profiler import Frame, PerfettoStats, Registry


def demo(args: argparse.Namespace) -> int:
    """Profile the demo workload, stream it to a viewer here, print what it measured."""
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
    """Save the stream of a profile server to a file, with a keyframe every N frames."""
    from codec.profiler.capture import record as record_stream

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
    """Print the top scopes of a recorded profile, and write the exports asked for."""
    from codec.profiler import Frame, Registry, read_capture
    from codec.profiler.analysis import FrameStore, format_summary, write_chrome_trace

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


# --- the parser ----------------------------------------------------------------


def add_commands(commands: Any) -> None:
    """Add ``demo``, ``record`` and ``view`` to the subcommands of the parser."""
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
        "--seconds", type=positive_float, default=3.0, help="how long to run (default: 3)"
    )
    demo_parser.add_argument(
        "--workers", type=count, default=2, metavar="N", help="job worker threads (default: 2)"
    )
    demo_parser.add_argument(
        "--fps",
        type=rate,
        default=1000,
        help="frames per second the workload aims at; 0 runs flat out (default: 1000)",
    )
    demo_parser.add_argument(
        "--trace",
        type=output_path,
        metavar="PATH",
        help="where to write the Chrome trace (default: codec-demo-trace.json in the "
        "temporary directory)",
    )
    demo_parser.add_argument(
        "--listen",
        type=address,
        default=("127.0.0.1", 0),
        metavar="HOST:PORT",
        help="where the profile server listens, e.g. for 'record' (default: a free local port)",
    )
    demo_parser.add_argument(
        "--fixed-columns", action="store_true", help="fixed-width columns instead of varints"
    )
    demo_parser.add_argument(
        "--top", type=positive_int, default=8, metavar="N", help="scopes per table (default: 8)"
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
    record_parser.add_argument("address", type=address, metavar="HOST:PORT")
    record_parser.add_argument("file", metavar="FILE")
    record_parser.add_argument("--seconds", type=positive_float, default=None)
    record_parser.add_argument("--frames", type=positive_int, default=None, metavar="N")
    record_parser.add_argument(
        "--keyframe-every",
        type=positive_int,
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
        type=positive_int,
        default=1000,
        metavar="N",
        help="frames kept, the last ones (default: 1000)",
    )
    view_parser.add_argument(
        "--top", type=positive_int, default=20, metavar="N", help="scopes per table (default: 20)"
    )
    _add_export_options(view_parser, "every frame of the file", "the kept frames")
    view_parser.set_defaults(handler=view)


def _add_export_options(parser: argparse.ArgumentParser, traced: str, drawn: str) -> None:
    """``--perfetto`` (writes ``traced``), ``--flame`` and ``--icicle`` (draw ``drawn``)."""
    parser.add_argument(
        "--perfetto",
        type=output_path,
        metavar="OUT.pftrace",
        help=f"also write {traced} as a native Perfetto trace (ui.perfetto.dev)",
    )
    parser.add_argument(
        "--flame",
        type=output_path,
        metavar="OUT.svg",
        help=f"also draw {drawn} as an SVG flame graph",
    )
    parser.add_argument(
        "--icicle",
        action="store_true",
        help="draw the flame graph upside down: top-level scopes at the top",
    )
