"""``python -m flows``: the ``faceoff`` command line, as the installed script runs it."""

from flows.cli.app import main

main()
