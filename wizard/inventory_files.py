"""Files an inventory names that must exist before fabwiz connects with it.

`parse_inventory` checks the shape of an inventory and resolves its paths; it does not look at
the disk, so an example inventory (examples/fabric.yaml, `~/.ssh/id_ed25519`) loads on any
machine, in tests too. A command that is about to connect calls `require_identity_files` on the
loaded inventory: a missing SSH key is then one clear inventory error naming the file, the nodes
that use it and what to do, before any connection is tried (rather than an asyncssh "No such
file" per node in the middle of a sweep).
"""

from __future__ import annotations

from pathlib import Path

from wizard.errors import InventoryError
from wizard.inventory import Inventory


def require_identity_files(inv: Inventory) -> None:
    """Raise InventoryError when an `identity_file` of a node does not exist (or is not a
    file). One error names every node that shares the missing file."""
    missing: dict[str, list[tuple[int, str]]] = {}
    for i, node in enumerate(inv.nodes):
        path = node.identity_file
        if path is not None and not Path(path).is_file():
            missing.setdefault(path, []).append((i, node.name))
    if not missing:
        return
    path, users = next(iter(missing.items()))
    names = ", ".join(name for _, name in users)
    what = "does not exist" if not Path(path).exists() else "is not a file"
    more = len(missing) - 1
    raise InventoryError(
        f"the SSH identity file {path} {what} (used by {names})",
        path=str(inv.path),
        field=f"nodes.{users[0][0]}.identity_file",
        hint=(
            "fix identity_file (on the node or under defaults:) to the private key that logs "
            f"in to {names}, or create one: ssh-keygen -t ed25519 -f {path} and "
            f"ssh-copy-id -i {path}.pub to each node"
            + (f"; {more} more missing identity file(s) after this one" if more else "")
        ),
    )


__all__ = ["require_identity_files"]
