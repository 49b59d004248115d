"""The code digest in every job's params (workflow_scripts/code_digest.py): what a job's code is
(its module, the dispatcher, the project modules they import, transitively) and what does not count
(comments, docstrings, formatting, the checkout's path, the process). The workflow's reruns from it:
tests/test_code_reruns.py."""
import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workflow_scripts import code_digest
from workflow_scripts.code_digest import CodeDigests, job_code, normalised_digest

ROOT = Path(__file__).resolve().parents[1]

SCORE = '''"""Cosines."""
import numpy as np


def cosine(dots, denom):
    """The cosine."""
    return np.where(denom > 0, dots / denom, np.nan)
'''


def test_comments_docstrings_and_formatting_do_not_count_a_constant_does():
    reformatted = ('# scoring\nimport numpy as np\ndef cosine(dots,\n           denom):\n'
                   '    """Another docstring,\n    over two lines."""\n'
                   '    # why: a zero norm has no cosine\n    return np.where(denom > 0, (dots / denom), np.nan)  # ok\n')
    assert normalised_digest(reformatted) == normalised_digest(SCORE)
    for edit in ("dots / denom * 0.5", "denom / dots"):
        assert normalised_digest(SCORE.replace("dots / denom", edit)) != normalised_digest(SCORE)
    # a string that is no docstring is code: a message, a format
    assert normalised_digest(SCORE.replace('"""The cosine."""', 'x = "The cosine."')) != normalised_digest(SCORE)
    # the digest is a sha256 of the AST without positions
    tree = ast.parse(SCORE)
    tree.body = tree.body[1:]
    tree.body[1].body = tree.body[1].body[1:]
    import hashlib
    assert normalised_digest(SCORE) == hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def make_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root / "workflow_scripts"


PACKAGE = {
    "workflow_scripts/__init__.py": "",
    "workflow_scripts/run_job.py": "from workflow_scripts.jobs import call\n",
    "workflow_scripts/jobs.py": "import importlib\n",
    # a job's module: a module-level import, a local one, a relative one, a name from a module
    "workflow_scripts/score.py": ("import numpy\nfrom workflow_scripts import stats\nfrom .common import f\n\n"
                                  "def run_score(job):\n    from workflow_scripts.probe_a.tables import t\n"),
    "workflow_scripts/stats.py": "import os\nfrom workflow_scripts.registry import all_\n",
    "workflow_scripts/common.py": "def f():\n    pass\n",
    "workflow_scripts/registry.py": "DISCOVERS = ('*/probe.py',)\n",
    "workflow_scripts/probe_a/__init__.py": "",
    "workflow_scripts/probe_a/probe.py": "X = 1\n",
    "workflow_scripts/probe_a/tables.py": "def t():\n    pass\n",
    "workflow_scripts/probe_b/__init__.py": "",
    "workflow_scripts/probe_b/probe.py": "Y = 2\n",
    "workflow_scripts/probe_b/other.py": "Z = 3\n",
    "workflow_scripts/unrelated.py": "import workflow_scripts.score\n",
}


def test_a_jobs_code_is_its_module_the_dispatcher_and_what_they_import(tmp_path):
    package = make_package(tmp_path / "a", PACKAGE)
    digests = CodeDigests(package)
    assert digests.closure("workflow_scripts.score") == tuple(sorted(
        f"workflow_scripts{m}" for m in ("", ".score", ".stats", ".common", ".registry", ".probe_a",
                                         ".probe_a.probe", ".probe_a.tables", ".probe_b", ".probe_b.probe")))
    assert digests.closure("workflow_scripts.run_job") == (
        "workflow_scripts", "workflow_scripts.jobs", "workflow_scripts.run_job")
    before = digests.job_code("score:run_score")
    assert before == digests.modules_digest(digests.closure("workflow_scripts.score")
                                            + ("workflow_scripts.jobs", "workflow_scripts.run_job"))

    def after(name: str, text: str) -> str:
        (package.parent / name).write_text(text)
        return CodeDigests(package).job_code("score:run_score")  # a new process, as it were

    # neither a module it does not import (one that imports it, a probe's module the registry does
    # not find) nor a comment in one it does
    assert after("workflow_scripts/unrelated.py", "import workflow_scripts.score\nA = 1\n") == before
    assert after("workflow_scripts/probe_b/other.py", "Z = 4\n") == before
    assert after("workflow_scripts/stats.py", "import os  # paths\nfrom workflow_scripts.registry import all_\n") == before
    # each module it imports, transitively, discovers, and the dispatcher
    for name, text in (("workflow_scripts/common.py", "def f():\n    return 1\n"),
                       ("workflow_scripts/probe_b/probe.py", "Y = 3\n"),
                       ("workflow_scripts/probe_a/tables.py", "def t():\n    return 0\n"),
                       ("workflow_scripts/jobs.py", "import importlib\nimport os\n")):
        changed = after(name, text)
        assert changed != before, name
        before = changed
    # a package moved elsewhere is the same code
    moved = shutil.copytree(package.parent, tmp_path / "b" / "moved") / "workflow_scripts"
    assert CodeDigests(moved).job_code("score:run_score") == before


def test_a_later_process_reads_each_modules_scan_from_the_cache_and_never_a_stale_one(tmp_path, monkeypatch):
    package = make_package(tmp_path / "a", PACKAGE)
    cache = tmp_path / "results" / ".cache" / "code"
    first = CodeDigests(package, cache=cache).job_code("score:run_score")
    assert first == CodeDigests(package).job_code("score:run_score")
    assert len(list(cache.glob("*.json"))) == 12  # the job's ten modules and the dispatcher's two
    # the next process parses nothing
    monkeypatch.setattr(code_digest.ast, "parse", lambda *a, **k: pytest.fail("parsed again"))
    assert CodeDigests(package, cache=cache).job_code("score:run_score") == first
    monkeypatch.undo()
    # an edited module has another key: scanned anew, its old entry left as it was
    (package / "common.py").write_text("def f():\n    return 2\n")
    edited = CodeDigests(package, cache=cache).job_code("score:run_score")
    assert edited != first and edited == CodeDigests(package).job_code("score:run_score")
    assert len(list(cache.glob("*.json"))) == 13


def test_the_same_code_in_another_checkout_and_process_has_the_same_digest(tmp_path):
    """A clone (another path, every mtime new) and another interpreter (another hash seed) agree."""
    clone = tmp_path / "elsewhere" / "clone"
    shutil.copytree(ROOT / "workflow_scripts", clone / "workflow_scripts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    script = "from workflow_scripts.code_digest import job_code\nprint(job_code('csc.curves:run_csc_score'))\n"
    out = subprocess.run([sys.executable, "-c", script], cwd=clone, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(clone), "PYTHONHASHSEED": "12345"})
    assert out.stdout.strip() == job_code("csc.curves:run_csc_score")
    assert len(out.stdout.strip()) == 64


# the probes split one job per module (issue 46, point 4): the module -> the one job whose code it is
JOB_MODULES = {"csc.curves": "csc.curves:run_csc_score", "csc.plots": "csc.plots:run_csc_plot",
               "csc.tables": "csc.tables:run_csc_aggregate",
               "montague.scores": "montague.scores:run_montague_score",
               "montague.tables": "montague.tables:run_montague_aggregate",
               "retrieval.metrics": "retrieval.metrics:run_retrieval_metrics",
               "retrieval.tables": "retrieval.tables:run_retrieval_aggregate"}


@pytest.mark.parametrize("module", sorted(JOB_MODULES))
def test_a_probe_job_module_is_the_code_of_its_job_alone(module):
    """csc/curves.py (CSC's scoring) is the code of csc_score and of no other rule's job, csc/plots.py
    of csc_plot's, ...: an edit of the plotting code reruns the plots alone, an edit of the scoring
    the scores and, for their new outputs, what reads them (tests/test_code_reruns.py)."""
    import re
    functions = {f for path in (ROOT / "rules").glob("*.smk")
                 for f in re.findall(r'\*\*job_params\("([\w.]+:\w+)"\)', path.read_text())}
    assert len(functions) > 30
    digests = CodeDigests()
    users = {f for f in functions if f"workflow_scripts.{module}" in digests.closure(f"workflow_scripts.{f.partition(':')[0]}")}
    assert users == {JOB_MODULES[module]}


def test_a_module_that_imports_by_a_computed_name_declares_what_it_may_import():
    """importlib.import_module(<not a literal>) hides a dependency from the digest: such a module
    declares the files in DISCOVERS, and each pattern finds some. Not needed by the dispatcher
    (the job's module is the digest's root) nor for another package's module (encoders: a model's
    package)."""
    exempt = {"workflow_scripts.jobs": "the job's own module", "workflow_scripts.encoders": "model packages",
              "workflow_scripts.model_settings": "model packages (bundled_package_folder)"}
    package = ROOT / "workflow_scripts"
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        computed = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                    and n.func.attr == "import_module" and not isinstance(n.args[0], ast.Constant)]
        name = code_digest._name_of(path, package)
        declared = code_digest._discovers(tree)
        if computed and name not in exempt:
            assert declared, f"{name} imports by a computed name (line {computed[0].lineno}) and declares no DISCOVERS"
        for pattern in declared:
            assert list(path.parent.glob(pattern)), f"{name}: DISCOVERS {pattern!r} finds no file"
