"""`python -m kiln ...`: see kiln.cli."""
import sys

from .cli import main

sys.exit(main())
