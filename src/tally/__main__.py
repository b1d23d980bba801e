"""``python -m tally``: the ``tally`` command, as the installed script runs it (``tally.cli``)."""

import sys

from tally.cli import main

sys.exit(main())
