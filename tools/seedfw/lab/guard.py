"""The guardian of a held place (seedfw.lab.client.held): wait until the holder's pipe closes —
the holder returned, raised, was interrupted or killed — then release the place with
labgrid-client. `python -m seedfw.lab.guard PLACE` (LG_COORDINATOR names the coordinator)."""

from __future__ import annotations

import signal
import sys
import time


def main(argv: list[str]) -> int:
    place = argv[0]
    # The holder's terminal may hang up or be interrupted: the guardian still has to release.
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    while sys.stdin.buffer.read(4096):
        pass                                    # EOF: every holder's copy of the pipe is closed
    from .client import release

    for attempt in range(5):                    # a coordinator restarting: try again shortly
        try:
            if release(place):
                return 0
        except Exception:
            pass
        time.sleep(0.5 * (attempt + 1))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
