"""The build manifest as one type (issue 32): seedfw.manifest.Manifest is the only reader of
manifest.json, it validates against schema/manifest-v1.json, it gives typed artifacts with a
Placement (from the writer's `placement`, or derived from today's `declared`), and rockusb takes
its offsets from that placement, checking the image's bytes agree.

The "one reader" rule is checked from the source: an AST walk of tools/seedfw flags any module but
seedfw/manifest.py that hands a path naming manifest.json to a reader (json.load, read_json,
read_bytes, open, ...), directly or through a variable or a helper function; a planted module is
the negative control.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

import seedfw
from seedfw import boards
from seedfw.errors import SeedfwError
from seedfw.flash.rockusb import RockusbRunner
from seedfw.manifest import Manifest, Placement

PKG = Path(seedfw.__file__).parent
REAL = Path("/work/main/output/rk3588/manifest.json")     # the lead's rk3588 build, if present
SHA = "ab" * 32


def write(out: Path, doc) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "manifest.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def error_of(out: Path) -> str:
    with pytest.raises(SeedfwError) as err:
        Manifest.load(out)
    return err.value.line()


# -- reading and the schema -------------------------------------------------------------------------
def test_todays_manifest_gives_typed_artifacts_with_derived_placements(tmp_path):
    """The writer of today (no roles/placement): roles from declared.role, the partition and the
    QEMU address from the declaration, nothing guessed from the free-text location."""
    write(tmp_path, {"board": "b", "build_id": "0123", "config_hash": "c" * 64, "artifacts": [
        {"name": "Image", "path": "images/Image", "size": 3, "sha256": SHA, "role": "boot",
         "declared": {"role": "kernel", "read_by": "U-Boot", "location": "boot partition",
                      "flash": [], "at_boot": True, "partition": "boot",
                      "qemu": {"load": "loader", "modes": ["os"], "addr": 0x40080000}}},
        {"name": "x.elf", "path": "images/x.elf", "size": 1, "sha256": SHA, "role": "debug"}],
        "flash": {"sdcard": ["images/Image"]}, "non_functional": {"x.elf": "placeholder"}})
    m = Manifest.load(tmp_path)
    assert (m.board, m.build_id, m.config_hash) == ("b", "0123", "c" * 64)
    kernel, elf = m.artifacts
    assert kernel.roles == ("kernel",) and kernel.use == "boot" and kernel.size == 3
    assert kernel.placement == Placement(partition="boot", load_addr=0x40080000)
    assert kernel.qemu.load == "loader" and kernel.qemu.modes == ("os",)
    assert elf.roles == () and elf.placement == Placement()
    assert m.by_role("kernel") == [kernel] and m.qemu_loads("os") == [kernel]
    assert m.qemu_loads("firmware") == [] and m.boot_chain() == [kernel]
    assert m.flash_default("sdcard") == [tmp_path / "images/Image"]
    assert m.non_functional == {"x.elf": "placeholder"}


def test_the_writers_roles_and_placement_are_taken_as_written(tmp_path):
    write(tmp_path, {"artifacts": [
        {"name": "idbloader.img", "path": "images/idbloader.img", "roles": ["idbloader", "spl"],
         "placement": {"storage": "mmc", "offset": 32768, "partition": None, "load_addr": None,
                       "path": None},
         "declared": {"role": "ignored-when-roles-given", "partition": "not-this"}}]})
    a = Manifest.load(tmp_path).artifacts[0]
    assert a.roles == ("idbloader", "spl") and a.role == "idbloader"
    assert a.placement == Placement("mmc", 32768, None, None, None)


@pytest.mark.skipif(not REAL.is_file(), reason="no rk3588 build output here")
def test_a_real_rk3588_manifest_validates(tmp_path):
    shutil.copy(REAL, tmp_path / "manifest.json")
    m = Manifest.load(tmp_path)
    assert m.board == "rk3588" and m.by_role("loader") and m.by_role("disk")
    assert {a.placement.partition for a in m.by_role("firmware-fit")} == {"firmware"}


@pytest.mark.parametrize("doc, field, message", [
    ("[1, 2]", None, "must be a JSON object (the build manifest)"),
    ({"artifacts": {"a": 1}}, "artifacts", "must be a list of objects"),
    ({"artifacts": [{"name": "x"}]}, "artifacts[0]", "must be an artifact object (name, path, "
                                                     "size, sha256, role)"),
    ({"artifacts": [{"path": "/etc/passwd"}]}, "artifacts[0].path",
     "must be a path relative to the output directory, without '..'"),
    ({"artifacts": [{"path": "images/../../x"}]}, "artifacts[0].path",
     "must be a path relative to the output directory, without '..'"),
    ({"artifacts": [{"path": "a", "size": -1}]}, "artifacts[0].size",
     "must be a non-negative whole number"),
    ({"artifacts": [{"path": "a", "sha256": "xyz"}]}, "artifacts[0].sha256",
     "must be 64 lower-case hex digits"),
    ({"artifacts": [{"path": "a", "placement": {"offset": "64"}}]}, "artifacts[0].placement",
     "must be a placement {storage, offset, partition, load_addr, path} (each a value or null)"),
    ({"artifacts": [{"path": "a", "declared": {"qemu": {"load": "floppy", "modes": []}}}]},
     "artifacts[0].declared.qemu", "not a QEMU load declaration (load one of bios, kernel, "
     "initrd, loader, drive, dtb-overlay, a relative path)"),
    ({"flash": {"rockusb": "images/x"}}, "flash", "must be an object {backend: [paths]}"),
    ({"non_functional": {"a": 1}}, "non_functional", "must be an object {file name: why}"),
    ({"elfs": 0}, "elfs", "must be a list or an object of entries"),
    ({"sbom": {"path": "sbom/sbom.cdx.json"}}, "sbom", "must be a list of SBOM documents"),
    ({"sbom": [{"path": "sbom/sbom.cdx.json", "size": 1}]}, "sbom[0]",
     "must be an SBOM document object (format, name, path, sha256, size)"),
    ({"sbom": [{"path": "../sbom.cdx.json", "size": 1, "sha256": SHA}]}, "sbom[0].path",
     "must be a path relative to the output directory, without '..'"),
    ({"board": 7}, "board", "must be a board name (a string)"),
    ('{"size": NaN}', "size", "NaN is not a finite number: refused"),
])
def test_a_malformed_manifest_is_one_line_naming_the_field(tmp_path, doc, field, message):
    path = write(tmp_path, doc)
    assert error_of(tmp_path) == f"{path}: {field}: {message}" if field else \
        f"{path}: {message}"


def test_hostile_files_are_refused_by_the_door(tmp_path):
    path = write(tmp_path, "[" * 100_000 + "]" * 100_000)
    assert error_of(tmp_path) == f"{path}: JSON nested deeper than 64 levels: refused"
    path.write_text('{"board": "b",\n  "x": }')
    assert error_of(tmp_path) == f"{path}:2: not valid JSON: Expecting value"
    path.unlink()
    path.mkdir()
    assert error_of(tmp_path) == f"{path}: is a directory, not a file"
    assert error_of(tmp_path / "nowhere") == \
        f"{tmp_path / 'nowhere' / 'manifest.json'}: not built yet (run the build first)"
    assert Manifest.find(tmp_path / "nowhere") is None


def test_a_manifest_of_many_entries_is_refused_before_the_schema_walks_it(tmp_path):
    import time
    path = write(tmp_path, {"artifacts": [{"path": "a"}] * 100_000})
    started = time.monotonic()
    assert error_of(tmp_path) == f"{path}: artifacts: 100000 entries is over the limit of 4096"
    path = write(tmp_path, {"artifacts": [{"path": "a", "roles": ["x"] * 100_000}]})
    assert error_of(tmp_path) == f"{path}: artifacts[0].roles: must be a list of role names " \
        "(at most 64)"
    assert time.monotonic() - started < 20


def test_each_version_of_the_file_is_parsed_once(tmp_path, monkeypatch):
    from seedfw import manifest as manifest_mod
    write(tmp_path, {"board": "a"})
    calls = []
    real = manifest_mod.validate
    monkeypatch.setattr(manifest_mod, "validate", lambda d, p: calls.append(p) or real(d, p))
    manifest_mod._parse.cache_clear()
    assert [Manifest.load(tmp_path).board for _ in range(3)] == ["a"] * 3
    assert len(calls) == 1
    write(tmp_path, {"board": "bb"})              # a rebuild: a new version is read again
    assert Manifest.load(tmp_path).board == "bb" and len(calls) == 2


QEMU_DECL = ("not a QEMU load declaration (load one of bios, kernel, initrd, loader, drive, "
             "dtb-overlay, a relative path)")


@pytest.mark.parametrize("command, doc, tail", [
    ("run", {"artifacts": [{"path": "images/x", "declared": {"qemu": "bios"}}]},
     f"artifacts[0].declared.qemu: {QEMU_DECL}"),
    ("run", {"artifacts": [{"path": "../../etc/passwd", "declared": {
        "qemu": {"load": "bios", "modes": ["firmware"]}}}]},
     "artifacts[0].path: must be a path relative to the output directory, without '..'"),
    ("flash", {"flash": {"qemu": "images/x"}}, "flash: must be an object {backend: [paths]}"),
], ids=["qemu-declaration", "path-dotdot", "flash-not-a-list"])
def test_a_hostile_manifest_through_the_cli_is_one_line(tmp_path, command, doc, tail):
    """`invoke run`/`flash` on an output whose manifest is hostile: exit 1, one line, no
    traceback, within 20 s and 512 MiB under RLIMIT_AS (tests/hostile.py)."""
    from hostile import check_case
    path = write(tmp_path, doc)
    check_case([command, "--board", "qemu-aarch64", "--output", tmp_path], 1,
               f"error: {path}: {tail}")


# -- rockusb: offsets from the placement -------------------------------------------------------------
def _rockusb_case(tmp_path, head: bytes, placement: dict | None):
    out = tmp_path / "out"
    (out / "images").mkdir(parents=True)
    image = out / "images" / "img.bin"
    image.write_bytes(head.ljust(4096, b"\0"))
    entry = {"name": "img.bin", "path": "images/img.bin"}
    if placement is not None:
        entry["placement"] = placement
    write(out, {"board": "rk3588", "artifacts": [entry]})
    loader = tmp_path / "loader.bin"
    loader.write_bytes(b"LDR ")
    return RockusbRunner(boards.get("rk3588"), loader=loader), image, out / "manifest.json"


GPT_HEAD = bytes(512) + b"EFI PART"


def test_rockusb_writes_where_the_placement_says(tmp_path):
    runner, image, _ = _rockusb_case(tmp_path, b"\xd0\x0d\xfe\xed",
                                     {"storage": "mmc", "offset": 20 << 20})
    assert runner.commands(image)[1] == ["rkdeveloptool", "wl", str((20 << 20) // 512), str(image)]


def test_rockusb_refuses_a_placement_the_bytes_contradict(tmp_path):
    runner, image, manifest = _rockusb_case(tmp_path, GPT_HEAD, {"storage": "mmc", "offset": 32768})
    with pytest.raises(SeedfwError) as err:
        runner.commands(image)
    assert err.value.line() == (f"{manifest}: artifacts[0].placement.offset: the build places "
                                "img.bin at byte 32768 (sector 64), but it is a GPT disk image, "
                                "which belongs at sector 0")
    runner, image, manifest = _rockusb_case(tmp_path / "b", b"RKNS", {"offset": 1000})
    with pytest.raises(SeedfwError) as err:
        runner.commands(image)
    assert err.value.line() == (f"{manifest}: artifacts[0].placement.offset: offset 1000 is not "
                                "a whole 512-byte sector")


def test_rockusb_without_a_placement_keeps_the_magic_byte_default(tmp_path):
    runner, image, _ = _rockusb_case(tmp_path, b"RKNS", None)
    assert runner.commands(image)[1][2] == "64"
    runner.sector = 7                                       # --sector wins over everything
    assert runner.commands(image)[1][2] == "7"


# -- one reader --------------------------------------------------------------------------------------
READERS = {"load", "loads", "read_json", "read_bytes", "read_text", "read_input", "loads_json",
           "loads_json_strict", "load_json", "read_json_input", "open", "head", "digest_file"}
# Modules that read manifest.json's bytes without interpreting them, and why.
NOT_PARSING = {"seedfw.report.stage": "hashes the bytes into the report's stamp; never parses"}


# Calls whose result is still the path they were given (taint passes through these only: a
# manifest path passed as an error line's `source` to some other call does not taint its result).
PATH_BUILDERS = {"Path", "PurePath", "join", "joinpath", "with_name", "resolve", "realpath",
                 "abspath", "str", "fspath", "absolute", "expanduser"}


def _callee(call: ast.Call) -> str | None:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)


def _mentions(node, tainted: set[str], helpers: set[str]) -> bool:
    """Whether expression `node` is (or builds) a path naming manifest.json."""
    if node is None:
        return False
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.endswith("manifest.json") and \
            not node.value.endswith("-manifest.json")
    if isinstance(node, ast.Name):
        return node.id in tainted
    if isinstance(node, ast.JoinedStr):
        return any(_mentions(v, tainted, helpers) for v in node.values)
    if isinstance(node, ast.BinOp):
        return _mentions(node.left, tainted, helpers) or _mentions(node.right, tainted, helpers)
    if isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        return _mentions(node.value, tainted, helpers)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_mentions(e, tainted, helpers) for e in node.elts)
    if isinstance(node, ast.IfExp):
        return _mentions(node.body, tainted, helpers) or _mentions(node.orelse, tainted, helpers)
    if isinstance(node, ast.Call):
        name = _callee(node)
        if name in helpers:
            return True
        if name in PATH_BUILDERS:
            inner = node.func.value if isinstance(node.func, ast.Attribute) else None
            return _mentions(inner, tainted, helpers) or \
                any(_mentions(a, tainted, helpers) for a in node.args)
    return False


_WALKED: dict[int, tuple] = {}


def _nodes(node) -> list:
    """ast.walk(node) as a list, once per node: the fixed points below walk the same functions
    dozens of times (the check took 50 s of the fast suite before)."""
    got = _WALKED.get(id(node))
    if got is None or got[0] is not node:
        got = _WALKED[id(node)] = (node, list(ast.walk(node)))
    return got[1]


def _helpers(trees) -> set[str]:
    """Functions (any module) that return a path naming manifest.json, to a fixed point."""
    found: set[str] = set()
    while True:
        before = len(found)
        for tree in trees:
            for fn in _nodes(tree):
                if isinstance(fn, ast.FunctionDef) and fn.name not in found:
                    local = _tainted([fn], set(), found)
                    if any(isinstance(r, ast.Return) and _mentions(r.value, local, found)
                           for r in _nodes(fn)):
                        found.add(fn.name)
        if len(found) == before:
            return found


def _wrappers(trees) -> set[str]:
    """READERS plus every function (any module) that hands one of its parameters to a reader
    (`def _read_manifest(p): return util.read_json(p)`), to a fixed point."""
    found = set(READERS)
    fns = [fn for tree in trees for fn in _nodes(tree) if isinstance(fn, ast.FunctionDef)]
    while True:
        before = len(found)
        for fn in fns:
            if fn.name in found:
                continue
            params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
            params.discard("self")
            for node in _nodes(fn):
                if isinstance(node, ast.Call):
                    f = node.func
                    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                    recv = f.value if isinstance(f, ast.Attribute) and \
                        name in {"read_text", "read_bytes", "open"} else None
                    if name in found and any(isinstance(a, ast.Name) and a.id in params
                                             for a in [*node.args, recv]):
                        found.add(fn.name)
                        break
        if len(found) == before:
            return found


def _tainted(scope: list, start: set[str], helpers: set[str]) -> set[str]:
    """Names bound (assignment, for loop) in `scope` to something that names manifest.json."""
    tainted = set(start)
    for _ in range(3):              # names bound from names bound from the literal
        for node in (n for stmt in scope for n in _nodes(stmt)):
            if isinstance(node, ast.Assign) and _mentions(node.value, tainted, helpers):
                tainted |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            elif isinstance(node, ast.For) and isinstance(node.target, ast.Name) and \
                    _mentions(node.iter, tainted, helpers):
                tainted.add(node.target.id)
    return tainted


def manifest_readers(root: Path) -> dict[str, list[int]]:
    """{module: lines} where a reader call gets a path that names manifest.json."""
    mods = {".".join(p.relative_to(root.parent).with_suffix("").parts): p
            for p in root.rglob("*.py")}
    trees = {m: ast.parse(p.read_text(), str(p)) for m, p in mods.items()}
    helpers = _helpers(trees.values()) - {"load", "find", "beside", "load_file"}
    readers = _wrappers(trees.values())
    out: dict[str, set[int]] = {}
    for mod, tree in trees.items():
        if mod.endswith(".manifest") and mod.count(".") == 1:
            continue
        top = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        module_names = _tainted(top, set(), helpers)
        scopes = [top] + [[fn] for fn in _nodes(tree) if isinstance(fn, ast.FunctionDef)]
        for scope in scopes:         # a name is tainted in its function (plus module constants)
            tainted = _tainted(scope, module_names, helpers)
            for node in (n for stmt in scope for n in _nodes(stmt)):
                if not isinstance(node, ast.Call):
                    continue
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                via_self = isinstance(f, ast.Attribute) and name in {"read_text", "read_bytes"} \
                    and _mentions(f.value, tainted, helpers)
                args = [*node.args, *(k.value for k in node.keywords)]
                ours = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                    f.value.id in {"Manifest", "cls"}       # the one reader's own API
                if name in readers and not ours and (via_self or any(
                        _mentions(a, tainted, helpers) for a in args)):
                    out.setdefault(mod, set()).add(node.lineno)
    return {m: sorted(lines) for m, lines in out.items()}


def test_only_seedfw_manifest_reads_manifest_json():
    found = {m: lines for m, lines in manifest_readers(PKG).items() if m not in NOT_PARSING}
    assert found == {}, f"modules that read manifest.json themselves (use seedfw.manifest): {found}"


def test_the_one_reader_check_catches_a_planted_reader(tmp_path):
    """Negative control: a module that parses the manifest itself — directly, through a variable,
    through a helper returning the path and through a wrapper taking it — is caught, line by line;
    a call of Manifest and a manifest path used only in an error line are not."""
    root = tmp_path / "seedfw"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "planted.py").write_text(
        "import json\nfrom pathlib import Path\nfrom . import util\n\n"
        "def direct(out):\n    return json.loads((out / 'manifest.json').read_text())\n\n"
        "def via_name(out):\n    m = out / 'manifest.json'\n    return util.read_json(m)\n\n"
        "def where(out):\n    return Path(out) / 'manifest.json'\n\n"
        "def via_helper(out):\n    with open(where(out)) as f:\n        return json.load(f)\n\n"
        "def _parse(p):\n    return json.loads(p.read_text())\n\n"
        "def via_wrapper(out):\n    return _parse(out / 'manifest.json')\n\n"
        "def fine(out):\n    m = Manifest.load(out)\n"
        "    e = SeedfwError('bad', out / 'manifest.json')\n"
        "    return util.read_json(out / 'config.json'), m, e\n")
    assert manifest_readers(root) == {"seedfw.planted": [6, 10, 16, 23]}
