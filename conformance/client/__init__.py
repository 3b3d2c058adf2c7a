"""Client conformance (like h2specd): the reference cluster served per case, a client driven by a driver command.

For each case the suite serves ``ServedCluster`` on loopback with the case's topics and fault plan, starts the driver
command once per client process the case needs (environment in, JSON lines out: the driver contract in
``docs/conformance.md``), observes every frame the client exchanges and judges it with the oracles of
``rocketspec.spec`` (send_retry, rebalance, offset_commit, pull_correction, consume_retry, transaction_check).
``conformance/drivers/`` holds drivers for real clients.
"""

from rocketspec.conformance.client.driver import DriverError, DriverStartError, check_command
from rocketspec.conformance.client.suite import CLIENT_CASES, run_client_suite

__all__ = ["CLIENT_CASES", "DriverError", "DriverStartError", "check_command", "run_client_suite"]
