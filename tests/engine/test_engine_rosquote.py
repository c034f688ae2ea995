"""RouterOS quoting: any value a switch can hold comes back from the script parser exactly,
as one word of one command; values RouterOS text cannot carry are refused."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wizard import fixes
from wizard.lab.routeros.script import split_commands, tokenize
from wizard.model import ApiCommand
from wizard.rosquote import Unrepresentable, cli_command, quote, unquote

WRITABLE = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\ufffd"), max_size=60
)


@settings(max_examples=300, deadline=None)
@given(WRITABLE, WRITABLE)
def test_any_writable_value_is_one_word_of_one_command(comment: str, bridge: str) -> None:
    text = cli_command(
        "/interface/bridge/port",
        "add",
        (("bridge", bridge), ("interface", "qsfp56-dd-1-2"), ("comment", comment)),
    )
    commands = split_commands(text)
    assert len(commands) == 1
    assert tokenize(commands[0]) == [
        "/interface/bridge/port",
        "add",
        f"bridge={bridge}",
        "interface=qsfp56-dd-1-2",
        f"comment={comment}",
    ]
    assert unquote(quote(comment)) == comment


def test_named_escapes_and_hex_for_other_controls() -> None:
    assert quote('a"b\\c$d?e\nf\rg\th') == '"a\\"b\\\\c\\$d\\?e\\nf\\rg\\th"'
    assert quote("esc\x1b[31m") == '"esc\\1B[31m"'
    assert quote("plain-word_1.2:3") == "plain-word_1.2:3"
    assert quote("") == '""'
    assert quote("café") == '"café"'


@pytest.mark.parametrize("bad", ["nul\x00", "lost\ufffdbyte", "half\udce9"])
def test_unrepresentable_values_are_refused(bad: str) -> None:
    with pytest.raises(Unrepresentable):
        quote(bad)
    with pytest.raises(Unrepresentable):
        fixes.to_cli(ApiCommand("/interface/bridge/port", "set", (("comment", bad),)))


def test_property_names_and_menus_are_checked() -> None:
    with pytest.raises(Unrepresentable):
        cli_command("/interface/bridge/port", "set", (("comment;/x", "v"),))
    with pytest.raises(Unrepresentable):
        cli_command("/interface bridge;/system", "set")


def test_select_and_unset_render() -> None:
    cmd = ApiCommand(
        "/interface/bridge/port", "unset", (("value-name", "path-cost"),), ("interface", "a b")
    )
    assert fixes.to_cli(cmd) == '/interface bridge port unset [find interface="a b"] path-cost'
