"""The development cloud: real OpenStack services (keystone, placement, nova, glance, neutron,
cinder, octavia) on loopback ports, fake drivers underneath, for trying and testing Tally
(docs/devcloud.md). ``scripts/devcloud`` is its command."""
