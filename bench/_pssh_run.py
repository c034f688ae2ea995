"""Run one command on every lab node with parallel-ssh (bench/sweep.py starts this in the bench
virtualenv): `_pssh_run.py HOSTS.json POOL COMMAND`. Prints every node's output."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pssh.clients import ParallelSSHClient  # type: ignore[import-not-found]
from pssh.config import HostConfig  # type: ignore[import-not-found]


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    pool, command = int(sys.argv[2]), sys.argv[3]
    hosts = [h for h, _p in spec["hosts"]]
    config = [
        HostConfig(port=p, user=spec["user"], private_key=spec["key"]) for _h, p in spec["hosts"]
    ]
    client = ParallelSSHClient(hosts, host_config=config, pool_size=pool)
    output = client.run_command(command, stop_on_errors=True)
    for host_out in output:  # no input: end stdin at once, as `ssh -n` and clush do
        host_out.client.eagain(host_out.channel.send_eof)
    client.join(output)
    for host_out in output:
        for line in host_out.stdout:
            print(f"{host_out.host}: {line}")


if __name__ == "__main__":
    main()
