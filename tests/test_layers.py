"""Layers of workflow_scripts: no module imports a probe it does not own, and no imports go round.

The layers, from the bottom:
- shared modules: everything that is not in a probe or stage package (workflow_scripts/*.py:
  ingest, embed, encoders, vector_store, texts, bootstrap, density, beir, ...);
- stage packages laid out like a probe (STAGES: `adapt`): they may import shared modules;
- probe packages: the subdirectories of workflow_scripts/ with a `schema.yaml` that are not
  stages; a probe may import shared modules and stages.
A module may always import modules of its own package. Every `import` and `from ... import`
counts, at module level or inside a function (a local import is still a dependency), with relative
imports resolved. Any import cycle among the modules fails too, local imports included.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from workflow_scripts.code_digest import import_targets

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "workflow_scripts"
# stages laid out like a probe: the declared ones (workflow_scripts/probes.py, is_stage=True)
STAGES = frozenset({"adapt"})

@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    path: str  # the importer's file, relative to the package's parent
    line: int
    local: bool  # inside a function or class body

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}: {self.importer} -> {self.imported}"
        return where + (" (local import)" if self.local else "")


@dataclass(frozen=True)
class Violation:
    kind: str  # "probe->probe", "shared->probe", "shared->stage", "stage->probe", "stage->stage", "cycle"
    imports: tuple[Import, ...]

    @property
    def edges(self) -> frozenset[tuple[str, str]]:
        return frozenset((i.importer, i.imported) for i in self.imports)

    def __str__(self) -> str:
        if self.kind == "cycle":
            path = " -> ".join([i.importer for i in self.imports] + [self.imports[0].importer])
            return f"import cycle {path}:\n" + "\n".join(f"    {i}" for i in self.imports)
        return f"{self.kind}: {self.imports[0]}"


def modules_of(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the package (a package is its __init__)."""
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _local_nodes(tree: ast.AST) -> set[int]:
    """ids of the import nodes inside a function or class body."""
    inner = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            inner |= {id(n) for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return inner


def imports_of(package_dir: Path) -> list[Import]:
    """Every import of a module of the package by a module of the package (ast: module level and
    function level; relative imports resolved). `from pkg import name` is an import of the module
    pkg.name where there is one, else of pkg; `import a.b.c` and `from a.b.c import x` of the
    longest of a.b.c, a.b, a that is a module of the package."""
    modules = modules_of(package_dir)

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    out = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        local = _local_nodes(tree)
        # the imports as the code digests read them (a job's code: workflow_scripts/code_digest.py)
        for node, target in import_targets(tree, name, path.name == "__init__.py"):
            imported = known(target) if target.split(".")[0] == package_dir.name else None
            if imported is not None and imported != name:
                out.append(Import(name, imported, str(path.relative_to(package_dir.parent)), node.lineno,
                                  id(node) in local))
    return sorted(set(out), key=lambda i: (i.path, i.line, i.imported))


def layer_of(module: str, package: str, probes: frozenset[str], stages: frozenset[str]) -> tuple[str, str | None]:
    """("probe", name), ("stage", name) or ("shared", None)."""
    parts = module.split(".")
    if len(parts) > 1 and parts[0] == package:
        if parts[1] in stages:
            return "stage", parts[1]
        if parts[1] in probes:
            return "probe", parts[1]
    return "shared", None


def probe_packages(package_dir: Path, stages: frozenset[str] = STAGES) -> frozenset[str]:
    """The subdirectories with a schema.yaml, stages apart."""
    return frozenset(d.name for d in package_dir.iterdir() if (d / "schema.yaml").is_file()) - stages


def _cycles(imports: list[Import]) -> list[tuple[Import, ...]]:
    """One cycle per strongly connected component of the import graph that has one (Tarjan's
    algorithm, iterative), as the imports that make it up, starting at the component's first module."""
    graph: dict[str, list[Import]] = {}
    for imp in imports:
        graph.setdefault(imp.importer, []).append(imp)
        graph.setdefault(imp.imported, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            edges = graph[node]
            if i < len(edges):
                work.append((node, i + 1))
                nxt = edges[i].imported
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(set(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    out = []
    for component in components:
        if len(component) < 2:
            continue
        start = min(component)
        # shortest way round from `start` back to it, inside the component (breadth first)
        previous: dict[str, Import] = {}
        frontier, found = [start], None
        while frontier and found is None:
            following = []
            for node in frontier:
                for imp in graph[node]:
                    if imp.imported not in component:
                        continue
                    if imp.imported == start:
                        found = imp
                        break
                    if imp.imported not in previous:
                        previous[imp.imported] = imp
                        following.append(imp.imported)
                if found is not None:
                    break
            frontier = following
        cycle = [found]
        while cycle[0].importer != start:
            cycle.insert(0, previous[cycle[0].importer])
        out.append(tuple(cycle))
    return out


def check_layers(package_dir: Path, stages: frozenset[str] = STAGES) -> list[Violation]:
    """Every import that crosses the layers the wrong way, and every import cycle."""
    package = package_dir.name
    probes = probe_packages(package_dir, stages)
    imports = imports_of(package_dir)
    out = []
    for imp in imports:
        (src, src_name), (dst, dst_name) = (layer_of(m, package, probes, stages) for m in (imp.importer, imp.imported))
        if dst == "shared" or (src_name is not None and src_name == dst_name) or (src, dst) == ("probe", "stage"):
            continue  # shared modules, its own package, and stages for probes
        out.append(Violation(f"{src}->{dst}", (imp,)))
    out += [Violation("cycle", cycle) for cycle in _cycles(imports)]
    return out


def unexpected(violations: list[Violation], allowed: frozenset[tuple[str, str]]) -> list[Violation]:
    """The violations not covered by `allowed`: every import of the violation (the one import, or
    each import round the cycle) must be listed."""
    return [v for v in violations if not v.edges <= allowed]


# ---- the project ----------------------------------------------------------------------------

def test_probes_and_stages_are_found():
    probes = probe_packages(ROOT / PACKAGE)
    assert {"csc", "triplets", "montague", "retrieval", "settheory", "domain_shift"} <= probes
    assert "adapt" not in probes and (ROOT / PACKAGE / "adapt" / "schema.yaml").is_file()
    # the layers are the registry's: every declared probe is a probe package, every declared stage a stage
    from workflow_scripts.probes import declarations
    assert probes == {p.name for p in declarations(stages=False)}
    assert STAGES == {p.name for p in declarations() if p.is_stage}


def test_no_module_imports_a_probe_it_does_not_own_and_no_cycles():
    violations = unexpected(check_layers(ROOT / PACKAGE), frozenset())
    assert not violations, "\n".join(map(str, violations))


def make_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


CLEAN = {
    "pkg/__init__.py": "",
    "pkg/shared.py": "import os\nfrom pkg import util\n",
    "pkg/util.py": "def f():\n    import json\n",
    "pkg/stage/__init__.py": "",
    "pkg/stage/schema.yaml": "",
    "pkg/stage/train.py": "from pkg.shared import x\nfrom . import data\n",
    "pkg/stage/data.py": "from ..util import f\n",
    "pkg/one/__init__.py": "from . import a\n",
    "pkg/one/schema.yaml": "",
    "pkg/one/a.py": "from pkg.stage import train\nfrom pkg import shared\nfrom .b import g\n",
    "pkg/one/b.py": "import pkg.util\n",
    "pkg/two/__init__.py": "",
    "pkg/two/schema.yaml": "",
    "pkg/two/c.py": "from pkg.stage.data import y\n",
    "pkg/notes/readme.txt": "",
}


def test_checker_passes_a_clean_tree(tmp_path):
    package = make_package(tmp_path, CLEAN)
    assert probe_packages(package, frozenset({"stage"})) == {"one", "two"}
    assert check_layers(package, frozenset({"stage"})) == []
    edges = {(i.importer, i.imported) for i in imports_of(package)}
    assert {("pkg.stage.train", "pkg.stage.data"), ("pkg.stage.data", "pkg.util"), ("pkg.one", "pkg.one.a"),
            ("pkg.one.a", "pkg.one.b"), ("pkg.one.b", "pkg.util"), ("pkg.shared", "pkg.util"),
            ("pkg.two.c", "pkg.stage.data")} <= edges  # relative and absolute, package and module


def test_checker_catches_wrong_way_imports(tmp_path):
    package = make_package(tmp_path, {
        **CLEAN,
        # probe -> probe, in a function, relative
        "pkg/one/b.py": "import pkg.util\n\ndef h():\n    from ..two.c import z\n",
        "pkg/shared.py": "from pkg.one import a\n",  # shared -> probe (the package's module a)
        "pkg/util.py": "import pkg.stage.train as t\n",  # shared -> stage
        "pkg/stage/data.py": "from pkg.two import c\n",  # stage -> probe
    })
    found = {(v.kind, v.imports[0].importer, v.imports[0].imported, v.imports[0].local)
             for v in check_layers(package, frozenset({"stage"})) if v.kind != "cycle"}
    assert found == {("probe->probe", "pkg.one.b", "pkg.two.c", True),
                     ("shared->probe", "pkg.shared", "pkg.one.a", False),
                     ("shared->stage", "pkg.util", "pkg.stage.train", False),
                     ("stage->probe", "pkg.stage.data", "pkg.two.c", False)}


def test_checker_catches_a_cycle_through_a_local_import(tmp_path):
    package = make_package(tmp_path, {
        **CLEAN,
        "pkg/util.py": "from pkg import helpers\n",
        "pkg/helpers.py": "def f():\n    from . import shared\n",
    })
    violations = check_layers(package, frozenset({"stage"}))
    assert [v.kind for v in violations] == ["cycle"]
    (cycle,) = violations
    assert [(i.importer, i.imported) for i in cycle.imports] == [
        ("pkg.helpers", "pkg.shared"), ("pkg.shared", "pkg.util"), ("pkg.util", "pkg.helpers")]
    assert "import cycle pkg.helpers -> pkg.shared -> pkg.util -> pkg.helpers" in str(cycle)
    # allowed only when every import round it is listed
    assert unexpected(violations, cycle.edges) == []
    assert unexpected(violations, frozenset(list(cycle.edges)[:2])) == violations


@pytest.mark.parametrize("text, target", [
    ("from . import b", "pkg.one.b"), ("from .b import g", "pkg.one.b"), ("from .. import util", "pkg.util"),
    ("from ..stage import data", "pkg.stage.data"), ("from ..stage.data import y", "pkg.stage.data"),
    ("from .. import stage", "pkg.stage"), ("import pkg.stage.data", "pkg.stage.data"),
    ("from pkg.stage.data import y, z", "pkg.stage.data"), ("from pkg.one import b", "pkg.one.b"),
    ("from pkg.two import name", "pkg.two")])
def test_relative_and_absolute_imports_resolve(tmp_path, text, target):
    package = make_package(tmp_path, {**CLEAN, "pkg/one/a.py": text + "\n"})
    assert {i.imported for i in imports_of(package) if i.importer == "pkg.one.a"} == {target}


# ---- no shared module names a probe ----------------------------------------------------------------
# A probe plugs into shared stages that do not know its name (docs/adding-a-probe.md): what a shared
# module needs of a probe (the rules that write its text sets, their embedding roles, where the TF-IDF
# fit finds a corpus's variants, its folders under results/) it asks the registry. The code of the
# shared modules (workflow_scripts/*.py but the registry, rules/*.smk but the probes' and stages' own)
# names no probe, none of their rules and none of the folders they declare; comments and docstrings
# may, as examples.

def registry_words() -> tuple[set[str], set[str]]:
    """(the declared probes' and stages' names and rule names; the folders they declare under results/)."""
    from workflow_scripts import probes
    names = {p.name for p in probes.declarations()} | {r for p in probes.declarations() for r in p.rules}
    return names, probes.results_folders() - {p.name for p in probes.declarations()}


def _docstring_lines(text: str) -> set[int]:
    lines = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def named_probes(path: Path, names: set[str], folders: set[str]) -> list[str]:
    """`file:line: word` for each declared name in the code of `path` (a name, or a word of a string:
    a probe or rule name; a path segment or whole string: a folder), comments and docstrings aside."""
    import io
    import re
    import tokenize
    text = path.read_text(encoding="utf-8")
    docstrings = _docstring_lines(text) if path.suffix == ".py" else set()
    found = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in (tokenize.NAME, tokenize.STRING) or token.start[0] in docstrings:
            continue
        words = set(re.findall(r"\w+", token.string)) & names
        if token.type == tokenize.STRING:
            words |= {f for f in folders if re.search(rf"(?:^|[/'\"]){re.escape(f)}(?:[/'\"]|$)", token.string)}
        found += [f"{path.name}:{token.start[0]}: {word}" for word in sorted(words)]
    return found


def shared_files(root: Path, declared: set[str]) -> list[Path]:
    return [p for p in sorted((root / PACKAGE).glob("*.py")) if p.name != "probes.py"] + \
        [p for p in sorted((root / "rules").glob("*.smk")) if p.stem not in declared]


def test_no_shared_module_names_a_probe():
    from workflow_scripts.probes import declarations
    names, folders = registry_words()
    files = shared_files(ROOT, {p.name for p in declarations()})
    assert any(p.name == "common.smk" for p in files) and any(p.name == "shards.py" for p in files)
    found = [hit for path in files for hit in named_probes(path, names, folders)]
    assert not found, "shared code names a probe (ask workflow_scripts/probes.py instead):\n" + "\n".join(found)


def test_the_name_check_catches_a_probe_named_in_code_not_in_prose(tmp_path):
    (tmp_path / PACKAGE).mkdir()
    (tmp_path / "rules").mkdir()
    shared = tmp_path / PACKAGE / "shared.py"
    shared.write_text('"""Roles: e.g. retrieval\'s questions are queries."""\n'
                      "# the retrieval probe's questions\n"
                      "def role(probe):\n"
                      '    """As csc does."""\n'
                      '    return "query" if probe == "retrieval" else "text"\n'
                      'RULES = {"t": "triplets_build"}\n')
    (tmp_path / "rules" / "common.smk").write_text('def f(wc):\n    return f"{R}/perturbations/{wc.scope}"  # csc\n')
    (tmp_path / "rules" / "csc.smk").write_text('rule perturb:\n    output: "x"\n')
    names, folders = {"retrieval", "csc", "triplets_build", "perturb"}, {"perturbations"}
    files = shared_files(tmp_path, {"csc"})
    assert [p.name for p in files] == ["shared.py", "common.smk"]
    assert [hit for p in files for hit in named_probes(p, names, folders)] == [
        "shared.py:5: retrieval", "shared.py:6: triplets_build", "common.smk:2: perturbations"]
