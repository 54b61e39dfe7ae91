"""codec: varint-delimited protobuf frames in reusable buffers, decoded incrementally.

``codec.COMPILED`` tells whether the compiled core is loaded. Set
``CODEC_PURE_PYTHON=1`` before the first import to run the uncompiled source
of the same modules.
"""

from codec import _pure

_pure.install()

from codec import _varint, varint  # noqa: E402
from codec.errors import (  # noqa: E402
    CodecError,
    DecodeError,
    DepthLimitError,
    EncodeError,
    FrameTooLargeError,
    TruncatedError,
    VarintError,
    WireFormatError,
)

COMPILED: bool = _varint.COMPILED

__version__ = "0.1.0"

__all__ = [
    "COMPILED",
    "CodecError",
    "DecodeError",
    "DepthLimitError",
    "EncodeError",
    "FrameTooLargeError",
    "TruncatedError",
    "VarintError",
    "WireFormatError",
    "varint",
]
