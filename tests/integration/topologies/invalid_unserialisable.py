import threading

from _kit import Pass, Words

from headwater import Stream, Topology, shuffle

topology = (
    Topology("unserialisable")
    .add_spout("words", Words, outputs=[Stream(("word", "lock"), schema=(str, threading.Lock))])
    .add_bolt("count", Pass, inputs={"words": shuffle()})
)
