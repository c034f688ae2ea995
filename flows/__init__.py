"""fabwiz domain: one module per check, the expectations table, the bisection flow as data.

Imports neither textual nor rich (STYLE.md rule 1).
"""
