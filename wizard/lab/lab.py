"""The Lab: a scenario brought to life on 127.0.0.1.

Builds the world from a scenario, starts one SSH server per node and one RouterOS API server
per switch, and writes into a folder everything a client needs: the inventory,
the client key `id_ed25519`, a `known_hosts` with every node's host key, and one password file
per switch (mode 0600). Used in-process by tests and `fabwiz demo`, and in the foreground by
`fabwiz lab`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import asyncssh
import yaml

from wizard.lab import scenarios as scenario_mod
from wizard.lab import state as lab_state
from wizard.lab.control import ControlServer, Dispatcher
from wizard.lab.hands import Hands
from wizard.lab.hostcmds import Host
from wizard.lab.perftest import Registry
from wizard.lab.scenarios import Scenario
from wizard.lab.sshd import NodeServer
from wizard.lab.switchport import have_routeros
from wizard.lab.world import World
from wizard.schema import dump

LOCALHOST = "127.0.0.1"
REBOOT_SECONDS = 45.0
TOKEN_FILE = "control.token"  # noqa: S105 - a file name, not a secret
PORTS_FILE = "lab-ports.json"  # simulated time a node takes to come back from `reboot`


def _write_private(path: Path, data: bytes | str) -> None:
    raw = data.encode() if isinstance(data, str) else data
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(raw)
    path.chmod(0o600)


def _read_secret(path: Path, default: str | None = None) -> str:
    """A secret kept from a previous run of the lab in this folder, or a new one."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        text = ""
    return text or default or secrets.token_urlsafe(12)


MARKER = ".fabwiz-lab"  # in a folder the lab created: its keys may be reused on a restart


def claim_private_dir(directory: Path) -> Path:
    """The folder the lab keeps its keys and secrets in. One it creates (0700, marked) or
    created before (marked, ours, private) is used as is; any other (a shared folder such as
    the system temp folder) is never chmodded nor its files reused: a fresh private folder is
    made inside it."""
    if not directory.exists():
        directory.mkdir(parents=True, mode=0o700)
        (directory / MARKER).write_text("fabwiz lab folder\n")
        return directory
    st = directory.stat()
    mine = st.st_uid == os.getuid() and not st.st_mode & 0o077
    if (directory / MARKER).is_file() and mine:
        return directory
    fresh = Path(tempfile.mkdtemp(prefix="fabwiz-lab-", dir=directory))  # 0700, new
    (fresh / MARKER).write_text("fabwiz lab folder\n")
    return fresh


class Lab:
    """A running lab. `async with Lab("crs804-three-bugs") as lab: ...`

    The lab runs `time_scale` times faster than life, or on the clock of the `world` it is
    given (a test builds one on a `ManualClock` and advances it).
    """

    def __init__(
        self,
        scenario: str | Scenario = "healthy-4node-crs804",
        *,
        directory: str | Path | None = None,
        time_scale: float = 1.0,
        user: str = "fabwiz",
        world: World | None = None,
        state_file: str | Path | None = None,
        control: bool = True,
        inventory_name: str = "inventory.yaml",
    ) -> None:
        self.state_file = Path(state_file) if state_file is not None else None
        self.resumed = False
        if world is None and self.state_file is not None and self.state_file.exists():
            world, saved = lab_state.load(self.state_file, time_scale=time_scale)
            self.resumed = True
            if saved is not None and not isinstance(scenario, Scenario):
                scenario = Scenario.from_data(saved)
        self.scenario = scenario if isinstance(scenario, Scenario) else scenario_mod.load(scenario)
        self.time_scale = time_scale
        self.user = user
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if directory is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="fabwiz-lab-")
            directory = self._tmp.name
            (Path(directory) / MARKER).write_text("fabwiz lab folder\n")
        self.directory = Path(directory)
        self._world = world or scenario_mod.build_world(self.scenario, time_scale=time_scale)
        self.hands = Hands(self._world)
        self.hands.power_listeners.append(self._power_changed)
        self.dispatch = Dispatcher(self._world, self.hands)
        self.control: ControlServer | None = ControlServer(self.dispatch) if control else None
        self.perf = Registry()
        self.hosts: dict[str, Host] = {}
        self.ssh: dict[str, NodeServer] = {}
        self.api: dict[str, Any] = {}
        self.ssh_password = secrets.token_urlsafe(12)
        self.switch_passwords: dict[str, str] = {}
        self.client_key: asyncssh.SSHKey | None = None
        self.inventory_path = self.directory / inventory_name
        self.key_path = self.directory / "id_ed25519"
        self.known_hosts_path = self.directory / "known_hosts"
        self.control_address: str | None = None
        self.control_token_file: str | None = None
        self._saving = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._ticker: asyncio.Task[None] | None = None
        self.started = False

    @property
    def world(self) -> World:
        return self._world

    @world.setter
    def world(self, world: World) -> None:
        """Swap the world before `start()` (a resumed session's saved lab state)."""
        if self.started:
            raise RuntimeError("cannot swap the world of a running lab")
        self._world = world
        self.hands.world = world
        self.dispatch.world = world

    # --- life cycle ----------------------------------------------------------------------------

    async def __aenter__(self) -> Lab:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        if self.started:
            return
        try:
            await self._start()
        except BaseException:
            self.started = True  # let stop() close whatever did start
            await self.stop()
            raise

    async def _start(self) -> None:
        self.directory = claim_private_dir(self.directory)
        self.key_path = self.directory / "id_ed25519"
        self.known_hosts_path = self.directory / "known_hosts"
        keys = self.directory / "hostkeys"
        keys.mkdir(exist_ok=True)
        # a restarted lab (same folder) keeps its keys and, when free, its ports: it looks like
        # the same cluster to a wizard that was talking to it
        previous = self._previous_ports()
        self.client_key = self._key(self.key_path, comment="fabwiz-lab")
        pub = self.client_key.export_public_key().decode()
        known: list[str] = []
        for name, node in self.world.nodes.items():
            host = Host(self.world, node, self.perf, self.user, on_reboot=self._reboot_request)
            self.hosts[name] = host
            host_key = self._key(keys / name)
            srv = NodeServer(
                host,
                host_key=host_key,
                client_public_key=pub,
                user=self.user,
                password=self.ssh_password,
            )
            port = await self._listen(srv.start, previous.get(f"ssh:{name}", 0))
            self.ssh[name] = srv
            known.append(f"[{LOCALHOST}]:{port} {host_key.export_public_key().decode().strip()}")
        if have_routeros():
            from wizard.lab.routeros.server import RouterOsServer

            for name, sw in self.world.switches.items():
                password = _read_secret(self.directory / f"switch-{name}.password")
                self.switch_passwords[name] = password
                api = RouterOsServer(sw, users={self.user: password})  # type: ignore[arg-type]
                await self._listen(api.start, previous.get(f"api:{name}", 0))
                self.api[name] = api
        _write_private(self.key_path, self.client_key.export_private_key())
        (self.directory / "id_ed25519.pub").write_text(pub)
        self.known_hosts_path.write_text("\n".join(known) + "\n")
        for name, password in self.switch_passwords.items():
            _write_private(self.directory / f"switch-{name}.password", password + "\n")
        if self.control is not None:
            self.control.token = _read_secret(self.directory / TOKEN_FILE, self.control.token)
            port = await self._listen(self.control.start_port, previous.get("control", 0))
            self.control_address = f"{LOCALHOST}:{port}"
            self.control_token_file = TOKEN_FILE
            _write_private(self.directory / self.control_token_file, self.control.token + "\n")
        if self.state_file is not None:
            self.world.on_change.append(self._changed)
            self.save_state()
        self.write_inventory()
        ports = {f"ssh:{n}": s.port for n, s in self.ssh.items()}
        ports.update({f"api:{n}": int(a.port) for n, a in self.api.items()})
        if self.control is not None:
            ports["control"] = self.control.port
        (self.directory / PORTS_FILE).write_text(json.dumps(ports) + "\n")
        self._ticker = asyncio.create_task(self._tick())
        self.started = True

    @staticmethod
    def _key(path: Path, comment: str | None = None) -> asyncssh.SSHKey:
        if path.exists():
            try:
                return asyncssh.read_private_key(str(path))
            except (OSError, asyncssh.KeyImportError):
                pass
        key = asyncssh.generate_private_key("ssh-ed25519", comment=comment)
        _write_private(path, key.export_private_key())
        return key

    def _previous_ports(self) -> dict[str, int]:
        try:
            data = json.loads((self.directory / PORTS_FILE).read_text())
        except (OSError, ValueError):
            return {}
        return {str(k): int(v) for k, v in data.items()} if isinstance(data, dict) else {}

    @staticmethod
    async def _listen(start: Callable[[str, int], Awaitable[int]], port: int) -> int:
        if port:
            try:
                return await start(LOCALHOST, port)
            except OSError:
                pass
        return await start(LOCALHOST, 0)

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        for t in list(self._tasks):
            t.cancel()
        if self.control is not None:
            await self.control.stop()
        if self.state_file is not None and self.started:
            self.save_state()
            self.world.on_change[:] = [f for f in self.world.on_change if f != self._changed]
        for srv in self.ssh.values():
            await srv.stop()
        for api in self.api.values():
            await api.stop()
        self.ssh.clear()
        self.api.clear()
        self.started = False
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    async def _tick(self) -> None:
        """Keep the counters (and the switches' traffic and cpu-load) moving between reads."""
        while True:
            await asyncio.sleep(0.25)
            for sw in self.world.switches.values():
                trained = getattr(sw, "trained", None)
                if trained is not None and trained():  # legs that finished training: link-ok
                    self.world.learn_macs()
                    sw.recompute()  # type: ignore[attr-defined]
            if self.world.traffic is not None:
                self.world.traffic.settle()

    # --- state ---------------------------------------------------------------------------------

    def _changed(self, what: str) -> None:
        self.save_state()

    def save_state(self) -> None:
        """Write the world to the state file (after every change, so a kill loses nothing)."""
        if self.state_file is None or self._saving:
            return
        self._saving = True
        try:
            lab_state.save(self.world, self.state_file, dump(self.scenario))
        finally:
            self._saving = False

    # --- power ------------------------------------------------------------------------------------

    def _power_changed(self, node: str, on: bool) -> None:
        if not on and node in self.ssh:
            self.ssh[node].drop_connections()

    def _reboot_request(self, node: str, kind: str) -> None:
        task = asyncio.get_running_loop().create_task(self._reboot(node, kind))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _reboot(self, node: str, kind: str) -> None:
        await asyncio.sleep(0.05)  # let the `reboot` command's session see its exit status
        self.hands.power_off(node)
        if kind == "poweroff":
            return
        await self.world.sleep(REBOOT_SECONDS)
        self.hands.power_on(node)

    # --- what clients need ------------------------------------------------------------------------

    def node_port(self, node: str) -> int:
        return self.ssh[node].port

    def switch_port(self, switch: str) -> int:
        return int(self.api[switch].port)

    def _rel(self, path: Path) -> str:
        """`path` as the inventory names it: relative to the inventory's own folder."""
        return os.path.relpath(path, self.inventory_path.parent)

    def inventory(self) -> dict[str, Any]:
        inv: dict[str, Any] = {"name": f"lab-{self.scenario.name}"}
        if self.control_address:
            token = self._rel(self.directory / (self.control_token_file or TOKEN_FILE))
            inv["lab"] = {"control": self.control_address, "token_file": token}
        inv["defaults"] = {
            "user": self.user,
            "identity_file": self._rel(self.key_path),
            "known_hosts": self._rel(self.known_hosts_path),
        }
        inv["nodes"] = [
            {
                "name": name,
                "host": LOCALHOST,
                "port": srv.port,
                "user": self.user,
                "identity_file": self._rel(self.key_path),
                "known_hosts": self._rel(self.known_hosts_path),
                **(
                    {"job_container": self.world.facts.containers[name].name}
                    if name in self.world.facts.containers
                    else {}
                ),
                **(
                    {"job_process": self.world.facts.processes[name].name}
                    if name in self.world.facts.processes
                    else {}
                ),
            }
            for name, srv in self.ssh.items()
        ]
        inv["switches"] = [
            {
                "name": name,
                "model": self.world.switch_models[name],
                "host": LOCALHOST,
                "port": api.port,
                "tls": False,
                "user": self.user,
                "password": {"file": self._rel(self.directory / f"switch-{name}.password")},
                "management_ports": ["ether1"],
            }
            for name, api in self.api.items()
        ]
        cabling = self.world.planned_cabling or self.world.current_cabling()
        if cabling:
            inv["cabling"] = cabling
        inv["addressing"] = {"pattern": "10.9.{rail}.{host}/24"}
        return inv

    def write_inventory(self) -> Path:
        text = yaml.safe_dump(self.inventory(), sort_keys=False)
        self.inventory_path.write_text(
            f"# written by the fabwiz lab ({self.scenario.name}); valid while it runs\n" + text
        )
        return self.inventory_path


async def start_lab(
    scenario: str | Scenario = "healthy-4node-crs804",
    *,
    directory: str | Path | None = None,
    time_scale: float = 1.0,
    state_file: str | Path | None = None,
) -> Lab:
    """Build and start a lab; stop it with `await lab.stop()`."""
    lab = Lab(scenario, directory=directory, time_scale=time_scale, state_file=state_file)
    await lab.start()
    return lab
