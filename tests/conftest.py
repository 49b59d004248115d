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


def shared_data(*parts) -> Path:
    path = SHARED.joinpath("data", *parts)
    if not path.exists():
        pytest.skip(f"{path} not present (../shared/data is beside the checkout in CI)")
    return path
