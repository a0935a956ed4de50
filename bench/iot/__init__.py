"""The IoT sensor pipeline, the same user functions on every runner (see ``bench/iot.py``)."""
