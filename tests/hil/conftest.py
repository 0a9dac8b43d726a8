"""The HIL suite runs only under labgrid's pytest plugin with an environment:
`pytest tests/hil --lg-env output/lab/<place>.yaml` (docs/farm.md). In the ordinary suite (no
--lg-env, or labgrid not installed) nothing here is collected: there is no place to walk, and
labgrid 26's plugin cannot even set up a test that asks for `strategy` without an env."""

import importlib.util


def pytest_ignore_collect(collection_path, config):
    if collection_path.name.startswith("test_"):
        if importlib.util.find_spec("labgrid") is None:
            return True
        return not config.getoption("lg_env", None)
    return None
