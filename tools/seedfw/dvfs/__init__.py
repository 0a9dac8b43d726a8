"""DVFS tables: `board/<b>/dvfs.yaml` → validated model → binary table, DT fragment, C header.

The binary layout is defined once in firmware/include/seedfw/dvfs.h; this module encodes it and
decodes it again (inspect, tests). `.dvfs_hint` records harvested from ELFs (dvfs_hints.py) are
checked against the table here and embedded in it.

Why Hz and µV in the YAML (not MHz/mV): they are the units of the devicetree OPP binding the
values are copied from, so a reviewer can diff them against the .dtsi. The "units sane" checks
catch the usual slip of writing MHz or mV anyway.
"""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from .. import yamlfile
from ..errors import SeedfwError

MAGIC = 0x53465644
VERSION = 1
NAME_LEN = 16
MAX_DOMAINS = 8
MAX_OPPS = 32
PROFILE_NAMES = ("ultra_low", "balanced", "performance")

# Sanity ranges: a value outside is almost always a unit mistake (MHz for Hz, mV or V for µV).
HZ_RANGE = (1_000_000, 10_000_000_000)          # 1 MHz .. 10 GHz
UV_RANGE = (100_000, 2_000_000)                  # 0.1 V .. 2 V
LATENCY_MAX_NS = 10_000_000                      # 10 ms

# struct layouts, little-endian; tests/test_dvfs.py checks sizes and offsets against dvfs.h.
HEADER = struct.Struct("<IHHIIHHHHHHIIIII")     # struct dvfs_table_header
DOMAIN = struct.Struct("<16s16sIIIHH")          # struct dvfs_domain
OPP = struct.Struct("<QIIII")                   # struct dvfs_opp
PROFILE = struct.Struct(f"<16s{MAX_DOMAINS}I")  # struct dvfs_profile
HINT = struct.Struct("<fIII16s16s")             # struct dvfs_hint (dvfs_hint.h)

_NAME = {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]*$", "maxLength": NAME_LEN - 1}
_OPP = {
    "type": "object", "required": ["hz", "microvolt"], "additionalProperties": False,
    "properties": {
        "hz": {"type": "integer"},
        "microvolt": {"type": "array", "items": {"type": "integer"}, "minItems": 3, "maxItems": 3},
    },
}
_RESTRICT = {
    "type": "object", "additionalProperties": False,
    "minProperties": 1, "maxProperties": 1,
    "properties": {
        "max_hz": {"type": "integer"},
        "opps_hz": {"type": "array", "items": {"type": "integer"}, "minItems": 1},
    },
}
SCHEMA = {
    "type": "object", "required": ["domains", "profiles"], "additionalProperties": False,
    "properties": {
        "domains": {
            "type": "array", "minItems": 1, "maxItems": MAX_DOMAINS,
            "items": {
                "type": "object", "required": ["name", "source", "regulator", "opps"],
                "additionalProperties": False,
                "properties": {
                    "name": _NAME,
                    "source": {"enum": ["mainline", "vendor", "board"]},
                    "regulator": {
                        "type": "object", "required": ["name", "min_uv", "max_uv"],
                        "additionalProperties": False,
                        "properties": {"name": _NAME, "min_uv": {"type": "integer"},
                                       "max_uv": {"type": "integer"}},
                    },
                    "clock_latency_ns": {"type": "integer", "minimum": 0},
                    "opps": {"type": "array", "minItems": 1, "maxItems": MAX_OPPS, "items": _OPP},
                },
            },
        },
        "profiles": {
            "type": "object", "additionalProperties": False, "required": list(PROFILE_NAMES),
            "properties": {p: {"type": "object", "additionalProperties": _RESTRICT}
                           for p in PROFILE_NAMES},
        },
    },
}


@dataclass(frozen=True)
class Opp:
    hz: int
    uv_target: int
    uv_min: int
    uv_max: int


@dataclass(frozen=True)
class Domain:
    name: str
    source: str
    regulator: str
    reg_min_uv: int
    reg_max_uv: int
    clock_latency_ns: int | None
    opps: tuple[Opp, ...]

    def opp_index(self, hz: int) -> int | None:
        for i, opp in enumerate(self.opps):
            if opp.hz == hz:
                return i
        return None


@dataclass(frozen=True)
class Profile:
    name: str
    allowed: dict[str, tuple[int, ...]]   # domain name -> allowed OPP indexes

    def mask(self, domain: str) -> int:
        return sum(1 << i for i in self.allowed[domain])


@dataclass(frozen=True)
class Table:
    path: Path
    domains: tuple[Domain, ...]
    profiles: tuple[Profile, ...]
    hints: tuple = field(default=())     # resolved dvfs_hints.Hint records

    @property
    def opp_count(self) -> int:
        return sum(len(d.opps) for d in self.domains)

    def domain(self, name: str) -> Domain | None:
        return next((d for d in self.domains if d.name == name), None)

    def profile(self, name: str) -> Profile:
        for p in self.profiles:
            if p.name == name:
                return p
        raise SeedfwError(f"unknown power profile '{name}' (known: {', '.join(PROFILE_NAMES)})",
                          self.path, "profiles")


# --------------------------------------------------------------------------- loading/validation

def load(path: str | Path) -> Table:
    """Load and validate a dvfs.yaml; the first problem raises SeedfwError naming file and line."""
    path = Path(path)
    data, lines = yamlfile.load_mapping(path, SCHEMA, "a mapping with 'domains' and 'profiles'")

    def fail(where: tuple, message: str):
        while where and where not in lines:      # the closest enclosing node that has a line
            where = where[:-1]
        line = lines.get(where)
        raise SeedfwError(message, path, f"line {line}" if line else None)

    domains = []
    seen = set()
    for d_index, raw in enumerate(data["domains"]):
        name = raw["name"]
        at = ("domains", d_index)
        if name in seen:
            fail(at + ("name",), f"domain '{name}': duplicate domain name")
        seen.add(name)
        reg = raw["regulator"]
        for key in ("min_uv", "max_uv"):
            _check_uv(reg[key], lambda m: fail(at + ("regulator", key), f"domain '{name}' regulator "
                                                                          f"{key}: {m}"))
        if reg["min_uv"] > reg["max_uv"]:
            fail(at + ("regulator",), f"domain '{name}' regulator: min_uv {reg['min_uv']} is above "
                                      f"max_uv {reg['max_uv']}")
        latency = raw.get("clock_latency_ns")
        if latency is not None and latency > LATENCY_MAX_NS:
            fail(at + ("clock_latency_ns",), f"domain '{name}': clock_latency_ns {latency} is over "
                                             f"{LATENCY_MAX_NS} ns (units are ns)")
        opps = []
        for i, o in enumerate(raw["opps"]):
            where = at + ("opps", i)
            tag = f"domain '{name}' opp[{i}]"
            hz = o["hz"]
            target, lo, hi = o["microvolt"]
            if not HZ_RANGE[0] <= hz <= HZ_RANGE[1]:
                fail(where, f"{tag}: frequency {hz} Hz is outside {HZ_RANGE[0]}..{HZ_RANGE[1]} "
                            f"(units are Hz)")
            for label, uv in (("target", target), ("min", lo), ("max", hi)):
                _check_uv(uv, lambda m, label=label: fail(where, f"{tag}: {label} voltage {m}"))
            if opps:
                prev = opps[-1]
                if hz == prev.hz:
                    fail(where, f"{tag}: duplicate frequency {hz} Hz (same as opp[{i - 1}])")
                if hz < prev.hz:
                    fail(where, f"{tag}: frequency {hz} Hz is not above opp[{i - 1}] ({prev.hz} Hz); "
                                f"frequencies must increase strictly")
                if target < prev.uv_target:
                    fail(where, f"{tag}: target {target} µV is below opp[{i - 1}]'s {prev.uv_target} "
                                f"µV; voltage must not fall as frequency rises")
            if not lo <= target <= hi:
                fail(where, f"{tag}: target {target} µV is outside its min..max {lo}..{hi} µV")
            if not reg["min_uv"] <= target <= reg["max_uv"]:
                fail(where, f"{tag}: target {target} µV is outside regulator '{reg['name']}' range "
                            f"{reg['min_uv']}..{reg['max_uv']} µV")
            if lo < reg["min_uv"] or hi > reg["max_uv"]:
                fail(where, f"{tag}: min..max {lo}..{hi} µV exceeds regulator '{reg['name']}' range "
                            f"{reg['min_uv']}..{reg['max_uv']} µV")
            opps.append(Opp(hz, target, lo, hi))
        domains.append(Domain(name, raw["source"], reg["name"], reg["min_uv"], reg["max_uv"],
                              latency, tuple(opps)))

    by_name = {d.name: d for d in domains}
    profiles = []
    for pname in PROFILE_NAMES:
        restrictions = data["profiles"][pname] or {}
        allowed = {d.name: tuple(range(len(d.opps))) for d in domains}
        for dname, rule in restrictions.items():
            where = ("profiles", pname, dname)
            dom = by_name.get(dname)
            if dom is None:
                fail(where, f"profile '{pname}': unknown domain '{dname}' "
                            f"(known: {', '.join(by_name)})")
            if "max_hz" in rule:
                idx = dom.opp_index(rule["max_hz"])
                if idx is None:
                    fail(where, f"profile '{pname}' domain '{dname}': max_hz {rule['max_hz']} is not "
                                f"an OPP of the domain")
                allowed[dname] = tuple(range(idx + 1))
            else:
                picked = []
                for k, hz in enumerate(rule["opps_hz"]):
                    idx = dom.opp_index(hz)
                    if idx is None:
                        fail(where, f"profile '{pname}' domain '{dname}': opps_hz[{k}] {hz} is not an "
                                    f"OPP of the domain")
                    if idx in picked:
                        fail(where, f"profile '{pname}' domain '{dname}': opps_hz[{k}] {hz} is listed "
                                    f"twice")
                    picked.append(idx)
                allowed[dname] = tuple(sorted(picked))
        profiles.append(Profile(pname, allowed))
    return Table(path, tuple(domains), tuple(profiles))


def _check_uv(uv: int, fail) -> None:
    if not UV_RANGE[0] <= uv <= UV_RANGE[1]:
        fail(f"{uv} is outside {UV_RANGE[0]}..{UV_RANGE[1]} µV (units are µV)")


# --------------------------------------------------------------------------- binary table

def _name(s: str) -> bytes:
    raw = s.encode()
    if len(raw) > NAME_LEN:
        raise SeedfwError(f"name '{s}' is longer than {NAME_LEN} bytes")
    return raw.ljust(NAME_LEN, b"\0")


def _align8(n: int) -> int:
    return (n + 7) & ~7


def encode(table: Table, default_profile: str) -> bytes:
    """The versioned binary table of dvfs.h, crc32 included."""
    default_index = PROFILE_NAMES.index(table.profile(default_profile).name)
    domains_off = _align8(HEADER.size)
    opps_off = _align8(domains_off + DOMAIN.size * len(table.domains))
    profiles_off = _align8(opps_off + OPP.size * table.opp_count)
    hints_off = _align8(profiles_off + PROFILE.size * len(table.profiles))
    total = _align8(hints_off + HINT.size * len(table.hints))

    body = bytearray(total)
    first = 0
    for i, d in enumerate(table.domains):
        DOMAIN.pack_into(body, domains_off + i * DOMAIN.size, _name(d.name), _name(d.regulator),
                         d.reg_min_uv, d.reg_max_uv, d.clock_latency_ns or 0, first, len(d.opps))
        for j, o in enumerate(d.opps):
            OPP.pack_into(body, opps_off + (first + j) * OPP.size, o.hz, o.uv_target, o.uv_min,
                          o.uv_max, 0)
        first += len(d.opps)
    for i, p in enumerate(table.profiles):
        masks = [p.mask(d.name) for d in table.domains] + [0] * (MAX_DOMAINS - len(table.domains))
        PROFILE.pack_into(body, profiles_off + i * PROFILE.size, _name(p.name), *masks)
    for i, h in enumerate(table.hints):
        HINT.pack_into(body, hints_off + i * HINT.size, h.criticality, h.latency_slack_ns,
                       h.freq_min_mhz, h.voltage_mv, _name(h.domain), _name(h.name))
    HEADER.pack_into(body, 0, MAGIC, VERSION, HEADER.size, total, 0, len(table.domains),
                     table.opp_count, len(table.profiles), len(table.hints), default_index, 0,
                     domains_off, opps_off, profiles_off, hints_off, 0)
    crc = zlib.crc32(body)
    struct.pack_into("<I", body, 12, crc)
    return bytes(body)


def decode(blob: bytes, source: str = "dvfs table") -> dict:
    """Read a binary table back (inspect, tests); raises SeedfwError on a bad magic/size/crc."""
    if len(blob) < HEADER.size:
        raise SeedfwError(f"{len(blob)} bytes is shorter than the {HEADER.size}-byte header", source)
    (magic, version, header_size, total, crc, n_dom, n_opp, n_prof, n_hint, default, _r0,
     dom_off, opp_off, prof_off, hint_off, _r1) = HEADER.unpack_from(blob)
    if magic != MAGIC:
        raise SeedfwError(f"bad magic 0x{magic:08x} (expected 0x{MAGIC:08x})", source, "offset 0x0")
    if version != VERSION:
        raise SeedfwError(f"unsupported version {version}", source, "offset 0x4")
    if total > len(blob):
        raise SeedfwError(f"total_size {total} exceeds the {len(blob)} bytes present", source)
    if total < HEADER.size:
        raise SeedfwError(f"total_size {total} is shorter than the header", source, "offset 0x8")
    zeroed = bytearray(blob[:total])
    struct.pack_into("<I", zeroed, 12, 0)
    crc_ok = zlib.crc32(zeroed) == crc
    # Counts come from the blob: capped before anything is decoded (a table of 20,000 domains
    # sharing the same 20,000 OPPs was 5.9 GB of Python objects; docs/hostile-input.md).
    from ..reading import CAPS
    for count, cap_name, what, at in ((n_dom, "dvfs_domains", "domains", 0x10),
                                      (n_prof, "dvfs_domains", "profiles", 0x14),
                                      (n_hint, "dvfs_hints", "hints", 0x16)):
        if count > CAPS[cap_name]:
            raise SeedfwError(f"{count} {what} is over the limit of {CAPS[cap_name]}", source,
                              f"offset 0x{at:x}")

    def s(raw: bytes) -> str:
        return raw.split(b"\0", 1)[0].decode(errors="replace")

    def need(off: int, count: int, item: struct.Struct, what: str, field: int) -> None:
        # The offsets and counts come from the blob: check them before unpacking.
        if off + count * item.size > len(blob):
            raise SeedfwError(f"{what} ({count} x {item.size} bytes at offset {off}) run past "
                              f"the {len(blob)} bytes present", source, f"offset 0x{field:x}")

    need(dom_off, n_dom, DOMAIN, "domains", 28)
    need(prof_off, n_prof, PROFILE, "profiles", 36)
    need(hint_off, n_hint, HINT, "hints", 40)
    domains = []
    for i in range(n_dom):
        name, reg, rmin, rmax, lat, first, count = DOMAIN.unpack_from(blob, dom_off + i * DOMAIN.size)
        if count > CAPS["dvfs_opps"] or first + count > n_opp:
            raise SeedfwError(f"domain {i}: OPPs {first}..{first + count} are outside the "
                              f"table's {n_opp} (limit {CAPS['dvfs_opps']} per domain)", source,
                              f"offset 0x{dom_off + i * DOMAIN.size:x}")
        need(opp_off + first * OPP.size, count, OPP, f"domain {i} OPPs", 32)
        opps = [OPP.unpack_from(blob, opp_off + (first + j) * OPP.size)[:4] for j in range(count)]
        domains.append({"name": s(name), "regulator": s(reg), "regulator_uv": (rmin, rmax),
                        "clock_latency_ns": lat, "opps": opps})
    profiles = []
    for i in range(n_prof):
        name, *masks = PROFILE.unpack_from(blob, prof_off + i * PROFILE.size)
        profiles.append({"name": s(name), "masks": masks[:n_dom]})
    hints = []
    for i in range(n_hint):
        crit, slack, fmin, mv, dom, name = HINT.unpack_from(blob, hint_off + i * HINT.size)
        hints.append({"name": s(name), "domain": s(dom), "criticality": crit,
                      "latency_slack_ns": slack, "freq_min_mhz": fmin, "voltage_mv": mv})
    return {"version": version, "size": total, "crc32": crc, "crc_ok": crc_ok,
            "domains": domains, "opp_count": n_opp, "profiles": profiles,
            "default_profile": profiles[default]["name"] if default < n_prof else None,
            "hints": hints}


# --------------------------------------------------------------------------- DT fragment, C header

def to_dts(table: Table) -> str:
    """operating-points-v2 tables as a plain node tree; `dtc` compiles it without warnings.

    A plain tree (not an overlay) because the consumer is U-Boot/Linux board glue that grafts the
    tables where its own DT wants them; the node names are stable (`opp-table-<domain>`).
    """
    out = ["// Generated by seedfw from " + table.path.parent.name + "/" + table.path.name
           + "; do not edit.", "/dts-v1/;", "", "/ {"]
    for d in table.domains:
        out.append(f"\topp-table-{d.name} {{")
        out.append('\t\tcompatible = "operating-points-v2";')
        if d.name.startswith("cpu"):
            out.append("\t\topp-shared;")  # all cores of a cluster share clock and supply
        for o in d.opps:
            out.append(f"\t\topp-{o.hz} {{")
            out.append(f"\t\t\topp-hz = /bits/ 64 <{o.hz}>;")
            out.append(f"\t\t\topp-microvolt = <{o.uv_target} {o.uv_min} {o.uv_max}>;")
            if d.clock_latency_ns is not None:
                out.append(f"\t\t\tclock-latency-ns = <{d.clock_latency_ns}>;")
            out.append("\t\t};")
        out.append("\t};")
    out += ["};", ""]
    return "\n".join(out)


def _ident(name: str) -> str:
    return re.sub(r"[^A-Z0-9]", "_", name.upper())


def to_c_header(table: Table, default_profile: str) -> str:
    """Constants for firmware builds (domain indexes, OPP counts and frequencies, profile masks)."""
    default = table.profile(default_profile)
    out = ["/* Generated by seedfw from " + table.path.parent.name + "/" + table.path.name
           + "; do not edit. */", "#ifndef SEEDFW_DVFS_TABLE_H", "#define SEEDFW_DVFS_TABLE_H", "",
           f"#define SEEDFW_DVFS_DOMAIN_COUNT {len(table.domains)}",
           f"#define SEEDFW_DVFS_OPP_COUNT {table.opp_count}",
           f'#define SEEDFW_DVFS_DEFAULT_PROFILE "{default.name}"',
           f"#define SEEDFW_DVFS_DEFAULT_PROFILE_INDEX {PROFILE_NAMES.index(default.name)}", ""]
    for i, d in enumerate(table.domains):
        ident = _ident(d.name)
        out.append(f"#define SEEDFW_DVFS_DOMAIN_{ident} {i}")
        out.append(f"#define SEEDFW_DVFS_{ident}_OPP_COUNT {len(d.opps)}")
        out.append(f"#define SEEDFW_DVFS_{ident}_HZ {{ " + ", ".join(f"{o.hz}ULL" for o in d.opps)
                   + " }")
        out.append(f"#define SEEDFW_DVFS_{ident}_UV {{ " + ", ".join(str(o.uv_target) for o in d.opps)
                   + " }")
        for p in table.profiles:
            out.append(f"#define SEEDFW_DVFS_{ident}_MASK_{p.name.upper()} 0x{p.mask(d.name):08x}u")
        out.append("")
    out += ["#endif", ""]
    return "\n".join(out)


def with_hints(table: Table, hints) -> Table:
    return Table(table.path, table.domains, table.profiles, tuple(hints))
