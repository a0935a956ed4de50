from _kit import Pass, Words

from headwater import Topology, shuffle

topology = (
    Topology("duplicate")
    .add_spout("words", Words)
    .add_bolt("count", Pass, inputs={"words": shuffle()})
    .add_bolt("count", Pass, inputs={"words": shuffle()})
)
