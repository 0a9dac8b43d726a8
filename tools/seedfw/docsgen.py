"""The manual's generated reference (docs/reference/, never committed), rebuilt by every docs build.

mkdocs.yml names this file as a hook: `on_config` writes the pages before mkdocs collects files
and puts them into the nav under "Reference". Generated from the code, so they cannot drift:
- one page per plug-in (part, flash runner, counter source, report section) from its docstring;
- the Kconfig option reference from the Kconfig tree (kconfiglib, every board's tree merged);
- every `invoke` task's `--help`;
- the report JSON schema (tools/seedfw/report/schema/).
`missing_help()` is what tests/test_docs.py asserts empty: a plug-in or a prompted Kconfig
symbol without help text fails the suite.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import io
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "tools") not in sys.path:        # loaded by mkdocs as a hook file, not a package
    sys.path.insert(0, str(ROOT / "tools"))

KINDS = {   # kind -> (page title, folder, one line about the kind)
    "parts": ("Parts", "parts", "One per buildable thing or build stage, in build order."),
    "flash-runners": ("Flash runners", "flash-runners",
                      "board.yaml `flash.backend` names one; `invoke flash` drives it."),
    "counter-sources": ("Counter sources", "counter-sources",
                        "board.yaml `counters` names one; `invoke counters` reads it."),
    "report-sections": ("Report sections", "report-sections",
                        "Each fills one key of report.json and one part of report.md/.html."),
}
def _load(spec: str):
    module, _, attr = spec.partition(":")
    obj = importlib.import_module(module)
    return getattr(obj, attr) if attr else obj


def plugin_classes() -> dict[str, list[tuple[str, object]]]:
    """Every registered plug-in by kind: [(name, class or module)], in registry order.

    The one place that knows the registries: parts (seedfw.parts.REGISTRY), flash runners
    (seedfw.flash.REGISTRY), counter sources (seedfw.counters.REGISTRY), report sections
    (seedfw.report.sections.SECTIONS)."""
    from seedfw import counters, flash, parts
    from seedfw.report.sections import SECTIONS
    # names() + get(): Registry.classes() refuses an undocumented class, missing_help() wants
    # to list them all instead.
    return {kind: [(n, reg.get(n)) for n in reg.names()]
            for kind, reg in (("parts", parts.REGISTRY), ("flash-runners", flash.REGISTRY),
                              ("counter-sources", counters.REGISTRY),
                              ("report-sections", SECTIONS))}


def _doc(obj) -> str:
    return inspect.cleandoc(obj.__doc__ or "") if obj.__doc__ else ""


def _where(obj) -> str:
    try:
        path = Path(inspect.getsourcefile(obj)).resolve().relative_to(ROOT)
    except (TypeError, ValueError):
        return ""
    qual = getattr(obj, "__qualname__", None)
    return f"`{path}`" + (f" (`{qual}`)" if qual and not inspect.ismodule(obj) else "")


# --- Kconfig ------------------------------------------------------------------------------------

def kconfig_symbols() -> dict[str, dict]:
    """Every symbol and named choice of every board's Kconfig tree, merged by name."""
    import kconfiglib
    from seedfw import boards, config
    out: dict[str, dict] = {}
    for board in boards.names():
        kc = config.load_kconfig(board)
        for sym in kc.unique_defined_syms + [c for c in kc.unique_choices if c.name]:
            entry = out.setdefault(sym.name, {"name": sym.name, "boards": [], "prompt": None,
                                              "help": None, "where": [], "defaults": [],
                                              "depends": None, "range": None,
                                              "choice": isinstance(sym, kconfiglib.Choice),
                                              "type": kconfiglib.TYPE_TO_STR[sym.orig_type]})
            entry["boards"].append(board)
            for node in sym.nodes:
                where = f"{node.filename}:{node.linenr}"
                if where not in entry["where"]:
                    entry["where"].append(where)
                if node.prompt and not entry["prompt"]:
                    entry["prompt"] = node.prompt[0]
                if node.help and not entry["help"]:
                    entry["help"] = node.help
            if not entry["defaults"]:
                entry["defaults"] = [_default_str(kconfiglib, v, c) for v, c in sym.orig_defaults]
            if entry["depends"] is None and sym.direct_dep is not kc.y:
                entry["depends"] = kconfiglib.expr_str(sym.direct_dep)
            ranges = getattr(sym, "orig_ranges", None)
            if ranges and not entry["range"]:
                lo, hi, _ = ranges[0]
                entry["range"] = f"{kconfiglib.expr_str(lo)}..{kconfiglib.expr_str(hi)}"
    return dict(sorted(out.items()))


def _default_str(kconfiglib, value, cond) -> str:
    text = kconfiglib.expr_str(value)
    return text if cond is value.kconfig.y else f"{text} if {kconfiglib.expr_str(cond)}"


def missing_help() -> list[str]:
    """Plug-ins without a docstring and prompted Kconfig symbols without help, one line each."""
    out = [f"{kind} {name}: no docstring" for kind, items in plugin_classes().items()
           for name, obj in items if not _doc(obj)]
    out += [f"Kconfig {s['name']} ({', '.join(s['where'])}): prompt without help"
            for s in kconfig_symbols().values() if s["prompt"] and not s["help"]]
    return out


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;")


def kconfig_page() -> str:
    syms = kconfig_symbols()
    lines = ["# Kconfig options", "",
             "Generated from the Kconfig tree (`Kconfig`, `kconfig/`, `board/*/Kconfig`) with "
             "kconfiglib, every board's tree merged. `invoke config --board B --explain SYMBOL` "
             "says why a symbol has its value in one configuration.", "",
             "| symbol | type | prompt |", "|---|---|---|"]
    prompted = [s for s in syms.values() if s["prompt"]]
    lines += [f"| [{s['name']}](#{s['name'].lower()}) | {s['type']} | "
              f"{_md_escape(s['prompt'])} |" for s in prompted]
    lines += ["", "Symbols without a prompt are set by defaults or `select` only; they are "
              "listed at the end.", ""]
    for s in list(prompted) + [s for s in syms.values() if not s["prompt"]]:
        lines += [f"## {s['name']} {{#{s['name'].lower()}}}", ""]
        if s["prompt"]:
            lines += [f"*{_md_escape(s['prompt'])}*", ""]
        rows = [("type", ("choice" if s["choice"] else s["type"]) or "—"),
                ("default", "<br>".join(f"`{_md_escape(d)}`" for d in s["defaults"]) or "—"),
                ("depends on", f"`{_md_escape(s['depends'])}`" if s["depends"] else "—"),
                ("boards", ", ".join(s["boards"])),
                ("defined at", ", ".join(f"`{w}`" for w in s["where"]))]
        if s["range"]:
            rows.insert(2, ("range", f"`{s['range']}`"))
        lines += ["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows] + [""]
        lines += ["```text", s["help"].rstrip(), "```", ""] if s["help"] else \
            ["(no help text: set by defaults or select only)", ""]
    return "\n".join(lines)


# --- invoke tasks -------------------------------------------------------------------------------

def _namespace():
    spec = importlib.util.spec_from_file_location("seedfw_tasks", ROOT / "tasks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ns


def task_help() -> dict[str, str]:
    """`invoke --help TASK` for every task, run in this process at 80 columns."""
    from invoke import Program
    ns = _namespace()
    out = {}
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        for name in sorted(ns.task_names):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                Program(namespace=ns, binary="invoke").run(["invoke", "--help", name], exit=False)
            out[name] = buf.getvalue().rstrip()
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved
    return out


def tasks_page() -> str:
    helps = task_help()
    lines = ["# invoke tasks", "",
             "Generated: `invoke --help TASK` of every task (run `invoke --list` for the "
             "summaries). Every task takes `--output DIR` where it reads or writes a build.", ""]
    for name, text in helps.items():
        lines += [f"## {name}", "", "```text", text, "```", ""]
    return "\n".join(lines)


# --- report schema ------------------------------------------------------------------------------

def schema_page() -> str:
    path = ROOT / "tools/seedfw/report/schema/report-v1.json"
    schema = json.loads(path.read_text())
    lines = ["# Report JSON schema", "",
             f"`report.json` follows `{schema.get('$id', path.name)}` "
             f"(`{path.relative_to(ROOT)}`). {schema.get('description', '')}", "",
             "| key | required | type | description |", "|---|---|---|---|"]
    required = set(schema.get("required", []))
    for key, prop in schema.get("properties", {}).items():
        typ = prop.get("type") or prop.get("$ref", "").rsplit("/", 1)[-1] or "—"
        lines.append(f"| `{key}` | {'yes' if key in required else 'no'} | "
                     f"{_md_escape(str(typ))} | {_md_escape(prop.get('description', ''))} |")
    lines += ["", "The whole schema:", "", "```json", json.dumps(schema, indent=2), "```", ""]
    return "\n".join(lines)


# --- plug-in pages ------------------------------------------------------------------------------

def plugin_page(kind: str, name: str, obj) -> str:
    title = KINDS[kind][0].rstrip("s").lower()
    doc = _doc(obj)
    summary = _md_escape((doc.splitlines() or [""])[0])
    # Docstrings are plain text (indented contracts, <placeholders>): shown as written.
    lines = [f"# {name}", "", f"*{title}* — {_where(obj)}", "", summary, "", "```text", doc,
             "```", ""]
    symbols = getattr(obj, "symbols", None)
    if symbols:
        lines += ["Kconfig symbols read: " + ", ".join(
            f"[`{s}`](../kconfig.md#{s.lower()})" for s in symbols), ""]
    caps = getattr(obj, "capabilities", None)
    if caps:
        lines += ["Capabilities: " + ", ".join(f"`{c}`" for c in sorted(caps)), ""]
    return "\n".join(lines)


def generate(docs_dir: Path) -> list:
    """Write docs/reference/; returns the nav entries for "Reference".

    Only files whose text changed are written (and stale ones removed): `mkdocs serve` watches
    docs/, and rewriting identical pages on every rebuild would trigger the next rebuild."""
    target = Path(docs_dir) / "reference"
    pages: dict[str, str] = {}
    nav: list = [{"Overview": "reference/index.md"}]
    index = ["# Reference", "", "Generated from the code on every docs build "
             "(`tools/seedfw/docsgen.py`); edit the docstrings and Kconfig help, not these pages.",
             "", "- [Kconfig options](kconfig.md)", "- [invoke tasks](tasks.md)",
             "- [Report JSON schema](report-schema.md)", ""]
    for kind, items in plugin_classes().items():
        title, folder, about = KINDS[kind]
        entries = []
        index += [f"## {title}", "", about, ""]
        for name, obj in items:
            fname = name.replace(".", "-") + ".md"
            pages[f"{folder}/{fname}"] = plugin_page(kind, name, obj)
            entries.append({name: f"reference/{folder}/{fname}"})
            summary = (_doc(obj).splitlines() or [""])[0]
            index.append(f"- [{name}]({folder}/{fname}): {_md_escape(summary)}")
        index.append("")
        nav.append({title: entries})
    pages["index.md"] = "\n".join(index)
    pages["kconfig.md"] = kconfig_page()
    pages["tasks.md"] = tasks_page()
    pages["report-schema.md"] = schema_page()
    if target.exists():
        for old in target.rglob("*"):
            if old.is_file() and old.relative_to(target).as_posix() not in pages:
                old.unlink()
    for rel, text in pages.items():
        path = target / rel
        if not path.is_file() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return nav + [{"Kconfig options": "reference/kconfig.md"},
                  {"invoke tasks": "reference/tasks.md"},
                  {"Report JSON schema": "reference/report-schema.md"}]


# --- mkdocs hook --------------------------------------------------------------------------------

def on_config(config, **kwargs):
    """mkdocs hook: generate the pages, then fill the nav's "Reference" entry with them."""
    entries = generate(Path(config["docs_dir"]))
    nav = config.get("nav") or []
    for i, item in enumerate(nav):
        if isinstance(item, dict) and "Reference" in item:
            nav[i] = {"Reference": entries}
    return config
