"""What a study leaves on disk: tune.json, report.md and report.html (Pareto front, SVG
scatter), and the --export fragment. Everything is derived from the Optuna study itself (not
from this process's trials), so each worker of a shared study writes the same, complete files."""

from __future__ import annotations

import html
from pathlib import Path

from .. import util
from . import space as space_mod


def trials_doc(study, objectives) -> list[dict]:
    out = []
    for t in study.get_trials(deepcopy=False):
        # Optuna stores objective values as floats; every objective here is a whole number.
        doc = {"number": t.number, "state": t.state.name, "params": dict(t.params),
               "objectives": ({o.name: _whole(v) for o, v in zip(objectives, t.values)}
                              if t.values else None)}
        for key in ("error", "steps_ran", "steps_skipped", "seconds", "notes", "interrupted",
                    "default", "worker", "same_as"):
            if key in t.user_attrs:
                doc[key] = t.user_attrs[key]
        out.append(doc)
    return out


def _whole(v):
    return int(v) if float(v).is_integer() else v


def document(study, board: str, objectives, params, storage_label: str, sampler: str) -> dict:
    from .study import front
    trials = trials_doc(study, objectives)
    default = next((t for t in trials if t.get("default")), None)
    return {"board": board, "study": study.study_name, "storage": storage_label,
            "sampler": sampler, "objectives": [o.describe() for o in objectives],
            "space": [p.describe() for p in params],
            "default_trial": default["number"] if default else None,
            "front": [t.number for t in front(study)], "trials": trials}


def _fmt(v) -> str:
    return f"{v:,}" if isinstance(v, int) else str(v)


def _ratio(value, ref) -> str:
    return f"{value / ref:.4f}" if ref else "-"


def markdown(doc: dict) -> str:
    objs = doc["objectives"]
    by_number = {t["number"]: t for t in doc["trials"]}
    default = by_number.get(doc["default_trial"]) if doc["default_trial"] is not None else None
    ref = (default or {}).get("objectives") or {}
    states = {}
    for t in doc["trials"]:
        states[t["state"]] = states.get(t["state"], 0) + 1
    lines = [f"# Tuning {doc['board']}: Pareto front", "",
             f"Study `{doc['study']}` in {doc['storage']}, sampler {doc['sampler']}; "
             f"{len(doc['trials'])} trial(s): "
             + ", ".join(f"{n} {s.lower()}" for s, n in sorted(states.items())) + ".", "",
             "## Objectives (all minimised)", "", "| objective | unit | kind | how |",
             "|---|---|---|---|"]
    lines += [f"| {o['name']} | {o['unit']} | {o['kind']} | {o['how']} |" for o in objs]
    lines += ["", "## Pareto front", "",
              f"{len({tuple(by_number[n]['objectives'].values()) for n in doc['front']})} "
              f"distinct point(s) from {len(doc['front'])} trial(s).", "",
              "Ratios are to the defconfig's point (trial "
              f"#{doc['default_trial']})." if default and ref else
              "The defconfig's point was not measured in this study.", ""]
    head = "| trial | " + " | ".join(f"{o['name']} ({o['unit']}, {o['kind']})" for o in objs)
    head += " | " + " | ".join(f"{o['name']} / default" for o in objs) + " | parameters |"
    lines += [head, "|" + "---|" * (2 * len(objs) + 2)]
    seen: dict[tuple, list[int]] = {}
    for n in doc["front"]:            # one row per distinct point; its twins named in the row
        seen.setdefault(tuple(by_number[n]["objectives"].values()), []).append(n)
    for numbers in seen.values():
        n = numbers[0]
        t = by_number[n]
        vals = t["objectives"]
        mark = " (defconfig)" if n == doc["default_trial"] else ""
        if len(numbers) > 1:
            mark += " = " + ", ".join(f"#{m}" for m in numbers[1:])
        lines.append(f"| #{n}{mark} | " + " | ".join(_fmt(vals[o["name"]]) for o in objs) + " | "
                     + " | ".join(_ratio(vals[o["name"]], ref.get(o["name"])) for o in objs)
                     + " | " + ", ".join(f"{k}={v}" for k, v in sorted(t["params"].items())) + " |")
    if default and ref and doc["default_trial"] not in doc["front"]:
        lines += ["", f"The defconfig (trial #{doc['default_trial']}) is dominated: "
                  + ", ".join(f"{o['name']} {_fmt(ref[o['name']])}" for o in objs) + "."]
    failed = [t for t in doc["trials"] if t["state"] == "FAIL"]
    if failed:
        lines += ["", "## Failed trials", ""]
        lines += [f"- #{t['number']}: {'interrupted' if t.get('interrupted') else t.get('error')}"
                  for t in failed]
    return "\n".join(lines) + "\n"


def svg(doc: dict, width: int = 560, height: int = 360) -> str:
    """Scatter of the first two objectives: every complete trial grey, the front in red joined
    by its staircase, the defconfig's point ringed and labelled."""
    objs = doc["objectives"][:2]
    pts = [(t["number"], t["objectives"][objs[0]["name"]], t["objectives"][objs[-1]["name"]])
           for t in doc["trials"] if t["state"] == "COMPLETE" and t["objectives"]]
    if not pts:
        return "<p>No complete trial to plot.</p>"
    pad = 60
    xs, ys = [p[1] for p in pts], [p[2] for p in pts]
    x0, x1 = min(xs), max(xs) or 1
    y0, y1 = min(ys), max(ys) or 1
    sx = lambda v: pad + (v - x0) / ((x1 - x0) or 1) * (width - 2 * pad)
    sy = lambda v: height - pad - (v - y0) / ((y1 - y0) or 1) * (height - 2 * pad)
    front = set(doc["front"])
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" aria-label="Pareto front">',
             f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
             f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="black"/>',
             f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="black"/>',
             f'<text x="{width / 2}" y="{height - 20}" text-anchor="middle" font-size="12">'
             f'{html.escape(objs[0]["name"])} ({objs[0]["unit"]}, {html.escape(objs[0]["kind"])})</text>',
             f'<text x="15" y="{height / 2}" font-size="12" text-anchor="middle" '
             f'transform="rotate(-90 15 {height / 2})">{html.escape(objs[-1]["name"])} '
             f'({objs[-1]["unit"]}, {html.escape(objs[-1]["kind"])})</text>']
    for v, anchor in ((x0, "start"), (x1, "end")):
        parts.append(f'<text x="{sx(v):.1f}" y="{height - pad + 15}" font-size="10" '
                     f'text-anchor="{anchor}">{v:,}</text>')
    for v in (y0, y1):
        parts.append(f'<text x="{pad - 4}" y="{sy(v):.1f}" font-size="10" text-anchor="end">{v:,}</text>')
    stairs = sorted((p for p in pts if p[0] in front), key=lambda p: (p[1], p[2]))
    if len(stairs) > 1:
        path = " ".join(f"{sx(a):.1f},{sy(b):.1f}" for _, a, b in stairs)
        parts.append(f'<polyline class="front" points="{path}" fill="none" stroke="#d62728" '
                     'stroke-dasharray="4 3"/>')
    for n, a, b in pts:
        on = n in front
        parts.append(f'<circle class="{"front" if on else "trial"}" cx="{sx(a):.1f}" cy="{sy(b):.1f}" '
                     f'r="{5 if on else 3.5}" fill="{"#d62728" if on else "#999"}">'
                     f'<title>trial #{n}: {a:,} / {b:,}</title></circle>')
        if n == doc["default_trial"]:
            parts.append(f'<circle class="default" cx="{sx(a):.1f}" cy="{sy(b):.1f}" r="9" '
                         f'fill="none" stroke="#1f77b4" stroke-width="2"/>'
                         f'<text x="{sx(a) + 11:.1f}" y="{sy(b) - 8:.1f}" font-size="11" '
                         f'fill="#1f77b4">defconfig</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def html_page(doc: dict, md: str) -> str:
    body = f"<pre>{html.escape(md)}</pre>"
    more = "" if len(doc["objectives"]) <= 2 else (
        f"<p>Plotted: the first two of {len(doc['objectives'])} objectives; the front is "
        "Pareto-optimal over all of them, so a red point may look dominated in this projection.</p>")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>seedfw tune "
            f"{html.escape(doc['board'])}</title></head><body>\n<h1>Tuning {html.escape(doc['board'])}"
            f"</h1>\n<figure>{svg(doc)}<figcaption>Red: Pareto front; grey: other trials; ringed: "
            f"the defconfig.</figcaption></figure>\n{more}\n{body}\n</body></html>\n")


def write_all(doc: dict, tune_dir: Path) -> list[Path]:
    md = markdown(doc)
    return [util.write_json(tune_dir / "tune.json", doc),
            util.write_text(tune_dir / "report.md", md),
            util.write_text(tune_dir / "report.html", html_page(doc, md))]


def knee(doc: dict) -> int:
    """The front point closest to the ideal point, objectives scaled to [0, 1] over the front:
    a balanced choice when the user does not name a trial."""
    objs = [o["name"] for o in doc["objectives"]]
    by_number = {t["number"]: t for t in doc["trials"]}
    pts = [by_number[n] for n in doc["front"]]
    lo = {o: min(t["objectives"][o] for t in pts) for o in objs}
    hi = {o: max(t["objectives"][o] for t in pts) for o in objs}
    def dist(t):
        return sum(((t["objectives"][o] - lo[o]) / ((hi[o] - lo[o]) or 1)) ** 2 for o in objs)
    return min(pts, key=lambda t: (dist(t), t["number"]))["number"]


def export(doc: dict, params, number: int, target: Path, resolve=None) -> tuple[Path, list[str]]:
    """Write trial `number`'s parameters as a fragment `invoke config --fragment` accepts.
    `resolve(path) -> warnings` (seedfw.config.resolve's) finds the parameters that had no effect
    in that trial (e.g. block size when compression is off): they are left out, so the fragment
    says only what the trial's configuration was; returns (path, names left out)."""
    import re
    t = next(t for t in doc["trials"] if t["number"] == number)
    header = (f"# seedfw tune: {doc['board']} trial #{number} of study {doc['study']}\n# "
              + ", ".join(f"{k} {_fmt(v)}" for k, v in (t["objectives"] or {}).items())
              + "\n# use: invoke config --board " + doc["board"] + " --fragment " + str(target))
    values = dict(t["params"])
    util.write_text(target, space_mod.fragment(params, values, header=header))
    dropped = []
    if resolve is not None:
        unstuck = set(re.findall(r"CONFIG_(\w+) was assigned", "\n".join(resolve(target))))
        for p in params:
            lines = p.fragment_lines(values[p.name]) if p.name in values else []
            if any(re.match(rf"(# )?CONFIG_({'|'.join(unstuck)})[= ]", ln) for ln in lines) \
                    and unstuck:
                dropped.append(p.name)
                values.pop(p.name)
        if dropped:
            header += "\n# left out (no effect in this configuration): " + ", ".join(dropped)
            util.write_text(target, space_mod.fragment(params, values, header=header))
    return target, dropped
