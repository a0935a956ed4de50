"""The DAG runtime shared by edge agents and cloud containers.

Layers, top to bottom: ``api`` (what users write), ``plan`` (validation and
packing), ``wire`` (frames, codec, protobuf stubs), ``runtime`` (stream
manager, instances, acking, backpressure).
"""
