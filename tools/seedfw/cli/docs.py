"""The manual: `invoke docs` builds docs/ with MkDocs (Material theme) into output/site/."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

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
               "port": "port for --serve (default 8000)"})
def docs(c, check=False, serve=False, port=8000):
    """Build the manual (docs/) into output/site/.

    The reference pages (plug-ins, Kconfig options, task help, report schema) are generated
    into docs/reference/ by tools/seedfw/cli/docsgen.py on every build, and committed; --check
    writes none and fails naming a committed one that is stale."""
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
