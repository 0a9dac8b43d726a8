"""What each Kconfig string symbol may hold (docs/configuration.md, "String grammars").

A string symbol's value becomes a word of something else: a make variable (`PLAT=`), a line of
Buildroot's defconfig (which Buildroot's make includes), a kernel/getty argument, a path handed
to a tool, a line of the initramfs's /init. Make expands `$(shell …)` in a command-line
variable when it is used, and a shell runs backquotes and `;`, so a free-form string is a
command line. Each string symbol therefore declares a *kind* — what it may hold — and
`invoke config` (config.resolve, the one path every build takes) refuses anything else,
naming the file:line the value came from.

Where the kind is declared: in the symbol's own help text, as its last line

    Grammar: tfa-platform

so it sits next to the symbol, menuconfig shows it, and kconfiglib (which keeps help text but
no custom attributes: an unknown keyword is a parse error) carries it. The kinds themselves
(pattern and wording) are the table below, declared once; tests/test_hostile_config.py walks
every string symbol of every board's tree and fails on one without a known kind.

Whatever a kind says, `$`, backquotes, `;` and newlines are refused first (FORBIDDEN): no
pattern added later can let a make function or a shell command through.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

from ..errors import SeedfwError
from ..paths import ROOT

# Refused in every string value, before its kind is looked at: `$` (make variables and every
# make function, shell expansion), backquotes (command substitution), `;` (a command separator),
# newlines (a new make or shell line).
FORBIDDEN = frozenset("$`;\n")

_GRAMMAR_LINE = re.compile(r"^Grammar: (\S+)\s*$", re.M)
MAX_LENGTH = 1024           # no string symbol needs more; a longer value is not a word

# Characters a path or a make/Buildroot value word may hold: no whitespace, quotes, backslash,
# shell or make metacharacters.
_SAFE = r"A-Za-z0-9_.,:/+@%=~\-"
_SAFE_SHOWN = "A-Za-z0-9_.,:/+@%=~-"
_PATH = r"[A-Za-z0-9_./+@%,~-]+"


@dataclass(frozen=True)
class Kind:
    """One grammar: `pattern` must match the whole value (or each word of it, per `split`)."""

    name: str
    what: str               # "a TF-A platform name": finishes "… is not <what>"
    shown: str              # the pattern as the error and the docs show it
    pattern: str
    example: str            # a value of this kind (the tests check it passes)
    split: str | None = None    # None: the whole value; "spaces": str.split(); "shell": shlex

    def accepts(self, value: str) -> bool:
        if self.split is None:
            words = [value]
        elif self.split == "spaces":
            words = value.split(" ")
            words = [w for w in words if w]        # runs of spaces separate, as str.split does
        else:
            try:
                words = shlex.split(value)        # how tfa.py and buildroot/external.py split
            except ValueError:
                return False
        return all(re.fullmatch(self.pattern, w) for w in words)


KINDS = {k.name: k for k in (
    Kind("board", "a board name", "[a-z0-9][a-z0-9-]*", r"[a-z0-9][a-z0-9-]*", "rk3588"),
    Kind("tfa-platform", "a TF-A platform name", "[a-z0-9_]+", r"[a-z0-9_]+", "rk3588"),
    Kind("identifier", "a lower-case identifier", "[a-z0-9_]+", r"[a-z0-9_]+", "cortex_a76_a55"),
    Kind("version", "a version", "[0-9][A-Za-z0-9.+~-]*", r"[0-9][A-Za-z0-9.+~-]*", "2.12.1"),
    Kind("tty", "a tty device name", "[A-Za-z][A-Za-z0-9_]*, at most 32 characters",
         r"[A-Za-z][A-Za-z0-9_]{0,31}", "ttyAMA0"),
    Kind("size", "a size", "digits with an optional K, M, G or T", r"[0-9]{1,12}[KMGTkmgt]?",
         "32M"),
    Kind("name", "a file or defconfig name", "[A-Za-z0-9_][A-Za-z0-9_.+-]*, no /",
         r"[A-Za-z0-9_][A-Za-z0-9_.+-]*", "rock5b-rk3588"),
    Kind("build-id", "a build id", "[A-Za-z0-9_.+-], at most 64 characters",
         r"[A-Za-z0-9_.+-]{1,64}", "deps-test"),
    Kind("path", "a path", f"{_PATH}", _PATH, "board/rk3588/models.yaml"),
    Kind("cross-prefix", "a cross-compiler prefix", f"{_PATH}", _PATH, "aarch64-linux-gnu-"),
    Kind("debian-package", "a Debian package name", "[a-z0-9][a-z0-9+.-]+",
         r"[a-z0-9][a-z0-9+.-]+", "linux-image-6.1.0-50-cloud-arm64"),
    Kind("package-list", "a list of Buildroot package names",
         "space-separated [a-z0-9][a-z0-9+._-]*", r"[a-z0-9][a-z0-9+._-]*", "htop dropbear",
         split="spaces"),
    Kind("module-list", "a list of kernel module names", "space-separated [A-Za-z0-9_-]+",
         r"[A-Za-z0-9_-]+", "ext4 virtio_blk", split="spaces"),
    Kind("section-list", "a list of ELF section names", "space-separated [A-Za-z0-9_.]+",
         r"[A-Za-z0-9_.]+", ".rodata .data", split="spaces"),
    Kind("make-vars", "a list of make variables",
         f"shell-quoted words NAME=value, NAME [A-Za-z_][A-Za-z0-9_]*, value [{_SAFE_SHOWN} ]*",
         rf"[A-Za-z_][A-Za-z0-9_]*=[{_SAFE} ]*", "ENABLE_ASSERTIONS=1", split="shell"),
    Kind("br2-assignments", "a list of Buildroot assignments",
         f'shell-quoted words BR2_NAME=value, value [{_SAFE_SHOWN}]* or "[{_SAFE_SHOWN} ]*"',
         rf'BR2_[A-Za-z0-9_]+=(?:[{_SAFE}]*|"[{_SAFE} ]*")', "BR2_PACKAGE_HTOP=y",
         split="shell"),
    # The characters only: the URL's form (scheme, host, port) is seedfw.cache.ccache.check_remote's,
    # whose message says what is wrong with it.
    Kind("ccache-remote", "a list of ccache remote storage URLs",
         f"space-separated URL[|attribute=value] of [{_SAFE_SHOWN}[]|]",
         rf"[\[\]|{_SAFE}]+", "redis://127.0.0.1:6390|connect-timeout=50", split="spaces"),
)}


def declared(sym) -> str | None:
    """The kind named by a kconfiglib string symbol's `Grammar:` help line, or None."""
    names = {m.group(1) for node in sym.nodes if node.help
             for m in _GRAMMAR_LINE.finditer(node.help)}
    node = sym.nodes[0]
    if len(names) > 1:
        raise SeedfwError(f"CONFIG_{sym.name} declares more than one grammar: "
                          f"{', '.join(sorted(names))}", ROOT / node.filename,
                          f"line {node.linenr}")
    return names.pop() if names else None


def kinds_of(kconf) -> dict[str, Kind]:
    """Symbol name -> Kind for every string symbol of a parsed tree; a string symbol without a
    known `Grammar:` line is an error naming where it is defined (the tree is broken)."""
    import kconfiglib
    out = {}
    for sym in kconf.unique_defined_syms:
        if sym.orig_type != kconfiglib.STRING:
            continue
        name = declared(sym)
        node = sym.nodes[0]
        if name is None:
            raise SeedfwError(f"string symbol CONFIG_{sym.name} declares no grammar (a "
                              "'Grammar: KIND' line in its help; docs/configuration.md)",
                              ROOT / node.filename, f"line {node.linenr}")
        if name not in KINDS:
            raise SeedfwError(f"CONFIG_{sym.name}: unknown grammar '{name}' (known: "
                              f"{', '.join(sorted(KINDS))})", ROOT / node.filename,
                              f"line {node.linenr}")
        out[sym.name] = KINDS[name]
    return out


def check(symbol: str, value: str, kind: Kind, file, line: int) -> None:
    """SeedfwError naming file:line and the symbol unless `value` is empty or of `kind`."""
    if value == "":
        return                   # empty means "not set / the default" for every string symbol
    if FORBIDDEN.intersection(value) or len(value) > MAX_LENGTH or not kind.accepts(value):
        raise SeedfwError(f"CONFIG_{symbol}: {_shown(value)} is not {kind.what} "
                          f"({kind.shown})", file, f"line {line}")


def check_resolved(kconf, kinds: dict[str, Kind], origins: dict) -> None:
    """Every string symbol's final value; one a fragment set was checked where it was read,
    the rest come from Kconfig defaults and are named by where the symbol is defined."""
    for name, kind in kinds.items():
        sym = kconf.syms[name]
        if not sym.config_string:
            continue             # inactive: written nowhere
        a = origins.get(name)
        if a is not None and a.value == sym.str_value:
            continue
        node = sym.nodes[0]
        check(name, sym.str_value, kind, ROOT / node.filename, node.linenr)


def _shown(value: str) -> str:
    """The value in double quotes, escaped (JSON: no control or non-ASCII byte reaches the
    terminal), at most 100 characters of it."""
    return json.dumps(value if len(value) <= 100 else value[:100] + "...")
