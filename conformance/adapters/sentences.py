"""The suite's rule for a refusal that this project's implementations say
as a sentence.

``dendro-wire check --json`` and the Python package's ``DendroWireError``
give a refusal's frame and offset as numbers and its rule only in words
(the core's ``Rule`` and ``ProtocolError`` sentences). The C API gives the
rule as a number (``dw_error.rule``); dendro 0.6.1's adapter names its own
sentences. Each phrase below appears in one rule's sentence only.
"""

RULES = [
    ("this is not a dendro replication stream", "NotADendroStream"),
    ("is not supported; this build speaks version", "UnsupportedVersion"),
    ("the stream ends inside", "Truncated"),
    ("a frame length of 0", "ZeroLength"),
    ("-byte limit", "FrameTooLarge"),
    ("the frame ends early", "EndsEarly"),
    ("is not a bool", "NotABool"),
    ("is not a presence byte", "NotAPresenceByte"),
    ("is not an index kind", "NotAnIndexKind"),
    ("is not valid UTF-8", "NotUtf8"),
    ("the uuid is not canonical", "NotACanonicalUuid"),
    ("map keys must be strictly ascending", "KeysNotAscending"),
    ("cannot fit in the", "CountTooLarge"),
    ("left over after the last field", "TrailingBytes"),
    ("which no handshake on this connection introduced", "UnknownSource"),
    ("a second handshake for source", "DuplicateHandshake"),
    ("a handshake past the limit of", "TooManySources"),
]


def rule(sentence: str) -> str:
    """The rule ``sentence`` says was broken; ``Other`` for none known."""
    for words, name in RULES:
        if words in sentence:
            return name
    return "Other"
