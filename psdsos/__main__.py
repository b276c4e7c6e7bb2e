"""``python -m psdsos``: the ``psdsos`` command line (see :mod:`psdsos.cli`)."""

import sys

from psdsos.cli import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
