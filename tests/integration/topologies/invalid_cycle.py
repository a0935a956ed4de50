from _kit import Pass, Words

from headwater import Topology, shuffle

topology = (
    Topology("cycle")
    .add_spout("words", Words)
    .add_bolt("upper", Pass, inputs={"words": shuffle(), "lower": shuffle()})
    .add_bolt("lower", Pass, inputs={"upper": shuffle()})
)
