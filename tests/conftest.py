import logging
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))
# the workflow's own jobs import workflow_scripts through PYTHONPATH
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
if "NLTK_DATA" not in os.environ and (SHARED / "data" / "nltk_data").is_dir():
    os.environ["NLTK_DATA"] = str(SHARED / "data" / "nltk_data")


@pytest.fixture
def log():
    from workflow_scripts.common import setup_logging
    return setup_logging(None, "test")


# ---- tests that need data from ../shared: skipped here without it, failed under CI=true ----------
# A checkout without ../shared skips the tests that read its data (SICK, MSRP, the treebank, NLTK
# data, ...); CI has it beside the checkout, so there a missing file is an error, not a skip that
# leaves `make test` green with tests that never ran. Every skip is listed at the end of the run.

def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def missing_data(reason: str):
    """A test's data is missing: skip it, or under CI=true fail it."""
    if under_ci():
        pytest.fail(f"{reason}; CI=true: data a test needs must be present, so this fails instead of skipping",
                    pytrace=False)
    pytest.skip(reason)


def shared_data(*parts) -> Path:
    """../shared/data/<parts>, or missing_data (skip; fail under CI=true)."""
    path = SHARED.joinpath("data", *parts)
    if not path.exists():
        missing_data(f"{path} not present (../shared/data is beside the checkout in CI)")
    return path


def requires_shared(*paths: str):
    """Mark a test (or a module's `pytestmark`) as reading ../shared/data/<path> for each path
    ("sick/SICK.txt"): checked before it runs, through shared_data."""
    return pytest.mark.requires_shared(*paths)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: too slow for `make test`'s ten minutes; runs in `make test-slow` "
                                       "and `make test-all` (docs/testing.md lists them)")
    config.addinivalue_line("markers", "requires_shared(*paths): reads ../shared/data/<path>; skipped without it, "
                                       "failed under CI=true")


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures are set up
def pytest_runtest_setup(item):
    for mark in item.iter_markers("requires_shared"):
        for path in mark.args:
            shared_data(*Path(path).parts)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Every skipped test with its reason, after the run's summary (pytest shows them only with -rs)."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    terminalreporter.section(f"{len(skipped)} skipped test(s)", sep="-")
    for report in skipped:
        where, reason = report.nodeid, str(report.longrepr)
        if isinstance(report.longrepr, tuple):  # (file, line, "Skipped: reason")
            path, line, reason = report.longrepr
            where = where or f"{path}:{line}"
        terminalreporter.line(f"SKIPPED {where}: {reason.removeprefix('Skipped: ')}")
    if not under_ci():
        terminalreporter.line("(under CI=true, a test skipped for missing data fails instead)")


class Records(logging.Handler):
    """Collects (level, message) of every record a logger emits."""
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append((record.levelname, record.getMessage()))


@pytest.fixture
def records(log):
    """The (level, message) pairs the `log` fixture's logger emits during the test."""
    handler = Records()
    log.addHandler(handler)
    yield handler.messages
    log.removeHandler(handler)
