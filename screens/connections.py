"""A cluster's connections: the nodes' SSH and the switches' API clients, from the inventory, and
what the session log says about trusting them.

`open_wizard` (`screens/compose.py`) builds them for every way of running the wizard. The TUI
can begin them before it builds the engine (`begin`): the nodes' handshakes and the switches'
logins are under way while the first screen is painted and the engine's modules load, as
`fabwiz check` starts its handshakes before it loads its checks. `open_wizard` then takes them
over (`EarlyConnections`): the sweep waits for those handshakes, one try per target, as it waits
for its own. This module loads no more than the transports and the inventory.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from wizard.events import Event, Note
from wizard.inventory import Inventory, load_inventory, resolve_password
from wizard.transports.routeros import RouterOsTarget, RouterOsTransport
from wizard.transports.ssh import SshTarget, SshTransport

if TYPE_CHECKING:
    from wizard.sweep import Sweeper


def known_switch_certs() -> Path:
    """Where API-SSL certificates accepted on first use are kept (like known_hosts)."""
    import platformdirs

    return Path(platformdirs.user_config_dir("fabwiz")) / "known_switch_certs"


def transports(
    inv: Inventory, accept_new_host_keys: bool, prompt: Callable[[str], str] | None
) -> tuple[SshTransport, dict[str, RouterOsTransport], list[str]]:
    """The inventory's transports (nothing connected yet) and the switch passwords they use."""
    ssh = SshTransport(
        [SshTarget.from_spec(n) for n in inv.nodes], accept_new_host_keys=accept_new_host_keys
    )
    switches: dict[str, RouterOsTransport] = {}
    secrets: list[str] = []
    for spec in inv.switches:
        password = resolve_password(spec, prompt=prompt)
        if password:
            secrets.append(password)
        tr = RouterOsTransport(RouterOsTarget.from_spec(spec, password))
        tr.known_certs = known_switch_certs()
        tr.accept_new_certs = accept_new_host_keys  # as for SSH host keys: only when asked
        switches[spec.name] = tr
    return ssh, switches, secrets


@dataclass
class EarlyConnections:
    """Transports whose handshakes and logins began before the session log was open."""

    inventory: Inventory
    ssh: SshTransport
    switches: dict[str, RouterOsTransport]
    secrets: list[str]
    # host keys and certificates accepted before the log was open: said once it is
    said: list[str] = field(default_factory=list)
    adopted: bool = False  # a wizard took them over: it closes them
    released: bool = False  # closed before a wizard took them over
    # the preflight's sweep, begun with them (`begin(prefetch=True)`): the wizard's sweeper
    sweeper: Sweeper | None = None

    async def opened(self, timeout: float) -> bool:
        """Wait until every handshake and login `begin` began has ended (either way), at most
        `timeout` seconds in all. True when they all have."""
        waits = [
            self.ssh.started(timeout),
            *(api.started(timeout) for api in self.switches.values()),
        ]
        return all(await asyncio.gather(*waits))

    async def release(self) -> None:
        """Close them unless a wizard took them over (the app closed before its engine, or the
        engine could not be built). Once is enough: a second call does nothing."""
        if self.adopted or self.released:
            return
        self.released = True
        if self.sweeper is not None:
            self.sweeper.cancel_prefetch()
        await self.ssh.close()
        for api in self.switches.values():
            await api.close()


def begin(
    inventory: Path,
    *,
    accept_new_host_keys: bool,
    prompt: Callable[[str], str] | None,
    prefetch: bool = False,
) -> EarlyConnections:
    """Load and check the inventory, and begin every node's handshake and every switch's login
    (in the background, on the running loop); with `prefetch`, the preflight's read-only sweep
    too, on those connections (`preflight_sweeper`). Raises what `open_wizard` would raise for
    the same inventory (FabwizError)."""
    from flows.expectations import validate_overrides
    from wizard.inventory_files import require_identity_files

    inv = load_inventory(inventory, expectations=validate_overrides)
    require_identity_files(inv)  # about to connect: a missing key is an inventory error
    ssh, switches, secrets = transports(inv, accept_new_host_keys, prompt)
    early = EarlyConnections(inv, ssh, switches, secrets)
    ssh.on_host_key = lambda node, pattern, fp: early.said.append(_host_key_text(node, pattern, fp))
    for api in switches.values():
        api.on_new_cert = lambda switch, where, fp: early.said.append(_cert_text(switch, where, fp))
    ssh.start(n.name for n in inv.nodes)
    for api in switches.values():
        api.start()
    if prefetch:
        early.sweeper = preflight_sweeper(inv, ssh, switches)
    return early


def preflight_sweeper(
    inv: Inventory, ssh: SshTransport, switches: dict[str, RouterOsTransport]
) -> Sweeper:
    """The wizard's sweeper with the preflight's sweep begun: every check's probes (from the
    probe manifest: the checks are not loaded yet) and the engine's own. The preflight takes it
    over when it asks for the same probes (its events are said then, in the session log); a
    stale manifest costs a second sweep, never a probe."""
    from flows.probe_manifest import probes_for
    from wizard.drain import ENGINE_PROBES
    from wizard.sweep import Sweeper

    sweeper = Sweeper(
        ssh=ssh,
        nodes=[n.name for n in inv.nodes],
        switches=switches,
        tool_paths={n.name: n.tools for n in inv.nodes if n.tools},
    )
    probes = {p.name: p for p in (*ENGINE_PROBES, *probes_for(traffic=True))}
    sweeper.prefetch(list(probes.values()))
    return sweeper


def trust_notes(
    emit: Callable[[Event], None],
    ssh: SshTransport,
    switches: dict[str, RouterOsTransport],
    said: list[str] | None = None,
) -> None:
    """Said once per session, and kept in its log: passwords over plaintext, the anonymous
    api-ssl opt-in, and every SSH host key and API-SSL certificate accepted on first use (also
    those accepted before the log was open, `said`)."""
    from wizard.transports.routeros_tls import trust_warnings

    for text in trust_warnings(tr.target for tr in switches.values()):
        emit(Note(level="warn", text=text, step=""))
    for text in said or ():
        emit(Note(level="warn", text=text, step=""))

    def new_host_key(node: str, pattern: str, fp: str) -> None:
        emit(Note(level="warn", text=_host_key_text(node, pattern, fp), step=""))

    ssh.on_host_key = new_host_key

    def new_cert(switch: str, where: str, fp: str) -> None:
        emit(Note(level="warn", text=_cert_text(switch, where, fp), step=""))

    for tr in switches.values():
        tr.on_new_cert = new_cert


def _host_key_text(node: str, pattern: str, fp: str) -> str:
    return f"{node}: new SSH host key of {pattern} accepted and recorded in known_hosts: {fp}"


def _cert_text(switch: str, where: str, fp: str) -> str:
    return f"{switch}: API-SSL certificate of {where} accepted on first use and pinned: {fp}"
