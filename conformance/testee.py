"""A testee for protobuf's conformance_test_runner: codec's structs, or upb as the reference.

The runner starts this program and speaks to it through its standard input and
output: each request is a little-endian uint32 length and a serialized
``conformance.ConformanceRequest``, each answer the same framing around a
``conformance.ConformanceResponse``. The request names the test message type,
carries a protobuf or JSON (or text format) payload, and asks for an output
format; the answer is the re-encoded message or says why there is none
(``parse_error``, ``serialize_error``, ``runtime_error``, ``skipped``).

``--engine codec`` answers with codec's structs, as a program using codec
would: ``codec.struct`` of the generated message class, ``codec.decode`` and
``codec.encode`` for protobuf payloads, ``codec.from_json`` and
``codec.to_json`` for JSON. ``--engine upb`` answers with the google.protobuf
message classes themselves, the reference the codec answers are held to.
Neither has a text format here: text format tests are answered ``skipped``.

The Python modules of ``conformance.proto`` and the test message files are
generated from the runner's own sources (``run.py`` does it) and loaded from
``--pb2-dir`` by path, under names of their own, so that they never meet the
installed ``google.protobuf`` package.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import struct
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any, BinaryIO, Protocol

from google.protobuf import json_format
from google.protobuf import message as pb_message

# The generated modules, relative to --pb2-dir: (module name, path).
PB2_FILES = {
    "conformance": "conformance/conformance_pb2.py",
    "proto2": "google/protobuf/test_messages_proto2_pb2.py",
    "proto3": "google/protobuf/test_messages_proto3_pb2.py",
}


def load_pb2(pb2_dir: Path) -> dict[str, ModuleType]:
    """Import the generated modules from their files, under private module names."""
    modules = {}
    for key, relative in PB2_FILES.items():
        path = pb2_dir / relative
        name = f"_conformance_{key}_pb2"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        modules[key] = module
    return modules


def message_classes(modules: dict[str, ModuleType]) -> dict[str, Any]:
    """Every message class of the test message files, by full name (nested ones too)."""
    classes: dict[str, Any] = {}

    def add(cls: Any) -> None:
        classes[cls.DESCRIPTOR.full_name] = cls
        for nested in cls.DESCRIPTOR.nested_types:
            add(getattr(cls, nested.name))

    for key in ("proto2", "proto3"):
        module = modules[key]
        for name in module.DESCRIPTOR.message_types_by_name:
            add(getattr(module, name))
    return classes


class Engine(Protocol):
    """What a testee needs of a protobuf implementation.

    Each method raises one of ``parse_errors`` or ``serialize_errors`` (the
    implementation's documented errors) for input it refuses; anything else
    it raises is answered as a runtime error, a failure in every test.
    """

    parse_errors: tuple[type[BaseException], ...]
    serialize_errors: tuple[type[BaseException], ...]

    def parse_protobuf(self, full_name: str, payload: bytes) -> Any: ...

    def parse_json(self, full_name: str, text: str, ignore_unknown_fields: bool) -> Any: ...

    def to_protobuf(self, message: Any) -> bytes: ...

    def to_json(self, message: Any) -> str: ...


class UpbEngine:
    """google.protobuf's own message classes (upb in protobuf 4.21 and later)."""

    parse_errors: tuple[type[BaseException], ...] = (
        pb_message.DecodeError,
        json_format.ParseError,
    )
    serialize_errors: tuple[type[BaseException], ...] = (
        pb_message.EncodeError,
        json_format.SerializeToJsonError,
    )

    def __init__(self, classes: dict[str, Any]) -> None:
        self.classes = classes

    def parse_protobuf(self, full_name: str, payload: bytes) -> Any:
        return self.classes[full_name].FromString(payload)

    def parse_json(self, full_name: str, text: str, ignore_unknown_fields: bool) -> Any:
        message = self.classes[full_name]()
        json_format.Parse(text, message, ignore_unknown_fields=ignore_unknown_fields)
        return message

    def to_protobuf(self, message: Any) -> bytes:
        return bytes(message.SerializeToString())

    def to_json(self, message: Any) -> str:
        return json_format.MessageToJson(message)


class CodecEngine:
    """codec's structs, made from the same generated classes."""

    def __init__(self, classes: dict[str, Any]) -> None:
        import codec

        self.codec = codec
        self.classes = classes
        self.structs: dict[str, type] = {}
        # codec's decoders raise codec.DecodeError; its JSON functions are
        # json_format's and raise json_format's errors.
        self.parse_errors: tuple[type[BaseException], ...] = (
            codec.DecodeError,
            json_format.ParseError,
        )
        self.serialize_errors: tuple[type[BaseException], ...] = (
            codec.EncodeError,
            json_format.SerializeToJsonError,
        )

    def struct(self, full_name: str) -> type:
        # Made on first use: a class codec cannot make fails the requests of
        # its type (as runtime errors), not the testee.
        found = self.structs.get(full_name)
        if found is None:
            found = self.structs[full_name] = self.codec.struct(self.classes[full_name])
        return found

    def parse_protobuf(self, full_name: str, payload: bytes) -> Any:
        return self.codec.decode(self.struct(full_name), payload)

    def parse_json(self, full_name: str, text: str, ignore_unknown_fields: bool) -> Any:
        return self.codec.from_json(
            self.struct(full_name), text, ignore_unknown_fields=ignore_unknown_fields
        )

    def to_protobuf(self, message: Any) -> bytes:
        return bytes(self.codec.encode(message))

    def to_json(self, message: Any) -> str:
        return str(self.codec.to_json(message))


def error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def answer(request: Any, conformance: ModuleType, engine: Engine) -> Any:
    """The ConformanceResponse to one ConformanceRequest."""
    response = conformance.ConformanceResponse()
    if request.message_type == "conformance.FailureSet":
        # The runner asks the testee for failures it expects; ours are kept
        # in the failure list files, so the set is empty.
        response.protobuf_payload = conformance.FailureSet().SerializeToString()
        return response
    payload = request.WhichOneof("payload")
    output = request.requested_output_format
    if payload in ("text_payload", "jspb_payload") or output in (
        conformance.TEXT_FORMAT,
        conformance.JSPB,
    ):
        response.skipped = "text format and JSPB are not implemented"
        return response
    if output not in (conformance.PROTOBUF, conformance.JSON):
        response.runtime_error = f"unexpected output format {output}"
        return response
    try:
        try:
            if payload == "protobuf_payload":
                message = engine.parse_protobuf(request.message_type, request.protobuf_payload)
            elif payload == "json_payload":
                ignore = request.test_category == conformance.JSON_IGNORE_UNKNOWN_PARSING_TEST
                message = engine.parse_json(request.message_type, request.json_payload, ignore)
            else:
                response.runtime_error = f"unexpected payload {payload}"
                return response
        except engine.parse_errors as error:
            response.parse_error = error_text(error)
            return response
        try:
            if output == conformance.PROTOBUF:
                response.protobuf_payload = engine.to_protobuf(message)
            else:
                response.json_payload = engine.to_json(message)
        except engine.serialize_errors as error:
            response.serialize_error = error_text(error)
    except Exception as error:  # anything else is a bug: the test fails
        response.runtime_error = "".join(traceback.format_exception(error))[-2000:]
    return response


def read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    data = stream.read(size)
    if not data:
        return None
    if len(data) != size:
        raise EOFError(f"the runner closed the pipe after {len(data)} of {size} bytes")
    return data


def serve(
    stream_in: BinaryIO, stream_out: BinaryIO, modules: dict[str, ModuleType], engine: Engine
) -> int:
    conformance = modules["conformance"]
    count = 0
    while True:
        header = read_exactly(stream_in, 4)
        if header is None:
            return count
        (size,) = struct.unpack("<I", header)
        body = read_exactly(stream_in, size) if size else b""
        if body is None:
            raise EOFError("the runner closed the pipe inside a request")
        request = conformance.ConformanceRequest.FromString(body)
        encoded = answer(request, conformance, engine).SerializeToString()
        stream_out.write(struct.pack("<I", len(encoded)))
        stream_out.write(encoded)
        stream_out.flush()
        count += 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--engine", choices=("codec", "upb"), default="codec")
    parser.add_argument(
        "--pb2-dir",
        type=Path,
        default=os.environ.get("CODEC_CONFORMANCE_PB2_DIR"),
        help="the Python generated from conformance.proto and the test message files",
    )
    # The 3.21 runner passes the program's path again, as its first argument.
    parser.add_argument("ignored", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.pb2_dir is None:
        parser.error("--pb2-dir (or CODEC_CONFORMANCE_PB2_DIR) is required")
    modules = load_pb2(args.pb2_dir)
    classes = message_classes(modules)
    engine: Engine = CodecEngine(classes) if args.engine == "codec" else UpbEngine(classes)
    count = serve(sys.stdin.buffer, sys.stdout.buffer, modules, engine)
    print(f"testee ({args.engine}): {count} requests answered", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
