"""``generate``: one typed module of structs per file of a schema.

Strategy: the schema is a descriptor set (``-d``), read by the loader the
other commands use, or ``.proto`` files compiled in-process by
``grpc_tools.protoc`` (:func:`codec._descriptor_set.compile_protos`);
:mod:`codec._generate` makes the text of each module, and this command
writes the modules under ``-o`` and prints the path of each file written.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2

from codec import _generate
from codec._descriptor_set import compile_protos, read_set
from codec.cli import PROG, CliError


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
    modules = _generate.generate(descriptor_set, source)
    for path in _generate.write(modules, Path(args.output)):
        print(path)
    return 0


def add_commands(commands: Any) -> None:
    """Add ``generate`` to the subcommands of the parser."""
    parser = commands.add_parser(
        "generate",
        help="write typed modules of structs, one per .proto file",
        description=(
            "Write one module per file of a schema (dropin/chat.proto becomes "
            "OUT/dropin/chat_structs.py, with an __init__.py in each package directory). "
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
        "protos",
        nargs="*",
        metavar="PROTO",
        help=".proto files, named relative to a -I directory (compiled with grpcio-tools)",
    )
    parser.set_defaults(handler=generate)
