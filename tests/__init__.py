"""sitegen's tests.

Bytecode caches are written even where PYTHONDONTWRITEBYTECODE is set (as on the team's machines): without them
every run, and every xdist worker, compiles sitegen and rewrites the asserts of every test module again. This
package is imported before any conftest, so the setting covers sitegen's modules too. The __pycache__ folders are
ignored by git.
"""

import sys

sys.dont_write_bytecode = False
