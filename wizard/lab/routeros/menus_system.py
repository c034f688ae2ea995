"""System menus: identity, resource (+ cpu), routerboard, clock, log, file and scheduler."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import ClassVar

from wizard.lab.routeros.menus_base import Kind, Menu, MenuError
from wizard.lab.routeros.switch import (
    Item,
    SwitchState,
    clock_text,
    parse_duration,
)

__all__ = [
    "ClockMenu",
    "FileMenu",
    "IdentityMenu",
    "LogMenu",
    "ResourceCpuMenu",
    "ResourceMenu",
    "RouterboardMenu",
    "SchedulerMenu",
    "next_run",
    "parse_date",
    "write_file",
]

FILE_CONTENTS_LIMIT = 61439


class IdentityMenu(Menu):
    table = "identity"
    schema: ClassVar[dict[str, Kind]] = {"name": "str"}

    def rows(self, sw: SwitchState) -> list[Item]:
        return [{"name": sw.tables["identity"][0]["name"]}]

    def set(self, sw: SwitchState, refs: str, attrs: dict[str, str]) -> None:
        clean = self.validate(sw, attrs)
        sw.tables["identity"][0].update(clean)


class ResourceMenu(Menu):
    def rows(self, sw: SwitchState) -> list[Item]:
        return [
            {
                "uptime": sw.uptime(),
                "version": f"{sw.routeros_version} (stable)",
                "build-time": "2026-10-01 13:29:47",
                "factory-software": "7.19.4",
                "free-memory": str(3_650_000_000 - int(sw.software_gbps * 1_000_000)),
                "total-memory": "4294967296",
                "cpu": "ARM64",
                "cpu-count": "4",
                "cpu-frequency": "2000",
                "cpu-load": str(sw.cpu_load()),
                "free-hdd-space": "104054784",
                "total-hdd-space": "134217728",
                "write-sect-since-reboot": "512",
                "write-sect-total": "40960",
                "bad-blocks": "0",
                "architecture-name": "arm64",
                "board-name": sw.model,
                "platform": "MikroTik",
            }
        ]


class ResourceCpuMenu(Menu):
    def rows(self, sw: SwitchState) -> list[Item]:
        load = sw.cpu_load()
        return [
            {".id": f"*{i}", "cpu": f"cpu{i}", "load": str(load), "irq": "0", "disk": "0"}
            for i in range(4)
        ]


class RouterboardMenu(Menu):
    def rows(self, sw: SwitchState) -> list[Item]:
        return [
            {
                "routerboard": "true",
                "board-name": sw.model,
                "model": sw.model,
                "serial-number": sw.serial,
                "firmware-type": "alpinev3",
                "factory-firmware": "7.19.4",
                "current-firmware": sw.routeros_version,
                "upgrade-firmware": sw.routeros_version,
            }
        ]


class ClockMenu(Menu):
    def rows(self, sw: SwitchState) -> list[Item]:
        now = datetime.fromtimestamp(sw.clock(), UTC)
        return [
            {
                "time": now.strftime("%H:%M:%S"),
                "date": now.strftime("%Y-%m-%d"),
                "time-zone-autodetect": "true",
                "time-zone-name": "UTC",
                "gmt-offset": "+00:00",
                "dst-active": "false",
            }
        ]


class LogMenu(Menu):
    table = "log"
    named = False

    def row(self, sw: SwitchState, item: Item) -> Item:
        out = super().row(sw, item)
        out["buffer"] = "memory"
        return out


class FileMenu(Menu):
    table = "file"
    can_add = True
    can_remove = True
    schema: ClassVar[dict[str, Kind]] = {"name": "str", "contents": "str", "type": "str"}

    def row(self, sw: SwitchState, item: Item) -> Item:
        contents = item.get("contents", "")
        out: Item = {
            ".id": item[".id"],
            "name": item["name"],
            "type": item.get("type", "file"),
            "size": str(len(contents.encode())),
            "last-modified": item.get("last-modified", ""),
        }
        if len(contents.encode()) <= FILE_CONTENTS_LIMIT:
            out["contents"] = contents
        return out

    def do_add(self, sw: SwitchState, attrs: dict[str, str]) -> str:
        if "name" not in attrs:
            raise MenuError("failure: name not specified")
        if any(f["name"] == attrs["name"] for f in sw.tables["file"]):
            raise MenuError("failure: file already exists")
        return write_file(sw, attrs["name"], attrs.get("contents", ""))

    def do_set(self, sw: SwitchState, targets: list[Item], attrs: dict[str, str]) -> None:
        for item in targets:
            item.update(attrs)
            item["last-modified"] = clock_text(sw.clock())

    def read(self, sw: SwitchState, attrs: dict[str, str]) -> Item:
        name = attrs.get("file", "")
        items = [f for f in sw.tables["file"] if f["name"] == name]
        if not items:
            raise MenuError("no such item (4)")
        data = items[0].get("contents", "").encode()
        offset = int(attrs.get("offset", "0") or "0")
        chunk = int(attrs.get("chunk-size", "32768") or "32768")
        if not 1 <= chunk <= 32768:
            raise MenuError("value of chunk-size out of range (1..32768)", 1)
        return {"data": data[offset : offset + chunk].decode("utf-8", errors="replace")}


def write_file(sw: SwitchState, name: str, contents: str) -> str:
    """Create or overwrite a file (what `/export file=` does)."""
    kind = "script" if name.endswith(".rsc") else ("backup" if name.endswith(".backup") else "file")
    for item in sw.tables["file"]:
        if item["name"] == name:
            item.update({"contents": contents, "last-modified": clock_text(sw.clock())})
            return item[".id"]
    return sw.add_item(
        "file",
        {"name": name, "type": kind, "contents": contents, "last-modified": clock_text(sw.clock())},
    )


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def parse_date(text: str) -> datetime | None:
    text = text.strip().lower()
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", text)
    if m:
        return datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)), tzinfo=UTC)
    m = re.fullmatch(r"([a-z]{3})/(\d{1,2})/(\d{4})", text)
    if m and m.group(1) in _MONTHS:
        return datetime(int(m.group(3)), _MONTHS.index(m.group(1)) + 1, int(m.group(2)), tzinfo=UTC)
    return None


def next_run(sw: SwitchState, item: Item, now: float) -> float | None:
    """When a scheduler entry runs next (switch clock seconds), from its start and interval."""
    start_time = item.get("start-time", "")
    if start_time == "startup" or not start_time:
        return None
    day = parse_date(item.get("start-date", "")) if item.get("start-date") else None
    explicit_date = day is not None
    if day is None:
        day = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start = (day + timedelta(seconds=parse_duration(start_time))).timestamp()
    interval = parse_duration(item.get("interval", "0s"))
    if interval > 0:
        due = start
        while due <= now:
            due += interval
        return due
    if start > now:
        return start
    if not explicit_date:
        return start + 86400
    return None


class SchedulerMenu(Menu):
    table = "scheduler"
    can_add = True
    can_remove = True
    schema: ClassVar[dict[str, Kind]] = {
        "name": "str",
        "start-date": "str",
        "start-time": "str",
        "interval": "duration",
        "on-event": "str",
        "policy": "str",
        "disabled": "bool",
        "comment": "str",
    }

    def check_ref(self, sw: SwitchState, prop: str, value: str) -> str:
        if prop == "start-date" and parse_date(value) is None:
            raise MenuError("invalid value for argument date", 1)
        if prop == "start-time" and value != "startup":
            try:
                parse_duration(value)
            except ValueError:
                raise MenuError("invalid value for argument time", 1) from None
        return value

    def row(self, sw: SwitchState, item: Item) -> Item:
        out = super().row(sw, item)
        out.setdefault("interval", "0s")
        out["run-count"] = item.get("run-count", "0")
        out["owner"] = item.get("owner", "admin")
        out["next-run"] = clock_text(float(item["_next"])) if "_next" in item else ""
        out.setdefault("disabled", "false")
        return out

    def _arm(self, sw: SwitchState, item: Item) -> None:
        item.pop("_next", None)
        if item.get("disabled") == "true":
            return
        due = next_run(sw, item, sw.clock())
        if due is not None:
            item["_next"] = repr(due)

    def do_add(self, sw: SwitchState, attrs: dict[str, str]) -> str:
        name = attrs.get("name")
        if not name:
            raise MenuError("failure: name not specified")
        if any(s["name"] == name for s in sw.tables["scheduler"]):
            raise MenuError("failure: item with such name already exists")
        now = datetime.fromtimestamp(sw.clock(), UTC)
        item: Item = {
            "interval": "0s",
            "policy": "ftp,reboot,read,write,policy,test,password,sniff,sensitive,romon",
            "disabled": "false",
            "run-count": "0",
            **attrs,
        }
        if "start-time" not in item:
            item["start-time"] = now.strftime("%H:%M:%S")
            item.setdefault("start-date", now.strftime("%Y-%m-%d"))
        elif "start-date" not in item and item["start-time"] != "startup":
            item["start-date"] = now.strftime("%Y-%m-%d")
            due = next_run(sw, item, sw.clock())
            if due is None or due - sw.clock() > 86400:
                item["start-date"] = (now + timedelta(days=1)).strftime("%Y-%m-%d")
        item_id = sw.add_item("scheduler", item)
        self._arm(sw, sw.tables["scheduler"][-1])
        return item_id

    def do_set(self, sw: SwitchState, targets: list[Item], attrs: dict[str, str]) -> None:
        for item in targets:
            item.update(attrs)
            self._arm(sw, item)
