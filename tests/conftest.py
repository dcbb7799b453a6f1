"""Test-session environment: everything offline, before any test module imports litellm/datasets."""

import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_THREAD_LIMIT", "1")


@pytest.fixture
def compose_eval():
    """Compose ``configs/eval.yaml`` with overrides (tests/hydra_compose.py: the one composition)."""
    # local: Hydra loads in ~0.3 s, which the library's tests never need
    from hydra_compose import compose_eval

    return compose_eval
