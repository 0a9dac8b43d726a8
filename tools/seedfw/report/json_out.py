"""report.json: the versioned, schema-checked form of the report (schema/report-v1.json).

model.build_report already built the dict section by section in registry order; the keys are
sorted here, so the bytes do not depend on that order.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from ..errors import SeedfwError

SCHEMA_FILE = Path(__file__).with_name("schema") / "report-v1.json"


@functools.lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(SCHEMA_FILE.read_text())  # door: the package's own schema file


def validate(report: dict) -> None:
    """Raise SeedfwError naming the first field that breaks the schema (a bug in the model,
    or an adapter let bad input through: never write a report that lies about its schema)."""
    import jsonschema
    validator = jsonschema.Draft202012Validator(schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(report))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise SeedfwError(f"report does not match {SCHEMA_FILE.name}: {error.message}",
                          "report.json", where)


def render(report: dict) -> str:
    """Strict JSON (allow_nan=False): NaN or Infinity is not JSON, and a report.json holding
    one would be unreadable by every strict parser (the inputs refuse them, reading.
    loads_json_strict; this is the backstop for a figure computed out of range)."""
    validate(report)
    from ..reading import first_non_finite
    bad = first_non_finite(report)
    if bad is not None:
        raise SeedfwError(f"{bad[1]} is not a finite number (a figure computed out of range)",
                          "report.json", bad[0])
    return json.dumps(report, indent=2, sort_keys=True, allow_nan=False) + "\n"
