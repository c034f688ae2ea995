"""`journalctl --list-boots` parsing and the drain-versus-reboot judgement."""

from __future__ import annotations

from wizard import boots

NEW = """\
IDX BOOT ID                          FIRST ENTRY                 LAST ENTRY
 -1 5a1d9c4e3b2a41f0a1b2c3d4e5f60718 Mon 2026-11-30 09:00:01 UTC Tue 2026-12-01 08:00:00 UTC
  0 9b2c0d1e2f3a4b5c6d7e8f9012345678 Tue 2026-12-01 08:00:12 UTC Tue 2026-12-01 10:00:00 UTC
"""
OLD = """\
-1 5a1d9c4e3b2a41f0a1b2c3d4e5f60718 Mon 2026-11-30 09:00:01 UTC\u2014Tue 2026-12-01 08:00:00 UTC
 0 9b2c0d1e2f3a4b5c6d7e8f9012345678 Tue 2026-12-01 08:01:40 UTC\u2014Tue 2026-12-01 10:00:00 UTC
"""
BOOT = "9b2c0d1e-2f3a-4b5c-6d7e-8f9012345678"  # as /proc/sys/kernel/random/boot_id prints it


def test_both_table_forms_give_the_gap_before_the_current_boot() -> None:
    rows = boots.parse_list_boots(NEW)
    assert [(r.index, r.boot_id[:4]) for r in rows] == [(-1, "5a1d"), (0, "9b2c")]
    assert boots.off_gap(rows, BOOT) == 12.0
    assert boots.off_gap(boots.parse_list_boots(OLD), BOOT) == 100.0


def test_a_short_gap_is_a_reboot_and_a_missing_boot_cannot_tell() -> None:
    drained, why = boots.judge_drain("spark3", NEW, True, BOOT, 60.0)
    assert drained is False
    assert why.startswith("spark3 rebooted, not drained: 12 s between the previous boot's last")
    drained, why = boots.judge_drain("spark3", OLD, True, BOOT, 60.0)
    assert drained is True and "off 100 s" in why
    only_current = NEW.splitlines()[0] + "\n" + NEW.splitlines()[2] + "\n"
    drained, why = boots.judge_drain("spark3", only_current, True, BOOT, 60.0)
    assert drained is None and "does not show the boot before 9b2c0d1e" in why
    assert boots.judge_drain("spark3", "sudo: a password is required", False, BOOT, 60.0)[0] is None
    assert boots.parse_list_boots("[{broken") == []


def test_link_downs_count_the_nics_phy_counter_not_the_kernels_carrier_count() -> None:
    from wizard.drain import link_downs

    carrier = (
        "/sys/class/net/enp1s0f0np0/carrier_down_count:3\n"  # two of them from MTU changes
        "/sys/class/net/enP2p1s0f0np0/carrier_down_count:1\n"
    )
    phy = ["     link_down_events_phy: 1\n", "     link_down_events_phy: 0\n"]
    assert link_downs(carrier, phy) == 1
    assert link_downs(carrier, []) == 4  # no ethtool -S: the kernel's count is all there is
    assert link_downs(carrier, ["ethtool: command not found"]) == 4
