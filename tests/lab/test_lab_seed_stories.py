"""The seeds' stories, told through the lab's real SSH and RouterOS API servers.

Seed 000 (CRS804, three bugs): ~9.5 Gb/s whatever the QP count with the switch CPU busy and NCCL
at 0.46 GB/s; removing the split cage exposes the QoS stall; turning QoS off exposes the
duplicate addresses (frames vanish); unique addresses give 109 Gb/s and 23.3 GB/s. Seed 003
(two CRS812): 4.47 Gb/s across the blocked ISL, 4.85 Gb/s for both halves through the second
bridge, 109 after the fixes.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncssh
import pytest
import yaml

from wizard.lab import Lab
from wizard.lab.world import healthy_netplan

pytestmark = pytest.mark.lab
librouteros = pytest.importorskip("librouteros")

NCCL = (
    "mpirun -np 4 -H spark1:1,spark2:1,spark3:1,spark4:1 -x NCCL_IB_ROCE_VERSION_NUM=2 "
    "~/nccl-tests/build/all_reduce_perf -b 256M -e 1G -f 2 -g 1 -n 5 -w 1"
)


@asynccontextmanager
async def sessions(lab: Lab) -> AsyncIterator[dict[str, asyncssh.SSHClientConnection]]:
    opts: dict[str, Any] = {
        "username": "fabwiz",
        "client_keys": [str(lab.key_path)],
        "known_hosts": str(lab.known_hosts_path),
    }
    conns = {
        n: await asyncssh.connect("127.0.0.1", lab.node_port(n), **opts) for n in lab.world.nodes
    }
    try:
        yield conns
    finally:
        for c in conns.values():
            c.close()


def api_for(lab: Lab, switch: str) -> Any:
    inv = yaml.safe_load(lab.inventory_path.read_text())
    sw = next(s for s in inv["switches"] if s["name"] == switch)
    password = (lab.directory / sw["password"]["file"]).read_text().strip()
    return librouteros.connect("127.0.0.1", sw["user"], password, port=sw["port"], timeout=10)


async def rail_test(
    conns: dict[str, asyncssh.SSHClientConnection],
    src: str,
    dst: str,
    dst_ip: str,
    *,
    dev: str = "rocep1s0f0",
    qps: int = 1,
) -> tuple[int, str]:
    """One ib_write_bw pair (server on dst, client on src): exit status and client output."""
    cmd = f"ib_write_bw -d {dev} -x 3 -q {qps} -D 2 -F --report_gbits"
    server = await listening(conns[dst], cmd)
    r = await conns[src].run(f"{cmd} {dst_ip}")
    await server.wait()
    return r.exit_status or 0, str(r.stdout) + str(r.stderr)


async def listening(conn: asyncssh.SSHClientConnection, cmd: str) -> asyncssh.SSHClientProcess[str]:
    """An ib_write_bw server started over SSH, once it says it waits for its client (under
    `stdbuf -oL`: on a pipe its C library keeps the line until the run ends)."""
    server = await conn.create_process(f"stdbuf -oL {cmd}")
    while "Waiting for client to connect" not in await asyncio.wait_for(
        server.stdout.readline(), 10
    ):
        pass
    return server


def gbps(out: str) -> float:
    line = next(x for x in out.splitlines() if re.match(r"^ 65536\s", x))
    return float(line.split()[3])


def busbw(out: str) -> float:
    m = re.search(r"# Avg bus bandwidth\s*:\s*([0-9.]+)", out)
    assert m, out
    return float(m.group(1))


async def cpu_during_test(lab: Lab, conns: dict[str, asyncssh.SSHClientConnection]) -> int:
    """The switch's cpu-load read over the API while a rail test runs."""
    cmd = "ib_write_bw -d rocep1s0f0 -x 3 -D 60 -F --report_gbits"
    server = await listening(conns["spark4"], cmd)
    client = asyncio.create_task(conns["spark1"].run(f"{cmd} 10.9.1.4"))
    for _ in range(500):  # until the flow runs (the client connected)
        if lab.world.traffic.flows:
            break
        await asyncio.sleep(0.01)

    def read() -> int:
        api = api_for(lab, "crs804")
        try:
            return int(next(iter(api.path("system", "resource")))["cpu-load"])
        finally:
            api.close()

    load = await asyncio.to_thread(read)
    await client
    await server.wait()
    return load


def _fix_split_cage(lab: Lab) -> None:
    """Seed 000's first fix: the DD legs leave the management bridge; the chip offloads roce-br."""
    api = api_for(lab, "crs804")
    try:
        ports = api.path("interface", "bridge", "port")
        ids = [
            p[".id"]
            for p in ports
            if p["bridge"] == "bridge" and "qsfp56-dd" in str(p["interface"])
        ]
        ports.remove(*ids)
        logs = [str(e["message"]) for e in api.path("log")]
        assert any('activated on bridge "roce-br"' in m for m in logs)
    finally:
        api.close()


def _qos_off(lab: Lab) -> None:
    """Seed 000's second fix: the DD legs trust nothing and pause nothing."""
    api = api_for(lab, "crs804")
    try:
        qos = api.path("interface", "ethernet", "switch", "qos", "port")
        for q in list(qos):
            if "qsfp56-dd" in str(q["name"]):
                qos.update(**{".id": q[".id"], "trust-l3": "ignore", "pfc": "disabled"})
    finally:
        api.close()


async def test_seed_000_three_bugs_walk_the_seed_numbers() -> None:
    async with Lab("crs804-three-bugs", time_scale=20) as lab, sessions(lab) as conns:
        # 1. the opening symptom: ~9.5 Gb/s whatever the QP count, switch CPU busy, NCCL 0.46
        rc, out = await rail_test(conns, "spark1", "spark4", "10.9.1.4")
        assert rc == 0, out
        assert gbps(out) == pytest.approx(9.5, rel=0.02)
        rc, out = await rail_test(conns, "spark1", "spark4", "10.9.1.4", qps=8)
        assert rc == 0 and gbps(out) == pytest.approx(9.5, rel=0.02)
        assert await cpu_during_test(lab, conns) >= 50
        r = await conns["spark1"].run(NCCL)
        assert r.exit_status == 0, r.stderr
        assert busbw(str(r.stdout)) == pytest.approx(0.46, rel=0.05)

        # 2. the split cage fixed: the chip offloads, and the lossless QoS now stalls RDMA
        await asyncio.to_thread(_fix_split_cage, lab)
        rc, out = await rail_test(conns, "spark1", "spark4", "10.9.1.4")
        assert rc != 0 and "Failed status 12: wr_id 0 syndrom 0x81" in out
        assert await cpu_during_test(lab, conns) <= 5

        # 3. QoS off: spark1 -> spark4 runs at line rate, the duplicated nodes' frames vanish
        await asyncio.to_thread(_qos_off, lab)
        rc, out = await rail_test(conns, "spark1", "spark4", "10.9.1.4")
        assert rc == 0 and gbps(out) == pytest.approx(109.2, rel=0.01)
        before = lab.world.nodes["spark1"].rails[0].counters["tx_packets_phy"]
        rc, out = await rail_test(conns, "spark1", "spark2", "10.9.1.2")
        assert rc != 0 and "Failed status 12: wr_id 0 syndrom 0x81" in out
        assert lab.world.nodes["spark1"].rails[0].counters["tx_packets_phy"] > before
        r = await conns["spark1"].run(NCCL)
        assert r.exit_status != 0

        # 4. one subnet per rail, unique addresses (netplan): 109 Gb/s and 23.3 GB/s
        for name in ("spark2", "spark3"):
            node = lab.world.nodes[name]
            w = await conns[name].run(
                "sudo -n tee /etc/netplan/40-cx7.yaml", input=healthy_netplan(node.index)
            )
            assert w.exit_status == 0
            assert (await conns[name].run("sudo -n netplan apply")).exit_status == 0
        for dst, ip in (("spark2", "10.9.1.2"), ("spark3", "10.9.1.3")):
            rc, out = await rail_test(conns, "spark1", dst, ip)
            assert rc == 0 and gbps(out) == pytest.approx(109.2, rel=0.01)
        r = await conns["spark1"].run(NCCL)
        assert r.exit_status == 0
        assert busbw(str(r.stdout)) == pytest.approx(23.33, rel=0.03)


async def test_seed_003_six_nodes_4_47_and_4_85_to_109() -> None:
    async with Lab("crs812-six-node", time_scale=20) as lab, sessions(lab) as conns:
        # cross-switch over the campus detour (RSTP blocked the ISL): 4.47 Gb/s
        rc, out = await rail_test(conns, "spark1", "spark5", "10.9.1.5")
        assert rc == 0 and gbps(out) == pytest.approx(4.47, rel=0.02)
        # both halves of the MSI pair through the second bridge (CPU-forwarded): 4.85 in all.
        # -D 4: perftest counts what moved between its 1 s margins, so the two clients' start a
        # few ms apart stays out of the numbers (with -D 2 there is no margin: one flow alone at
        # the edges would read more)
        cmd = "ib_write_bw -d {dev} -x 3 -D 4 -F --report_gbits -p {port}"
        runs = []
        for dev, ip, port in (
            ("rocep1s0f0", "10.9.1.2", 18515),
            ("roceP2p1s0f0", "10.9.2.2", 18516),
        ):
            c = cmd.format(dev=dev, port=port)
            runs.append((await listening(conns["spark2"], c), c, ip))
        clients = [asyncio.create_task(conns["spark1"].run(f"{c} {ip}")) for _, c, ip in runs]
        outs = [await t for t in clients]
        for s, _, _ in runs:
            await s.wait()
        both = sum(gbps(str(r.stdout)) for r in outs)
        assert both == pytest.approx(4.85, rel=0.02)

        def fix(switch: str, action: Any) -> None:
            api = api_for(lab, switch)
            try:
                action(api)
            finally:
                api.close()

        def path_cost(api: Any) -> None:
            ports = api.path("interface", "bridge", "port")
            uplink = next(p for p in ports if p["interface"] == "ether1")
            ports.update(**{".id": uplink[".id"], "path-cost": 200000000})

        def one_bridge(api: Any) -> None:
            ports = api.path("interface", "bridge", "port")
            for p in list(ports):
                if p["bridge"] == "fabric":
                    ports.update(**{".id": p[".id"], "bridge": "bridge"})
            bridges = api.path("interface", "bridge")
            bridges.remove(*[b[".id"] for b in bridges if b["name"] == "fabric"])

        await asyncio.to_thread(fix, "crs812-b", path_cost)
        await asyncio.to_thread(fix, "crs812-a", one_bridge)
        for dst, ip, want in (("spark5", "10.9.1.5", 109.08), ("spark2", "10.9.1.2", 109.2)):
            rc, out = await rail_test(conns, "spark1", dst, ip)
            assert rc == 0 and gbps(out) == pytest.approx(want, rel=0.01), out
