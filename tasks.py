"""seedfw's Invoke front. The work lives in tools/seedfw; each area's tasks in seedfw.cli.<area>."""

import importlib
import pkgutil

from invoke import Collection, Task

import seedfw.cli

ns = Collection()
for info in sorted(pkgutil.iter_modules(seedfw.cli.__path__), key=lambda i: i.name):
    module = importlib.import_module(f"seedfw.cli.{info.name}")
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name)
        if isinstance(obj, Task):
            ns.add_task(obj)
