"""``python -m robot_ik_nn.cli``: the same as ``robot-ik-nn``."""

import sys

from . import main

if __name__ == "__main__":  # importing it (pkgutil.walk_packages) runs nothing
    sys.exit(main())
