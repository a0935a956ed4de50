from _kit import Pass, Words

from headwater import Topology, shuffle

topology = (
    Topology("unknown-input")
    .add_spout("words", Words)
    .add_bolt("count", Pass, inputs={"wrods": shuffle()})
)
