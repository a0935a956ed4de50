"""Spark jobs over the landing zone: the public API a user's PySpark job is written against.

A job file defines ``run(spark, ctx)`` (``ctx`` a ``JobContext``) and is run once by
``headwater spark run JOB.py`` or submitted to the cluster with ``headwater spark
submit JOB.py``. Outside a job, ``Landing`` reads any landed dataset by name:

>>> from headwater.spark import Landing
>>> Landing("/nonexistent").names()
[]
"""

from headwater.cloud.spark import session
from headwater.cloud.spark._datasets import DatasetError, Landing, Layout
from headwater.cloud.spark._job import JobContext, Warehouse

__all__ = ["DatasetError", "JobContext", "Landing", "Layout", "Warehouse", "session"]
