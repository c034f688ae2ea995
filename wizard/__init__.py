"""fabwiz engine: model, inventory, transports, parsers, state machine, session log, the lab.

This package imports neither textual nor rich (STYLE.md rule 1); a test checks it.
"""

__version__ = "0.1.0"
