"""What labgrid reads, generated from board data: the environment (client side) and the exporter
configuration (bench host side). Nothing here is typed by hand per bench: the resources come from
board.yaml `lab:` (seedfw.boards.lab), the images from the build's manifest (`image_keys`).

The split is labgrid's own: the exporter config says what a bench host has (one resource group
per place; the coordinator's place matches `<exporter>/<place>/*`), the environment says how a
client drives a place (the `RemotePlace` and the drivers bound to its resources, by name). The
same environment with `local=True` names the resources inline instead of through a place — how
a bench host without a coordinator runs it, and how tests/test_lab.py has labgrid's own loader
resolve every resource and driver of a real-board place with no hardware.

QEMU places export the bench host itself (`NetworkService`, the machine that runs the QEMU): a
place is then acquired, locked and listed like any other, and seedfw's QEMU driver refuses to
start QEMU for a place whose host is not the machine it runs on (a QEMU place is used on its
bench host: CI on that host, or a developer logged in there).
"""

from __future__ import annotations

import getpass
import socket
from dataclasses import dataclass
from pathlib import Path

from .. import boards, util
from ..errors import SeedfwError

DRIVERS_MODULE = "seedfw.lab.drivers"          # the env's `imports:` (labgrid loads it)
EXPORTER_NAME = "seedfw-bench"


@dataclass(frozen=True)
class Place:
    """One place of a board (board.yaml lab.places[i])."""

    name: str
    board: str
    spec: dict

    @property
    def qemu(self) -> str | None:
        return self.spec.get("qemu")

    @property
    def expect(self) -> dict:
        return self.spec["expect"]


def places(board: str | None = None) -> list[Place]:
    """Every place the board data declares (of one board, or of all)."""
    names = [board] if board else boards.names()
    out = []
    for name in names:
        b = boards.get(name)
        for spec in (b.raw.get("lab") or {}).get("places", []):
            out.append(Place(spec["name"], b.name, spec))
    seen = set()
    for p in out:
        if p.name in seen:
            raise SeedfwError(f"place '{p.name}' is declared by two boards",
                              boards.get(p.board).dir / "board.yaml", "lab.places")
        seen.add(p.name)
    return out


def place(name: str) -> Place:
    found = next((p for p in places() if p.name == name), None)
    if found is None:
        raise SeedfwError(f"unknown place '{name}' (board data declares: "
                          f"{', '.join(p.name for p in places())})", None, "--place")
    return found


def board_place(board: str, name: str | None = None) -> Place:
    """The board's place `name`, or its only one."""
    mine = places(board)
    if name:
        found = next((p for p in mine if p.name == name), None)
        if found is None:
            raise SeedfwError(f"board '{board}' has no place '{name}' (its places: "
                              f"{', '.join(p.name for p in mine) or 'none'})",
                              boards.get(board).dir / "board.yaml", "lab.places")
        return found
    if not mine:
        raise SeedfwError(f"board '{board}' declares no labgrid place",
                          boards.get(board).dir / "board.yaml", "lab")
    return mine[0]


# -- images: keys from the build's manifest ---------------------------------------------------------
def image_keys(outdir: str | Path) -> dict[str, Path]:
    """{images key: file} of a build, from <out>/manifest.json: `manifest` itself, every artifact
    by its name, `flash-<backend>` for what each flash backend programs (the manifest's "flash",
    first present file) and `role-<role>` for each declared role. The only reader of the manifest
    in seedfw.lab, through seedfw.manifest (bounded, schema-checked)."""
    from ..manifest import Manifest
    m = Manifest.load(Path(outdir).resolve(), missing="not built yet (run 'invoke build' for this "
                                                       "board)")
    keys = {"manifest": m.path}
    for a in m.artifacts:
        if not m.present(a):
            continue
        keys[a.name] = m.file(a)
        for role in (a.declared.get("role"), *a.roles):
            if isinstance(role, str) and role and f"role-{role}" not in keys:
                keys[f"role-{role}"] = m.file(a)
    for backend in sorted(m.doc.get("flash") or {}):
        present = [f for f in m.flash_default(backend) if f.is_file()]
        if present:
            keys[f"flash-{backend}"] = present[0]
    return keys


# -- resources --------------------------------------------------------------------------------------
def bench_host() -> dict:
    """The QEMU places' resource: this machine (NetworkService: address, user)."""
    return {"address": socket.gethostname(), "username": getpass.getuser()}


def resources(p: Place, host: dict | None = None) -> dict[str, dict]:
    """{resource name: {cls, params…}} of a place, as the exporter exports it."""
    if p.qemu:
        return {"host": {"cls": "NetworkService", **(host or bench_host())}}
    s, out = p.spec, {}
    if "console" in s:
        out["console"] = {"cls": "USBSerialPort", "match": dict(s["console"]["match"]),
                          "speed": s["console"].get("speed", 115200)}
    if "loader" in s:
        vid, pid = s["loader"]["usb_id"].split(":")
        out["loader"] = {"cls": "RKUSBLoader", "match": {"ID_VENDOR_ID": vid, "ID_MODEL_ID": pid}}
    if s.get("storage") == "sd-mux" and "sd_mux" in s:
        out["sd-mux"] = {"cls": "USBSDMuxDevice", "match": dict(s["sd_mux"]["match"])}
    power = s.get("power") or {"driver": "manual"}
    if power["driver"] == "usb-relay":
        out["power"] = {"cls": "HIDRelay", "match": dict(power.get("match") or {}),
                        "index": power.get("index", 1)}
    elif power["driver"] == "pdu":
        out["power"] = {"cls": "PDUDaemonPort", "host": power.get("host", "localhost"),
                        "pdu": power.get("pdu", "pdu"), "index": power.get("index", 0)}
    if "mcu_probe" in s:
        out["mcu-probe"] = {"cls": "USBDebugger", "match": dict(s["mcu_probe"]["match"])}
    return out


def _power_driver(p: Place) -> dict | list:
    power = p.spec.get("power") or {"driver": "manual"}
    return {"manual": {"ManualPowerDriver": {"name": "power"}},
            # a relay is a digital output to labgrid: DigitalOutputPowerDriver makes it power
            "usb-relay": [{"HIDRelayDriver": {"name": "relay", "bindings": {"relay": "power"}}},
                          {"DigitalOutputPowerDriver": {"name": "power",
                                                        "bindings": {"output": "relay"}}}],
            "pdu": {"PDUDaemonDriver": {"name": "power", "bindings": {"port": "power"}}},
            "external": {"ExternalPowerDriver": {"name": "power", "cmd_on": power.get("on", "true"),
                                                 "cmd_off": power.get("off", "true")}},
            }[power["driver"]]


def drivers(p: Place) -> list[dict]:
    """The env's drivers of a place, bound to its resources by name."""
    b = boards.get(p.board)
    strategy = {"SeedfwStrategy": {"boot": p.expect["boot"], "done": p.expect["done"],
                                   # a probe behind QEMU's GDB stub programs a running (halted)
                                   # target; every other backend writes storage while off
                                   "flash_powered": p.qemu == "bare",
                                   "bindings": {"flash": "soc"}}}
    if p.qemu == "os":       # nothing to program: QEMU boots the disk image, by its key
        del strategy["SeedfwStrategy"]["bindings"]
        return [{"SeedfwQEMUDriver": {"name": "qemu", "board": b.name, "mode": p.qemu,
                                      "image": "role-disk", "bindings": {"host": "host"}}},
                strategy]
    if p.qemu:
        return [{"SeedfwQEMUDriver": {"name": "qemu", "board": b.name, "mode": p.qemu,
                                      "bindings": {"host": "host"}}},
                {"SeedfwFlashDriver": {"name": "soc", "board": b.name,
                                       "image": f"flash-{b.flash_backend}",
                                       "bindings": {"qemu": "qemu"}}},
                strategy]
    res = resources(p)
    out = []
    if "console" in res:
        out.append({"SerialDriver": {"name": "console", "bindings": {"port": "console"}}})
    power = _power_driver(p)
    out += power if isinstance(power, list) else [power]
    if "sd-mux" in res:
        out.append({"USBSDMuxDriver": {"name": "sd-mux", "bindings": {"mux": "sd-mux"}}})
    flash = {"name": "soc", "board": b.name, "image": f"flash-{b.flash_backend}"}
    if "loader" in res:
        flash["bindings"] = {"loader": "loader"}
    out.append({"SeedfwFlashDriver": flash})
    if "mcu-probe" in res:
        mcu = p.spec["mcu_probe"]["board"]
        out.append({"SeedfwMCUFlashDriver": {"name": "mcu", "board": mcu,
                                          "image": f"{mcu}:flash-{boards.get(mcu).flash_backend}",
                                          "manifest": f"{mcu}:manifest",
                                          "bindings": {"probe": "mcu-probe"}}})
    out.append(strategy)
    return out


# -- the two documents ------------------------------------------------------------------------------
def environment(p: Place, outdirs: dict[str, Path], coordinator: str | None = None,
                local: bool = False, host: dict | None = None) -> dict:
    """labgrid's environment for one place: target `main` (what labgrid's pytest plugin drives),
    its images from each board's build (`outdirs` {board: output dir}; keys of another board
    than the place's are prefixed `<board>:`)."""
    images = {}
    for board, outdir in outdirs.items():
        prefix = "" if board == p.board else f"{board}:"
        images.update({prefix + k: str(v) for k, v in image_keys(outdir).items()})
    if local:
        res = [{r.pop("cls"): {"name": name, **r}}
               for name, r in ((n, dict(v)) for n, v in resources(p, host).items())]
    else:
        res = [{"RemotePlace": {"name": p.name}}]
    env = {"targets": {"main": {"resources": res, "drivers": drivers(p)}},
           "images": images, "imports": [DRIVERS_MODULE]}
    if coordinator:
        env["options"] = {"coordinator_address": coordinator}
    return env


def exporter(ps: list[Place], host: dict | None = None) -> dict:
    """labgrid-exporter's configuration: one resource group per place."""
    return {p.name: resources(p, host) for p in ps}


def mcu_boards(p: Place) -> list[str]:
    return [p.spec["mcu_probe"]["board"]] if "mcu_probe" in p.spec else []


def write_yaml(path: str | Path, doc: dict, comment: str, exporter: bool = False) -> Path:
    """Write a generated document with a comment saying where it came from. labgrid reads an
    exporter config as a Jinja2 template whose line statements start with '#' and comments
    with '##', so its comment lines take '##'."""
    import yaml

    mark = "##" if exporter else "#"
    text = "".join(f"{mark} {line}\n" for line in comment.splitlines())
    return util.write_text(path, text + yaml.safe_dump(doc, sort_keys=False))
