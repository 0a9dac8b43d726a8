"""Update tasks: bundle (a signed RAUC bundle of a build's rootfs; seedfw.update, docs/updates.md)."""

from __future__ import annotations

from . import command
from .config import default_board
from ..update import bundle as bundle_mod

__all__ = ["bundle"]


@command(help={
    "board": "board the build is for (refused when the output was built for another)",
    "output": "the build's output directory (default output/<board>)",
    "key": "signing key (PEM); with --cert. Default: this checkout's development key",
    "cert": "signing certificate (PEM); with --key",
    "keyring": "CA certificate to check the new bundle with (default: the development CA, or "
               "--cert when --key/--cert are given)",
    "out": "where to write the bundle (default <output>/bundle/<board>-<build id>.raucb)",
})
def bundle(c, board=None, output=None, key=None, cert=None, keyring=None, out=None):
    """Write a signed RAUC bundle of the build's rootfs.

    A verity bundle (adaptive block-hash-index) of images/rootfs.ext4 with the build id and the
    compatible string, signed, then read back with `rauc info --keyring`."""
    board = default_board(board)
    rec = bundle_mod.make(board, output, key, cert, keyring, out)
    print(f"bundle: {rec['bundle']}, {rec['size']:,} bytes, sha256 {rec['sha256'][:16]}…")
    print(f"  compatible {rec['compatible']}, version {rec['version']}, format "
          f"{rec['format']}, adaptive {rec['adaptive']}")
    print(f"  signed by {rec['signer'] or '?'} ({rec['key']}); rauc info --keyring accepted it "
          f"(keyring sha256 {rec['keyring_sha256'][:23]}…)")
    if not rec["update_in_build"]:
        print("  note: CONFIG_UPDATE_RAUC is off in this build: a device flashed from it runs no RAUC")
