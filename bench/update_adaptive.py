#!/usr/bin/env python3
"""Adaptive update: what the target fetches for a new rootfs in which one package changed.

Old image: the build's images/rootfs.ext4. New image: a copy in which the agent package's binary
(/usr/bin/seedfw-agent) is replaced by the same binary with one message string changed (its
"version string" change, same length), written with debugfs — the ext4 allocator places the new
file's blocks as it would on a rebuild of that one package; NOT a second full build (a second
Buildroot build under this machine's load was not affordable; the figure says so).

Printed (and with --record written to <out>/bundle/adaptive.json for the report's `update`
section): 4 KiB blocks reused (computed, the block hashes RAUC's block-hash-index compares),
squashfs blocks touched (computed), bytes a streaming install would fetch (estimated: the touched
128 KiB squashfs blocks compressed with zlib 9) and their share of the real bundle of the new
image (made here with the host's rauc, verity, adaptive=block-hash-index). Goal: <= 15 %.

    python3 bench/update_adaptive.py [--output output/rk3588] [--record]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from seedfw.update import adaptive, bundle, hosttool, keys  # noqa: E402

AGENT = "/usr/bin/seedfw-agent"
OLD, NEW = b"agent: cannot open", b"agent: cannot OPEN"


def rebuilt_pair(old: Path, tmp: Path) -> tuple[Path, Path]:
    """Both images made fresh the way seedfw's disk stage makes one (mke2fs -d of a tree, fixed
    UUID, hash seed and clock): from the build's tree, and from the same tree with the changed
    binary — what two builds that differ in one package give."""
    tree = tmp / "tree"
    tree.mkdir()
    subprocess.run(["debugfs", "-R", f"rdump / {tree}", str(old)], check=True,
                   capture_output=True)
    size = old.stat().st_size // 1024
    made = []
    for name, change in (("a.ext4", False), ("b.ext4", True)):
        if change:
            f = tree / AGENT.lstrip("/")
            st = f.stat()
            f.write_bytes(f.read_bytes().replace(OLD, NEW, 1))
            import os
            os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
        img = tmp / name
        subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", "-L", "rootfs", "-U",
                        "11111111-2222-4333-8444-555555555555", "-E",
                        "hash_seed=66666666-7777-4888-8999-aaaaaaaaaaaa", "-d", str(tree),
                        str(img), f"{size}K"], check=True, stdout=subprocess.DEVNULL,
                       env={"E2FSPROGS_FAKE_TIME": "1700000000",
                            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        made.append(img)
    return made[0], made[1]


def variant(old: Path, new: Path, tmp: Path) -> None:
    shutil.copyfile(old, new)
    binary = tmp / "seedfw-agent"
    subprocess.run(["debugfs", "-R", f"dump {AGENT} {binary}", str(new)], check=True,
                   capture_output=True)
    data = binary.read_bytes()
    if data.count(OLD) < 1:
        raise SystemExit(f"{AGENT} holds no '{OLD.decode()}'")
    binary.write_bytes(data.replace(OLD, NEW, 1))
    script = tmp / "cmds"
    script.write_text(f"rm {AGENT}\ncd /usr/bin\nwrite {binary} seedfw-agent\n"
                      f"set_inode_field {AGENT} mode 0100755\n")
    subprocess.run(["debugfs", "-w", "-f", str(script), str(new)], check=True,
                   capture_output=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", default="output/rk3588")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    out = Path(args.output)
    old = out / "images" / "rootfs.ext4"
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        new = tmp / "rootfs.ext4"
        variant(old, new, tmp)
        content = tmp / "content"
        content.mkdir()
        shutil.copyfile(new, content / "rootfs.ext4")
        (content / "manifest.raucm").write_text(bundle.manifest_text("seedfw-bench", "new",
                                                                     "bench"))
        pair = keys.development()
        hosttool.run(["rauc", "bundle", f"--cert={pair.cert}", f"--key={pair.key}",
                      str(content), str(tmp / "new.raucb")])
        size = (tmp / "new.raucb").stat().st_size
        r = adaptive.compare(old, new, size)
        a, b = rebuilt_pair(old, tmp)
        rebuilt = adaptive.compare(a, b, size)
    r["change"] = f"{AGENT}: one message string changed (debugfs write, not a full rebuild)"
    rebuilt["change"] = (f"{AGENT}: one message string changed; both images made fresh with "
                         "mke2fs -d as the disk stage does (a rebuild of one package)")
    for label, x in (("in place", r), ("rebuilt", rebuilt)):
        print(f"[{label}] 4 KiB blocks reused {x['reused_blocks']:,} of {x['blocks']:,}; "
              f"squashfs blocks touched {x['squashfs_blocks_touched']} of {x['squashfs_blocks']}; "
              f"fetched ~{x['fetched_bytes_estimate']:,} bytes = "
              f"{100 * x['fetched_share_of_bundle']:.2f} % of the bundle")
    r = rebuilt
    print(f"old {old} ({old.stat().st_size:,} bytes), new: {r['change']}")
    print(f"4 KiB blocks reused: {r['reused_blocks']:,} of {r['blocks']:,} (computed); "
          f"needed {r['needed_blocks']:,} ({r['needed_bytes']:,} bytes)")
    print(f"squashfs 128 KiB blocks touched: {r['squashfs_blocks_touched']} of "
          f"{r['squashfs_blocks']} (computed)")
    print(f"fetched by a streaming install: ~{r['fetched_bytes_estimate']:,} bytes (estimated) "
          f"= {100 * r['fetched_share_of_bundle']:.2f} % of the full bundle ({size:,} bytes); "
          "goal <= 15 %")
    if args.record:
        dest = out / "bundle" / "adaptive.json"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(json.dumps(r, indent=2) + "\n")
        print(f"recorded: {dest}")
    return 0 if r["fetched_share_of_bundle"] <= 0.15 else 1


if __name__ == "__main__":
    sys.exit(main())
