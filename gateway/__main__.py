"""`python -m gateway`: the same as the `rolecall` command."""

from gateway.cli.main import main

raise SystemExit(main())
