"""Command line: ``python -m codec demo | record | view | dump | encode | generate | bench``.

Strategy: the commands are thin shells around the library, so they behave as
the library does and show it in use. This package holds what they share: the
parser (each command module adds its own subcommands), the argument types,
which check every option before a command starts, and :func:`main`, which
turns every failure into one line. The commands live in
:mod:`codec.cli.tools` (``dump``, ``encode``), :mod:`codec.cli.generate`
(``generate``), :mod:`codec.cli.profiler` (``demo``, ``record``, ``view``)
and :mod:`codec.cli.bench` (``bench``).

Errors never end in a traceback: every failure is one line on stderr,
``codec <command>: <what went wrong>``, and exit status 1 (2 for a bad
command line, as argparse does). A command raises :class:`CliError` for a
failure it words itself; a schema that cannot be loaded, a codec error, a
broken pipe and other OS errors are worded here.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

import codec
from codec.errors import CodecError, SchemaError

PROG = "python -m codec"

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


# --- argument types: each checks its value before any command runs ------------------


def byte_size(text: str) -> int:
    """A size in bytes: ``65536``, ``64KiB``, ``4MiB``, ``1G`` (binary units)."""
    match = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    if match is None or match[2].lower() not in _SIZE_UNITS:
        raise argparse.ArgumentTypeError(
            f"not a size in bytes: {text!r} (examples: 65536, 64KiB, 4MiB)"
        )
    return int(match[1]) * _SIZE_UNITS[match[2].lower()]


def positive_size(text: str) -> int:
    """A size in bytes (:func:`byte_size`) of at least 1."""
    size = byte_size(text)
    if size < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte, got {text!r}")
    return size


def address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, the host 127.0.0.1 when left out."""
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


positive_int = _bounded(int, 0, False, "a positive number")
positive_float = _bounded(float, 0, False, "a positive number")
count = _bounded(int, 0, True, "0 or more")
rate = _bounded(float, 0, True, "0 or a positive number")


def output_path(text: str) -> str:
    """A file to write: its directory must exist and be writable, checked before any work."""
    directory = Path(text).parent
    if not directory.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text}: no directory {directory}")
    if not os.access(directory, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot write {text}: {directory} is not writable")
    if Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text}: it is a directory")
    return text


# --- the command line -------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m codec``."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Varint-delimited protobuf streams: run the profiler demo, record and view "
            "profiles, print streams as JSON lines, write them from JSON lines, generate typed "
            "modules of structs, and time the library."
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
    from codec.cli import bench, generate, profiler, tools  # they import this module

    profiler.add_commands(commands)
    tools.add_commands(commands)
    generate.add_commands(commands)
    bench.add_commands(commands)
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
