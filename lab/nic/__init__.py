"""lab.nic - the NIC and its PCIe path, for the bare-metal half of the lab.

    parse    pure readers: one tool's output text in, one reading out (no I/O)
    host     where readings come from: this machine (optionally a namespace), injected
    checks   readings -> findings: reading, recommended value, measured cost, source
    apply    findings -> the changes `tune apply` makes, each with its undo command
    hwstamp  hardware receive timestamps for a capture: enable, capture, restore
    tune     the `python3 -m lab tune` sub-commands (text and JSON output)

The figures each finding quotes come from the deployment guide's bare-metal testbed (Intel
I210, igb) and are other people's measurements, cited, never ours.
"""
