"""Entry point: ``python -m headwater.edge.container``."""

import sys

from ._container import main

if __name__ == "__main__":
    sys.exit(main())
