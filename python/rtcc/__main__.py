"""``python -m rtcc``: the same as the ``rtcc`` console script."""

import sys

from rtcc.cli import main

sys.exit(main())
