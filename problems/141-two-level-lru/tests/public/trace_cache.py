"""Inside the judge, each `access` a test makes becomes a step of a timeline (the result, both
levels and the counters after it) that a failing test shows beside the reference's."""

try:
    from judge_runner.trace import traced
except ImportError:  # anywhere else: the cache itself
    def traced(pool, **how):
        return pool


def trace_cache(cache):
    """The cache, recording each access the test makes."""
    return traced(cache, ops=["access"], levels={"gpu": "gpu_keys", "cpu": "cpu_keys"},
                  counters=["num_gpu_hits", "num_cpu_hits", "num_misses", "num_offloaded"])
