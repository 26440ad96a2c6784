"""`python -m appl.trace show|export|diff|html ...` (same as `appl trace ...`)."""

import sys

from appl.trace.cli import main

sys.exit(main())
