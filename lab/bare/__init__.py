"""bare - the bare-metal half of the lab: one topology description ([hosts] included) checked
offline (check), turned into per-host plans (plan), and rendered to an Ansible inventory,
playbooks and the files each host installs (render). docs/baremetal.md.
"""
