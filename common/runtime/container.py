"""Entry point: ``python -m headwater.common.runtime.container``."""

import sys

from ._container import main

if __name__ == "__main__":
    sys.exit(main())
