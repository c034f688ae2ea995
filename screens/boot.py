"""`fabwiz`, the console script: the start-up caches go in first, so that every module the
command imports after them (click, asyncio, asyncssh, the checks...) is found and read from one
file (`screens.importcache`) and their dataclasses and regular expressions come compiled
(`screens.codecache`); then the command line runs (`screens.cli`)."""

from __future__ import annotations


def main() -> None:
    from screens import importcache

    importcache.install()
    from screens import codecache

    codecache.install()  # before click, which compiles its regular expressions as it loads
    from screens.cli import main as cli_main

    cli_main()
