"""Where the tests' data sits, for test modules at any depth under tests/.

Why a module: the test files live in folders that mirror the packages, so ``Path(__file__)``
means something different in each; goldens and fixtures stay in one place at the top of tests/.
"""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
GOLDEN = TESTS / "golden"
FIXTURES = TESTS / "fixtures"
