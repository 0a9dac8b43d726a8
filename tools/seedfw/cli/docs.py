"""The manual: `invoke docs` builds docs/ with MkDocs (Material theme) into output/site/."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from . import command
from ..paths import shown as shown_path
from ..errors import SeedfwError
from ..paths import ROOT

__all__ = ["docs"]


def mkdocs_command(check: bool = False, serve: bool = False, port: int = 8000) -> list[str]:
    """The mkdocs command line; the generated reference is written by the mkdocs.yml hook."""
    if serve:
        return [sys.executable, "-m", "mkdocs", "serve", "--dev-addr", f"127.0.0.1:{port}"]
    return [sys.executable, "-m", "mkdocs", "build"] + (["--strict"] if check else [])


@command(help={"check": "strict build (what CI runs): a broken link, anchor or un-navigated "
                        "page fails it",
               "serve": "serve on 127.0.0.1 and rebuild when a page changes",
               "port": "port for --serve (default 8000)",
               "golden": "instead of building the site: regenerate every figure the pages mark "
                         "(<!-- figure: ... -->) from the builds DIR/<board>/ (invoke ci's "
                         "output/ci) and fail naming page:line and figure where one disagrees",
               "regenerate": "with --golden: write the builds' values into the pages instead"})
def docs(c, check=False, serve=False, port=8000, golden=None, regenerate=False):
    """Build the manual into output/site/, or check its figures.

    The reference pages (plug-ins, Kconfig options, task help, report schema) are generated
    into docs/reference/ by tools/seedfw/cli/docsgen.py on every build, and committed; --check
    writes none and fails naming a committed one that is stale. --golden DIR is the golden
    check (seedfw.figures.golden) that invoke ci runs on its builds."""
    if golden:
        return golden_check(golden, regenerate)
    if regenerate:
        raise SeedfwError("needs --golden DIR (the builds to take the figures from)",
                          field="--regenerate")
    # The theme too: mkdocs alone would fail later, and less clearly.
    if not all(importlib.util.find_spec(m) for m in ("mkdocs", "material")):
        raise SeedfwError("mkdocs-material is not installed (run: invoke setup, or python3 -m pip "
                          "install -e '.[docs]')", ROOT / "pyproject.toml", "docs")
    # --check also refuses stale committed reference pages instead of rewriting them (docsgen).
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", SEEDFW_DOCS_CHECK="1" if check else "0",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "tools"),
                                                        os.environ.get("PYTHONPATH")])))
    proc = subprocess.run(mkdocs_command(check, serve, port), cwd=ROOT, env=env)
    if proc.returncode:
        raise SeedfwError(f"mkdocs failed (exit {proc.returncode}; its warnings are above)",
                          ROOT / "mkdocs.yml", "--check" if check else "build")
    if not serve:
        print(f"manual: {shown_path(ROOT / 'output' / 'site' / 'index.html')}")


def golden_check(root, regenerate: bool = False, say=print) -> None:
    """The marked figures of docs/ against the builds under `root`: one line per disagreement,
    then a SeedfwError; with `regenerate`, the pages rewritten from the builds."""
    from ..figures import golden

    root = Path(root)
    if regenerate:
        for line in golden.regenerate(ROOT / "docs", root):
            say(line)
        return
    bad, found = golden.check(ROOT / "docs", root)
    for line in bad:
        say(line)
    if bad:
        raise SeedfwError(f"{len(bad)} of {len(found)} figures disagree with the builds in "
                          f"{shown_path(root)} (invoke docs --golden {shown_path(root)} "
                          "--regenerate writes the builds' values)", field="golden")
    say(golden.summary(found, shown_path(root)))
