"""The models wing: embeddings (embeddings.py) and the threads that run a local model's calls
(workers.py), the flag that marks work nobody waits on (background.py), and the circuit breaker
for a dependency that can go away (breaker.py)."""
