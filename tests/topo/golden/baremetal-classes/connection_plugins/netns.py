# netns: Ansible's local connection with every command run by `ip netns exec NAME`, so one
# machine can stand in for the bare-metal testbed: each inventory host a network namespace.
# Shipped by `python3 -m lab topo render` (xdp-bfd lab, docs/baremetal.md).
#
# Why `ip netns exec` and not a plain setns(): it also mounts a /sys of the namespace, so
# /sys/class/net shows the host's own interfaces (ethtool, `lab tune check`, the capture's
# NIC counters read them); after setns() alone /sys still shows the caller's namespace.
# Files are put and fetched by the local connection unchanged: the namespaces share the
# filesystem, and each host keeps its files under its own lab_root.

from __future__ import annotations

import shlex

from ansible.errors import AnsibleError
from ansible.plugins.connection.local import Connection as LocalConnection

DOCUMENTATION = """
    name: netns
    short_description: run each task in a network namespace of the controller
    description:
        - The local connection, with every command run by C(ip netns exec NAME /bin/sh -c).
    author: xdp-bfd lab
    options:
      netns:
        description: The network namespace, which must exist (ip netns add NAME).
        vars:
          - name: lab_netns
        required: true
"""


class Connection(LocalConnection):
    transport = "netns"

    def exec_command(self, cmd, in_data=None, sudoable=True):
        ns = self.get_option("netns")
        if not ns or "/" in ns:
            raise AnsibleError(f"netns connection: bad namespace name {ns!r}")
        if isinstance(cmd, bytes):
            cmd = cmd.decode()
        wrapped = f"ip netns exec {shlex.quote(ns)} /bin/sh -c {shlex.quote(cmd)}"
        return super().exec_command(wrapped, in_data=in_data, sudoable=sudoable)
