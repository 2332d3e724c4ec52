"""What a PDF (or a span copied from a PDF viewer) carries that the words do not: typographic
ligatures, soft hyphens and zero-width characters, and a word broken at a line end.

``clean`` is applied alike to every converted document (``tidy.finish``) and, through
``rag_ablation.data.text.normalize``, to both sides of every span match, so a span copied from a
viewer matches the converted text.
"""
from __future__ import annotations

import re

LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
             "\ufb05": "st", "\ufb06": "st"}
INVISIBLE = "\u00ad\u200b\u200c\u200d\u2060\ufeff"  # soft hyphen, zero-widths, word joiner, BOM
_CLEAN = str.maketrans({**LIGATURES, **{c: "" for c in INVISIBLE}})
# a hyphen ending a line between two lower-case letters: "speci-\n  fied" -> "specified"
_LINE_END_HYPHEN = re.compile(r"(?<=[^\W\d_])-[ \t]*\r?\n[ \t]*(?=[a-z\u00df-\u00ff])")


def clean(text: str) -> str:
    """The text a PDF viewer shows, as words: ligatures spelled out (``\ufb01`` -> ``fi``, the
    seven of U+FB00 to U+FB06), soft hyphens (U+00AD), zero-width spaces and joiners, word
    joiners and byte-order marks removed, and a word hyphenated at a line end joined
    (``speci-`` + newline + ``fied`` -> ``specified``: a hyphen after a letter, then the line
    break and the next line's indentation, then a lower-case letter). A hyphen at a line end
    inside a compound (``farebox-`` / ``api``) is joined too: the rule cannot tell them apart,
    and applying it to documents and spans alike keeps them matching. Non-breaking and other
    Unicode spaces are left as they are: ``normalize`` treats them as whitespace. Idempotent."""
    return _LINE_END_HYPHEN.sub("", text.translate(_CLEAN))
