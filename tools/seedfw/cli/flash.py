"""Tasks: flash (program + verify through the board's backend), bench (list/check), counters.

Every `invoke` run imports this module to list the tasks, so pyOCD, pyelftools and the work
modules are imported inside the task bodies; the runner modules are imported here (cheaply) because
`invoke flash`'s options are generated from what each registered runner declares. Inputs (probe id, image, manifest, and the
image's signature when its build requires signing) are checked before a probe is touched or QEMU
is started (seedfw.flash.image_checks).
"""

from __future__ import annotations

import json
import sys

from . import command
from ..errors import SeedfwError

__all__ = ["flash", "bench", "counters"]


# The options every runner shares; each runner's own come from its class (`options`).
COMMON_HELP = {
    "board": "board name (board/<name>/board.yaml)",
    "probe": "probe unique id (pyOCD UID such as cmsisdap:…, qemu:HOST:PORT, qemu:auto); default from the bench",
    "image": "image to program; default: what the build declares for the runner (manifest.json \"flash\")",
    "output": "build output directory (default output/<board>)",
    "verify": "read back and compare every programmed byte (default on)",
    "place": "labgrid place to hold while flashing (acquired, released always; docs/farm.md)",
}


def runner_options() -> dict[str, str]:
    """{option: help} of every registered runner (west's do_add_parser: each runner declares its
    own), the runners that read an option named in its help. Imports the runner modules, which
    import nothing heavy at module level (pyOCD and pyelftools load when a runner is used)."""
    from ..flash import REGISTRY
    from ..flash.base import COMMON_OPTIONS

    helps: dict[str, str] = {}
    users: dict[str, list[str]] = {}
    for name, cls in REGISTRY.classes():
        for opt, text in cls.options.items():
            if opt in COMMON_OPTIONS:
                raise ValueError(f"flash runner {name}: option '{opt}' is a common option")
            if opt in helps and helps[opt] != text:
                raise ValueError(f"flash runner {name}: option '{opt}' differs from {users[opt]}'s")
            helps[opt] = text
            users.setdefault(opt, []).append(name)
    return {opt: f"{'/'.join(users[opt])}: {helps[opt]}" for opt in helps}


def flash_body(c, board, probe=None, image=None, output=None, verify=True, place=None, **options):
    """Program an image into a board, then read it back.

    Program an image into a board through its flash runner, then verify it (read back)."""
    from .. import boards
    from ..flash import REGISTRY, runner_class
    from ..flash.image_checks import check_image_board, check_image_signature, find_image

    b = boards.get(board)
    # A runner's own option can pick it (--to: the card writer); else the board's backend.
    backend = next((n for n in REGISTRY.names() if (sel := REGISTRY.get(n).selected_by)
                    and options.get(sel)), b.flash_backend)
    cls = runner_class(backend, b.dir / "board.yaml")
    cls.require("flash", *(("verify",) if verify else ()))
    img = find_image(b, image, output, backend)
    if img.is_dir():
        raise SeedfwError("is a directory, not an image file", img, "--image")
    if not img.is_file():
        raise SeedfwError("image file not found", img, "--image")
    # The image is checked before anything about the runner: a wrong image is the first thing
    # to say, whichever backend the board has.
    check_image_board(b, img)
    check_image_signature(b, img)
    args = {"probe": probe, "output": output, **options}
    from ..lab import held
    with held(place, b.name), cls.session(b, args) as runner:
        result = runner.run("flash", img, verify=verify)
    print(f"ok: {result.image} -> {b.name} via {cls.name} ({result.programmed_bytes} bytes, "
          f"{result.verified_bytes} verified)")


def _flash_task():
    """`invoke flash` with the common options plus every runner's own (all default None)."""
    import inspect

    own = runner_options()
    params = [inspect.Parameter("c", inspect.Parameter.POSITIONAL_OR_KEYWORD),
              inspect.Parameter("board", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d)
               for n, d in (("probe", None), ("image", None), ("output", None), ("verify", True),
                            ("place", None))]
    params += [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)
               for n in own]

    def flash(c, *args, **kwargs):
        bound = sig.bind(c, *args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        common = {k: values.pop(k) for k in ("c", "board", "probe", "image", "output", "verify",
                                             "place")}
        return flash_body(**common, **values)

    sig = inspect.Signature(params)
    flash.__signature__ = sig
    flash.__doc__ = flash_body.__doc__
    return command(help={**COMMON_HELP, **own})(flash)


flash = _flash_task()


@command(help={
    "bench": "bench file (default $SEEDFW_BENCH)",
    "check": "also check each entry (probe answers via pyOCD, serial exists; QEMU entries are started)",
    "json": "print JSON",
})
def bench(c, bench=None, check=False, json_=False):
    """List the boards on the bench and optionally check each one."""
    from ..lab import inventory as benchmod

    entries = benchmod.load(bench)
    rows = [benchmod.check(e) if check else
            {"name": e.name, "board": e.board, "probe": e.probe, "target": e.pyocd_target()} for e in entries]
    if json_:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            state = "" if not check else ("  ok" if r["ok"] else "  FAIL") + \
                f" (probe {'yes' if r['probe_present'] else 'no'}, serial {'yes' if r['serial_present'] else 'no'})"
            print(f"{r['name']:<16} {r['board']:<12} {r['probe']:<26} {r['target'] or '-'}{state}")
    if check and not all(r["ok"] for r in rows):
        raise SeedfwError("some bench entries failed their check", benchmod.bench_file(bench))


@command(help={
    "board": "board name",
    "probe": "probe unique id (default from the bench; qemu:auto starts QEMU; A-class: qemu:HOST:PORT of a "
             "running GDB stub, default: boot the built image in QEMU)",
    "elf": "firmware ELF with the `seedfw_stats` symbol (stats-block boards; A-class default: "
           "<output>/images/bl33.elf)",
    "output": "build output directory (A-class without --probe; default output/<board>)",
    "flash_first": "program the ELF first (always done for qemu:auto, whose fresh QEMU has no image)",
    "bench": "bench file (default $SEEDFW_BENCH)",
    "recorded": "YAML of recorded register values to decode instead of a live board (rk3588-dfi)",
    "map": "counter map (rk3588-dfi; default board/<board>/counters.yaml)",
    "json": "print JSON: {provenance, settings, readings} (see seedfw.counters.provenance)",
    "agent_log": "UART log of an OS boot: the agent's perf PMU windows (board.yaml perf) as the "
                 "document; live or emulated only when seedfw captured the log (its capture "
                 "record is beside it), else recorded (user-supplied log)",
    "serial": "capture the board's serial console DEVICE (a tty, e.g. /dev/ttyUSB0) into "
              "--agent-log (default <output>/logs/serial-console.log) until the agent's last "
              "line, then read it: live",
    "timeout": "--serial: seconds to wait for the agent's last line (120)",
    "baud": "--serial: the console's rate (1500000, the RK3588 debug UART's)",
    "place": "labgrid place to hold while reading (acquired, released always; docs/farm.md)",
})
def counters(c, board, probe=None, elf=None, output=None, flash_first=False, bench=None, recorded=None,
             map_=None, json_=False, agent_log=None, serial=None, timeout=120.0, baud=1500000,
             place=None):
    """Read a board's counters and say where they came from.

    Read the board's counters (stats block or RK3588 DFI) and say where they came from."""
    from ..lab import held
    with held(place, board):
        _counters(board, probe, elf, output, flash_first, bench, recorded, map_, json_, agent_log,
                  serial, timeout, baud)


def _counters(board, probe, elf, output, flash_first, bench, recorded, map_, json_, agent_log,
              serial, timeout, baud):
    from .. import boards
    from ..counters import source_class
    from ..flash.probe_ids import check_probe_uid

    b = boards.get(board)
    cls = source_class(b.counters, b.dir / "board.yaml")
    if probe:
        check_probe_uid(probe)
    if map_ and "map" not in cls.options:
        raise SeedfwError(f"board '{b.name}' has no counter map (its counter source is "
                          f"{b.counters})", None, "--map")
    if serial:                      # seedfw captures the console itself: the log earns live
        from ..paths import output_dir
        from ..run import console
        agent_log = agent_log or output_dir(b.name, output) / "logs" / "serial-console.log"
        got = console.capture(b, serial, agent_log, float(timeout), int(baud))
        if not got.ended:
            print(f"warning: no 'agent: ok'/'agent: FAILED' line from {serial} within "
                  f"{float(timeout):g} s ({got.bytes} bytes captured)", file=sys.stderr)
    if agent_log:                   # the OS agent's perf windows, from its UART log
        from ..counters import perf_live
        values = perf_live.from_log(b, agent_log)
    else:                           # each source reads the board its own way (counters.REGISTRY)
        values = cls.read(b, {"probe": probe, "elf": elf, "output": output,
                              "flash_first": flash_first, "bench": bench, "recorded": recorded,
                              "map": map_})
    if json_:
        print(json.dumps(values, indent=2, sort_keys=True))
        return
    from ..counters.provenance import label

    prov = values["provenance"]
    print(f"{'provenance':<20} {label(prov)}: {prov['how']}")
    if prov.get("user_supplied"):
        print(f"warning: {prov['file']}: not captured by seedfw ({prov['note']}): its values are "
              "shown as recorded, not as measured on a board", file=sys.stderr)
    if isinstance(prov.get("recording"), dict) and prov["recording"].get("how"):
        print(f"{'recording':<20} {prov['recording']['how']}")
    for k, v in values["readings"].items():
        for line in _shown(k, v, 20):
            print(line)
    print("settings (configuration and identifiers, not measurements):")
    for k, v in values["settings"].items():
        for line in _shown(k, v, 18):
            print("  " + line)


# Settings that are addresses: printed in hex, as every map and datasheet gives them (the JSON
# keeps the number).
ADDRESS_KEYS = ("address", "base", "addr")


def _shown(key: str, value, width: int) -> list[str]:
    """One reading or setting as text a person reads (the JSON carries the same values): a
    mapping as `name=value` pairs, a list of mappings one row each (`channels[0]  read=…`), an
    address in hex; never Python's repr of a dict."""
    if isinstance(value, dict):
        return [f"{key:<{width}} " + "  ".join(f"{k}={_scalar(k, v)}" for k, v in value.items())]
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [line for i, v in enumerate(value) for line in _shown(f"{key}[{i}]", v, width)]
    if isinstance(value, list):
        return [f"{key:<{width}} " + ", ".join(str(_scalar(key, v)) for v in value)]
    return [f"{key:<{width}} {_scalar(key, value)}"]


def _scalar(key: str, value):
    if isinstance(value, int) and not isinstance(value, bool) and key in ADDRESS_KEYS:
        return f"{value:#x}"
    return value
