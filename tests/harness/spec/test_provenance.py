"""A row names the commit that produced it: provenance reads the checkout's own HEAD.

Why a test: the module finds the checkout from its own file's place, so moving it deeper (as the
harness's rooms did) silently turned every row's ``git_sha`` into ``unknown``.
"""

import subprocess

import pytest
from locations import REPO

from evals.spec.provenance import versions


@pytest.mark.skipif(not (REPO / ".git").exists(), reason="not a git checkout")
def test_a_row_names_the_checkouts_commit():
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    assert versions().git_sha.removesuffix("-dirty") == head
