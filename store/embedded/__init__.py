"""The embedded wing: Redis Stack started on loopback for the demo and the tests, as one server
(server.py) or a cluster (cluster.py), the binaries and the libssl they need (binaries.py), and
the processes both launchers share (processes.py)."""
