"""Fix plans of every fault (FAULTS.md, "fix" column) as data the engine executes.

Switch fixes (`switch`) are `ApiCommand`s selected by stable keys (`default-name`, `interface`,
`name`), each with its inverse in `rollback` and the exact RouterOS CLI text in `preview` (the
same text goes into the dead-man scheduler). Host fixes are files (`host`: netplan with one
subnet per rail, /etc/sysctl.d/98-roce.conf, a systemd oneshot that turns PFC off at boot;
`nccl`: /etc/nccl.conf) plus the commands that apply them. What only hands can do is a
`PhysicalAction` (`physical`). Nothing here does I/O.
"""
