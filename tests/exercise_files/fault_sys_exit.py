"""Planted fault (attention-head): the file calls sys.exit(0) at top level, before any check."""

import sys

sys.exit(0)
