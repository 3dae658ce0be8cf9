"""`python -m mock_server` is the same program as `mock-server`."""

import sys

from .cli import main

sys.exit(main())
