"""The cluster wing: the Redis Cluster client and routing (client.py), the memory index on every
primary, decided by the cluster (indexes.py), a user's search in one trip to the shard that
owns the user (search.py), and its check that the node it reached still owns the user's slot
(owner_probe.py)."""
