"""Simulated sensors (see headwater/_demo/sensors.py).

python examples/iot/sensors.py --broker 127.0.0.1:1883 --count 100
"""

from headwater._demo.sensors import BASE_TS, main, readings

__all__ = ["BASE_TS", "main", "readings"]

if __name__ == "__main__":
    main()
