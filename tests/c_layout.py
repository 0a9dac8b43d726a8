"""Ask the C compiler what a header's structs look like, so Python encoders can be checked against
the one definition in firmware/include/seedfw/ (binary layouts are defined once, in C).

    layout = c_layout("seedfw/lz4blk.h", {"lz4blk_header": ["magic", "version"]})
    layout["lz4blk_header"]["sizeof"], layout["lz4blk_header"]["magic"]

Also reads integer macros: c_macros("seedfw/lz4blk.h", ["LZ4BLK_MAGIC"]).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

INCLUDE = Path(__file__).resolve().parents[1] / "firmware" / "include"


def _compile_and_run(source: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        c = Path(tmp) / "probe.c"
        exe = Path(tmp) / "probe"
        c.write_text(source)
        subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", f"-I{INCLUDE}", str(c), "-o", str(exe)],
                       check=True, capture_output=True, text=True)
        return subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout


def c_layout(header: str, structs: dict[str, list[str]]) -> dict[str, dict[str, int]]:
    lines = ["#include <stdio.h>", "#include <stddef.h>", f'#include "{header}"', "int main(void) {"]
    for struct, fields in structs.items():
        lines.append(f'printf("{struct} sizeof %zu\\n", sizeof(struct {struct}));')
        for f in fields:
            lines.append(f'printf("{struct} {f} %zu\\n", offsetof(struct {struct}, {f}));')
    lines += ["return 0; }"]
    out: dict[str, dict[str, int]] = {}
    for line in _compile_and_run("\n".join(lines)).splitlines():
        struct, name, value = line.split()
        out.setdefault(struct, {})[name] = int(value)
    return out


def c_macros(header: str, names: list[str]) -> dict[str, int]:
    lines = ["#include <stdio.h>", f'#include "{header}"', "int main(void) {"]
    lines += [f'printf("{n} %llu\\n", (unsigned long long)({n}));' for n in names]
    lines += ["return 0; }"]
    return {k: int(v) for k, v in (l.split() for l in _compile_and_run("\n".join(lines)).splitlines())}
