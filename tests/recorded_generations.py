"""SmolLM2's fusions for the prompts the settheory tests render, recorded once (tests/data/generations/)
and replayed as the workflow's generation cache, so that those tests never load the generator.

A recording is the workflow's own cache file (generator.GenerationCache: one JSON line per prompt,
`{"key": sha256 of the generator settings and the rendered prompt, "raw": SmolLM2's output,
"finished"}`): no prompt or article text. A changed prompt, article selection or generator setting
changes the keys, the run generates again, and `assert_all_replayed` fails, saying how to re-record:

    RECORD_GENERATIONS=1 .venv/bin/python -m pytest -q tests/settheory/test_workflow.py::test_outputs \
        "tests/test_single_probe_studies.py::test_runs_to_the_end[settheory]"

With RECORD_GENERATIONS=1 the runs start from an empty cache, SmolLM2 generates every fusion, and
the cache each run wrote replaces its recording (lines sorted by key, for readable diffs)."""
import json
import os
import shutil
from pathlib import Path

from workflow_scripts.generator import spec_digest

RECORDINGS = Path(__file__).resolve().parent / "data" / "generations"
RECORDING = os.environ.get("RECORD_GENERATIONS", "").strip().lower() in ("1", "true", "yes")
RERECORD = ('RECORD_GENERATIONS=1 .venv/bin/python -m pytest -q tests/settheory/test_workflow.py::test_outputs '
            '"tests/test_single_probe_studies.py::test_runs_to_the_end[settheory]"')


def recording(name: str) -> Path:
    return RECORDINGS / f"{name}.jsonl"


def cache_file(cache_dir: Path, generator_name: str, generator_spec: dict) -> Path:
    """Where the settheory_samples job reads and appends its generator's cache (SettheoryPlan.generation_cache)."""
    return Path(cache_dir) / f"{generator_name}-{spec_digest(generator_spec)}.jsonl"


def replay(name: str, cache: Path) -> None:
    """Place the recording `name` as the run's generation cache (nothing when re-recording: the run
    generates every fusion into an empty cache)."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    if not RECORDING:
        shutil.copyfile(recording(name), cache)


def assert_all_replayed(name: str, report: dict, cache: Path) -> None:
    """The sample set's report (reports/settheory/<set>.json) says every fusion came from the cache
    and the generator was never loaded; when re-recording, save the run's cache as the recording."""
    counts = report["counts"]
    if RECORDING:
        assert counts["fusions_generated"] > 0, f"RECORD_GENERATIONS=1, but the run generated nothing: {counts}"
        lines = sorted(cache.read_text(encoding="utf-8").splitlines(), key=lambda line: json.loads(line)["key"])
        recording(name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        return
    assert counts["fusions_generated"] == 0 and counts["fusions_cached"] == counts["fusions_requested"] > 0, (
        f"{counts['fusions_generated']} of {counts['fusions_requested']} fusions were not in the recorded "
        f"generations {recording(name).relative_to(RECORDINGS.parents[2])} and were generated with SmolLM2: the "
        f"prompt, the windows or the generator settings changed. Re-record the fixtures:\n    {RERECORD}")
    assert "origin" not in report["generator"], "the generator was loaded although every fusion was cached"
