import sys

from engine.lab.cli.main import main

try:
    sys.exit(main())
except BrokenPipeError:  # the reader stopped early (e.g. `| head`): not an error
    sys.exit(0)
