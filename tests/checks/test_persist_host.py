"""Host persistence check: what the next boot applies against what runs now, each gap a finding
with its fix, and nothing it could not read passes."""

from __future__ import annotations

import dataclasses

from flows import plans
from flows.base import Context
from flows.checks import persist_host as ph
from flows.expectations import DEFAULT
from wizard.model import ProbeResult, Rail, Status, Verdict
from wizard.probes import Observations

UUID_NP = "11111111-2222-3333-4444-555555555555"
UUID_OWN = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
RAILS = (
    Rail("spark1", "enp1s0f0np0", "rocep1s0f0", 0, "A", addresses=("10.9.1.1/24",)),
    Rail("spark1", "enP2p1s0f0np0", "roceP2p1s0f0", 0, "B", addresses=("10.9.2.1/24",)),
)
NETPLAN = (
    "/etc/netplan/40-cx7.yaml:network:\n"
    "/etc/netplan/40-cx7.yaml:  version: 2\n"
    "/etc/netplan/40-cx7.yaml:  ethernets:\n"
    "/etc/netplan/40-cx7.yaml:    enp1s0f0np0: {addresses: [10.9.1.1/24], mtu: 9000}\n"
    "/etc/netplan/40-cx7.yaml:    enP2p1s0f0np0: {addresses: [10.9.2.1/24], mtu: 9000}\n"
)
NM_LIST = (
    f"netplan-enp1s0f0np0:{UUID_NP}:802-3-ethernet:yes:enp1s0f0np0:"
    "/run/NetworkManager/system-connections/netplan-enp1s0f0np0.nmconnection\n"
)
NM_DETAILS = (
    f"connection.id:netplan-enp1s0f0np0\nconnection.uuid:{UUID_NP}\n"
    "connection.interface-name:enp1s0f0np0\nconnection.autoconnect:yes\n"
    "ipv4.method:manual\nipv4.addresses:10.9.1.1/24\n"
)
OWN_LIST = (
    f"Wired connection 1:{UUID_OWN}:802-3-ethernet:yes::"
    "/etc/NetworkManager/system-connections/Wired connection 1.nmconnection\n"
)
OWN_DETAILS = (
    f"\nconnection.id:Wired connection 1\nconnection.uuid:{UUID_OWN}\n"
    "connection.interface-name:enp1s0f0np0\nconnection.autoconnect:yes\n"
    "ipv4.method:auto\nipv4.addresses:\n"
)
SYSCTL_D = (
    "/etc/sysctl.d/98-roce.conf:net.ipv4.conf.all.arp_ignore = 1\n"
    "/etc/sysctl.d/98-roce.conf:net.ipv4.conf.all.arp_announce = 2\n"
    "/etc/sysctl.d/98-roce.conf:net.ipv4.conf.all.rp_filter = 2\n"
)
RUNTIME = (
    "net.ipv4.conf.all.arp_ignore = 1\nnet.ipv4.conf.all.arp_announce = 2\n"
    "net.ipv4.conf.all.rp_filter = 2\n"
)
CTX = Context(expectations=DEFAULT, rails={"spark1": RAILS}, nodes=("spark1",))


def _obs(**over: tuple[str, int] | str) -> Observations:
    out = {
        ph.NETPLAN_FILES.name: NETPLAN,
        ph.NM_LIST.name: NM_LIST,
        ph.NM_PROFILES.name: NM_DETAILS,
        ph.SYSCTL_FILES.name: SYSCTL_D,
        ph.SYSCTL_ARP.name: RUNTIME,
        ph.PFC_UNIT.name: ("not-found\n", 4),
    }
    out.update(over)
    probes = {p.name: p for p in ph.CHECK.probes}
    results = {}
    for name, value in out.items():
        text, status = value if isinstance(value, tuple) else (value, 0)
        stderr = "bash: nmcli: command not found\n" if status == 127 else ""
        results[name] = ProbeResult(
            target="spark1",
            kind="ssh",
            command=probes[name].command,
            stdout=text,
            stderr=stderr,
            exit_status=status,
        )
    return Observations(nodes={"spark1": results})


def _verdicts(obs: Observations, ctx: Context = CTX) -> dict[str, Verdict]:
    return {v.fault: v for v in ph.CHECK.run(obs, ctx)}


def test_a_persisted_host_passes_every_piece_with_its_evidence() -> None:
    got = _verdicts(_obs())
    assert {f: v.status for f, v in got.items()} == dict.fromkeys(ph.FAULTS, Status.PASS)
    ev = got["persist.netplan-addresses"].evidence
    assert ev[0].observed == "running 10.9.1.1/24; netplan: 10.9.1.1/24"


def test_an_address_not_in_netplan_is_lost_at_reboot_and_the_netplan_plan_fixes_it() -> None:
    netplan = NETPLAN.replace("{addresses: [10.9.2.1/24], mtu: 9000}", "{mtu: 9000}")
    obs = _obs(**{ph.NETPLAN_FILES.name: netplan})
    v = _verdicts(obs)["persist.netplan-addresses"]
    assert v.status is Status.FAIL and v.targets == ("spark1/enP2p1s0f0np0",)
    assert v.evidence[0].observed == "running 10.9.2.1/24; netplan: none"
    plan = ph.fix(ph.parse(obs, CTX), v, CTX)
    assert plan is not None and plan.host_changes[0].files[0].path == "/etc/netplan/40-cx7.yaml"
    assert "10.9.2.1/24" in plan.host_changes[0].files[0].content


def test_a_profile_of_its_own_on_a_rail_fights_netplan_and_is_stopped_not_deleted() -> None:
    obs = _obs(
        **{ph.NM_LIST.name: NM_LIST + OWN_LIST, ph.NM_PROFILES.name: NM_DETAILS + OWN_DETAILS}
    )
    v = _verdicts(obs)["persist.nm-profile"]
    assert v.status is Status.FAIL and v.targets == ("spark1/enp1s0f0np0",)
    assert "profile 'Wired connection 1'" in v.evidence[0].observed
    assert "ipv4.method auto" in v.evidence[0].observed
    plan = ph.fix(ph.parse(obs, CTX), v, CTX)
    assert plan is not None
    change = plan.host_changes[0]
    assert change.commands == (
        f"sudo -n nmcli connection modify uuid {UUID_OWN} connection.autoconnect no",
    )
    assert change.rollback_commands == (
        f"sudo -n nmcli connection modify uuid {UUID_OWN} connection.autoconnect yes",
    )


def test_no_networkmanager_installed_is_seen_not_assumed() -> None:
    v = _verdicts(_obs(**{ph.NM_LIST.name: ("", 127)}))["persist.nm-profile"]
    assert v.status is Status.PASS
    assert v.evidence[0].observed == "nmcli: command not found"


def test_networkmanager_not_running_is_unknown() -> None:
    v = _verdicts(_obs(**{ph.NM_LIST.name: ("", 8)}))["persist.nm-profile"]
    assert v.status is Status.UNKNOWN and v.targets == ("spark1",)


def test_runtime_only_sysctls_are_a_finding_with_the_sysctl_d_fix() -> None:
    # no file: grep's own words for the unexpanded glob (stderr merged by the sweep), exit 2
    missing = ("grep: /etc/sysctl.d/*.conf: No such file or directory\n", 2)
    obs = _obs(**{ph.SYSCTL_FILES.name: missing})
    v = _verdicts(obs)["persist.sysctl"]
    assert v.status is Status.FAIL
    assert v.evidence[0].observed == "arp_ignore=missing arp_announce=missing rp_filter=missing"
    plan = ph.fix(ph.parse(obs, CTX), v, CTX)
    assert plan is not None and plan.host_changes[0].files[0].path == plans.SYSCTL_PATH


def test_wrong_running_sysctls_are_left_to_the_arp_check() -> None:
    wrong = RUNTIME.replace("arp_ignore = 1", "arp_ignore = 0")
    v = _verdicts(_obs(**{ph.SYSCTL_ARP.name: wrong, ph.SYSCTL_FILES.name: ""}))["persist.sysctl"]
    assert v.status is Status.PASS
    assert "host.arp-sysctls owns the fix" in v.evidence[0].observed


def test_the_pfc_unit_must_be_enabled_where_installed_or_where_pfc_was_fixed() -> None:
    disabled = _verdicts(_obs(**{ph.PFC_UNIT.name: ("disabled\n", 1)}))["persist.pfc-unit"]
    assert disabled.status is Status.FAIL
    obs = _obs(**{ph.PFC_UNIT.name: ("disabled\n", 1)})
    plan = ph.fix(ph.parse(obs, CTX), disabled, CTX)
    assert plan is not None
    assert plan.host_changes[0].commands == (f"sudo -n systemctl enable {plans.PFC_UNIT}",)
    fixed = dataclasses.replace(CTX, fixed={"spark1": ("host.pfc-enabled",)})
    lost = _verdicts(_obs(), fixed)["persist.pfc-unit"]
    assert lost.status is Status.FAIL
    assert lost.evidence[0].observed == ("not-found (host PFC was turned off in this session)")
    plan = ph.fix(ph.parse(_obs(), fixed), lost, fixed)
    assert plan is not None and plan.host_changes[0].files[0].path == plans.PFC_UNIT_PATH
    assert _verdicts(_obs())["persist.pfc-unit"].status is Status.PASS
    old = _verdicts(
        _obs(
            **{
                ph.PFC_UNIT.name: (
                    "Failed to get unit file state for fabwiz-pfc-off.service: "
                    "No such file or directory\n",
                    1,
                )
            }
        ),
        fixed,
    )["persist.pfc-unit"]
    assert old.status is Status.FAIL


def test_output_of_another_tool_is_unknown_never_a_pass() -> None:
    got = _verdicts(
        _obs(
            **{
                ph.NETPLAN_FILES.name: "hello world\n",
                ph.NM_PROFILES.name: "garbage\n",
                ph.SYSCTL_FILES.name: "nothing like grep\n",
                ph.PFC_UNIT.name: "maybe\n",
            }
        )
    )
    for fault in ph.FAULTS:
        assert got[fault].status is Status.UNKNOWN, fault
