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
        # the package a relative import starts from: the module's own package (its own name for an __init__)
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")
                    base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                           for alias in node.names]
            for target in targets:
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
