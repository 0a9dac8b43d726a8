"""A Debian source package's files fetched one by one from the archive pool, by their pinned hash.

Why not `apt-get source --download-only` (seedfw.sources.DebianSourceSite): it needs the `.dsc`, and
some archives here are partial — u-boot 2025.01-3+deb13u1's `.dsc` answers 404 while its orig
tarball and debian.tar.xz are present and listed in the signed `Sources` index. So this site asks
apt only *where* the package lives (`apt-cache showsrc` → `Directory:`, through the same private
apt state as DebianSourceSite, so the machine's apt configuration is never touched) and fetches each
file from `<archive URI>/<Directory>/<name>`; the caller verifies every file against its pin.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .. import paths, sources
from ..errors import SeedfwError
from ..plan import run_command


@dataclass(frozen=True)
class DebianPoolSite(sources.Site):
    """One file of Debian source package `package`=`version` (suite `suite`), from the pool."""

    package: str
    version: str
    suite: str = "trixie"
    label = "debian-pool"

    def describe(self) -> str:
        return f"Debian pool of source package {self.package}={self.version} ({self.suite})"

    def directory(self, log: Path | None) -> str:
        """The package's pool directory (e.g. pool/main/u/u-boot), from the Sources index."""
        state = paths.download_dir() / ".apt" / self.suite
        options = sources.private_apt_state(state, "deb-src", self.suite)
        run_command(["apt-get", *options, "update", "-qq"], log=log)
        out = run_command(["apt-cache", *options, "showsrc", self.package],
                          log=log).stdout.decode(errors="replace")
        return pool_directory(out, self.version)

    def fetch(self, file, dest_dir, log):
        directory = self.directory(log)
        failures = []
        for uri in sources.debian_uris():
            site = sources.UrlSite(f"{uri.rstrip('/')}/{directory}/{{name}}")
            try:
                return site.fetch(file, dest_dir, log)
            except SeedfwError as exc:
                failures.append(exc.message)
        raise SeedfwError("; ".join(failures))


def pool_directory(showsrc: str, version: str) -> str:
    """`Directory:` of the paragraph of `apt-cache showsrc` output whose Version is `version`."""
    for para in re.split(r"\n\s*\n", showsrc):
        if re.search(rf"^Version: {re.escape(version)}$", para, re.MULTILINE):
            m = re.search(r"^Directory: (\S+)", para, re.MULTILINE)
            if m:
                return m.group(1)
    raise SeedfwError(f"the Debian Sources index has no version {version} (apt-cache showsrc)")
