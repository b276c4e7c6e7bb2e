"""``python -m psdsos.cli``: the ``psdsos`` command line."""

import sys

from psdsos.cli import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
