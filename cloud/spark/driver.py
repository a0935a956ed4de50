"""``python -m headwater.cloud.spark.driver``: a user's Spark job's driver process (``_driver``)."""

from __future__ import annotations

import sys

from ._driver import main

if __name__ == "__main__":
    sys.exit(main())
