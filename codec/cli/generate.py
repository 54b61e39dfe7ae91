"""``generate``: one typed module of structs per file of a schema.

Strategy: the schema is a descriptor set (``-d``), read by the loader the
other commands use, or ``.proto`` files compiled in-process by
``grpc_tools.protoc`` (:func:`codec.structs._descriptor_set.compile_protos`);
:mod:`codec.structs._generate` makes the text of each module (and
:mod:`codec.structs._generate_grpc` that of each gRPC module, with ``--grpc``), and
this command writes the modules under ``-o`` and prints the path of each
file written. It writes no ``__init__.py``: each directory is a namespace
package (see :mod:`codec.structs._generate`), so it warns when a package of the
modules is a regular package installed elsewhere, which would hide them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2

from codec.cli import PROG, CliError
from codec.structs import _generate, _generate_grpc
from codec.structs._descriptor_set import compile_protos, read_set


def generate(args: argparse.Namespace) -> int:
    """Write the module of each file of the schema; print each path written."""
    if (args.descriptor_set is None) == (not args.protos):
        raise CliError("give a descriptor set (-d FILE) or .proto files, one of the two")
    if args.descriptor_set is not None:
        descriptor_set = read_set(args.descriptor_set)
        source = args.descriptor_set
    else:
        compiled = compile_protos(args.protos, args.include or ["."])
        descriptor_set = descriptor_pb2.FileDescriptorSet.FromString(compiled)
        source = " ".join(args.protos)
    package = args.package or ""
    modules = _generate.generate(descriptor_set, source, package)
    if args.grpc:
        modules |= _generate_grpc.generate(descriptor_set, source, package)
    out = Path(args.output)
    for path in _generate.write(modules, out):
        print(path)
    for name, where in _hidden_by(modules, out).items():
        print(
            f"codec generate: warning: {name} is a regular package at {where}, where Python"
            f" looks for {name}.* instead of under {out}: give a prefix package (--package)",
            file=sys.stderr,
        )
    return 0


def _hidden_by(modules: dict[str, str], out: Path) -> dict[str, str]:
    """The packages of ``modules`` (by path) that are regular packages outside ``out`` on
    sys.path, by where each is: Python imports their submodules from there alone.

    Found on the file system, as Python's path finder looks, without importing anything: a
    directory with an ``__init__.py`` is a regular package, which wins over the directories
    of a namespace package, whose portions are all searched for the next part.
    """
    packages = {tuple(path.split("/")[:-1]) for path in modules}
    hidden: dict[str, str] = {}
    for parts in sorted(packages):
        search = [Path(entry or ".") for entry in sys.path]
        for depth, part in enumerate(parts, 1):
            found = [directory / part for directory in search if (directory / part).is_dir()]
            regular = next((each for each in found if (each / "__init__.py").is_file()), None)
            if regular is None:
                search = found
            elif regular.resolve().is_relative_to(out.resolve()):
                search = [regular]
            else:
                hidden[".".join(parts[:depth])] = str(regular)
                break
    return hidden


def add_commands(commands: Any) -> None:
    """Add ``generate`` to the subcommands of the parser."""
    parser = commands.add_parser(
        "generate",
        help="write typed modules of structs, one per .proto file",
        description=(
            "Write one module per file of a schema (dropin/chat.proto becomes "
            "OUT/dropin/chat_structs.py; no __init__.py is written: each directory is a "
            "namespace package, which merges with one of the same name, as google's). "
            "Importing a module builds its struct classes from the file's descriptor, held in "
            "the module (no _pb2 module is needed): the classes codec.load_structs gives for the "
            "same files. The module declares them for type checkers too. Protobuf's own files "
            "are not written: their modules ship in codec.wellknown."
        ),
        epilog=(
            f"Examples: {PROG} generate -d schema.pb -o gen; "
            f"{PROG} generate -I protos -o gen dropin/chat.proto"
        ),
    )
    parser.add_argument(
        "-d",
        "--descriptor-set",
        metavar="FILE",
        help="a serialized FileDescriptorSet (protoc --include_imports --descriptor_set_out=FILE)",
    )
    parser.add_argument(
        "-I",
        "--include",
        action="append",
        metavar="DIR",
        help="where .proto files and their imports are found, as protoc's -I (default: .)",
    )
    parser.add_argument(
        "-o", "--output", required=True, metavar="DIR", help="the directory to write into"
    )
    parser.add_argument(
        "--package",
        metavar="PACKAGE",
        help=(
            "a package to put the modules under: with myapp.pb, dropin/chat.proto becomes "
            "myapp.pb.dropin.chat_structs (OUT/myapp/pb/dropin/chat_structs.py), and the "
            "modules import each other from there"
        ),
    )
    parser.add_argument(
        "--grpc",
        action="store_true",
        help=(
            "also write, for each file with services, a module of gRPC stubs and servicers "
            "that send and receive structs (dropin/chat_structs_grpc.py); it needs grpcio"
        ),
    )
    parser.add_argument(
        "protos",
        nargs="*",
        metavar="PROTO",
        help=".proto files, named relative to a -I directory (compiled with grpcio-tools)",
    )
    parser.set_defaults(handler=generate)
