"""The conformance suite: clause-mapped cases run over the wire against any RocketMQ 4.x broker or client.

``rocketspec conformance broker --namesrv HOST:PORT`` runs the broker cases (``conformance.broker``) against a name
server and its brokers; ``rocketspec conformance client --exec COMMAND`` serves the reference cluster with each client
case's faults and judges the client a driver runs against it (``conformance.client``). Each case cites the clauses of
``rocketspec.spec`` it checks; see ``docs/conformance.md``.
"""
