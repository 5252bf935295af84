"""The cluster wing: the Redis Cluster client and routing (client.py), the memory index on every
primary, decided by the cluster (indexes.py), and a user's search in one trip to the shard that
owns the user (search.py)."""
