"""``heronpy.streamlet.impl``: what the streamlet API runs on.

In heronpy this package holds one bolt class per operation; here a streamlet graph
becomes a DSL pipeline (``headwater.common.dsl``), whose fused steps do that work.
The pieces user code meets are here under heronpy's names: ``contextimpl.ContextImpl``
(what generators and transform operators are given) and
``generatorspout.GeneratorSpout`` (the source over a ``Generator`` or a function).
"""
