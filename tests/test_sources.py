"""sources.py: pins, the download cache, sites in order, extract + patch series."""

from __future__ import annotations

import hashlib
import io
import lzma
import tarfile
import types

import pytest

from seedfw import sources
from seedfw.errors import SeedfwError
from seedfw.parts import tfa

GOOD = b"pinned content\n" * 100


def pin_of(data: bytes, name="pkg-1.0.tar.xz") -> sources.SourceFile:
    return sources.SourceFile(name, len(data), hashlib.sha256(data).hexdigest())


@pytest.fixture
def dl(tmp_path, monkeypatch):
    """A private download cache (the real one is shared across builds)."""
    d = tmp_path / "dl"
    monkeypatch.setenv("SEEDFW_DL_DIR", str(d))
    return d


def mirror_source(mirror, file):
    return sources.Source(name="pkg", version="1.0", files=(file,),
                          sites=(sources.MirrorDirSite(str(mirror)),), archive=file.name)


def test_fetch_from_local_mirror_verifies_and_caches(tmp_path, dl):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "pkg-1.0.tar.xz").write_bytes(GOOD)
    src = mirror_source(mirror, pin_of(GOOD))
    got = sources.fetch(src, progress=lambda m: None)
    assert got["pkg-1.0.tar.xz"] == dl / "pkg" / "pkg-1.0.tar.xz"
    assert got["pkg-1.0.tar.xz"].read_bytes() == GOOD


def test_pin_mismatch_deletes_the_file_and_names_both_hashes(tmp_path, dl):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    bad = GOOD.replace(b"pinned", b"tainted")
    (mirror / "pkg-1.0.tar.xz").write_bytes(bad)
    file = pin_of(GOOD)
    with pytest.raises(SeedfwError) as info:
        sources.fetch(mirror_source(mirror, file), progress=lambda m: None)
    cached = dl / "pkg" / "pkg-1.0.tar.xz"
    assert info.value.file == str(cached)
    assert info.value.message == (f"sha256 mismatch: expected {file.sha256}, "
                                  f"got {hashlib.sha256(bad).hexdigest()} (file deleted)")
    assert not cached.exists()


def test_corrupted_cache_file_is_detected_and_fetched_again(tmp_path, dl):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "pkg-1.0.tar.xz").write_bytes(GOOD)
    src = mirror_source(mirror, pin_of(GOOD))
    sources.fetch(src, progress=lambda m: None)
    cached = dl / "pkg" / "pkg-1.0.tar.xz"
    # Same size, one byte flipped: only the hash can tell.
    cached.write_bytes(b"X" + GOOD[1:])
    said = []
    sources.fetch(src, progress=said.append)
    assert cached.read_bytes() == GOOD
    assert any("cached copy is corrupted" in m for m in said), said
    assert any("from mirror" in m for m in said), said


def test_corrupted_cache_with_no_site_left_is_reported(tmp_path, dl):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "pkg-1.0.tar.xz").write_bytes(GOOD)
    src = mirror_source(mirror, pin_of(GOOD))
    sources.fetch(src, progress=lambda m: None)
    (mirror / "pkg-1.0.tar.xz").unlink()
    (dl / "pkg" / "pkg-1.0.tar.xz").write_bytes(GOOD[:-1])
    with pytest.raises(SeedfwError) as info:
        sources.fetch(src, progress=lambda m: None)
    assert info.value.message.startswith("could not fetch pkg-1.0.tar.xz from any site (mirror: ")
    assert not (dl / "pkg" / "pkg-1.0.tar.xz").exists()


def test_sites_are_tried_in_order(tmp_path, dl):
    empty, full = tmp_path / "empty", tmp_path / "full"
    empty.mkdir()
    full.mkdir()
    (full / "pkg-1.0.tar.xz").write_bytes(GOOD)
    file = pin_of(GOOD)
    src = sources.Source("pkg", "1.0", (file,),
                         (sources.UrlSite(f"file://{tmp_path}/nowhere/{{name}}"),
                          sources.MirrorDirSite(str(empty)), sources.MirrorDirSite(str(full))),
                         archive=file.name)
    said = []
    sources.fetch(src, progress=said.append)
    failed = [m for m in said if " failed: " in m]
    # a mirror that lacks the file is no failure (issue 34): nothing is said about it here, since
    # the next site is the mirror that has it and it announces no fetch of its own
    assert [m.split(" failed")[0] for m in failed] == ["pkg-1.0.tar.xz: upstream"]
    assert not any("does not exist" in m for m in said), said
    assert said[-1].startswith("pkg-1.0.tar.xz: 1,500 bytes from mirror")


def test_url_site_downloads(tmp_path, dl):
    (tmp_path / "pkg-1.0.tar.xz").write_bytes(GOOD)
    file = pin_of(GOOD)
    src = sources.Source("pkg", "1.0", (file,), (sources.UrlSite(f"file://{tmp_path}/{{name}}"),),
                         archive=file.name)
    assert sources.fetch(src, progress=lambda m: None)[file.name].read_bytes() == GOOD


def test_mirror_dir_from_environment(tmp_path, dl, monkeypatch):
    (tmp_path / "pkg-1.0.tar.xz").write_bytes(GOOD)
    monkeypatch.setenv("SEEDFW_MIRROR_DIR", str(tmp_path))
    file = pin_of(GOOD)
    src = sources.Source("pkg", "1.0", (file,), (sources.MirrorDirSite(),), archive=file.name)
    assert sources.fetch(src, progress=lambda m: None)[file.name].read_bytes() == GOOD


def test_debian_uris_come_from_the_machines_apt_sources(tmp_path):
    deb822 = tmp_path / "debian.sources"
    deb822.write_text("Types: deb\nURIs: http://archive.example/debian\nSuites: bookworm\n\n"
                      "Types: deb\nURIs: http://archive.example/debian-security\n"
                      "Suites: bookworm-security\n")
    assert sources.debian_uris(deb822) == ["http://archive.example/debian"]
    deb822.write_text("Types: deb\nSuites: bookworm\n")
    with pytest.raises(SeedfwError, match="no 'URIs:' line"):
        sources.debian_uris(deb822)


def _tar_xz(members: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return lzma.compress(raw.getvalue())


def _diff(old: str, new: str, path="hello.txt") -> str:
    """The unified diff of a one-line file, written out by hand."""
    return (f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{old}+{new}")


def test_extract_applies_patches_in_order_and_logs_each(tmp_path, dl):
    archive = _tar_xz({"pkg-1.0/hello.txt": b"one\n"})
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "pkg-1.0.tar.xz").write_bytes(archive)
    p1 = tmp_path / "0001-one-to-two.patch"
    p2 = tmp_path / "0002-two-to-three.patch"
    p1.write_text(_diff("one\n", "two\n"))
    p2.write_text(_diff("two\n", "three\n"))
    file = pin_of(archive)
    src = sources.Source("pkg", "1.0", (file,), (sources.MirrorDirSite(str(mirror)),),
                         archive=file.name, patches=(p1, p2))
    log = tmp_path / "pkg.log"
    tree = sources.extract(src, tmp_path / "tree", log=log, progress=lambda m: None)
    assert (tree / "hello.txt").read_text() == "three\n"
    text = log.read_text()
    assert text.index("=== patch 0001-one-to-two.patch") < text.index("=== patch 0002-two-to-three.patch")


def test_a_patch_that_does_not_apply_fails_and_leaves_no_tree(tmp_path, dl):
    archive = _tar_xz({"pkg-1.0/hello.txt": b"one\n"})
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "pkg-1.0.tar.xz").write_bytes(archive)
    bad = tmp_path / "0001-bad.patch"
    bad.write_text(_diff("zero\n", "two\n"))
    file = pin_of(archive)
    src = sources.Source("pkg", "1.0", (file,), (sources.MirrorDirSite(str(mirror)),),
                         archive=file.name, patches=(bad,))
    with pytest.raises(SeedfwError, match="'patch -p1 --forward…' failed"):
        sources.extract(src, tmp_path / "tree", log=tmp_path / "pkg.log", progress=lambda m: None)
    assert not (tmp_path / "tree").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tree.")]


def test_tfa_pins_match_the_debian_source_package():
    src = tfa.source("2.12.1")
    assert {f.name: f.size for f in src.files} == {
        "arm-trusted-firmware_2.12.1+dfsg.orig.tar.xz": 8_078_248,
        "arm-trusted-firmware_2.12.1+dfsg-1.debian.tar.xz": 14_012}
    with pytest.raises(SeedfwError, match="TF-A version '9.9' has no pinned source"):
        tfa.source("9.9")


@pytest.mark.slow
def test_real_fetch_from_the_debian_source_archive(dl):
    """Network: Debian trixie's source package through a private apt state; both pins hold."""
    src = tfa.source("2.12.1")
    src = sources.Source(src.name, src.version, src.files, src.sites[:1], src.archive)
    got = sources.fetch(src, progress=lambda m: None)
    for f in src.files:
        assert got[f.name].stat().st_size == f.size
        assert hashlib.sha256(got[f.name].read_bytes()).hexdigest() == f.sha256
    # The machine's apt configuration was not touched: the private state is under the cache.
    assert (dl / ".apt" / "trixie" / "parts" / "seedfw-src.sources").is_file()


def test_a_fetch_step_says_reused_only_when_nothing_was_downloaded(tmp_path, dl):
    """sources.fetch_step: the first fetch downloads (a plain `ran`), the second finds the
    verified file in the download cache and marks the step reused."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "pkg-1.0.tar.xz").write_bytes(GOOD)
    src = mirror_source(mirror, pin_of(GOOD))
    marks = []
    step = types.SimpleNamespace(log=None, reused=marks.append)
    sources.fetch_step(step, src, progress=lambda m: None)
    assert marks == []                                       # downloaded: not a reuse
    sources.fetch_step(step, src, progress=lambda m: None)
    assert marks == ["the download cache (sha256 verified)"]
