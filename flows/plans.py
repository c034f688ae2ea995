"""Fix plans of every fault, as data the engine executes: the names of `flows.fixplans`' modules
(switch, host, nccl, physical), importable from here as before."""

from __future__ import annotations

from flows.fixplans.common import (
    NCCL_CONF_PATH,
    NCCL_PROFILE_PATH,
    NETPLAN_PATH,
    PFC_OFF,
    PFC_UNIT,
    PFC_UNIT_PATH,
    RSTP_UPLINK_COST,
    SYSCTL_PATH,
)
from flows.fixplans.host import (
    host_index,
    host_octets,
    host_pfc_plan,
    netplan_plan,
    netplan_target,
    netplan_text,
    pfc_unit_text,
    rail_index,
    safe_netdevs,
    sysctl_plan,
    sysctl_text,
)
from flows.fixplans.nccl import job_env_plan, nccl_plan, user_conf_plan
from flows.fixplans.physical import firmware_plan, reseat_plan
from flows.fixplans.switch import (
    api,
    offload_plan,
    offload_target,
    qos_plan,
    rstp_plan,
    switch_link_plan,
    switch_mtu_plan,
)

__all__ = [
    "NCCL_CONF_PATH",
    "NCCL_PROFILE_PATH",
    "NETPLAN_PATH",
    "PFC_OFF",
    "PFC_UNIT",
    "PFC_UNIT_PATH",
    "RSTP_UPLINK_COST",
    "SYSCTL_PATH",
    "api",
    "firmware_plan",
    "host_index",
    "host_octets",
    "host_pfc_plan",
    "job_env_plan",
    "nccl_plan",
    "netplan_plan",
    "netplan_target",
    "netplan_text",
    "offload_plan",
    "offload_target",
    "pfc_unit_text",
    "qos_plan",
    "rail_index",
    "reseat_plan",
    "rstp_plan",
    "safe_netdevs",
    "switch_link_plan",
    "switch_mtu_plan",
    "sysctl_plan",
    "sysctl_text",
    "user_conf_plan",
]
