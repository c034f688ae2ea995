"""One module per check (STYLE.md "What a check looks like"); each exports `CHECK`.

`flows.registry.CHECKS` lists them in bisection order."""
