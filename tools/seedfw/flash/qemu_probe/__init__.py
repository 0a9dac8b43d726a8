"""pyOCD probe plug-in backed by QEMU's GDB stub (entry point `pyocd.probe: qemu`).

Unique IDs are `qemu:HOST:PORT`; the plug-in's name is the UID prefix pyOCD matches on.

Import cycle, and why this module looks odd: importing anything from pyocd runs pyocd/__init__,
which loads every `pyocd.probe` entry point — i.e. this package — before returning. So the plug-in
class is built on first attribute access (PEP 562 `__getattr__`), after pyocd.core.plugin exists,
and `import pyocd` happens only after `__getattr__` is defined.
"""

from __future__ import annotations

_plugin_class = None


def _make_plugin_class():
    global _plugin_class
    if _plugin_class is not None:
        return _plugin_class
    from pyocd.core.plugin import Plugin

    if _plugin_class is not None:  # built by the re-entrant call made while pyocd was importing
        return _plugin_class

    class QemuProbePlugin(Plugin):
        """Registers the `qemu` probe type and seedfw's pyOCD targets."""

        def load(self):
            from ..targets import register
            from .probe import QemuProbe

            register()
            return QemuProbe

        @property
        def name(self):
            return "qemu"

        @property
        def description(self):
            return "QEMU GDB stub (RSP) presented as an SWD probe"

    QemuProbePlugin.__module__ = __name__
    _plugin_class = QemuProbePlugin
    return _plugin_class


def __getattr__(name):
    if name == "QemuProbePlugin":
        return _make_plugin_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


import pyocd  # noqa: E402,F401  (see the module docstring)
