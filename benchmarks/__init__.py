"""mas-lab benchmarks against its peers (``make bench``; results in ``RESULTS.md``)."""
