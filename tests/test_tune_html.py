"""tune/report.html of a small real Optuna study, as headless Chromium renders it: the front as a
table (one row per front trial), one plotted mark per complete trial, the failed ones listed.

The trials are scored by a stand-in function instead of builds (the builds are
tests/test_tune.py's slow tests); the study, its storage, the front and the page are the real ones.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from browser import dump_dom, screenshot
from seedfw import boards, config
from seedfw.tune import objectives, output, space, study, trial

QEMU = boards.get("qemu-aarch64")


def _study(tmp_path):
    objs = objectives.parse("storage,boot-decode", QEMU)
    kconf = config.resolve("qemu-aarch64", tmp_path / "no-output").kconf
    params = space.load(kconf, ["COMPRESS_HC_LEVEL", "COMPRESS_BLOCK"])
    st = study.open_study("html", study.storage_for(None, tmp_path), objs,
                          study.sampler_for("random", 7), create=True)
    st.enqueue_trial({"COMPRESS_HC_LEVEL": 12, "COMPRESS_BLOCK": "COMPRESS_BLOCK_64K"},
                     user_attrs={"default": True})

    def run_trial(number, values):           # stand-in score: a trade-off plus dominated points
        r = trial.TrialResult(seconds={"total": 0.0})
        if number == 3:
            r.error = "out/logs/tfa.log: step tfa.build failed"
            return r
        lvl = values["COMPRESS_HC_LEVEL"]
        block = {"COMPRESS_BLOCK_4K": 300, "COMPRESS_BLOCK_16K": 100, "COMPRESS_BLOCK_64K": 0}[
            values["COMPRESS_BLOCK"]]
        r.values = {"storage": 10_000 - 300 * lvl + block, "boot-decode": 1_000 + 40 * lvl * lvl}
        return r

    study.run(st, params, objs, run_trial, 12, lambda m: None)
    doc = output.document(st, "qemu-aarch64", objs, params, "test journal", "random")
    output.write_all(doc, tmp_path / "tune")
    return doc


class _Tables(HTMLParser):
    """Rows of the table with id="front", and the SVG marks with their classes."""

    def __init__(self):
        super().__init__()
        self.in_front, self.front_rows, self.marks, self.tables = False, [], [], 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables += 1
            self.in_front = a.get("id") == "front"
        elif tag == "tr" and self.in_front:
            self.front_rows.append([])
        elif tag == "circle" and a.get("class") in ("front", "trial"):
            self.marks.append((a["class"], int(a["data-trial"])))

    def handle_endtag(self, tag):
        if tag == "table":
            self.in_front = False

    def handle_data(self, data):
        if self.in_front and self.front_rows and data.strip():
            self.front_rows[-1].append(data.strip())


def test_tune_report_html_in_chromium(tmp_path):
    doc = _study(tmp_path)
    page = tmp_path / "tune" / "report.html"
    complete = [t["number"] for t in doc["trials"] if t["state"] == "COMPLETE"]
    failed = [t["number"] for t in doc["trials"] if t["state"] == "FAIL"]
    assert failed == [3] and len(complete) == 11 and 1 < len(doc["front"]) < len(complete)

    dom = dump_dom(page.as_uri())
    parsed = _Tables()
    parsed.feed(dom)
    rows = parsed.front_rows[1:]                      # the first row is the header
    assert [r[0].split()[0] for r in rows] == [f"#{n}" for n in doc["front"]]
    assert sorted(n for _, n in parsed.marks) == complete          # one mark per complete trial
    assert sorted(n for c, n in parsed.marks if c == "front") == doc["front"]
    assert dom.count('class="default"') == 1 and "defconfig (#0)" in dom
    assert "Failed trials" in dom and "#3" in dom and "step tfa.build failed" in dom
    assert "<pre>" not in dom                          # not the Markdown pasted in any more
    ratios = re.findall(r"\b\d\.\d{4}\b", " ".join(" ".join(r) for r in rows))
    assert ratios                                      # ratios to the defconfig's point
    shot = screenshot(page.as_uri(), tmp_path / "tune-report.png", 1280, 1400)
    assert shot.stat().st_size > 20_000                # a page with a plot, not a blank one
