"""codec: varint-delimited protobuf frames in reusable buffers, decoded incrementally.

``codec.COMPILED`` tells whether the compiled core is loaded. Set
``CODEC_PURE_PYTHON=1`` before the first import to run the uncompiled source
of the same modules. Without it, a core that is not compiled, or compiled from
older sources, is replaced by the uncompiled source with a
:class:`PurePythonWarning` (an ``ImportError`` with ``CODEC_REQUIRE_COMPILED=1``).
"""

import sys as _sys
import typing as _typing

from codec import _pure

_pure.install()

from codec import errors, varint, wire  # noqa: E402, F401  (the API's other modules)
from codec._pure import PurePythonWarning  # noqa: E402
from codec.errors import CodecError, DecodeError, EncodeError, FrameTooLargeError  # noqa: E402
from codec.framing import DEFAULT_MAX_FRAME_SIZE, FrameEncoder, encode_frame_into  # noqa: E402
from codec.io import read_frames, write_frames  # noqa: E402
from codec.structs._decode import decode  # noqa: E402
from codec.structs._encode import encode  # noqa: E402
from codec.structs._encode import message_size as encoded_size  # noqa: E402
from codec.structs._json import from_dict, from_json, to_dict, to_json  # noqa: E402
from codec.structs._message import Enum, Message, to_pb2  # noqa: E402
from codec.structs._schema import (  # noqa: E402
    from_pb2,
    load_structs,
    struct,
    unknown_fields,
    which_oneof,
)

if _typing.TYPE_CHECKING:  # the same classes, as generics: Decoder[Sample], Repeated[int], ...
    from codec._generic import (
        Decoder,
        Entries,
        FrameDecoder,
        MessageEntries,
        Repeated,
        RepeatedMessages,
    )
else:
    from codec.framing import FrameDecoder
    from codec.structs._decode import Decoder
    from codec.structs._struct import Entries, MessageEntries, Repeated, RepeatedMessages

#: True when every module of the compiled core is loaded (not their .py source).
COMPILED: bool = all(_sys.modules[name].COMPILED for name in _pure.CORE_MODULES)

__version__ = "0.1.0"

# What each name is for. The wire layer (codec.wire), every error class
# (codec.errors), varints (codec.varint), asyncio (codec.aio) and the
# profiler (codec.profiler) are modules of their own.
__all__ = [  # noqa: RUF022  (grouped by purpose, not sorted)
    # Frames: a varint length prefix, then the payload (a struct, a pb2 message or bytes).
    "DEFAULT_MAX_FRAME_SIZE",
    "FrameDecoder",
    "FrameEncoder",
    "encode_frame_into",
    "read_frames",
    "write_frames",
    # Structs: message classes made from a schema, a drop-in for pb2's.
    "Decoder",
    "Enum",
    "Message",
    "decode",
    "encode",
    "encoded_size",
    "load_structs",
    "struct",
    "unknown_fields",
    "which_oneof",
    # ... the containers their repeated and map fields read as, for annotations.
    "Entries",
    "MessageEntries",
    "Repeated",
    "RepeatedMessages",
    # ... and their conversions: pb2 messages, dicts and JSON as json_format writes them.
    "from_dict",
    "from_json",
    "from_pb2",
    "to_dict",
    "to_json",
    "to_pb2",
    # The errors a caller catches; their subclasses are in codec.errors.
    "CodecError",
    "DecodeError",
    "EncodeError",
    "FrameTooLargeError",
    # The build: whether the compiled core is loaded, and the warning when it is not.
    "COMPILED",
    "PurePythonWarning",
]
