"""What a study leaves on disk: tune.json, report.md and report.html (Pareto front, SVG
scatter), and the --export fragment. Everything is derived from the Optuna study itself (not
from this process's trials), so each worker of a shared study writes the same, complete files."""

from __future__ import annotations

import html
import math
from pathlib import Path

from .. import util
from . import space as space_mod


def trials_doc(study, objectives) -> list[dict]:
    out = []
    for t in study.get_trials(deepcopy=False):
        # Optuna stores objective values as floats; every objective here is a whole number.
        # Kconfig names: a restricted choice's Optuna name carries its members (space.py)
        doc = {"number": t.number, "state": t.state.name,
               "params": space_mod.trial_values(t.params),
               "objectives": ({o.name: _whole(v) for o, v in zip(objectives, t.values)}
                              if t.values else None)}
        for key in ("error", "steps_ran", "steps_restored", "steps_skipped", "seconds", "notes", "interrupted",
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


def _ticks(lo, hi, n: int = 5) -> list:
    """About n round tick values covering [lo, hi] (1/2/5 steps)."""
    span = (hi - lo) or abs(hi) or 1
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    out, v = [], first
    while v <= hi + step * 1e-9:
        out.append(int(v) if float(v).is_integer() else round(v, 6))
        v += step
    return out or [lo]


def svg(doc: dict, width: int = 900, height: int = 560) -> str:
    """Scatter of the first two objectives: every complete trial one mark (grey; the front in
    red, joined by its staircase), the defconfig's point ringed and labelled."""
    objs = doc["objectives"][:2]
    pts = [(t["number"], t["objectives"][objs[0]["name"]], t["objectives"][objs[-1]["name"]])
           for t in doc["trials"] if t["state"] == "COMPLETE" and t["objectives"]]
    if not pts:
        return '<p class="na">No complete trial to plot.</p>'
    left, right, top, bottom = 90, 30, 20, 60
    xs, ys = [p[1] for p in pts], [p[2] for p in pts]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    padx, pady = ((x1 - x0) or abs(x1) or 1) * 0.05, ((y1 - y0) or abs(y1) or 1) * 0.05
    x0, x1, y0, y1 = x0 - padx, x1 + padx, y0 - pady, y1 + pady
    sx = lambda v: left + (v - x0) / (x1 - x0) * (width - left - right)  # noqa: E731
    sy = lambda v: height - bottom - (v - y0) / (y1 - y0) * (height - top - bottom)  # noqa: E731
    e = html.escape
    front = set(doc["front"])
    parts = [f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} '
             f'{height}" role="img" aria-label="Trials and Pareto front">',
             f'<rect x="{left}" y="{top}" width="{width - left - right}" '
             f'height="{height - top - bottom}" fill="#fafafa" stroke="#888"/>']
    for v in _ticks(x0, x1):
        if x0 <= v <= x1:
            parts.append(f'<line x1="{sx(v):.1f}" y1="{top}" x2="{sx(v):.1f}" '
                         f'y2="{height - bottom}" stroke="#e3e3e3"/><text x="{sx(v):.1f}" '
                         f'y="{height - bottom + 16}" text-anchor="middle">{_fmt(v)}</text>')
    for v in _ticks(y0, y1):
        if y0 <= v <= y1:
            parts.append(f'<line x1="{left}" y1="{sy(v):.1f}" x2="{width - right}" '
                         f'y2="{sy(v):.1f}" stroke="#e3e3e3"/><text x="{left - 6}" '
                         f'y="{sy(v) + 4:.1f}" text-anchor="end">{_fmt(v)}</text>')
    parts += [f'<text x="{left + (width - left - right) / 2}" y="{height - 18}" '
              f'text-anchor="middle" font-weight="bold">{e(objs[0]["name"])} '
              f'({e(objs[0]["unit"])}, {e(objs[0]["kind"])})</text>',
              f'<text x="16" y="{top + (height - top - bottom) / 2}" text-anchor="middle" '
              f'font-weight="bold" transform="rotate(-90 16 {top + (height - top - bottom) / 2})">'
              f'{e(objs[-1]["name"])} ({e(objs[-1]["unit"])}, {e(objs[-1]["kind"])})</text>']
    stairs = sorted((p for p in pts if p[0] in front), key=lambda p: (p[1], p[2]))
    if len(stairs) > 1:
        path = " ".join(f"{sx(a):.1f},{sy(b):.1f}" for _, a, b in stairs)
        parts.append(f'<polyline class="front" points="{path}" fill="none" stroke="#d62728" '
                     'stroke-dasharray="4 3"/>')
    for n, a, b in sorted(pts, key=lambda p: p[0] in front):     # the front drawn on top
        on = n in front
        parts.append(f'<circle class="{"front" if on else "trial"}" data-trial="{n}" '
                     f'cx="{sx(a):.1f}" cy="{sy(b):.1f}" r="{6 if on else 4}" '
                     f'fill="{"#d62728" if on else "#9a9a9a"}" fill-opacity="0.85">'
                     f'<title>trial #{n}: {objs[0]["name"]} {_fmt(a)}, {objs[-1]["name"]} '
                     f'{_fmt(b)}{" (Pareto front)" if on else ""}</title></circle>')
        if n == doc["default_trial"]:
            parts.append(f'<circle class="default" cx="{sx(a):.1f}" cy="{sy(b):.1f}" r="11" '
                         f'fill="none" stroke="#1f77b4" stroke-width="2"/>'
                         f'<text x="{sx(a) + 14:.1f}" y="{sy(b) - 10:.1f}" fill="#1f77b4">'
                         f'defconfig (#{n})</text>')
    parts.append("</svg>")
    return "\n".join(parts)


TUNE_CSS = """
body{max-width:1240px}figure.plot figcaption{color:#555;font-size:.9em}
.legend span{display:inline-block;margin-right:1.2em}.dot{display:inline-block;width:.8em;
height:.8em;border-radius:50%;margin-right:.3em;vertical-align:middle}
.params{font-family:ui-monospace,monospace;font-size:.85em;max-width:38em}

"""


def html_page(doc: dict) -> str:
    """tune/report.html: the study, the Pareto front as a table (one row per front trial), every
    trial on the scatter plot, the failed ones listed; the build report's CSS and table code."""
    from markupsafe import Markup

    from ..report.format import html_table as report_table
    from ..report.html import CSS

    def html_table(header, rows, numeric=()) -> str:
        # this page escapes its cells itself (e = html.escape); the report's table escapes any
        # cell that is not Markup (report/safe.py), so they travel as Markup
        return str(report_table(header, [[Markup(c) for c in row] for row in rows], numeric))
    e = html.escape
    objs = doc["objectives"]
    by_number = {t["number"]: t for t in doc["trials"]}
    default = by_number.get(doc["default_trial"]) if doc["default_trial"] is not None else None
    ref = (default or {}).get("objectives") or {}
    states: dict[str, int] = {}
    for t in doc["trials"]:
        states[t["state"]] = states.get(t["state"], 0) + 1
    params = lambda t: e(", ".join(f"{k}={v}" for k, v in sorted(t["params"].items())))  # noqa
    h = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
         f'<meta name="viewport" content="width=device-width">'
         f'<title>seedfw tune: {e(doc["board"])}</title><style>{CSS}{TUNE_CSS}</style></head><body>',
         f'<h1>Tuning {e(doc["board"])}</h1>',
         "<h2>Study</h2>",
         html_table(["study", ""], [["study", f"<code>{e(doc['study'])}</code>"],
                           ["storage", e(doc["storage"])], ["sampler", e(doc["sampler"])],
                           ["trials", e(f"{len(doc['trials'])}: " + ", ".join(
                               f"{n} {s.lower()}" for s, n in sorted(states.items())))],
                           ["defconfig", f"trial #{doc['default_trial']}" if default
                            else "not measured in this study"]]).replace(
             "<tr><th>study</th><th></th></tr>", "", 1),
         "<h3>Objectives (all minimised)</h3>",
         html_table(["objective", "unit", "kind", "how"],
                [[e(o["name"]), e(o["unit"]), f'<span class="kind-{e(o["kind"])}">'
                  f'{e(o["kind"])}</span>', e(o["how"])] for o in objs])]
    if doc.get("space"):
        h += ["<h3>Search space (Kconfig)</h3>",
              html_table(["symbol", "kind", "values"],
                     [[f"<code>{e(p['name'])}</code>", e(p["kind"]),
                       e(f"{p['low']}..{p['high']} step {p['step']}" if p["kind"] == "int"
                         else ", ".join(map(str, p.get("values", []))))]
                      for p in doc["space"]])]
    # The front: one row per front trial; twins (same point) say whose point they share.
    first_of: dict[tuple, int] = {}
    rows = []
    for n in doc["front"]:
        t = by_number[n]
        vals = t["objectives"]
        point = tuple(vals.values())
        twin = first_of.setdefault(point, n)
        label = f"#{n}" + (" (defconfig)" if n == doc["default_trial"] else "")
        rows.append([e(label)] + [_fmt(vals[o["name"]]) for o in objs]
                    + [_ratio(vals[o["name"]], ref.get(o["name"])) for o in objs]
                    + ["" if twin == n else f"#{twin}", f'<span class="params">{params(t)}'
                                                        f"</span>"])
    numeric = set(range(1, 1 + 2 * len(objs)))
    front_table = html_table(["trial"] + [f"{o['name']} ({o['unit']})" for o in objs]
                         + [f"{o['name']} / defconfig" for o in objs]
                         + ["same point as", "parameters"], rows, numeric)
    front_table = front_table.replace("<table>", '<table id="front">', 1)
    h += ["<h2>Pareto front</h2>",
          f"<p>{len(first_of)} distinct point(s) from {len(doc['front'])} trial(s). "
          + (f"Ratios are to the defconfig's point (trial #{doc['default_trial']})."
             if default and ref else "The defconfig's point was not measured in this study.")
          + "</p>", front_table]
    if default and ref and doc["default_trial"] not in doc["front"]:
        h.append(f"<p>The defconfig (trial #{doc['default_trial']}) is dominated: "
                 + e(", ".join(f"{o['name']} {_fmt(ref[o['name']])}" for o in objs)) + ".</p>")
    plotted = sum(1 for t in doc["trials"] if t["state"] == "COMPLETE" and t["objectives"])
    more = "" if len(objs) <= 2 else (
        f" Plotted: the first two of {len(objs)} objectives; the front is Pareto-optimal over "
        "all of them, so a red point may look dominated in this projection.")
    h += ["<h2>Every trial</h2>",
          f'<figure class="plot" id="plot-trials" data-plot="trials">{svg(doc)}<figcaption>'
          f'<span class="legend"><span><i class="dot" style="background:#d62728"></i>Pareto '
          f'front</span><span><i class="dot" style="background:#9a9a9a"></i>other complete '
          f'trials</span><span><i class="dot" style="border:2px solid #1f77b4"></i>the '
          f"defconfig</span></span> {plotted} complete trial(s) plotted; failed trials have no "
          f"point and are listed below.{e(more)}</figcaption></figure>"]
    failed = [t for t in doc["trials"] if t["state"] == "FAIL"]
    if failed:
        h += ["<h3>Failed trials</h3>",
              html_table(["trial", "why", "parameters"],
                     [[f"#{t['number']}", e("interrupted" if t.get("interrupted")
                                            else str(t.get("error"))),
                       f'<span class="params">{params(t)}</span>'] for t in failed])]
    all_rows = []
    for t in doc["trials"]:
        vals = t["objectives"] or {}
        all_rows.append([f"#{t['number']}", e(t["state"].lower())
                         + (" (front)" if t["number"] in doc["front"] else "")
                         + (" (defconfig)" if t["number"] == doc["default_trial"] else "")]
                        + [_fmt(vals[o["name"]]) if o["name"] in vals else "–" for o in objs]
                        + [f'<span class="params">{params(t)}</span>'])
    h += ["<details><summary>All trials</summary>",
          html_table(["trial", "state"] + [o["name"] for o in objs] + ["parameters"], all_rows,
                 set(range(2, 2 + len(objs)))), "</details>", "</body></html>\n"]
    return "\n".join(h)


def write_all(doc: dict, tune_dir: Path) -> list[Path]:
    md = markdown(doc)
    return [util.write_json(tune_dir / "tune.json", doc),
            util.write_text(tune_dir / "report.md", md),
            util.write_text(tune_dir / "report.html", html_page(doc))]


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
