import sys

from drifttui.cli import main

sys.exit(main())
