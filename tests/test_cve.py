"""`invoke cve` against the fixture database (tests/fixtures/cve/nvd: real CVE records in NVD's
2.0 per-CVE layout): every seeded true positive found, no false positive from a version range,
the triage applied, the VEX valid; the CVE 5 form (tests/fixtures/cve/cve5: cvelistV5's layout)
read too; board triage files checked like every board file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import sbom_output
from hostile import invoke_bounded
from seedfw.errors import SeedfwError

DB = Path(__file__).parent / "fixtures" / "cve" / "nvd"
CVE5 = Path(__file__).parent / "fixtures" / "cve" / "cve5"

# (CVE, component, expected): "match" = the image's version is in a published affected range.
EXPECTED = [
    ("CVE-2023-4911", "glibc", "match"),            # 2.34 <= 2.36 < 2.39
    ("CVE-2024-58251", "busybox", "match"),         # through 1.37.0
    ("CVE-2025-46394", "busybox", "match"),         # through 1.37.0 (Buildroot patches it)
    ("CVE-2023-42366", "busybox", "no match"),      # 1.36.1 only
    ("CVE-2022-48174", "busybox", "no match"),      # before 1.35.0
    ("CVE-2024-57254", "u-boot", "no match"),       # before 2025.01-rc1
    ("CVE-2024-57256", "u-boot", "no match"),
    ("CVE-2024-57259", "u-boot", "no match"),
    ("CVE-2022-47630", "trusted-firmware-a", "no match"),   # through 2.8 (2.12.1 > 2.8)
    ("CVE-2023-49100", "trusted-firmware-a", "no match"),   # before 2.10
    ("CVE-2024-1086", "linux", "no match"),         # fixed in every stable branch before 6.8
]

TRIAGE = """\
triage:
  - cve: CVE-2023-4911
    component: glibc
    status: affected
    detail: setuid busybox against Debian's 2.36-8
    who: test
    when: 2026-12-02
  - cve: CVE-2024-58251
    status: not_affected
    justification: code_not_reachable
    who: test
    when: "2026-12-02"
"""


@pytest.fixture(scope="module")
def out():
    return sbom_output.copy()


def check(out, tmp_path, triage: str | None, db: Path = DB):
    from seedfw.sbom import cve
    path = tmp_path / "vex.yaml"
    if triage is not None:
        path.write_text(triage)
    else:
        path.write_text("triage: []\n")
    return cve.match(sbom_output.context(out), db, say=lambda m: None, triage_file=path)


def test_every_seeded_true_positive_found_and_no_false_positive(out, tmp_path, capsys):
    doc = check(out, tmp_path, TRIAGE)
    found = {(m["cve"], m["component"]): "match" for m in doc["matches"]}
    found.update({(m["cve"], m["component"]): "no match" for m in doc["not_matched"]})
    with capsys.disabled():
        print(f"\n  {'CVE':<16} {'component':<20} {'expected':<9} {'found':<9} status")
        for cve_id, comp, want in EXPECTED:
            status = next((m["decision"]["status"] for m in doc["matches"]
                           if m["cve"] == cve_id), "")
            print(f"  {cve_id:<16} {comp:<20} {want:<9} {found.get((cve_id, comp), '-'):<9} "
                  f"{status}")
    assert found == {(c, comp): want for c, comp, want in EXPECTED}
    assert doc["counts"] == {"affected": 1, "fixed": 1, "not_affected": 1,
                             "under_investigation": 0, "untriaged": 0}
    by_cve = {m["cve"]: m for m in doc["matches"]}
    assert by_cve["CVE-2025-46394"]["decision"]["triage"] == "Buildroot ignore_cves"
    assert by_cve["CVE-2024-58251"]["decision"]["triage"].endswith("vex.yaml:8")
    assert by_cve["CVE-2023-4911"]["record"] == "CVE-2023/CVE-2023-49xx/CVE-2023-4911.json"
    # the database by its place in the checkout: an output names no absolute path
    assert doc["database"] == "tests/fixtures/cve/nvd"
    outside = tmp_path / "nvd-copy"
    shutil.copytree(DB, outside)
    assert check(out, tmp_path, TRIAGE, outside)["database"] == "nvd-copy"


def test_the_matchers_verdicts_agree_with_univers(out, tmp_path):
    """The ranges are the matcher's (sbom-cve-check); univers, the other kept library, must
    give every fixture record the same in/out answer for the version this image carries
    (vers:generic ranges built from the records' cpeMatch bounds)."""
    from univers.version_range import VersionRange
    doc = check(out, tmp_path, TRIAGE)
    bounds = (("versionStartIncluding", ">="), ("versionStartExcluding", ">"),
              ("versionEndIncluding", "<="), ("versionEndExcluding", "<"))
    matched = {(m["cve"], m["component"]) for m in doc["matches"]}
    for m in doc["matches"] + doc["not_matched"]:
        record = json.loads((DB / m["record"]).read_text())
        product = m["product"].split(":")[1]
        inside = False
        for node in record["configurations"][0]["nodes"]:
            for cm in node["cpeMatch"]:
                fields = cm["criteria"].split(":")
                if fields[4] != product:
                    continue
                cons = [f"{op}{cm[key]}" for key, op in bounds if key in cm]
                if fields[5] not in ("*", "-"):
                    cons = [f"={fields[5]}"]
                rng = VersionRange.from_string("vers:generic/" + "|".join(cons))
                inside |= rng.version_class(m["version"]) in rng
        assert inside == ((m["cve"], m["component"]) in matched), (m["cve"], m["version"])


def test_the_vex_is_valid_cyclonedx_and_names_the_sboms_components(out, tmp_path):
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator
    check(out, tmp_path, TRIAGE)
    text = (out / "sbom" / "vex.cdx.json").read_text()
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    vex, sbom = json.loads(text), json.loads((out / "sbom" / "sbom.cdx.json").read_text())
    link = sbom["serialNumber"].replace("urn:uuid:", "urn:cdx:") + "/1#"
    states = {v["id"]: (v["analysis"]["state"], v["affects"][0]["ref"])
              for v in vex["vulnerabilities"]}
    assert states == {"CVE-2023-4911": ("exploitable", link + "buildroot:toolchain-runtime"),
                      "CVE-2024-58251": ("not_affected", link + "buildroot:busybox"),
                      "CVE-2025-46394": ("resolved", link + "buildroot:busybox")}
    just = {v["id"]: v["analysis"].get("justification") for v in vex["vulnerabilities"]}
    assert just["CVE-2024-58251"] == "code_not_reachable"


def test_cve5_records_one_in_range_one_not_give_the_exact_vex(out, tmp_path):
    """The CVE JSON 5.x form (cvelistV5's layout, `--db` detects it): BusyBox through 1.37.0 is
    a match for the image's 1.37.0, U-Boot before 2025.01-rc1 is none for its 2025.01."""
    from seedfw.sbom import cve
    assert cve.layout(CVE5) == "cve-db-cvelist"
    assert cve.layout(DB) == "cve-db-nvd-fkie"              # negative control: the other form
    doc = check(out, tmp_path, "triage:\n  - cve: CVE-2024-58251\n    status: not_affected\n"
                               "    justification: code_not_reachable\n    who: test\n"
                               "    when: 2026-12-03\n", db=CVE5)
    assert [(m["cve"], m["component"], m["version"], m["record"], m["decision"]["status"])
            for m in doc["matches"]] == [("CVE-2024-58251", "busybox", "1.37.0",
                                          "cves/2024/58xxx/CVE-2024-58251.json", "not_affected")]
    assert [(m["cve"], m["component"], m["version"]) for m in doc["not_matched"]] == \
        [("CVE-2024-57254", "u-boot", "2025.01")]
    assert doc["counts"] == {"affected": 0, "fixed": 0, "not_affected": 1,
                             "under_investigation": 0, "untriaged": 0}
    assert doc["stale_triage"] == []
    vex = json.loads((out / "sbom" / "vex.cdx.json").read_bytes())
    sbom = json.loads((out / "sbom" / "sbom.cdx.json").read_bytes())
    link = sbom["serialNumber"].replace("urn:uuid:", "urn:cdx:") + "/1#"
    assert [(v["id"], v["analysis"]["state"], v["analysis"].get("justification"),
             [a["ref"] for a in v["affects"]]) for v in vex["vulnerabilities"]] == \
        [("CVE-2024-58251", "not_affected", "code_not_reachable", [link + "buildroot:busybox"])]


def test_a_match_without_triage_is_called_out(out, tmp_path):
    from seedfw.report import build_report
    doc = check(out, tmp_path, None)
    assert doc["counts"]["untriaged"] == 2 and doc["counts"]["fixed"] == 1
    notes = build_report(out, board="rk3588")["notes"]
    assert "vulnerabilities: UNTRIAGED CVE-2024-58251 in busybox 1.37.0 (CVE-2024/CVE-2024-582xx/" \
           "CVE-2024-58251.json): no triage in the board's vex.yaml" in notes
    section = build_report(out, board="rk3588")["vulnerabilities"]
    assert {m["status"] for m in section["matches"]} == {"untriaged", "fixed"}


def test_the_boards_own_triage_file_is_valid():
    from seedfw import boards
    from seedfw.sbom import vex
    for name in boards.names():
        path = vex.path_for(boards.get(name))
        if path.exists():
            assert vex.load(path), path


@pytest.mark.parametrize("text, line", [
    ("triage:\n  - cve: CVE-2024-1\n    status: fixed\n    who: a\n    when: 2026-12-02\n",
     "vex.yaml:2: field 'triage[0].cve': 'CVE-2024-1' does not match '^CVE-[0-9]{4}-[0-9]{4,}$'"),
    ("triage:\n  - cve: CVE-2024-58251\n    status: wontfix\n    who: a\n    when: 2026-12-02\n",
     "vex.yaml:3: field 'triage[0].status': 'wontfix' is not one of not_affected, affected, "
     "fixed, under_investigation"),
    ("triage:\n  - cve: CVE-2024-58251\n    status: not_affected\n    who: a\n"
     "    when: 2026-12-02\n",
     "vex.yaml:2: missing required field 'triage[0].justification'"),
    ("triage:\n  - cve: CVE-2024-58251\n    status: fixed\n    who: a\n    when: yesterday\n",
     "vex.yaml:5: field 'triage[0].when': 'yesterday' does not match "
     "'^[0-9]{4}-[0-9]{2}-[0-9]{2}$'"),
    ("triage:\n  - cve: CVE-2024-58251\n    status: fixed\n    who: a\n    when: 2026-12-02\n"
     "    severity: low\n", "vex.yaml:6: unknown field 'triage[0].severity'"),
    ("triage:\n  - {cve: CVE-2024-58251, status: fixed, who: a, when: 2026-12-02}\n"
     "  - {cve: CVE-2024-58251, status: affected, who: b, when: 2026-12-03}\n",
     "vex.yaml:3: CVE-2024-58251 is triaged twice (first at line 2)"),
    ("- cve: CVE-2024-58251\n", "vex.yaml:1: expected a mapping with a 'triage' list"),
])
def test_a_broken_triage_file_is_one_line_naming_file_line_and_field(tmp_path, monkeypatch,
                                                                     text, line):
    from seedfw.sbom import vex
    monkeypatch.chdir(tmp_path)
    (tmp_path / "vex.yaml").write_text(text)
    with pytest.raises(SeedfwError) as err:
        vex.load(tmp_path / "vex.yaml")
    assert err.value.line() == line


def test_invoke_cve_refuses_a_broken_triage_file_in_one_line(out, tmp_path):
    bad = tmp_path / "vex.yaml"
    bad.write_text("triage:\n  - cve: CVE-2024-58251\n    status: wontfix\n    who: a\n"
                   "    when: 2026-12-02\n")
    run = invoke_bounded("cve", "--board", "rk3588", "--output", out, "--db", DB, "--vex", bad)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        f"error: {bad}:3: field 'triage[0].status': 'wontfix' is not one of not_affected, "
        "affected, fixed, under_investigation"]


def test_invoke_cve_writes_the_vex_and_the_report_lists_it(out, tmp_path):
    vexfile = tmp_path / "vex.yaml"
    vexfile.write_text(TRIAGE)
    run = invoke_bounded("cve", "--board", "rk3588", "--output", out, "--db", DB,
                         "--vex", vexfile)
    assert run.returncode == 0, run.stderr
    n = len(json.loads((out / "sbom" / "sbom.cdx.json").read_text())["components"])
    assert run.stdout.splitlines() == [
        f"3 match(es) in 11 CVE record(s) checked against {n} components: 1 not_affected, "
        f"1 affected, 1 fixed; VEX {out / 'sbom' / 'vex.cdx.json'} (fixture database: 11 real "
        "records, not a full feed)"]
    from seedfw.report import build_report
    listed = [f["path"] for f in build_report(out, board="rk3588")["vulnerabilities"]["files"]]
    assert listed == ["sbom/sbom.cdx.json", "sbom/sbom.spdx.json", "sbom/vex.cdx.json"]


@pytest.mark.parametrize("case, line", [
    ("empty", "error: {db}: --db: not a vulnerability database: expected NVD 2.0 records as "
              "CVE-<year>/CVE-<year>-<NN>xx/CVE-*.json or CVE 5 records as "
              "cves/<year>/<N>xxx/CVE-*.json"),
    ("missing", "error: {db}: --db: no vulnerability database directory"),
    # The matcher parses the records itself: its refusal, in one line, bounded.
    ("deep", "error: {db}: --db: sbom-cve-check failed: ERROR - sbom_cve_check.cli - "
             "cmd-line-add-db-0 database init failed. maximum recursion depth exceeded while "
             "decoding a JSON array from a unicode string"),
])
def test_a_hostile_or_wrong_database_is_one_line(out, tmp_path, case, line):
    db = tmp_path / "db"
    if case == "empty":
        db.mkdir()
        (db / "README").write_text("not a feed\n")
    elif case == "deep":
        shutil.copytree(DB, db)
        rec = db / "CVE-2024" / "CVE-2024-582xx" / "CVE-2024-58251.json"
        rec.write_text("[" * 200_000 + "]" * 200_000)       # nesting no parser should follow
    run = invoke_bounded("cve", "--board", "rk3588", "--output", out, "--db", db)
    assert run.returncode == 1, run.stdout
    assert run.stderr.strip().splitlines() == [line.format(db=db)]
    assert run.seconds < 60 and run.max_rss_mib < 1024


def test_the_vex_names_each_records_own_source(out, tmp_path):
    """NVD 2.0 records are NVD's, CVE 5 records the CVE Program's (cvelistV5): each VEX entry
    names the publisher of the record it came from, read back per entry from both databases."""
    got = {}
    for db in (DB, CVE5):
        check(out, tmp_path, TRIAGE, db=db)
        vex = json.loads((out / "sbom" / "vex.cdx.json").read_bytes())
        got[db.name] = [(v["id"], v["source"]["name"], v["source"]["url"])
                        for v in vex["vulnerabilities"]]
    assert got == {
        "nvd": [(c, "NVD", f"https://nvd.nist.gov/vuln/detail/{c}")
                for c in ("CVE-2023-4911", "CVE-2024-58251", "CVE-2025-46394")],
        "cve5": [("CVE-2024-58251", "CVE Program (cvelistV5)",
                  "https://www.cve.org/CVERecord?id=CVE-2024-58251")]}


def test_a_fixture_database_is_labelled_in_the_vex_the_result_and_the_report(out, tmp_path):
    """invoke ci matches against the checkout's fixture database when it has no other: the VEX
    metadata, cve.json and the report say "fixture database: N real records, not a full feed",
    N counted here; a copy outside the fixtures (negative control) is not labelled."""
    from seedfw.report import build_report
    n = len(list(DB.rglob("CVE-*.json")))
    label = f"fixture database: {n} real records, not a full feed"
    doc = check(out, tmp_path, TRIAGE)
    assert n == 11 and doc["database_note"] == label
    props = {p["name"]: p["value"] for p in json.loads(
        (out / "sbom" / "vex.cdx.json").read_bytes())["metadata"]["properties"]}
    assert props == {"seedfw:database": "tests/fixtures/cve/nvd", "seedfw:database-note": label}
    md = (build_report(out, board="rk3588")["vulnerabilities"]["database"])
    assert md == f"tests/fixtures/cve/nvd ({label})"
    outside = tmp_path / "feed"
    shutil.copytree(DB, outside)
    doc = check(out, tmp_path, TRIAGE, outside)
    assert "database_note" not in doc
    meta = json.loads((out / "sbom" / "vex.cdx.json").read_bytes())["metadata"]
    assert [p["name"] for p in meta["properties"]] == ["seedfw:database"]


def test_ci_writes_the_vex_against_the_fixture_database_without_one_given(out, monkeypatch):
    """invoke ci's CVE step with no --cve-db and no SEEDFW_CVE_DB: the fixture database, the
    VEX written, the line labelled and timed."""
    import io
    import invoke
    from rich.console import Console
    from seedfw.cli import ci
    monkeypatch.delenv("SEEDFW_CVE_DB", raising=False)
    (out / "sbom" / "vex.cdx.json").unlink(missing_ok=True)
    buf = io.StringIO()
    ci._cve(invoke.Context(), "rk3588", out, None, Console(file=buf, width=200))
    line = buf.getvalue().strip().splitlines()[-1]
    assert line.startswith("cve: VEX written in ") and line.endswith(
        " s (measured on this host) against tests/fixtures/cve/nvd: fixture database: 11 real "
        "records, not a full feed"), line
    vex = json.loads((out / "sbom" / "vex.cdx.json").read_bytes())
    assert [v["id"] for v in vex["vulnerabilities"]] == ["CVE-2023-4911", "CVE-2024-58251",
                                                         "CVE-2025-46394"]


def _git(*args, cwd=None):
    import subprocess
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@localhost", "HOME": "/nonexistent", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout


def test_a_git_mirror_is_used_in_place_and_left_as_it_was(out, tmp_path):
    """A clone of a feed's git mirror (here a bare repository the test makes from the fixture
    records, cloned like a full mirror would be) is matched in place: no copy under
    <out>/build/cve/db, the matcher's index outside it, the clone's tree and HEAD unchanged, the
    same matches as the plain directory. The bare repository itself has no records to read
    (negative control: refused in one line)."""
    bare, clone = tmp_path / "feed.git", tmp_path / "feed"
    seed = tmp_path / "seed"
    shutil.copytree(DB, seed)
    _git("init", "-q", "-b", "main", cwd=seed)
    _git("add", "-A", cwd=seed)
    _git("commit", "-q", "-m", "records", cwd=seed)
    _git("clone", "-q", "--bare", str(seed), str(bare))
    _git("clone", "-q", str(bare), str(clone))
    head = _git("rev-parse", "HEAD", cwd=clone)
    before = sorted(p.relative_to(clone).as_posix() for p in clone.rglob("*")
                    if ".git" not in p.relative_to(clone).parts)
    work = out / "build" / "cve"
    shutil.rmtree(work, ignore_errors=True)
    plain = check(out, tmp_path, TRIAGE)
    shutil.rmtree(work)
    doc = check(out, tmp_path, TRIAGE, clone)
    assert not (work / "db").exists()                    # used in place, not copied
    assert (work / "index.json").is_file()               # the matcher's index: ours, not its
    assert _git("status", "--porcelain", "--ignored", cwd=clone) == ""
    assert _git("rev-parse", "HEAD", cwd=clone) == head
    assert sorted(p.relative_to(clone).as_posix() for p in clone.rglob("*")
                  if ".git" not in p.relative_to(clone).parts) == before
    assert [(m["cve"], m["ref"], m["decision"]["status"]) for m in doc["matches"]] == \
        [(m["cve"], m["ref"], m["decision"]["status"]) for m in plain["matches"]]
    assert doc["database"] == "feed" and "database_note" not in doc
    with pytest.raises(SeedfwError) as err:
        check(out, tmp_path, TRIAGE, bare)
    assert err.value.line().endswith("--db: not a vulnerability database: expected NVD 2.0 "
                                     "records as CVE-<year>/CVE-<year>-<NN>xx/CVE-*.json or "
                                     "CVE 5 records as cves/<year>/<N>xxx/CVE-*.json")
