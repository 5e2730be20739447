"""`python -m router` is the `router` command."""

from router.cli.main import main

main()
