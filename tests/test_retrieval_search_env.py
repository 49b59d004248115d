"""The GPU environment is the CPU one with faiss-gpu in place of faiss-cpu; the Makefile can build it."""
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def pip_pins(path):
    env = yaml.safe_load(path.read_text())
    return [p.lower() for d in env["dependencies"] if isinstance(d, dict) for p in d["pip"]], env


def test_gpu_env_equals_cpu_env_but_faiss():
    cpu, cpu_env = pip_pins(ROOT / "envs" / "workflow.yaml")
    gpu, gpu_env = pip_pins(ROOT / "envs" / "workflow-gpu.yaml")
    assert "faiss-cpu==1.15.1" in cpu and "faiss-gpu==1.15.1" in gpu
    assert [p.replace("faiss-cpu", "faiss-gpu") for p in cpu] == gpu
    assert [d for d in cpu_env["dependencies"] if isinstance(d, str)] == \
        [d for d in gpu_env["dependencies"] if isinstance(d, str)]
    assert gpu_env["name"] != cpu_env["name"]


def test_makefile_has_a_gpu_setup():
    text = (ROOT / "Makefile").read_text()
    target = re.search(r"^setup-gpu:\n((?:\t.*\n)+)", text, re.M)
    assert target, "no setup-gpu target"
    assert "faiss-gpu" in target.group(1) and "uninstall" in target.group(1)
    assert "setup-gpu" in re.search(r"^\.PHONY:.*$", text, re.M).group(0)
