"""Client transports: SSH to the nodes (asyncssh) and the RouterOS API to the switches
(librouteros). The only modules of `wizard` (besides the lab's servers) that import them."""
