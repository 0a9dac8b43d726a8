#!/usr/bin/env python3
"""STAND-IN for rkdeveloptool, for tests only: no RK3588 board is attached to this machine.

It answers the commands the rockusb runner uses the way rkdeveloptool does, with the board's
storage kept in a file instead of an eMMC behind a USB maskrom device:

    db <loader>                      refuses a file that is not an "LDR " container
    wl <sector> <file>               writes the file at sector * 512 of the storage file
    rl <sector> <count> <file>       reads count sectors back into file
    rd                               "resets" (logs it)

Environment: STANDIN_RKDEV_STORAGE (the storage file, required), STANDIN_RKDEV_LOG (one line
per command), STANDIN_RKDEV_CORRUPT_SECTOR (the corrupting variant: every write that covers this
sector stores it with one byte flipped, as a failing medium would — the negative control).
"""

import os
import sys


def main(argv):
    storage = os.environ["STANDIN_RKDEV_STORAGE"]
    log = os.environ.get("STANDIN_RKDEV_LOG")
    if log:
        with open(log, "a") as f:
            f.write(" ".join(argv) + "\n")
    cmd = argv[0].lower() if argv else ""
    if cmd == "db":
        with open(argv[1], "rb") as f:
            if f.read(4) != b"LDR ":
                print("Opening loader failed, exiting download boot!")
                return 1
        print("Downloading bootloader succeeded.")
    elif cmd == "wl":
        sector, data = int(argv[1]), open(argv[2], "rb").read()
        bad = os.environ.get("STANDIN_RKDEV_CORRUPT_SECTOR")
        if bad is not None and sector <= int(bad) < sector + len(data) // 512:
            at = (int(bad) - sector) * 512 + 7
            data = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]
        with open(storage, "r+b") as f:
            f.seek(sector * 512)
            f.write(data)
        print("Write LBA from file (100%)")
    elif cmd == "rl":
        sector, count = int(argv[1]), int(argv[2])
        with open(storage, "rb") as f:
            f.seek(sector * 512)
            data = f.read(count * 512)
        with open(argv[3], "wb") as f:
            f.write(data)
        print("Read LBA to file (100%)")
    elif cmd == "rd":
        print("Reset Device OK.")
    else:
        print(f"stand-in rkdeveloptool: unsupported command {argv}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
