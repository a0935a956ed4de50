"""The cloud side: topology master, schedulers, REST API. Built on headwater.common."""
