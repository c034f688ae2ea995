"""The checks' rules for one pasted output, and the two sweep rules unified with them."""

from __future__ import annotations

from tests_checks_support import load_case

from flows.analyze import analyze_text
from flows.base import Context
from flows.checks import host_arp, switch_mtu
from flows.expectations import DEFAULT
from flows.registry import by_fault, make_context
from wizard.model import Status
from wizard.probes import Observations

NARROW_NVME = (
    "0000:01:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n"
    "\t\tLnkSta:\tSpeed 32GT/s, Width x4\n"
    "0007:01:00.0 Non-Volatile memory controller: Samsung Electronics NVMe SSD Controller\n"
    "\t\tLnkSta:\tSpeed 8GT/s, Width x2\n"
)


def test_a_pasted_lspci_judges_the_cx7_functions_only() -> None:
    assert analyze_text(NARROW_NVME).findings == ()
    narrow = NARROW_NVME.replace("Speed 32GT/s, Width x4", "Speed 32GT/s, Width x2")
    (v,) = analyze_text(narrow).findings
    assert (v.fault, v.status, v.targets) == ("host.pcie-width", Status.FAIL, ("0000:01:00.0",))
    assert "0000:01:00.0: LnkSta 32GT/s x2" in v.summary


def test_a_pasted_mlnx_qos_names_its_netdev() -> None:
    text = (
        "DCBX mode: OS controlled\nPriority trust state: pcp\n"
        "PFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n"
        "\tenabled     0   0   0   1   0   0   0   0\n"
    )
    (v,) = analyze_text("mlnx_qos -i enp1s0f0np0\n" + text).findings
    assert (v.fault, v.status) == ("host.pfc-enabled", Status.FAIL)
    assert "PFC 0,0,0,1,0,0,0,0" in v.summary


def test_sweep_arp_sysctls_of_a_node_without_discovered_rails_are_unknown() -> None:
    obs, _settings = load_case("host.arp-sysctls", "fault-host-arp-sysctls")
    spark1 = {k: r for k, r in obs.nodes["spark1"].items() if k == "sysctl_arp"}
    one = Observations(nodes={"spark1": spark1})  # no ibdev2netdev: its rails are not known
    ctx = make_context(one, nodes=("spark1",), switches=())
    (v,) = by_fault("host.arp-sysctls").run(one, ctx)
    assert v.status is Status.UNKNOWN
    assert v.targets == ("spark1",)
    assert v.evidence[0].observed == "arp_ignore=0 arp_announce=0 rp_filter=2 (rails not known)"
    assert host_arp.parse(one, ctx).nodes[0].multi_rail is None


def test_a_port_with_one_low_mtu_value_fails_even_if_the_other_is_missing() -> None:
    ctx = Context(expectations=DEFAULT)
    ports = (
        switch_mtu.PortMtu("crs804", "qsfp56-dd-1-1", 1592, None),
        switch_mtu.PortMtu("crs804", "qsfp56-dd-1-5", None, None),
    )
    (v,) = switch_mtu.judge(switch_mtu.SwitchMtu(ports, ()), ctx)
    assert v.status is Status.FAIL
    assert v.targets == ("crs804/qsfp56-dd-1-1",)
    assert [e.status for e in v.evidence] == [Status.FAIL, Status.UNKNOWN]
