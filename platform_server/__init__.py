"""Self-hosted agent platform server."""

import os

__version__ = "0.1.0"

# numpy's OpenBLAS starts a thread per core and spins them on every matrix product. The server's products (wiki
# vectors: one query against a KB's matrix) are memory-bound and small, and its cores are shared with the IOLoop:
# a wiki search at 10,000 chunks took 16-21 ms of CPU and 38-59 ms on a loaded 2-core machine threaded, 6 ms and
# 9-13 ms on one thread. Set before numpy loads (lazily, on first use); an operator's own value is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
