"""seedfw on a labgrid board farm (issue 31; docs/farm.md).

labgrid is the engine: its coordinator keeps the places and their locks, its exporter publishes a
bench host's resources, its client acquires and releases, its pytest plugin runs tests/hil. seedfw
generates what those programs read from board data and the build (seedfw.lab.generate), holds a
place for a command (seedfw.lab.client.held, `--place P`), and plugs its QEMU, flash and strategy
drivers into labgrid's registry (seedfw.lab.drivers, imported by labgrid, never by seedfw's CLI
at start-up). seedfw.lab.farm starts a local coordinator + exporter (the HIL fixture, the
farm-cycle bench).

Only `generate` and `client` are imported without labgrid installed; `drivers` needs it.
"""

from .client import held  # noqa: F401  (the one wrapping call of the CLI's --place)
