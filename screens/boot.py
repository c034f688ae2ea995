"""`fabwiz`, the console script: the import cache goes in first, so that every module the
command imports after it (click, asyncio, asyncssh, the checks...) is found and read from it
(`screens.importcache`), then the command line runs (`screens.cli`)."""

from __future__ import annotations


def main() -> None:
    from screens import importcache

    importcache.install()
    from screens.cli import main as cli_main

    cli_main()
