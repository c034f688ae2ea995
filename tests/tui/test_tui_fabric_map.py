"""The fabric map (`m`): host and switch per lane, joined and coloured by verdict."""

from __future__ import annotations

from screens.app import FabwizApp
from screens.fabric_map import COLUMNS, FabricMapModal, MapTable
from wizard.events import MeasurementTaken, ProbeAnswered, VerdictReached
from wizard.model import Evidence, Measurement, ProbeResult, Rail, Status, Verdict

RAILS = (
    Rail("spark1", "enp1s0f0np0", "rocep1s0f0", 0, "A", addresses=("10.9.1.1/24",), up=True),
    Rail("spark1", "enP2p1s0f1np1", "roceP2p1s0f1", 1, "B", up=False),
)


async def test_the_map_joins_host_and_switch_per_lane() -> None:
    app = FabwizApp(None)
    async with app.run_test(size=(160, 40)) as pilot:
        app.rails_source = lambda: {"spark1": RAILS}
        app.cabling = {"spark1/enp1s0f0np0": ("crs804", "qsfp56-dd-1-1")}
        bridge = ProbeResult(
            target="crs804",
            kind="api",
            command="/interface/bridge/port print",
            rows=({"interface": "qsfp56-dd-1-1", "bridge": "roce-br", "hw-offload": "false"},),
        )
        monitor = ProbeResult(
            target="crs804",
            kind="api",
            command="/interface/ethernet monitor",
            rows=({"name": "qsfp56-dd-1-1", "rate": "200Gbps", "fec": "fec91"},),
        )
        split = Verdict(
            "switch.offload-split-cage",
            Status.FAIL,
            "cage 1 split",
            ("crs804",),
            (
                Evidence(
                    "crs804/qsfp56-dd-1-1",
                    "/interface/bridge/port",
                    "hw-offload=false",
                    "hw-offload=true",
                    Status.FAIL,
                ),
            ),
        )
        for e in (
            ProbeAnswered(step="preflight", probe="bridge_port", result=bridge),
            ProbeAnswered(step="preflight", probe="monitor", result=monitor),
            VerdictReached(step="preflight", verdict=split),
            MeasurementTaken(
                step="direct_connect",
                measurement=Measurement(
                    "rail", "spark1/enp1s0f0np0->spark2/enp1s0f0np0", 9.4, "Gb/s"
                ),
            ),
        ):
            app.ports.emit(e)
        await pilot.pause()
        await pilot.press("m")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, FabricMapModal)
        table = modal.query_one(MapTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        first = dict(zip(COLUMNS, rows[0], strict=True))
        assert first == {
            "Node": "spark1",
            "Cage": "0",
            "Half": "A",
            "Netdev": "enp1s0f0np0",
            "RDMA": "rocep1s0f0",
            "Addresses": "10.9.1.1/24",
            "Switch port": "crs804:qsfp56-dd-1-1",
            "Bridge": "roce-br",
            "H": "no",
            "Rate/FEC": "200Gbps/fec91",
            "Last Gb/s": "9.4",
        }
        second = dict(zip(COLUMNS, rows[1], strict=True))
        assert second["Switch port"] == "—" and second["Last Gb/s"] == "not cabled"
        # Switch-side cells carry the failing verdict's colour; host cells do not.
        fail = table.get_component_rich_style("map--fail", partial=True)
        cells = table.get_row_at(0)
        assert cells[COLUMNS.index("H")].style == fail
        assert cells[COLUMNS.index("Last Gb/s")].style == fail  # 9.4 against ~109
        assert cells[COLUMNS.index("Netdev")].style != fail
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.session
