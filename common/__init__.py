"""The DAG runtime shared by edge agents and cloud containers.

Layers, from the ground up (each imports only itself and the layers below;
``tests/test_import_structure.py`` checks it): the cross-cutting ``_*.py``
modules and ``wire`` (frames, codec, protobuf stubs); ``api`` and ``dsl``
(what users write); ``plan`` (validation, packing, domains, loading a file);
``runtime``, ``state`` and ``connectors`` (stream manager, instances,
checkpoints); ``control`` (a domain's topology master); ``node`` (the node
daemon the cloud worker and the edge agent share).
"""
