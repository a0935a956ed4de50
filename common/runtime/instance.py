"""Entry point: ``python -m headwater.common.runtime.instance``."""

import sys

from ._instance import main

if __name__ == "__main__":
    sys.exit(main())
