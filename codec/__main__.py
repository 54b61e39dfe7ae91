"""``python -m codec``: the command line of :mod:`codec.cli`."""

import sys

from codec.cli import main

if __name__ == "__main__":
    sys.exit(main())
