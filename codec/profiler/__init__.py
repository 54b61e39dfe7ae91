"""codec.profiler: timing scopes recorded per thread and streamed frame by frame.

Scope details are registered once under dense ids; each recorded scope then
costs its id, start, duration and depth, written into preallocated columns
and encoded straight from them as packed protobuf columns
(``profiler.proto`` in this package is the format). The modules, in layer
order, one role each:

* ``model``: the registry and frames, as both ends of a stream see them;
* ``_recorder`` (compiled): the per-thread columns a scope is written into;
* ``packets``: the packet layout, its field numbers by name, written and read;
* ``receiver``: the rules of a stream of packets (keyframes, sessions),
  sans-IO;
* ``recording``: the :class:`Profiler`, which encodes a frame per
  ``end_frame()`` and hands it to its sinks;
* ``server``: the profile server, the stream fanned out over TCP to viewers
  (the programs that connect to receive it);
* ``client``: a viewer's connection to a server;
* ``capture``: capture files, written by a sink or from a server, read from
  any keyframe;
* ``analysis``: recent frames, scope trees, Chrome traces and summaries;
* ``perfetto``: native Perfetto traces, streamed; ``flame``: SVG flame
  graphs;
* ``demo``: a profiled workload streamed to a viewer in the same process.
"""

from codec.errors import StreamError
from codec.profiler._recorder import COMPILED, Scope
from codec.profiler.analysis import (
    FrameStore,
    chrome_trace,
    format_summary,
    summary,
    write_chrome_trace,
)
from codec.profiler.capture import FileSink, RecordStats, find_keyframe, read_capture, record
from codec.profiler.client import ViewerClient, connect_viewer
from codec.profiler.flame import (
    FlameNode,
    FlameTrack,
    flame_graph_svg,
    flame_tracks,
    write_flame_graph,
)
from codec.profiler.model import (
    Frame,
    Registry,
    ScopeDef,
    ScopeKind,
    TrackColumns,
    TrackDef,
    TrackKind,
    TrackScopes,
)
from codec.profiler.packets import PacketWriter, Session
from codec.profiler.perfetto import (
    PerfettoStats,
    PerfettoWriter,
    write_perfetto_capture,
    write_perfetto_trace,
)
from codec.profiler.receiver import Receiver
from codec.profiler.recording import Profiler, Sink
from codec.profiler.server import ProfileServer, ViewerStats

__all__ = [
    "COMPILED",
    "FileSink",
    "FlameNode",
    "FlameTrack",
    "Frame",
    "FrameStore",
    "PacketWriter",
    "PerfettoStats",
    "PerfettoWriter",
    "ProfileServer",
    "Profiler",
    "Receiver",
    "RecordStats",
    "Registry",
    "Scope",
    "ScopeDef",
    "ScopeKind",
    "Session",
    "Sink",
    "StreamError",
    "TrackColumns",
    "TrackDef",
    "TrackKind",
    "TrackScopes",
    "ViewerClient",
    "ViewerStats",
    "chrome_trace",
    "connect_viewer",
    "find_keyframe",
    "flame_graph_svg",
    "flame_tracks",
    "format_summary",
    "read_capture",
    "record",
    "summary",
    "write_chrome_trace",
    "write_flame_graph",
    "write_perfetto_capture",
    "write_perfetto_trace",
]
