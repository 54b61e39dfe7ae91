"""Helpers the test modules share, one module per role.

* ``deep``: messages nested as deep as a test asks, with each header's offset;
* ``generated``: the modules ``python -m codec generate`` writes, on ``sys.path``
  while a block runs;
* ``heap``: ``measure`` and ``peak_after_warm_up``, what one run of a code path
  allocates after warm-up, traced by tracemalloc or memray;
* ``misuse``: values that call back into the codec, threads that race;
* ``nesting``: profiler tracks whose scopes nest as a test says, and a track
  made from its columns as plain lists;
* ``peerbench``: the benchmark records (``Sample``, ``Blob``, ``Trace``, ...),
  defined once in ``peerbench.py`` at the repository root, which this module
  appends to ``sys.path``;
* ``unchecked``: values stored in a struct around the checks of assignment;
* ``profiler_streams``: profiler frames, streams and packets built by hand, and
  the table of bad streams (``BAD_STREAMS``) with the error each one raises;
* ``profiler_server``: test bodies run against a profile server on 127.0.0.1:
  the host, a bounded ``asyncio.run``, frames played and read back as names.

The rule: a test module imports what it shares with other test modules from
here (``from helpers.heap import measure``), never from another ``test_*``
module, and a helper imports no test module (``test_layout.py`` checks
both). What a single test module uses stays in that module.

``tests/`` holds no ``__init__.py``, so pytest puts it at the front of
``sys.path`` when it imports ``conftest.py`` and the test modules; this package
is found there, as ``schemas`` is.
"""
