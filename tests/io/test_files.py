"""The checks shared by the readers and writers of geosynth.io (geosynth/io/_files.py)."""

import pytest

from geosynth.io import printable


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\u2028b", "a?b"),  # LINE SEPARATOR: a line break for str.splitlines and many viewers
        ("a\u2029b", "a?b"),  # PARAGRAPH SEPARATOR
        ("caf\udce9.gpkg", "caf?.gpkg"),  # a file name byte that is not UTF-8 (surrogateescape)
    ],
)
def test_printable_leaves_one_line_a_utf8_output_can_write(text, expected):
    shown = printable(text)
    assert shown == expected
    assert len(shown.splitlines()) == 1
    shown.encode("utf-8")  # a lone surrogate raised UnicodeEncodeError here


def test_printable_keeps_ordinary_text():
    assert printable("São Paulo, 東京 – y=1") == "São Paulo, 東京 – y=1"
    assert printable("a\x1b[31mb\u202ec\n") == "a?[31mb?c?"
