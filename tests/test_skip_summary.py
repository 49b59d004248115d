"""The suite's own conftest (tests/conftest.py) on a tiny test file, in a pytest subprocess:
every skipped test is listed with its reason at the end of the run, and a test skipped because data
it reads from ../shared is missing fails instead when CI=true."""
import pytest

from conftest import ROOT

pytest_plugins = ["pytester"]

TESTS = '''
import pytest
from conftest import requires_shared, shared_data


def test_reads_missing_data():
    shared_data("no_such_dataset_for_this_test", "file.txt")


@requires_shared("no_such_dataset_for_this_test/other.txt")
def test_marked():
    pass


def test_skipped_for_another_reason():
    pytest.skip("this machine has a GPU")


def test_runs():
    pass
'''


@pytest.fixture
def suite(pytester):
    # the real conftest, run as the scratch folder's conftest (its paths resolve from its real place)
    real = ROOT / "tests" / "conftest.py"
    pytester.makeconftest(f"_own, __file__ = __file__, {str(real)!r}\n"
                          "exec(compile(open(__file__).read(), __file__, 'exec'))\n"
                          "__file__ = _own\n")
    pytester.makepyfile(test_tiny=TESTS)
    return pytester


def test_skips_are_listed_at_the_end_with_their_reasons(suite, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    result = suite.runpytest_subprocess("-q")
    result.assert_outcomes(passed=1, skipped=3)
    missing = ROOT.parent / "shared" / "data" / "no_such_dataset_for_this_test"
    result.stdout.re_match_lines([
        r"-+ 3 skipped test\(s\) -+",
        rf"SKIPPED test_tiny.py::test_reads_missing_data: {missing}/file.txt not present \(../shared/data is beside the "
        r"checkout in CI\)",
        rf"SKIPPED test_tiny.py::test_marked: {missing}/other.txt not present .*",
        r"SKIPPED test_tiny.py::test_skipped_for_another_reason: this machine has a GPU",
        r"\(under CI=true, a test skipped for missing data fails instead\)",
    ], consecutive=True)


def test_under_ci_missing_shared_data_fails(suite, monkeypatch):
    monkeypatch.setenv("CI", "true")
    result = suite.runpytest_subprocess("-q")
    result.assert_outcomes(passed=1, skipped=1, failed=1, errors=1)  # the marked test fails in its setup
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*no_such_dataset_for_this_test/file.txt not present*CI=true: data a test needs must "
                                 "be present, so this fails instead of skipping*"])
    result.stdout.fnmatch_lines(["SKIPPED test_tiny.py::test_skipped_for_another_reason: this machine has a GPU"])
