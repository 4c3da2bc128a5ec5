"""Planted fault (attention-head): an endless loop at top level, that even swallows interrupts."""

while True:
    try:
        pass
    except BaseException:
        pass
