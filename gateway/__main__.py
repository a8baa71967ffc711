"""`python -m gateway`: the same as the `rolecall` command."""

from gateway.cli import main

raise SystemExit(main())
