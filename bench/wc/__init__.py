"""Word count (Heron's shape), the same user functions on every runner (``bench/peers.py``)."""
