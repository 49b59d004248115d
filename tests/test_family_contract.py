"""The encoder-family contract (workflow_scripts/encoders/): every family declares itself in its own
module, and no shared module or rule names one; they ask the registry (`family_of(spec).sparse`,
`.uses_torch`, `.needs`, ...). Runs over whatever families are declared, a new one included
(tests/test_toy_family.py adds one)."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workflow_scripts.code_digest import import_targets
from workflow_scripts.encoders import Family, families, family_of

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "workflow_scripts"
FAMILY_DIR = PACKAGE / "encoders"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def family_code() -> set[Path]:
    """The family modules, and the modules only they import (a family's implementation kept apart
    from its declaration, e.g. mteb_models.py): such a module is the family's own code."""
    importers: dict[str, set[str]] = {}
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for _, target in import_targets(tree, name, path.name == "__init__.py"):
            for prefix in (target, target.rpartition(".")[0]):
                if prefix in paths and prefix != name:
                    importers.setdefault(prefix, set()).add(name)
    for rule in [*(ROOT / "rules").glob("*.smk"), ROOT / "Snakefile"]:
        for target in re.findall(r"^\s*from (workflow_scripts[\w.]*) import", rule.read_text(), re.M):
            importers.setdefault(target, set()).add("rules")
    own = {p for p in FAMILY_DIR.glob("*.py")}
    own |= {paths[m] for m, users in importers.items()
            if users and all(u.startswith("workflow_scripts.encoders") for u in users)}
    return own


def package_lists(tree: ast.AST) -> set[int]:
    """ids of the string constants that stand in a tuple or list of distribution names (software
    versions: "torch", "transformers", ...): a package, not a family, by that name."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List)) and len(node.elts) > 1:
            strings = [e for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(strings) == len(node.elts) and any(s.value not in families() for s in strings) \
                    and all(re.fullmatch(r"[a-z][a-z0-9_-]*", s.value) for s in strings):
                out |= {id(s) for s in strings}
    return out


def is_family_value(node: ast.AST) -> bool:
    """`x["family"]` or `x.get("family")`."""
    if isinstance(node, ast.Subscript):
        key = node.slice
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        key = node.args[0]
    else:
        return False
    return isinstance(key, ast.Constant) and key.value == "family"


def names_a_family(path: Path) -> list[str]:
    """Where a Python module names a family: a string constant that is a family's name (outside a
    list of distribution names), or a comparison with a model entry's `family`."""
    names = set(families())
    tree = ast.parse(path.read_text(encoding="utf-8"))
    packages = package_lists(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in names and id(node) not in packages:
            out.append(f"{path.relative_to(ROOT)}:{node.lineno}: names family {node.value!r}")
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            family_sides = [s for s in sides if is_family_value(s)]
            # compared with a constant that names no family, or a named constant (whose value the
            # constant scan judges where it is defined): the statistical families of the
            # differences tables ("confirmatory"), not a model's family
            others = [s for s in sides if s not in family_sides]
            if family_sides and not all(isinstance(o, ast.Name) or isinstance(o, ast.Constant) and o.value not in names
                                        for o in others):
                out.append(f"{path.relative_to(ROOT)}:{node.lineno}: compares a model's family")
    return out


def test_no_shared_module_or_rule_names_a_family():
    own = family_code()
    assert PACKAGE / "mteb_models.py" in own and PACKAGE / "config.py" not in own
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) if path not in own for hit in names_a_family(path)]
    quoted = re.compile(r"""["'](%s)["']""" % "|".join(map(re.escape, families())))
    for rule in [*sorted((ROOT / "rules").glob("*.smk")), ROOT / "Snakefile"]:
        found += [f"{rule.relative_to(ROOT)}:{i}: names family {m.group(1)!r}"
                  for i, line in enumerate(rule.read_text().splitlines(), 1) if (m := quoted.search(line))]
    assert not found, "ask the registry (workflow_scripts/encoders: family_of(spec).<property>):\n" + "\n".join(found)


def test_the_scan_finds_a_family_named_in_a_shared_module(tmp_path):
    """The scan above can fail: a module that checks a family by name, or lists families, is found."""
    name = next(iter(families()))
    bad = PACKAGE / "_family_scan_probe.py"
    bad.write_text(f"SOME = ({name!r},)\n\ndef f(spec, other):\n    return spec['family'] == other.name\n")
    try:
        hits = names_a_family(bad)
    finally:
        bad.unlink()
    assert len(hits) == 2, hits
    assert names_a_family(PACKAGE / "report" / "markdown.py") == []  # a statistical family: not a model's


@pytest.mark.parametrize("name", sorted(families()))
def test_each_family_declares_itself(name):
    family = families()[name]
    assert isinstance(family, Family) and family.name == name and (FAMILY_DIR / f"{name}.py").is_file()
    assert callable(family.load) and family_of({"family": name}) is family
    assert set(family.needs) <= {"fitted", "text_set", "vector_cache"}
    assert not (family.sparse and family.uses_torch)
    assert family.uses_torch or not family.trainable
    with pytest.raises(ValueError, match="unknown encoder family"):
        family_of({"family": name + "_not_declared"})


def test_the_schema_takes_the_families_from_the_registry():
    from workflow_scripts.config import load_schema
    entry = load_schema()["properties"]["models"]["additionalProperties"]
    assert entry["properties"]["family"]["enum"] == list(families())
    for family in families().values():
        assert set(family.properties) <= set(entry["properties"])
        if family.requires:
            assert {"if": {"properties": {"family": {"const": family.name}}, "required": ["family"]},
                    "then": family.requires} in entry["allOf"]


def test_discovering_the_families_imports_no_heavy_package():
    """Every config check imports every declaration: a family imports its libraries in its functions."""
    script = ("import sys\nfrom workflow_scripts.encoders import families\nfamilies()\n"
              "heavy = ('numpy', 'polars', 'pyarrow', 'torch', 'scipy', 'sklearn', 'transformers', 'mteb', 'httpx')\n"
              "print(sorted(m for m in heavy if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
