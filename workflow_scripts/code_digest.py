"""The code a job runs, as a digest in its params: a change to what that code does reruns the job
(Snakemake's params trigger) and what reads its outputs; a clone, a move, a comment, a docstring or
a reformatting reruns nothing (docs/reproducibility.md).

A job runs the function its rule names (`params.function`, "module:function" of workflow_scripts,
workflow_scripts/jobs.py) through the rules' one script, run_job.py. Its code is the function's
module and run_job.py, with every module of workflow_scripts they import, transitively: `import`
and `from ... import` anywhere in a module (a function's local import too), relative ones
resolved, each module's enclosing packages (their `__init__` runs on import), and the files a
module imports by a computed name, which it declares in a module-level `DISCOVERS` (glob patterns
relative to its package's folder, e.g. probes.py: every `*/probe.py`). Other packages (numpy, torch,
snakemake) are the software environment's, not this digest's.

A module counts by the AST of its source with docstrings removed (`ast.dump`, no line or column
numbers): comments, docstrings, blank lines and formatting do not count, nor do its path or mtime.
The job's digest is the sha256 over its modules' names and their digests, so it is the same in
every process, checkout and clone of the same code. `ast.dump` belongs to the Python minor version
(3.11, envs/workflow.yaml): another one gives other digests, and reruns.

Cheap at every Snakemake start (a cluster job's too): the digest is a param function, computed
only for the jobs Snakemake plans; each module is read and parsed once per process, and what it says
(digest, imports) is kept by the sha256 of its source in <results>/.cache/code/, so that a later
process reads it instead of parsing (CodeDigests)."""
from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "workflow_scripts"
PACKAGE_DIR = Path(__file__).resolve().parent
# every rule's script (`script: "../workflow_scripts/run_job.py"`): part of every job's code
DISPATCHER = f"{PACKAGE}.run_job"


def module_file(name: str, package_dir: Path = PACKAGE_DIR) -> Path | None:
    """The file of the project module `name` (a package: its __init__.py), or None when `name` is
    not a module of the package (a name inside a module, or another package's)."""
    parts = name.split(".")
    if parts[0] != package_dir.name:
        return None
    base = package_dir.joinpath(*parts[1:])
    for path in ((base.with_suffix(".py"),) if len(parts) > 1 else ()) + (base / "__init__.py",):
        if path.is_file():
            return path
    return None


def import_targets(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[ast.stmt, str]]:
    """(statement, dotted name) of every import in `tree`, at module level or inside a function,
    relative imports resolved from `module` (`is_package`: the module is a package's __init__):
    `import a.b` gives a.b; `from a import b, c` gives a.b and a.c, which may name a module or a
    name in module a (the caller looks for the longest prefix that is a module)."""
    here = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                yield node, f"{source}.{alias.name}"


def _without_docstrings(tree: ast.Module) -> ast.Module:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:]
    return tree


def normalised_digest(source: str | bytes) -> str:
    """sha256 of a module's code: its AST without docstrings, without positions."""
    return _tree_digest(ast.parse(source))


def _tree_digest(tree: ast.Module) -> str:
    tree = _without_docstrings(tree)  # in place
    return hashlib.sha256(ast.dump(tree, include_attributes=False).encode("utf-8")).hexdigest()


def _discovers(tree: ast.Module) -> tuple[str, ...]:
    """The module-level `DISCOVERS = ("pattern", ...)` (or one string), else ()."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "DISCOVERS"
                                                for t in node.targets):
            value = ast.literal_eval(node.value)
            return (value,) if isinstance(value, str) else tuple(value)
    return ()


def _name_of(path: Path, package_dir: Path) -> str:
    parts = path.relative_to(package_dir.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _scan(source: bytes, name: str, is_package: bool) -> dict:
    """What a module's source says: its code digest, the dotted names it imports (import_targets)
    and its DISCOVERS patterns; a function of the source and the module's name alone."""
    tree = ast.parse(source)
    imports = sorted({t for _, t in import_targets(tree, name, is_package)})
    return {"imports": imports, "discovers": list(_discovers(tree)), "digest": _tree_digest(tree)}


class CodeDigests:
    """The code digests of one checkout's package, each module read and parsed once per process.
    `cache`: a folder of each module's scan keyed by the sha256 of its source (with its name, the
    Python version and this format), so that a later process (a cluster job's Snakemake, the next
    run) reads a file instead of parsing: an edited module has another key, so an entry is never
    stale, and any process may write one (atomically)."""

    FORMAT = 1

    def __init__(self, package_dir: Path = PACKAGE_DIR, cache: str | os.PathLike | None = None):
        self.package_dir = Path(package_dir)
        self.package = self.package_dir.name
        self.cache = Path(cache) if cache else None
        self._records: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._closures: dict[str, tuple[str, ...]] = {}
        self._jobs: dict[str, str] = {}

    def _scanned(self, name: str, path: Path) -> dict:
        source = path.read_bytes()
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        key = hashlib.sha256(f"{self.FORMAT}\0{version}\0{name}\0".encode() + source).hexdigest()
        entry = self.cache / f"{key}.json" if self.cache else None
        if entry is not None and entry.is_file():
            try:
                return json.loads(entry.read_text(encoding="utf-8"))
            except ValueError:
                pass  # unreadable: scanned again and rewritten
        scan = _scan(source, name, path.name == "__init__.py")
        if entry is not None:
            entry.parent.mkdir(parents=True, exist_ok=True)
            tmp = entry.with_name(f"{entry.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(scan) + "\n", encoding="utf-8")
            os.replace(tmp, entry)
        return scan

    def record(self, name: str) -> tuple[str, tuple[str, ...]]:
        """(code digest, the project modules it imports or discovers) of module `name`."""
        if name not in self._records:
            path = module_file(name, self.package_dir)
            if path is None:
                raise ValueError(f"{name!r} is not a module of {self.package_dir}")
            scan = self._scanned(name, path)
            imported = set()
            for target in scan["imports"]:
                while target and module_file(target, self.package_dir) is None:
                    target = target.rpartition(".")[0]
                if target:
                    imported.add(target)
            for pattern in scan["discovers"]:
                imported |= {_name_of(found, self.package_dir) for found in path.parent.glob(pattern) if found.is_file()}
            # the packages that hold it run their __init__ first
            parts = name.split(".")
            imported |= {".".join(parts[:i]) for i in range(1, len(parts))}
            imported.discard(name)
            self._records[name] = (scan["digest"], tuple(sorted(imported)))
        return self._records[name]

    def closure(self, module: str) -> tuple[str, ...]:
        """`module` and every project module it imports, transitively, sorted."""
        if module not in self._closures:
            seen, todo = {module}, [module]
            while todo:
                for found in self.record(todo.pop())[1]:
                    if found not in seen:
                        seen.add(found)
                        todo.append(found)
            self._closures[module] = tuple(sorted(seen))
        return self._closures[module]

    def modules_digest(self, modules) -> str:
        """sha256 over the modules' names and code digests, in name order."""
        h = hashlib.sha256()
        for name in sorted(modules):
            h.update(f"{name}\0{self.record(name)[0]}\n".encode("utf-8"))
        return h.hexdigest()

    def job_code(self, function: str) -> str:
        """The digest of the code a rule's job runs: `function` ("module:function" of the package,
        as in params.function), its module's closure and the dispatcher's."""
        if function not in self._jobs:
            module = f"{self.package}.{function.partition(':')[0]}"
            dispatcher = f"{self.package}.{DISPATCHER.partition('.')[2]}"
            self._jobs[function] = self.modules_digest(set(self.closure(module)) | set(self.closure(dispatcher)))
        return self._jobs[function]

    def job_params(self, function: str) -> dict:
        """A rule's `params: **job_params("module:run_<rule>")`: the function the job runs and the
        digest of its code, as a param function: computed when a job of the rule is planned, not
        when the rule is defined."""
        return {"function": function, "code": lambda wildcards: self.job_code(function)}

    def writers(self, paths, rules, results: str) -> dict[str, dict]:
        """The provenance's code: each of `paths` (relative to `results`) -> the rule that writes it
        and the digest of its job's code. `rules`: Snakemake's rules (`workflow.rules`); a path no
        rule writes (a file shipped under resources/) is left out."""
        out = {}
        for path in paths:
            found = [rule for rule in rules if "function" in rule.params.keys() and rule.is_producer(path)]
            if len(found) > 1:
                raise ValueError(f"{path}: written by {len(found)} rules ({', '.join(r.name for r in found)})")
            if found:
                out[os.path.relpath(path, results)] = {"rule": found[0].name,
                                                       "code": self.job_code(found[0].params.function)}
        return out


_CHECKOUT = CodeDigests()


def job_code(function: str) -> str:
    """The digest of the code of `function`'s jobs in this checkout (no folder cache)."""
    return _CHECKOUT.job_code(function)
