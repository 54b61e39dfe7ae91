"""The command line, ``python -m codec``: dump, encode, bench, and its error messages.

The schema is built here by hand as ``FileDescriptorProto``s (no protoc),
written out as a serialized ``FileDescriptorSet``, and the streams are made
by :class:`codec.FrameEncoder` from pb2 classes of the same descriptors. A
few tests run the real ``python -m codec`` in a subprocess (it inherits
``CODEC_PURE_PYTHON``, so both builds are exercised); the rest call
``codec.cli.main(argv)`` with the standard streams swapped for
in-memory ones, which is faster and shows the same behaviour.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

import codec
from codec.cli import byte_size, main

ROOT = Path(codec.__file__).resolve().parent.parent
F = descriptor_pb2.FieldDescriptorProto


# --- the schema: two files, one importing the other, in a FileDescriptorSet ------


def add_fields(
    message: descriptor_pb2.DescriptorProto, rows: list[tuple[str, int, int, int, str]]
) -> None:
    """Add a field to ``message`` per ``(name, number, type, label, type_name)`` row.

    An empty ``type_name`` leaves it unset, as a scalar field has none.
    """
    for name, number, type_, label, type_name in rows:
        field = message.field.add(name=name, number=number, type=type_, label=label)
        if type_name:
            field.type_name = type_name


def reading_file() -> descriptor_pb2.FileDescriptorProto:
    """clitest/reading.proto: message Reading (scalars, repeated, nested, enum, map), Tag."""
    proto = descriptor_pb2.FileDescriptorProto(
        name="clitest/reading.proto", package="clitest", syntax="proto3"
    )
    kind = proto.enum_type.add(name="Kind")
    kind.value.add(name="KIND_UNSPECIFIED", number=0)
    kind.value.add(name="KIND_GAUGE", number=1)
    tag = proto.message_type.add(name="Tag")
    tag.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    tag.field.add(name="value", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    reading = proto.message_type.add(name="Reading")
    add_fields(
        reading,
        [
            ("ts_ns", 1, F.TYPE_UINT64, F.LABEL_OPTIONAL, ""),
            ("name", 2, F.TYPE_STRING, F.LABEL_OPTIONAL, ""),
            ("value", 3, F.TYPE_SINT64, F.LABEL_OPTIONAL, ""),
            ("samples", 4, F.TYPE_DOUBLE, F.LABEL_REPEATED, ""),
            ("blob", 5, F.TYPE_BYTES, F.LABEL_OPTIONAL, ""),
            ("tag", 6, F.TYPE_MESSAGE, F.LABEL_OPTIONAL, ".clitest.Tag"),
            ("tags", 7, F.TYPE_MESSAGE, F.LABEL_REPEATED, ".clitest.Tag"),
            ("kind", 8, F.TYPE_ENUM, F.LABEL_OPTIONAL, ".clitest.Kind"),
            ("counts", 9, F.TYPE_MESSAGE, F.LABEL_REPEATED, ".clitest.Reading.CountsEntry"),
        ],
    )
    entry = reading.nested_type.add(name="CountsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    return proto


def batch_file() -> descriptor_pb2.FileDescriptorProto:
    """clitest/batch.proto (package clitest.batch), importing reading.proto and Timestamp."""
    proto = descriptor_pb2.FileDescriptorProto(
        name="clitest/batch.proto",
        package="clitest.batch",
        syntax="proto3",
        dependency=["clitest/reading.proto", "google/protobuf/timestamp.proto"],
    )
    add_fields(
        proto.message_type.add(name="Batch"),
        [
            ("id", 1, F.TYPE_UINT32, F.LABEL_OPTIONAL, ""),
            ("readings", 2, F.TYPE_MESSAGE, F.LABEL_REPEATED, ".clitest.Reading"),
            ("sent", 3, F.TYPE_MESSAGE, F.LABEL_OPTIONAL, ".google.protobuf.Timestamp"),
        ],
    )
    return proto


def _classes() -> dict[str, Any]:
    from google.protobuf import timestamp_pb2

    pool = descriptor_pool.DescriptorPool()
    timestamp = descriptor_pb2.FileDescriptorProto()
    timestamp_pb2.DESCRIPTOR.CopyToProto(timestamp)
    for file in (timestamp, reading_file(), batch_file()):
        pool.Add(file)
    names = ("clitest.Reading", "clitest.Tag", "clitest.batch.Batch")
    return {
        name.rpartition(".")[2]: message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
        for name in names
    }


CLASSES = _classes()
Reading = CLASSES["Reading"]
Batch = CLASSES["Batch"]


def readings() -> list[Any]:
    tag = {"key": "host", "value": "a1"}
    return [
        Reading(ts_ns=1_700_000_000_123_456_789, name="render.draw_mesh", value=-12345),
        Reading(
            ts_ns=2**64 - 1,
            name="café ☕",
            samples=[0.5, -1.25, 1e300],
            blob=bytes(range(7)),
            tag=tag,
            tags=[tag, {"key": "zone"}],
            kind=1,
            counts={"a": 1, "b": -2},
        ),
        Reading(),  # an empty message: a 0-byte frame
        Reading(name="x" * 300, value=2**62),  # a 2-byte length prefix
    ]


def frames(messages: list[Any]) -> bytes:
    encoder = codec.FrameEncoder()
    for message in messages:
        encoder.encode(message)
    with encoder.getbuffer() as pending:
        return bytes(pending)


def decode_frames(data: bytes, message_type: Any = Reading) -> list[Any]:
    decoder = codec.FrameDecoder(message_type=message_type)
    decoder.feed(data)
    decoder.feed_eof()
    return list(decoder)


def frame_offsets(messages: list[Any]) -> list[int]:
    """Stream offset where each message's frame starts."""
    offsets, pos = [], 0
    for message in messages:
        offsets.append(pos)
        pos += len(frames([message]))
    return offsets


def as_dict(message: Any, proto_names: bool = False) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=proto_names)


@dataclass
class Files:
    descriptor_set: Path
    stream: Path
    tmp: Path


@pytest.fixture
def files(tmp_path: Path) -> Files:
    # The importing file first: the CLI must add files in dependency order itself.
    # Timestamp's file is left out: protobuf ships it, as protoc without
    # --include_imports would leave it out.
    descriptor_set = descriptor_pb2.FileDescriptorSet(file=[batch_file(), reading_file()])
    set_path = tmp_path / "schema.pb"
    set_path.write_bytes(descriptor_set.SerializeToString())
    stream_path = tmp_path / "readings.bin"
    stream_path.write_bytes(frames(readings()))
    return Files(set_path, stream_path, tmp_path)


# --- running the command line --------------------------------------------------


@dataclass
class Result:
    status: int
    out: bytes
    err: str

    def lines(self) -> list[Any]:
        return [json.loads(line) for line in self.out.decode().splitlines()]


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Call ``main(argv)`` in process with in-memory stdin, stdout and stderr."""

    def run(*argv: str | Path, stdin: bytes = b"") -> Result:
        stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
        stderr = io.StringIO()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
        monkeypatch.setattr(sys, "stdout", stdout)
        monkeypatch.setattr(sys, "stderr", stderr)
        status = main([str(arg) for arg in argv])
        stdout.flush()
        return Result(status, stdout.buffer.getvalue(), stderr.getvalue())

    yield run


def run_module(*argv: str | Path, stdin: bytes = b"", timeout: float = 60) -> Result:
    """Run ``python -m codec`` in a subprocess (it inherits CODEC_PURE_PYTHON)."""
    done = subprocess.run(
        [sys.executable, "-m", "codec", *map(str, argv)],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )
    return Result(done.returncode, done.stdout, done.stderr.decode())


def schema_args(files: Files, type_name: str = "clitest.Reading") -> list[str | Path]:
    return ["--descriptor-set", files.descriptor_set, "--type", type_name]


# --- help ----------------------------------------------------------------------


def test_help_lists_the_commands() -> None:
    result = run_module("--help")
    assert result.status == 0
    help_text = result.out.decode()
    for command in ("dump", "encode", "bench"):
        assert command in help_text


def test_no_command_is_a_usage_error(cli: Any) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli()
    assert exit_info.value.code == 2


# --- dump ----------------------------------------------------------------------


def test_dump_prints_one_json_object_per_message(files: Files) -> None:
    result = run_module("dump", *schema_args(files), files.stream)
    assert (result.status, result.err) == (0, "")
    assert result.lines() == [as_dict(message) for message in readings()]
    first = result.out.decode().splitlines()[0]
    assert first == '{"name":"render.draw_mesh","tsNs":"1700000000123456789","value":"-12345"}'


@pytest.mark.parametrize("chunk_size", ["1", "7", "64KiB"])
def test_dump_stdin_in_any_chunk_size(cli: Any, files: Files, chunk_size: str) -> None:
    stream = files.stream.read_bytes()
    result = cli("dump", *schema_args(files), "--chunk-size", chunk_size, "-", stdin=stream)
    assert (result.status, result.err) == (0, "")
    assert result.lines() == [as_dict(message) for message in readings()]


def test_dump_reads_stdin_when_no_file_is_named(cli: Any, files: Files) -> None:
    result = cli("dump", *schema_args(files), stdin=files.stream.read_bytes())
    assert result.status == 0
    assert len(result.lines()) == len(readings())


def test_dump_prints_messages_before_the_input_ends(files: Files) -> None:
    """A pipe is read as its data arrives: each chunk's messages are printed at once."""
    messages = readings()
    process = subprocess.Popen(
        [sys.executable, "-m", "codec", "dump", *map(str, schema_args(files))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdin is not None and process.stdout is not None
    watchdog = threading.Timer(30, process.kill)  # a hang fails the test, not the run
    watchdog.start()
    try:
        for message in messages:
            process.stdin.write(frames([message]))
            process.stdin.flush()  # the stream stays open: no EOF yet
            assert json.loads(process.stdout.readline()) == as_dict(message)
        process.stdin.close()
        assert process.wait() == 0
    finally:
        watchdog.cancel()
        process.kill()
        process.wait()
        process.stdout.close()
        if process.stderr is not None:
            process.stderr.close()


def test_dump_output_is_utf8_with_sorted_keys(cli: Any, files: Files) -> None:
    line = cli("dump", *schema_args(files), files.stream).out.splitlines()[1].decode()
    assert '"name":"café ☕"' in line
    keys = list(json.loads(line))
    assert keys == sorted(keys)


def test_dump_proto_names(cli: Any, files: Files) -> None:
    result = cli("dump", *schema_args(files), "--proto-names", files.stream)
    assert result.lines() == [as_dict(message, proto_names=True) for message in readings()]
    assert "ts_ns" in result.lines()[0]


def test_dump_a_type_of_an_importing_file(cli: Any, files: Files) -> None:
    batch = Batch(id=7, readings=readings()[:2], sent={"seconds": 1, "nanos": 500_000_000})
    path = files.tmp / "batch.bin"
    path.write_bytes(frames([batch, Batch()]))
    result = cli("dump", *schema_args(files, ".clitest.batch.Batch"), path)
    assert (result.status, result.err) == (0, "")
    assert result.lines() == [as_dict(batch), {}]
    assert result.lines()[0]["sent"] == "1970-01-01T00:00:01.500Z"  # the well-known JSON form


def test_dump_an_empty_stream(cli: Any, files: Files) -> None:
    assert cli("dump", *schema_args(files), stdin=b"") == Result(0, b"", "")


# --- dump: malformed streams -----------------------------------------------------


def test_truncated_stream_prints_the_complete_messages_then_the_error(files: Files) -> None:
    messages = readings()
    last = frame_offsets(messages)[-1]
    data = files.stream.read_bytes()
    cut = files.tmp / "cut.bin"
    cut.write_bytes(data[: last + 10])  # 10 bytes into the last frame: prefix and some body
    result = run_module("dump", *schema_args(files), cut)
    assert result.status == 1
    assert result.lines() == [as_dict(message) for message in messages[:-1]]
    assert result.err == (
        f"codec dump: TruncatedError: stream ended inside a frame body (at offset {last})\n"
    )


def _too_large_limit() -> int:
    return max(len(message.SerializeToString()) for message in readings())


@pytest.mark.parametrize(
    ("tail", "options", "error"),
    [
        (b"", (), None),
        (b"\x80", (), "TruncatedError: stream ended inside a frame prefix"),
        (b"\x05abc", (), "TruncatedError: stream ended inside a frame body"),
        (b"\xff" * 10 + b"\x01", (), "VarintError: "),
        (b"\x81\x00", ("--strict",), "VarintError: "),
        (
            codec.varint.encode(_too_large_limit() + 1) + b"x" * 5,
            ("--max-frame-size", str(_too_large_limit())),
            f"FrameTooLargeError: frame of {_too_large_limit() + 1} bytes exceeds the limit",
        ),
        (b"\x03\xff\xff\xff", (), "DecodeError: frame is not a valid Reading"),
    ],
    ids=["clean", "prefix", "body", "varint", "strict", "too-large", "payload"],
)
@pytest.mark.parametrize("chunk_size", ["3", "64KiB"])
def test_malformed_tail(
    cli: Any,
    files: Files,
    tail: bytes,
    options: tuple[str, ...],
    error: str | None,
    chunk_size: str,
) -> None:
    data = files.stream.read_bytes()
    result = cli(
        "dump", *schema_args(files), "--chunk-size", chunk_size, *options, stdin=data + tail
    )
    assert result.lines() == [as_dict(message) for message in readings()]
    if error is None:
        assert (result.status, result.err) == (0, "")
        return
    assert result.status == 1
    assert result.err.startswith(f"codec dump: {error}")
    assert result.err.endswith(f"(at offset {len(data)})\n")
    assert result.err.count("\n") == 1


def test_error_inside_the_stream_keeps_the_frames_before_it(cli: Any, files: Files) -> None:
    messages = readings()
    offsets = frame_offsets(messages)
    data = files.stream.read_bytes()
    bad = data[: offsets[2]] + b"\xff" * 11 + data[offsets[2] :]
    result = cli("dump", *schema_args(files), "--chunk-size", "5", stdin=bad)
    assert result.status == 1
    assert result.lines() == [as_dict(message) for message in messages[:2]]
    assert result.err.startswith("codec dump: VarintError: ")
    assert result.err.endswith(f"(at offset {offsets[2]})\n")


# --- encode --------------------------------------------------------------------


def json_lines(messages: list[Any]) -> bytes:
    return b"".join(json.dumps(as_dict(message)).encode() + b"\n" for message in messages)


def test_encode_then_dump_round_trip(files: Files) -> None:
    messages = readings()
    source = files.tmp / "in.jsonl"
    source.write_bytes(json_lines(messages).replace(b"\n", b"\n\n", 1))  # a blank line
    encoded = run_module("encode", *schema_args(files), source)
    assert (encoded.status, encoded.err) == (0, "")
    assert decode_frames(encoded.out) == messages  # bytes may differ: map order is free
    dumped = run_module("dump", *schema_args(files), "-", stdin=encoded.out)
    assert (dumped.status, dumped.err) == (0, "")
    assert dumped.lines() == [json.loads(line) for line in json_lines(messages).splitlines()]


def test_encode_writes_in_batches(cli: Any, files: Files) -> None:
    messages = [Reading(ts_ns=i, name=f"scope.{i % 50}", samples=[i / 3] * 5) for i in range(3000)]
    result = cli("encode", *schema_args(files), stdin=json_lines(messages))
    assert (result.status, result.err) == (0, "")
    assert len(result.out) > 2 * 64 * 1024  # more than one batch
    assert result.out == frames(messages)


def test_encode_accepts_proto_field_names(cli: Any, files: Files) -> None:
    result = cli("encode", *schema_args(files), stdin=b'{"ts_ns": "5", "name": "a"}\n')
    assert result.out == frames([Reading(ts_ns=5, name="a")])


def test_encode_an_empty_input(cli: Any, files: Files) -> None:
    assert cli("encode", *schema_args(files), stdin=b"") == Result(0, b"", "")


def test_bad_json_line_names_its_line_number(files: Files) -> None:
    lines = b'{"name": "a"}\n\n{"name": "b",\n{"name": "c"}\n'
    result = run_module("encode", *schema_args(files), stdin=lines)
    assert result.status == 1
    assert result.err.startswith("codec encode: line 3: JSONDecodeError: ")
    assert result.err.count("\n") == 1
    assert "Traceback" not in result.err
    assert result.out == frames([Reading(name="a")])  # the lines before it


def test_a_line_nested_too_deep_is_a_one_line_error(files: Files) -> None:
    lines = b'{"name": "a"}\n' + b'{"tag": ' * 100_000 + b"{}" + b"}" * 100_000 + b"\n"
    result = run_module("encode", *schema_args(files), stdin=lines)
    assert (result.status, result.err) == (
        1,
        "codec encode: line 2: ParseError: the JSON nests too deep\n",
    )
    assert result.out == frames([Reading(name="a")])


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (b'{"nope": 1}', 'line 2: ParseError: Message type "clitest.Reading" has no field named'),
        (b"[1, 2]", "line 2: expected a JSON object, got list"),
        (b'{"tsNs": "-1"}', "line 2: ParseError: "),
        (b'{"name": "\xff"}', "line 2: UnicodeDecodeError: "),
        (b'{"name": "a", "name": "b"}', "line 2: ParseError: duplicate key 'name'"),
        (b'{"tag": {"key": "a", "key": "b"}}', "line 2: ParseError: duplicate key 'key'"),
        (b'{"tag": ' * 100_000 + b"{}" + b"}" * 100_000, "line 2: ParseError: the JSON nests"),
        (b'{"samples": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "line 2: ParseError: the"),
    ],
    ids=[
        "unknown-field",
        "not-an-object",
        "out-of-range",
        "not-utf8",
        "duplicate-key",
        "duplicate-nested-key",
        "too-deep-for-json",
        "too-deep-list",
    ],
)
def test_bad_line(cli: Any, files: Files, line: bytes, error: str) -> None:
    result = cli("encode", *schema_args(files), stdin=b"{}\n" + line + b"\n")
    assert result.status == 1
    assert result.err.startswith(f"codec encode: {error}")
    assert result.err.count("\n") == 1
    assert result.out == frames([Reading()])


def test_encode_ignore_unknown_fields(cli: Any, files: Files) -> None:
    argv = ("encode", *schema_args(files), "--ignore-unknown-fields")
    result = cli(*argv, stdin=b'{"nope": 1, "name": "a"}\n')
    assert (result.status, result.out) == (0, frames([Reading(name="a")]))


def test_encode_frame_too_large(cli: Any, files: Files) -> None:
    argv = ("encode", *schema_args(files), "--max-frame-size", "4")
    result = cli(*argv, stdin=b'{"name": "ab"}\n{"name": "abcdef"}\n')
    assert result.status == 1
    assert result.err == (
        "codec encode: line 2: FrameTooLargeError: frame of 8 bytes exceeds the limit of 4 bytes\n"
    )
    assert result.out == frames([Reading(name="ab")])


# --- schema and file errors --------------------------------------------------------


@pytest.mark.parametrize(
    ("type_name", "suggested"),
    [
        ("clitest.Readng", "close matches: clitest.Reading"),
        ("Reading", "close matches: clitest.Reading"),
        ("clitest.batch.batch", "close matches: clitest.batch.Batch"),
        ("Zzz", "it defines: clitest.Reading, clitest.Tag, clitest.batch.Batch"),
    ],
)
def test_unknown_type_lists_close_matches(
    cli: Any, files: Files, type_name: str, suggested: str
) -> None:
    for command in ("dump", "encode"):
        result = cli(command, *schema_args(files, type_name), stdin=b"")
        assert result.status == 1
        assert result.err.startswith(f"codec {command}: no message type {type_name!r} in ")
        assert suggested in result.err
        assert "CountsEntry" not in result.err  # map entries are not message types to name


def test_unknown_type_in_a_subprocess(files: Files) -> None:
    result = run_module("dump", *schema_args(files, "clitest.Readings"), files.stream)
    assert result.status == 1
    assert result.out == b""
    assert result.err == (
        f"codec dump: no message type 'clitest.Readings' in {files.descriptor_set}; "
        "close matches: clitest.Reading\n"
    )


def test_missing_files(cli: Any, files: Files) -> None:
    missing = files.tmp / "missing.pb"
    result = cli("dump", "--descriptor-set", missing, "--type", "clitest.Reading")
    assert result.status == 1
    assert result.err == (
        f"codec dump: cannot read descriptor set {missing}: No such file or directory\n"
    )
    for command in ("dump", "encode"):
        result = cli(command, *schema_args(files), missing)
        assert result.status == 1
        assert result.err == f"codec {command}: cannot read {missing}: No such file or directory\n"


def test_not_a_descriptor_set(cli: Any, files: Files) -> None:
    for garbage in (files.stream, files.tmp / "empty.pb"):
        if not garbage.exists():
            garbage.write_bytes(b"")
        result = cli("dump", "--descriptor-set", garbage, "--type", "clitest.Reading")
        assert result.status == 1
        assert result.err.startswith(f"codec dump: {garbage} is not a serialized FileDescriptorSet")


def test_descriptor_set_missing_an_import(cli: Any, files: Files) -> None:
    lacking = files.tmp / "lacking.pb"
    lacking.write_bytes(descriptor_pb2.FileDescriptorSet(file=[batch_file()]).SerializeToString())
    result = cli("dump", "--descriptor-set", lacking, "--type", "clitest.batch.Batch")
    assert result.status == 1
    assert result.err == (
        f"codec dump: {lacking}: clitest/batch.proto imports clitest/reading.proto, which the "
        "set does not hold (write the set with protoc --include_imports)\n"
    )


@pytest.mark.parametrize("bad", ["4 MB", "-1", "lots", "1.5MiB"])
def test_bad_size_option_is_a_usage_error(cli: Any, files: Files, bad: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli("dump", *schema_args(files), "--max-frame-size", bad)
    assert exit_info.value.code == 2


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("0", 0),
        ("65536", 65536),
        ("64KiB", 65536),
        ("64k", 65536),
        ("4MiB", 4 << 20),
        ("1G", 1 << 30),
    ],
)
def test_byte_size(text: str, size: int) -> None:
    assert byte_size(text) == size


# --- bench -----------------------------------------------------------------------


@pytest.mark.skipif(
    not (Path(codec.__file__).resolve().parent.parent / "benches").is_dir(),
    reason="codec is imported from outside a checkout (the sanitized build, a wheel): "
    "no benches/ to run, as the next test checks",
)
def test_bench_quick_prints_a_ratio_table() -> None:
    result = run_module("bench", "--quick")
    assert (result.status, result.err) == (0, "")
    report = result.out.decode()
    assert f"codec.COMPILED = {codec.COMPILED}" in report  # the child loads the same build
    assert "same-run ratios on this machine" in report
    rows = [[cell.strip() for cell in line.split(" | ")] for line in report.splitlines()]
    rows = [row for row in rows if len(row) >= 5]
    assert rows[0][:4] == ["group", "name", "ns/msg", "x baseline"]
    names = [row[1] for row in rows[1:]]
    for expected in (
        "SerializeToString+_VarintBytes+bytearray loop",
        "FrameEncoder.encode(pb2 message)",
        "FrameEncoder.encode(struct)",
        "_DecodeVarint32+slice loop",
        "FrameDecoder frames (memoryview)",
        "naive split + ParseFromString",
        "FrameDecoder(message_type=pb2)",
        "FrameDecoder(message_type=struct)",
    ):
        assert expected in names
    ratios = [row[3] for row in rows[1:]]
    assert all(ratio == "baseline" or ratio.endswith("x") for ratio in ratios)


def test_bench_outside_a_checkout_says_where_it_looked(
    cli: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The benchmarks are a checkout's benches/: an installed package has none to run."""
    monkeypatch.setattr(codec, "__file__", str(tmp_path / "codec" / "__init__.py"))
    for argv in (["bench", "--quick"], ["bench", "--suite"]):
        result = cli(*argv)
        assert (result.status, result.out) == (1, b"")
        assert result.err == (
            f"codec bench: no benches/ in {tmp_path.resolve()}: "
            "the benchmarks run from a source checkout of codec\n"
        )


def test_encode_writes_maps_in_upbs_deterministic_order(cli: Any, files: Files) -> None:
    """The same message, its map given in two orders, encodes to the same bytes."""
    keys = [f"k{i}" for i in range(20)]
    lines = [
        json.dumps({"name": "a", "counts": {key: int(key[1:]) for key in order}})
        for order in (keys, keys[::-1])
    ]
    result = cli("encode", *schema_args(files), stdin="\n".join(lines).encode())
    assert (result.status, result.err) == (0, "")
    first, second = (bytes(frame) for frame in decode_payloads(result.out))
    assert first == second
    expected = Reading(name="a", counts={key: int(key[1:]) for key in keys})
    assert first == expected.SerializeToString(deterministic=True)


def decode_payloads(data: bytes) -> list[memoryview]:
    decoder = codec.FrameDecoder()
    decoder.feed(data)
    return list(decoder)


def test_version(cli: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    core = "compiled core" if codec.COMPILED else "uncompiled source"
    assert capsys.readouterr().out == f"codec {codec.__version__} ({core})\n"


def test_dump_into_a_reader_that_stops_early_exits_quietly(files: Files) -> None:
    """``dump ... | head -1``: the broken pipe ends the command with status 1 and no message."""
    big = files.tmp / "big.bin"
    big.write_bytes(frames([Reading(ts_ns=i, name="x" * 50) for i in range(20_000)]))
    command = " ".join(
        [sys.executable, "-m", "codec", "dump", *map(str, schema_args(files)), str(big)]
    )
    done = subprocess.run(
        ["bash", "-c", f"{command} | head -1; echo status=${{PIPESTATUS[0]}}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    first, status = done.stdout.splitlines()
    assert json.loads(first)["name"] == "x" * 50
    assert (status, done.stderr) == ("status=1", "")
