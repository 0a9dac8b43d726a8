"""board.yaml `lab:` — the places a board has on a labgrid farm, as data (seedfw.lab).

Board data owns the schema of its own `lab:` field, importing nothing, so seedfw.boards puts it
in its schema without importing labgrid or the generators; seedfw.lab reads it (no arrow back up).

    lab:
      places:
        - name: qemu-aarch64          # the coordinator's place name
          qemu: firmware              # a QEMU place: seedfw.run.qemu mode (firmware | bare),
                                      # or os: the OS image on QEMU virt (seedfw.run.os_virt)
          expect: {boot: "^seedfw payload ", done: "^stats: "}
        - name: rock5b                # a real board (no `qemu`): the resources on its bench
          console: {match: {ID_SERIAL_SHORT: "CHANGE-ME"}, speed: 1500000}
          loader: {usb_id: "2207:350b"}        # the boot ROM's maskrom USB id (RKUSBLoader)
          storage: emmc                        # emmc (written over maskrom) | sd-mux
          sd_mux: {match: {ID_SERIAL_SHORT: "…"}}
          power: {driver: manual}              # manual | usb-relay | pdu | external
          mcu_probe: {board: mps2-an385, match: {ID_SERIAL_SHORT: "…"}}

`expect.boot` is the first line of the booted image, `expect.done` the line after which the
agent (or payload) has said everything the HIL suite reads (tests/hil).
"""

_MATCH = {"type": "object", "minProperties": 1,
          "additionalProperties": {"type": "string", "minLength": 1}}

_POWER = {
    "type": "object", "required": ["driver"], "additionalProperties": False,
    "properties": {
        # manual: the operator switches it (labgrid's ManualPowerDriver asks);
        # usb-relay: a HID relay (HIDRelay resource, `match` + `index`);
        # pdu: a PDU reached through pdudaemon (`host`, `pdu`, `index`);
        # external: shell commands on the bench host (`on`, `off`)
        "driver": {"enum": ["manual", "usb-relay", "pdu", "external"]},
        "match": _MATCH,
        "index": {"type": "integer", "minimum": 0},
        "host": {"type": "string", "minLength": 1},
        "pdu": {"type": "string", "minLength": 1},
        "on": {"type": "string", "minLength": 1},
        "off": {"type": "string", "minLength": 1},
    },
}

PLACE = {
    "type": "object", "required": ["name", "expect"], "additionalProperties": False,
    "properties": {
        # a place name becomes a file name (lab/<place>.yaml) and a labgrid-client argument
        "name": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$"},
        "qemu": {"enum": ["firmware", "bare", "os"]},
        "expect": {
            "type": "object", "required": ["boot", "done"], "additionalProperties": False,
            "properties": {"boot": {"type": "string", "minLength": 1},
                           "done": {"type": "string", "minLength": 1}},
        },
        "console": {
            "type": "object", "required": ["match"], "additionalProperties": False,
            "properties": {"match": _MATCH, "speed": {"type": "integer", "minimum": 1}},
        },
        "loader": {
            "type": "object", "required": ["usb_id"], "additionalProperties": False,
            "properties": {"usb_id": {"type": "string",
                                      "pattern": "^[0-9a-f]{4}:[0-9a-f]{4}$"}},
        },
        "storage": {"enum": ["emmc", "sd-mux"]},
        "sd_mux": {"type": "object", "required": ["match"], "additionalProperties": False,
                   "properties": {"match": _MATCH}},
        "power": _POWER,
        "mcu_probe": {
            "type": "object", "required": ["board", "match"], "additionalProperties": False,
            "properties": {"board": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$"},
                           "match": _MATCH},
        },
    },
}

SCHEMA = {
    "type": "object", "required": ["places"], "additionalProperties": False,
    "properties": {"places": {"type": "array", "minItems": 1, "items": PLACE}},
}


def _rows(schema: dict, prefix: str) -> list[tuple[str, str, str]]:
    out = []
    required = set(schema.get("required", []))
    for key, prop in schema.get("properties", {}).items():
        name = f"{prefix}{key}"
        if "enum" in prop:
            typ = " | ".join(str(v) for v in prop["enum"])
        elif prop.get("type") == "array":
            typ = "list"
        else:
            typ = prop.get("type", "object")
        out.append((name, "yes" if key in required else "no", typ))
        if prop.get("type") == "object" and "properties" in prop:
            out += _rows(prop, name + ".")
        if prop.get("type") == "array" and isinstance(prop.get("items"), dict):
            out += _rows(prop["items"], name + "[].")
    return out


def reference_page() -> str:
    """docs/reference/lab-board-data.md (seedfw.cli.docsgen): the fields of board.yaml `lab:`."""
    import textwrap

    lines = ["# Board data for the farm (`lab:`)", "",
             "The fields of board.yaml `lab:` that `invoke lab env` / `invoke lab exporter` read "
             "(generated from `tools/seedfw/boards/lab.py`; the guide is [the farm](../farm.md)).",
             "", "```yaml", textwrap.dedent(__doc__.split("\n\n")[2]).strip(), "```", "",
             " ".join(__doc__.split("\n\n")[3].split()), "",
             "| field | required | type |", "|---|---|---|"]
    lines += [f"| `lab.{n}` | {r} | {t.replace('|', '&#124;')} |" for n, r, t in _rows(SCHEMA, "")]
    return "\n".join(lines) + "\n"
