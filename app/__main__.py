"""`python -m app` is the `cipherd` command."""

from app.cli import main

main()
