"""The boot-count script (firmware/uboot/rauc-bootcount.cmd) run by a real U-Boot, and the
device's update life cycle around it as a model — what the tests and bench/update_powercut.py
drive.

`UBootShell` starts QEMU virt with Debian's pinned U-Boot 2023.01 qemu_arm64 (seedfw.sources.debs
UBOOT_QEMU; the script is plain hush, the same in seedfw's 2025.01), loads the script with
QEMU's generic loader, stops autoboot and answers `decide(env)`: set the persisted variables,
`source` the script in its dry-run mode (seedfw_bootcount_dry=1: it prints what it would save
instead of writing the machine's pflash, which times out here) and read the variables back. One
QEMU serves every decision (~0.1 s each).

What persists between boots is modelled by `Device` (the env as saveenv would leave it), with
the writes RAUC and the agent's init script make: install (RAUC's uboot backend: the other slot
first in BOOT_ORDER, its counter full), mark-good (`rauc status mark-good`: the booted slot's
counter full; then `fw_setenv seedfw_good <slot>`). A power cut is "the next write did not
happen": the cut points are between those writes (`CUT_POINTS`).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SeedfwError
from ..paths import FIRMWARE_DIR

SCRIPT = FIRMWARE_DIR / "uboot" / "rauc-bootcount.cmd"
SCRIPT_ADDR = 0x4A000000
VARS = ("BOOT_ORDER", "BOOT_A_LEFT", "BOOT_B_LEFT", "seedfw_good", "seedfw_attempts",
        "seedfw_root_A", "seedfw_root_B")
_LINE = re.compile(r"seedfw: bootcount: slot (\w)")


def script_image(dest: Path, text: str | None = None) -> Path:
    """The script (or a variant's `text`, for negative controls) as a legacy U-Boot script image
    (mkimage -T script), what `source` runs."""
    src = SCRIPT
    if text is not None:
        src = dest / "variant.cmd"
        src.write_text(text)
    out = dest / "rauc-bootcount.scr"
    subprocess.run(["mkimage", "-T", "script", "-C", "none", "-n", "seedfw bootcount", "-d",
                    str(src), str(out)], check=True, capture_output=True)
    return out


def variant(without: str) -> str:
    """A negative control: "counting" (the decrements removed: boot counting off) or
    "confirmed" (the seedfw_good checks made always true: the anchors' count-every-boot rule)."""
    text = SCRIPT.read_text()
    if without == "counting":
        for x in "AB":
            text = text.replace(f"setexpr BOOT_{x}_LEFT ${{BOOT_{x}_LEFT}} - 1; ", "")
        return text
    if without == "confirmed":
        return text.replace('test "${seedfw_good}" != A', "true").replace(
            'test "${seedfw_good}" != B', "true")
    raise ValueError(without)


class UBootShell:
    def __init__(self, timeout: float = 30.0, script_text: str | None = None):
        from ..sources import debs
        self.tmp = tempfile.TemporaryDirectory(prefix="seedfw-bootcount-")
        scr = script_image(Path(self.tmp.name), script_text)
        bios = debs.member(debs.UBOOT_QEMU, "usr/lib/u-boot/qemu_arm64/u-boot.bin")
        self.proc = subprocess.Popen(
            ["qemu-system-aarch64", "-machine", "virt", "-cpu", "cortex-a57", "-m", "256",
             "-display", "none", "-monitor", "none", "-serial", "stdio", "-nic", "none",
             "-no-reboot", "-bios", str(bios), "-device",
             f"loader,file={scr},addr=0x{SCRIPT_ADDR:x},force-raw=on"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.out = b""
        self.lock = threading.Lock()
        self.count = 0
        threading.Thread(target=self._read, daemon=True).start()
        self._wait(b"Hit any key to stop autoboot", timeout)
        self._send("\n")
        self.run("version", timeout)

    def _read(self):
        while True:
            chunk = self.proc.stdout.read1(4096)
            if not chunk:
                return
            with self.lock:
                self.out += chunk

    def _send(self, text: str):
        self.proc.stdin.write(text.encode())
        self.proc.stdin.flush()

    def _wait(self, marker: bytes, timeout: float) -> bytes:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                at = self.out.find(marker)
                if at >= 0:
                    got, self.out = self.out[:at], self.out[at + len(marker):]
                    return got
            if self.proc.poll() is not None:
                break
            time.sleep(0.01)
        raise SeedfwError(f"U-Boot did not print '{marker.decode()}' within {timeout:.0f} s")

    def run(self, cmd: str, timeout: float = 20.0) -> str:
        """One command line; returns what it printed (the typed echo included)."""
        self.count += 1
        # the echo of the typed line shows ${seedfw_m}, U-Boot's output the value: no false match
        self._send(f"setenv seedfw_m DONE; {cmd}; echo @@${{seedfw_m}}{self.count}@@\n")
        return self._wait(f"@@DONE{self.count}@@".encode(), timeout).decode(errors="replace")

    def decide(self, env: dict[str, str]) -> tuple[str, dict[str, str], bool, str]:
        """(slot, env the script leaves, whether it saves, its output) for one boot."""
        sets = "; ".join(f"setenv {k} '{v}'" if v != "" else f"setenv {k}" for k, v in
                         ((k, env.get(k, "")) for k in VARS))
        out = self.run(f"{sets}; setenv seedfw_bootcount_dry 1; source 0x{SCRIPT_ADDR:x}")
        m = _LINE.search(out)
        if not m:
            raise SeedfwError(f"the boot-count script chose no slot: {out.strip()[-200:]}")
        shown = self.run("printenv " + " ".join(VARS))
        after = dict(re.findall(r"^(\w+)=(.*?)\r?$", shown, re.MULTILINE))
        return m.group(1), {k: after.get(k, "") for k in VARS}, "saveenv" in out, out

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.tmp.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def factory_env(attempts: int = 3) -> dict[str, str]:
    """What the disk image's env holds when flashed: A is the image, confirmed."""
    return {"BOOT_ORDER": "A B", "BOOT_A_LEFT": str(attempts), "BOOT_B_LEFT": str(attempts),
            "seedfw_good": "A", "seedfw_attempts": str(attempts),
            "seedfw_root_A": "uuid-of-rootfs.0", "seedfw_root_B": "uuid-of-rootfs.1"}


# Where a cut can fall (the writes between them are what the next boot sees or not).
CUT_POINTS = ("install: before RAUC's env write", "install: after RAUC's env write",
              "first boot: before saveenv", "first boot: after saveenv, before mark-good",
              "first boot: after mark-good, before seedfw_good",
              "confirmed boot: before saveenv", "confirmed boot: after boot")


@dataclass
class Device:
    """The persisted env of one device and what happens to it; `good_image` says whether the
    installed slot's rootfs reaches mark-good when it boots."""

    env: dict[str, str] = field(default_factory=factory_env)
    history: list[str] = field(default_factory=list)

    def install(self, target: str, attempts: int = 3) -> None:
        """RAUC's uboot backend on install: target first in BOOT_ORDER, its counter full."""
        other = "A" if target == "B" else "B"
        self.env = dict(self.env, BOOT_ORDER=f"{target} {other}",
                        **{f"BOOT_{target}_LEFT": str(attempts)})

    def boot(self, shell: UBootShell, reaches_good: dict[str, bool], cut: str | None = None,
             attempts: int = 3) -> str:
        """One boot: the script decides (its env persists when it saves, unless cut before),
        then the OS marks the slot good when its checks pass (unless cut before)."""
        slot, after, saves, _out = shell.decide(self.env)
        self.history.append(slot)
        if cut == "before saveenv":
            return slot
        if saves:
            self.env = after
        if cut == "before mark-good" or not reaches_good.get(slot, False):
            return slot
        self.env = dict(self.env, **{f"BOOT_{slot}_LEFT": str(attempts)})   # rauc mark-good
        if cut == "before seedfw_good":
            return slot
        self.env = dict(self.env, seedfw_good=slot)                         # fw_setenv
        return slot
