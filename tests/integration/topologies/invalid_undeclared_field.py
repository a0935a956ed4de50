from _kit import Pass, Words

from headwater import Topology, fields

topology = (
    Topology("undeclared-field")
    .add_spout("words", Words)
    .add_bolt("count", Pass, inputs={"words": fields("sensor")})
)
