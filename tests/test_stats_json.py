"""seedfw.jsonout.dumps prints exactly json.dumps(obj, indent=2): on the stats document of a
real ELF (what `invoke stats --json` prints) and on shapes that take each of its paths."""

from __future__ import annotations

import json

import pytest

from seedfw import jsonout, stats
from seedfw.report import samples


def test_stats_document_text_is_json_dumps_indent_2():
    elf = samples.sample_elf(samples.LIBASAN_ELF)
    doc = stats.stats_document([stats.read_elf(elf)])
    text = jsonout.dumps(doc)
    assert text == json.dumps(doc, indent=2)
    assert json.loads(text) == doc and len(doc["files"][0]["symbols"]) > 1000


class Sub(str):
    pass


@pytest.mark.parametrize("obj", [
    {}, [], {"a": []}, [1, -2.5, float("nan"), float("inf"), float("-inf"), None, True, False, "é\n\x1b"],
    [{"a": 1}, {"a": [1]}], [{"a": 1}, {"b": 2}], [{"a": 1, "b": 2}, {"b": 2, "a": 1}],
    {"x": [{"k%s": "v", "n": -1.0}, {"k%s": "w", "n": 1e300}]}, [{"a": {"b": []}}],
    {1: 2, None: 3}, [[{"a": 1}]], [{"a": Sub("s")}], (1, (2,)), [{}], [{"a": (1,)}, {"a": 2}],
])
def test_every_path_matches_json(obj):
    assert jsonout.dumps(obj) == json.dumps(obj, indent=2)


def test_negative_control_differs_from_compact():
    doc = {"a": [{"b": 1}]}
    assert jsonout.dumps(doc) != json.dumps(doc) and jsonout.dumps(doc).count("\n") == 6


class Shown(str):
    def __str__(self):          # json encodes the str's content, never str(obj)
        return "not this"


@pytest.mark.parametrize("obj", [
    [["plain", 1], ["q\"", 2]], [["a\\b", 1], ["c", 2]], [["é", 1]], [["x\x7f", 1]],
    [(1, "a"), (2, "b")], [{"k%d": "%s", "n": 1}, {"k%d": "%s", "n": 2}],
    [[Shown("s"), 1], ["t", 2]], [[True, None, 1.5], [False, 2, float("nan")]],
    [{"a": 1, "b": 2}, {"b": 2, "a": 1}], [[1, 2], [3]], [[], []], [{}, {}],
    {1.5: [[1, 2]], True: {"x": [(3, 4)]}}, [["r%d" % i, i, "s", i * 3] for i in range(600)],
])
def test_tables_and_streamed_text_match_json(obj):
    import io
    expected = json.dumps(obj, indent=2)
    out = io.StringIO()
    jsonout.dump(obj, out)
    assert jsonout.dumps(obj) == expected and out.getvalue() == expected


def test_errors_are_jsons():
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        jsonout.dumps(loop)
    with pytest.raises(TypeError):
        jsonout.dumps({"a": [object()]})
    with pytest.raises(TypeError):
        jsonout.dumps({(1,): 2})
