"""Drivers for real RocketMQ clients, run as subprocesses against the served reference broker."""
