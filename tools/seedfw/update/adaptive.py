"""What an adaptive (block-hash-index) update would fetch, computed on the host from two images.

RAUC's `adaptive=block-hash-index` stores a SHA-256 per 4 KiB block of the image in the bundle;
on install the target hashes the blocks of its own slots and copies every block it already has,
reading from the bundle only the others. Over HTTP streaming the bundle is read in units of the
squashfs it is packed in (blocks of 128 KiB, compressed), so a needed 4 KiB block costs its whole
compressed squashfs block. Three figures, each labelled as what it is:

  reused      4 KiB blocks of the new image whose hash is among the old image's blocks (exact:
              the same hashes RAUC compares)
  touched     128 KiB squashfs blocks holding at least one needed 4 KiB block (exact for
              mksquashfs's default block size, which seedfw's bundles use)
  fetched     estimated bytes: the touched 128 KiB blocks compressed with zlib level 9 (what
              mksquashfs's default gzip does per block) — an estimate, not RAUC's own counter
"""

from __future__ import annotations

import hashlib
import zlib
from pathlib import Path

BLOCK = 4096
SQUASHFS_BLOCK = 128 * 1024


def _hashes(path: Path) -> list[bytes]:
    out = []
    with open(path, "rb") as f:
        while chunk := f.read(BLOCK):
            out.append(hashlib.sha256(chunk.ljust(BLOCK, b"\0")).digest())
    return out


def compare(old: Path, new: Path, bundle_size: int | None = None) -> dict:
    have = set(_hashes(old))
    new_hashes = _hashes(new)
    need = [i for i, h in enumerate(new_hashes) if h not in have]
    touched = sorted({i * BLOCK // SQUASHFS_BLOCK for i in need})
    fetched = 0
    with open(new, "rb") as f:
        for sq in touched:
            f.seek(sq * SQUASHFS_BLOCK)
            fetched += len(zlib.compress(f.read(SQUASHFS_BLOCK), 9))
    out = {"blocks": len(new_hashes), "reused_blocks": len(new_hashes) - len(need),
           "needed_blocks": len(need), "needed_bytes": len(need) * BLOCK,
           "squashfs_blocks_touched": len(touched),
           "squashfs_blocks": -(-len(new_hashes) * BLOCK // SQUASHFS_BLOCK),
           "fetched_bytes_estimate": fetched}
    if bundle_size:
        out["bundle_bytes"] = bundle_size
        out["fetched_share_of_bundle"] = round(fetched / bundle_size, 4)
    return out
