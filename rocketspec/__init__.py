"""rocketspec: the executable, formally checked specification of Apache RocketMQ 4.x client/broker protocols."""

__version__ = "0.1.0"
