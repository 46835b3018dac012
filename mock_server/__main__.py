"""`python -m mock_server`: the same as the `platform-mock` command."""

import sys

from mock_server.cli import main

sys.exit(main())
