"""Differences between two ELF stats (seedfw.stats): per section, per symbol, totals.

Like bloaty's diff mode or Zephyr's fpdiff: growth and shrink per section and per symbol, plus
the symbols that are new or gone. Symbols are matched by name; several local symbols with the
same name (a `static` in two files) are summed, since there is no stable way to pair them.
A baseline may be an ELF or a stats JSON written earlier by `invoke stats --json`.

Names come from the ELFs and from a baseline JSON someone handed over: format_diff and the
errors show each through reading.plain (control bytes as \\xNN), never raw on a terminal.
"""

from __future__ import annotations

from ..errors import SeedfwError
from ..reading import plain

DIFF_SCHEMA = "seedfw-stats-diff/1"
TOTAL_KEYS = ("rom", "ram", "alloc", "size_a")


# What stats_diff reads from a saved per-file entry: checked up front, so a hand-edited or
# foreign JSON is one error naming the field rather than a KeyError in the middle of a diff.
_SAVED_FIELDS = {"file": str, "sections": list, "totals": dict, "symbols": list}
_SAVED_SECTION_FIELDS = {"name": str, "type": str, "size": int}


def check_saved_entry(entry: dict, path, i: int) -> None:
    """Entry i of a saved stats JSON (`files[i]`) has what diff_stats reads; else SeedfwError."""
    for key, kind in _SAVED_FIELDS.items():
        if key not in entry:
            raise SeedfwError(f"missing '{key}' (not written by 'invoke stats --json'?)", path,
                              f"files[{i}].{key}")
        if not isinstance(entry[key], kind):
            raise SeedfwError(f"expected {kind.__name__}, got {type(entry[key]).__name__}", path,
                              f"files[{i}].{key}")
    for key in TOTAL_KEYS:
        if not isinstance(entry["totals"].get(key), int):
            raise SeedfwError("missing or not an integer", path, f"files[{i}].totals.{key}")
    for j, sec in enumerate(entry["sections"]):
        for key, kind in _SAVED_SECTION_FIELDS.items():
            if not isinstance(sec, dict) or not isinstance(sec.get(key), kind):
                raise SeedfwError(f"missing or not {'an integer' if kind is int else 'a string'}",
                                  path, f"files[{i}].sections[{j}].{key}")
    for j, row in enumerate(entry["symbols"]):
        if not (isinstance(row, list) and len(row) >= 3 and isinstance(row[0], str)
                and isinstance(row[1], int)):
            raise SeedfwError("expected [name, size, section, …]", path,
                              f"files[{i}].symbols[{j}]")


def change(old: int | None, new: int | None) -> dict:
    """{old, new, delta, percent}; percent is None when there is no old size to compare with."""
    o, n = old or 0, new or 0
    delta = n - o
    percent = round(100.0 * delta / o, 2) if o else None
    return dict(old=old, new=new, delta=delta, percent=percent)


def _symbol_sizes(st: dict) -> dict[str, tuple[int, str]]:
    sizes: dict[str, list] = {}
    for row in st.get("symbols", []):
        name, size, section = row[0], row[1], row[2]
        entry = sizes.setdefault(name, [0, section, 0])
        entry[0] += size
        if size > entry[2]:                 # report the section of the biggest copy
            entry[1], entry[2] = section, size
    return {k: (v[0], v[1]) for k, v in sizes.items()}


def diff_stats(base: dict, new: dict, top: int | None = None) -> dict:
    """Diff two per-file stats dicts (as read_elf returns or a stats JSON holds).

    top: keep at most this many rows in each symbol list (largest |delta| first); counts and
    byte sums in `summary` always cover every symbol.
    """
    base_secs = {s["name"]: s for s in base["sections"] if s["type"] != "NULL"}
    new_secs = {s["name"]: s for s in new["sections"] if s["type"] != "NULL"}
    order = [n for n in new_secs] + [n for n in base_secs if n not in new_secs]
    sections = []
    for name in order:
        b, n = base_secs.get(name), new_secs.get(name)
        row = change(b["size"] if b else None, n["size"] if n else None)
        row.update(name=name, status="new" if b is None else "gone" if n is None else
                   "changed" if row["delta"] else "same",
                   **{"class": (n or b).get("class")})
        sections.append(row)
    totals = {k: change(base["totals"][k], new["totals"][k]) for k in TOTAL_KEYS}

    old_syms, new_syms = _symbol_sizes(base), _symbol_sizes(new)
    grown, shrunk, added, gone = [], [], [], []
    for name, (size, section) in new_syms.items():
        if name not in old_syms:
            added.append(dict(name=name, section=section, **change(None, size)))
            continue
        old_size = old_syms[name][0]
        if size != old_size:
            (grown if size > old_size else shrunk).append(
                dict(name=name, section=section, **change(old_size, size)))
    for name, (size, section) in old_syms.items():
        if name not in new_syms:
            gone.append(dict(name=name, section=section, **change(size, None)))
    summary = dict(
        grown=len(grown), shrunk=len(shrunk), new=len(added), gone=len(gone),
        grown_bytes=sum(r["delta"] for r in grown), shrunk_bytes=sum(r["delta"] for r in shrunk),
        new_bytes=sum(r["delta"] for r in added), gone_bytes=sum(r["delta"] for r in gone))
    symbols = {}
    for key, rows in (("grown", grown), ("shrunk", shrunk), ("new", added), ("gone", gone)):
        rows.sort(key=lambda r: (-abs(r["delta"]), r["name"]))
        symbols[key] = rows[:top] if top else rows
    return dict(schema=DIFF_SCHEMA, baseline=base["file"], current=new["file"],
                symbols_available=bool(base.get("symbol_source") and new.get("symbol_source")),
                sections=sections, totals=totals, symbols=symbols, summary=summary)


def pair_files(baseline: list[dict], current: list[dict], baseline_path):
    """Match baseline entries to current files by file name (1:1 when each side has one).
    Returns (pairs, unmatched current file names); no pair at all is an error."""
    by_name = {b["file"]: b for b in baseline}
    if len(baseline) == 1 and len(current) == 1:
        pairs, unmatched = [(baseline[0], current[0])], []
    else:
        pairs = [(by_name[st["file"]], st) for st in current if st["file"] in by_name]
        unmatched = [st["file"] for st in current if st["file"] not in by_name]
    if not pairs:
        raise SeedfwError(f"no file in common with the baseline (it has: "
                          f"{', '.join(plain(n) for n in sorted(by_name)) or 'none'}; "
                          f"compared: {', '.join(plain(n) for n in unmatched)})", baseline_path)
    for base, new in pairs:
        # An ARM image against an AArch64 one shares no code: every symbol would be "new".
        old_m, new_m = (base.get("elf") or {}).get("machine"), (new.get("elf") or {}).get("machine")
        if old_m and new_m and old_m != new_m:
            raise SeedfwError(f"baseline {plain(base['file'])} is built for {plain(old_m)}, "
                              f"{plain(new['file'])} for {plain(new_m)}: not comparable",
                              baseline_path, "elf.machine")
    return pairs, unmatched


def _fmt(row: dict) -> str:
    pct = f" ({row['percent']:+.2f} %)" if row["percent"] is not None else ""
    return f"{row['old'] if row['old'] is not None else '-':>10} → " \
           f"{row['new'] if row['new'] is not None else '-':>10}  {row['delta']:+d}{pct}"


def format_diff(d: dict, top: int = 10) -> str:
    lines = [f"diff {plain(d['baseline'])} → {plain(d['current'])}"]
    for key, row in d["totals"].items():
        lines.append(f"  total {key:<8} {_fmt(row)}")
    for s in d["sections"]:
        if s["status"] != "same":
            lines.append(f"  section {plain(s['name']):<24} {s['status']:<8} {_fmt(s)}")
    if not d["symbols_available"]:
        lines.append("  symbols: not compared (one side has no symbol table)")
        return "\n".join(lines)
    sm = d["summary"]
    lines.append(f"  symbols: {sm['grown']} grown ({sm['grown_bytes']:+d}), {sm['shrunk']} shrunk "
                 f"({sm['shrunk_bytes']:+d}), {sm['new']} new ({sm['new_bytes']:+d}), "
                 f"{sm['gone']} gone ({sm['gone_bytes']:+d})")
    for key, rows in d["symbols"].items():
        for r in rows[:top]:
            lines.append(f"    {key:<6} {plain(r['name']):<40} {plain(r['section']):<16} "
                         f"{_fmt(r)}")
    return "\n".join(lines)
