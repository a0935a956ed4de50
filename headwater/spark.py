"""Spark jobs over the landing zone: the public API a user's PySpark job is written against.

A job file defines ``run(spark, ctx)`` (``ctx`` a ``JobContext``) and is run once by
``headwater spark run JOB.py`` or submitted to the cluster with ``headwater spark
submit JOB.py``. Outside a job, ``Landing`` reads any landed dataset by name:

>>> from headwater.spark import Landing
>>> Landing("/nonexistent").names()
[]

A long job tells its stages as it goes with ``Progress`` (a line as each starts and ends,
its rows and time, an estimate of what is left, heartbeats while it runs); the IoT
example's training (``examples/iot/anomaly_train.py``) does.
"""

from headwater.cloud.spark import session
from headwater.cloud.spark._datasets import DatasetError, Landing, Layout
from headwater.cloud.spark._job import JobContext, Warehouse
from headwater.cloud.spark._progress import Progress

__all__ = ["DatasetError", "JobContext", "Landing", "Layout", "Progress", "Warehouse", "session"]
