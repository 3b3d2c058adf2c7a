"""Reference implementation of a RocketMQ 4.x name server, broker and clients (see the project's issues)."""
