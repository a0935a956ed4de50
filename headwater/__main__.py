import sys

from headwater._cli import main

sys.exit(main())
