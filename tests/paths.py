"""Where things are, for tests in any folder of tests/: the checkout, tests/, its fixtures."""
import os

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
FIXTURES = os.path.join(TESTS, "fixtures")
