"""The scenario `facts:` section: its shape, its validation, and where the world keeps it."""

from __future__ import annotations

import pytest

from wizard.errors import ScenarioError
from wizard.lab.scenarios import build_world, load_text

FACTS = """
name: facts-example
topology: {nodes: 2, switches: [{model: CRS804-4DDQ}], cables_per_node: 1}
facts:
  nodes:
    spark2: {firmware: 28.45.4028, ipv6_first: true, boot_gap_s: 20,
             netplan_renderer: NetworkManager, rdma_naming: mlx5}
  switches:
    crs804: {routeros_version: 7.21.1, link_up_delay_s: 8, management_port: ether2}
  ports:
    crs804/qsfp56-dd-2-1: {hw-offload: false}
  containers:
    spark1: {name: vllm, env: {NCCL_IB_HCA: rocep1s0f}}
"""


def test_facts_section_loads_into_the_world() -> None:
    s = load_text(FACTS, path="facts.yaml")
    world = build_world(s)
    f = world.facts
    assert f.nodes["spark2"].firmware == "28.45.4028"
    assert f.nodes["spark2"].ipv6_first is True
    assert f.nodes["spark2"].boot_gap_s == 20
    assert f.nodes["spark2"].netplan_renderer == "NetworkManager"
    assert f.nodes["spark2"].rdma_naming == "mlx5"
    assert f.switches["crs804"].link_up_delay_s == 8
    assert f.switches["crs804"].routeros_version == "7.21.1"
    assert f.switches["crs804"].management_port == "ether2"
    assert f.ports["crs804/qsfp56-dd-2-1"].hw_offload is False
    assert f.containers["spark1"].env == {"NCCL_IB_HCA": "rocep1s0f"}


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        ("spark2: {firmware:", "facts.nodes.spark9"),
        ("crs804: {routeros_version:", "facts.switches.core"),
        ("crs804/qsfp56-dd-2-1:", "facts.ports.qsfp56-dd-2-1"),
        ("spark1: {name: vllm", "facts.containers.spark7"),
    ],
)
def test_facts_naming_what_is_not_there_is_an_error_naming_the_field(edit: str, field: str) -> None:
    bad_name = field.rsplit(".", 1)[1]
    head = edit.partition(":")[0]
    text = FACTS.replace(edit, edit.replace(head, bad_name, 1), 1)
    with pytest.raises(ScenarioError) as err:
        load_text(text, path="facts.yaml")
    assert err.value.field == field


def test_facts_with_an_unknown_key_or_bad_value_name_the_field() -> None:
    with pytest.raises(ScenarioError) as err:
        load_text(FACTS.replace("ipv6_first: true", "ipv6_frist: true"), path="f.yaml")
    assert err.value.field == "facts.nodes.spark2.ipv6_frist"
    with pytest.raises(ScenarioError) as err:
        load_text(FACTS.replace("link_up_delay_s: 8", "link_up_delay_s: soon"), path="f.yaml")
    assert err.value.field == "facts.switches.crs804.link_up_delay_s"


def test_a_port_fact_is_read_under_either_spelling_and_saved_under_its_yaml_one() -> None:
    from wizard.lab.facts import Facts, PortFacts
    from wizard.schema import dump, parse

    for key in ("hw-offload", "hw_offload"):
        facts = parse(Facts, {"ports": {"crs804/qsfp56-dd-1-1": {key: False}}})
        assert facts.ports["crs804/qsfp56-dd-1-1"] == PortFacts(hw_offload=False)
    saved = dump(facts, exclude_defaults=True)
    assert saved == {"ports": {"crs804/qsfp56-dd-1-1": {"hw-offload": False}}}
    assert parse(Facts, saved) == facts  # a saved lab state reads back the same facts


def test_a_scenario_reads_back_from_its_saved_form() -> None:
    from wizard.lab.scenarios import Scenario
    from wizard.schema import dump

    s = load_text(FACTS, path="facts.yaml")
    again = Scenario.from_data(dump(s))
    assert again == s and again.facts.nodes["spark2"].boot_gap_s == 20.0
    assert isinstance(again.faults, list) and isinstance(again.topology.switches, list)


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        ("nodes: 2", "topology.nodes", "Input should be a valid integer"),
        ("cables_per_node: 1", "topology.cables_per_node", "Input should be 1 or 2"),
    ],
)
def test_a_boolean_is_not_a_count(edit: str, field: str, message: str) -> None:
    key = edit.partition(":")[0]
    with pytest.raises(ScenarioError) as err:
        load_text(FACTS.replace(edit, f"{key}: true", 1), path="f.yaml")
    assert err.value.field == field and str(err.value).startswith(f"f.yaml: {field}: {message}")
