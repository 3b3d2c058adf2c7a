"""Clients: the client instance (routes, heartbeats), producers and consumers."""
