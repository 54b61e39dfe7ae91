"""Smoke test of an installed wheel, run from a directory outside the checkout.

The compiled core loads from the installed package (``CODEC_REQUIRE_COMPILED=1``:
an ``ImportError`` otherwise), which ships the files users need and no C sources;
structs made from a descriptor and a raw payload make a framed round trip, which
protobuf reads too; the profiler demo runs on the compiled core.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ["CODEC_REQUIRE_COMPILED"] = "1"  # for the import below and the demo's process

from google.protobuf import descriptor_pb2, message_factory

import codec

package = Path(codec.__file__).parent
assert package.is_relative_to(sys.prefix), f"codec imported from {package}, not the install"
assert codec.COMPILED
for name in (
    "py.typed",
    "_generic.pyi",  # the generic Decoder and FrameDecoder type checkers see
    "profiler/profiler.proto",
    "profiler/perfetto_trace.proto",
    "wellknown/timestamp_structs.py",  # the modules generated ones import
):
    assert (package / name).is_file(), f"{name} is not installed"
assert not list(package.rglob("*.c")), "the wheel holds C sources"

Field = descriptor_pb2.FieldDescriptorProto
schema = descriptor_pb2.FileDescriptorProto(name="smoke.proto", package="smoke", syntax="proto3")
schema.message_type.add(
    name="Sample",
    field=[
        Field(name="ts_ns", number=1, type=Field.TYPE_UINT64, label=Field.LABEL_OPTIONAL),
        Field(name="name", number=2, type=Field.TYPE_STRING, label=Field.LABEL_OPTIONAL),
        Field(name="values", number=3, type=Field.TYPE_SINT64, label=Field.LABEL_REPEATED),
    ],
)
Sample = codec.load_structs(descriptor_pb2.FileDescriptorSet(file=[schema]))["smoke.Sample"]
expected = [(2**40 + i, f"scope {i}", [i, -i, -(2**62)]) for i in range(100)]

encoder = codec.FrameEncoder()
for ts_ns, name, values in expected:
    encoder.encode(Sample(ts_ns=ts_ns, name=name, values=values))
with encoder.getbuffer() as pending:
    structs = bytes(pending)
encoder.write(b"raw payload")
with encoder.getbuffer() as pending:
    stream = bytes(pending)

# Fed one byte at a time: every frame is split out and decoded into a struct again.
decoder = codec.FrameDecoder(message_type=Sample)
decoded = []
for offset in range(len(structs)):
    decoder.feed(structs[offset : offset + 1])
    decoded.extend(decoder)
decoder.feed_eof()
assert [(m.ts_ns, m.name, list(m.values)) for m in decoded] == expected

# The same frames, split untyped: protobuf parses each struct's; the payload comes back.
frames = codec.FrameDecoder()
frames.feed(stream)
*messages, payload = (bytes(frame) for frame in frames)
Message = message_factory.GetMessageClass(Sample.DESCRIPTOR)
parsed = [Message.FromString(message) for message in messages]
assert [(m.ts_ns, m.name, list(m.values)) for m in parsed] == expected
assert payload == b"raw payload"

with tempfile.TemporaryDirectory() as directory:
    trace = Path(directory) / "trace.json"
    command = [sys.executable, "-m", "codec", "demo", "--seconds", "0.5", "--trace", str(trace)]
    demo = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "compiled core" in demo.stdout.splitlines()[0], demo.stdout
    assert trace.stat().st_size > 0
print(demo.stdout)
print(f"wheel smoke: ok, codec {codec.__version__} compiled, from {package}")
