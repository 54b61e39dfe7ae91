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

from codec import varint  # noqa: E402
from codec._pure import PurePythonWarning  # noqa: E402
from codec.errors import (  # noqa: E402
    CodecError,
    DecodeError,
    DepthLimitError,
    EncodeError,
    FrameTooLargeError,
    SchemaError,
    TruncatedError,
    VarintError,
    WireFormatError,
)
from codec.framing import (  # noqa: E402
    DEFAULT_MAX_FRAME_SIZE,
    FrameEncoder,
    encode_frame_into,
)
from codec.io import read_frames, write_frames  # noqa: E402
from codec.structs._json import from_dict, from_json, to_dict, to_json  # noqa: E402
from codec.structs._message import Enum, Message  # noqa: E402
from codec.structs._schema import (  # noqa: E402
    Struct,
    decode,
    encode,
    encoded_size,
    from_pb2,
    load_structs,
    struct,
    to_pb2,
    unknown_fields,
    which_oneof,
)
from codec.wire import (  # noqa: E402
    DEFAULT_MAX_DEPTH,
    EGROUP,
    I32,
    I64,
    LEN,
    MAX_FIELD_NUMBER,
    SGROUP,
    VARINT,
    WireReader,
    WireWriter,
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

__all__ = [
    "COMPILED",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_FRAME_SIZE",
    "EGROUP",
    "I32",
    "I64",
    "LEN",
    "MAX_FIELD_NUMBER",
    "SGROUP",
    "VARINT",
    "CodecError",
    "DecodeError",
    "Decoder",
    "DepthLimitError",
    "EncodeError",
    "Entries",
    "Enum",
    "FrameDecoder",
    "FrameEncoder",
    "FrameTooLargeError",
    "Message",
    "MessageEntries",
    "PurePythonWarning",
    "Repeated",
    "RepeatedMessages",
    "SchemaError",
    "Struct",
    "TruncatedError",
    "VarintError",
    "WireFormatError",
    "WireReader",
    "WireWriter",
    "decode",
    "encode",
    "encode_frame_into",
    "encoded_size",
    "from_dict",
    "from_json",
    "from_pb2",
    "load_structs",
    "read_frames",
    "struct",
    "to_dict",
    "to_json",
    "to_pb2",
    "unknown_fields",
    "varint",
    "which_oneof",
    "write_frames",
]
