"""The repository root on ``sys.path``, for ``peerbench`` (the benchmark records).

``peerbench.py`` lives at the repository root, shared with the tests and the
fuzz targets; pytest puts ``benches/`` on ``sys.path`` and so does a script
run as ``python benches/<script>.py``, but not the root (``python -m`` does).
``conftest.py`` and each script import this module before anything of
``benches/`` that imports ``peerbench``. The root is appended, so the codec
under test (an install, ``PYTHONPATH``) is still the one found first.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))
