"""The OPP overlay both OS parts make from the build's OPP fragment (images/dvfs/opp.dtb):
os-fit packs it into the OS FIT, os-boot-files applies it to the board's DT with fdtoverlay.
Here, not in either part, because neither may import the other."""

from __future__ import annotations

from pathlib import Path

from .. import plan
from ..errors import SeedfwError

OVERLAY = "opp.dtbo"                 # in images/dvfs/, beside opp.dtb


def overlay_dts(opp_dts: str) -> str:
    """The OPP fragment (dtc's decompiled opp.dtb: `/dts-v1/;` then one root node) as an
    overlay on "/": dtc turns `&{/}` in a /plugin/ source into fragment@0 / target-path."""
    head = "/dts-v1/;\n\n/ {"
    if not opp_dts.startswith(head):
        raise SeedfwError("not a plain DT with one root node (dtc -O dts output expected)",
                          "images/dvfs/opp.dtb")
    return "/dts-v1/;\n/plugin/;\n\n&{/} {" + opp_dts[len(head):]


def make_overlay(opp_dtb: Path, out: Path, log) -> Path:
    """images/dvfs/opp.dtb → the overlay `out` (dtc -@; tests apply it with fdtoverlay)."""
    # through plan.run_command: an interrupted build ends dtc too (its own process group)
    text = plan.run_command(["dtc", "-q", "-I", "dtb", "-O", "dts", opp_dtb],
                            log=None).stdout.decode()
    src = out.with_suffix(".dts")
    src.write_text(overlay_dts(text))
    plan.run_command(["dtc", "-q", "-@", "-I", "dts", "-O", "dtb", "-o", out, src], log=log)
    return out
