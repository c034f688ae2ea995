"""`nmcli -t` output: the connection list (escaped `:`) and the multiline profile details."""

from __future__ import annotations

import pytest

from wizard.errors import ParseError
from wizard.parsers import nmcli

UUID_A = "5fcfd6d7-1e63-3332-8826-a7eda103792d"
UUID_B = "0c6f3a1e-9b2d-4c1e-8f00-1234567890ab"
LIST = (
    f"netplan-enp1s0f0np0:{UUID_A}:802-3-ethernet:yes:enp1s0f0np0:"
    "/run/NetworkManager/system-connections/netplan-enp1s0f0np0.nmconnection\n"
    f"lab\\:old:{UUID_B}:802-3-ethernet:yes::"
    "/etc/NetworkManager/system-connections/lab\\:old.nmconnection\n"
)
DETAILS = (
    "connection.id:netplan-enp1s0f0np0\n"
    f"connection.uuid:{UUID_A}\n"
    "connection.interface-name:enp1s0f0np0\n"
    "connection.autoconnect:yes\n"
    "ipv4.method:manual\n"
    "ipv4.addresses:10.9.1.1/24, 10.9.1.201/24\n"
    "\n"
    "connection.id:lab\\:old\n"
    f"connection.uuid:{UUID_B}\n"
    "connection.interface-name:enp1s0f0np0\n"
    "connection.autoconnect:no\n"
    "ipv4.method:auto\n"
    "ipv4.addresses:\n"
)


def test_the_list_splits_on_unescaped_colons_only() -> None:
    rows = nmcli.parse_list(LIST)
    assert [(r.name, r.uuid, r.autoconnect, r.device) for r in rows] == [
        ("netplan-enp1s0f0np0", UUID_A, True, "enp1s0f0np0"),
        ("lab:old", UUID_B, True, ""),
    ]
    assert rows[1].filename == "/etc/NetworkManager/system-connections/lab:old.nmconnection"


def test_details_are_one_profile_per_block() -> None:
    got = nmcli.parse_details(DETAILS)
    assert [(p.id, p.uuid, p.interface, p.autoconnect, p.method) for p in got] == [
        ("netplan-enp1s0f0np0", UUID_A, "enp1s0f0np0", True, "manual"),
        ("lab:old", UUID_B, "enp1s0f0np0", False, "auto"),
    ]
    assert got[0].addresses == ("10.9.1.1/24", "10.9.1.201/24")
    assert got[1].addresses == ()


@pytest.mark.parametrize(
    "text",
    [
        "NAME  UUID  TYPE  DEVICE\nfoo  1234  ethernet  --\n",  # the tabular form, not -t
        f"only:{UUID_A}:three\n",
        "foo:not-a-uuid:802-3-ethernet:yes::/etc/x\n",
        f"foo:{UUID_A}:802-3-ethernet:maybe::/etc/x\n",
    ],
)
def test_a_list_in_another_shape_is_refused(text: str) -> None:
    with pytest.raises(ParseError) as exc:
        nmcli.parse_list(text)
    assert exc.value.raw == text


def test_details_without_a_uuid_or_in_another_shape_are_refused() -> None:
    with pytest.raises(ParseError):
        nmcli.parse_details("connection.id:x\nipv4.method:auto\n")
    with pytest.raises(ParseError):
        nmcli.parse_details("Error: NetworkManager is not running.\n")
