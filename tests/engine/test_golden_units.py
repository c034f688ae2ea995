"""The golden export counts only when `/file print` lists it with the size that was read back."""

from __future__ import annotations

from wizard import golden
from wizard.model import Status

FILE = "fabwiz-s1-golden.rsc"


def test_listed_with_the_size_read_back_passes() -> None:
    v = golden.judge(
        "crs804", FILE, 5120, [{"name": "flash", "size": "0"}, {"name": FILE, "size": "5120"}]
    )
    assert v.status is Status.PASS and v.fault == "persist.golden-export"
    assert (v.evidence[0].observed, v.evidence[0].expected) == (f"{FILE} size=5120",) * 2


def test_missing_or_truncated_is_a_finding_naming_the_export_to_take_again() -> None:
    gone = golden.judge("crs804", FILE, 5120, [{"name": "flash", "size": "0"}])
    assert gone.status is Status.FAIL and gone.evidence[0].observed == f"{FILE} not listed"
    assert "/export file=fabwiz-s1-golden" in gone.summary
    short = golden.judge("crs804", FILE, 5120, [{"name": FILE, "size": "4096"}])
    assert short.status is Status.FAIL and short.evidence[0].observed == f"{FILE} size=4096"


def test_a_listing_that_could_not_be_read_is_unknown() -> None:
    v = golden.judge("crs804", FILE, 5120, None, "timed out")
    assert v.status is Status.UNKNOWN and "timed out" in v.summary
