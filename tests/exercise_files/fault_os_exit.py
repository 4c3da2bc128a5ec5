"""Planted fault (attention-head): the file ends its process with os._exit(0) at top level."""

import os

os._exit(0)
