from __future__ import annotations

import pytest

from rag_ablation.data.conversion import pandoc
from rag_ablation.data.conversion.converted import ConversionFailed


def test_version_is_the_bundled_pandoc():
    assert pandoc.version() == "pandoc 3.9"


def test_code_blocks_are_fenced_and_kept_verbatim():
    out = pandoc.to_markdown(b"<pre>  a_b *x*  \\n\n\n  c</pre><pre class='c'>int x;</pre>", "html", "HTML")
    assert out == "```\n  a_b *x*  \\n\n\n  c\n```\n\n```c\nint x;\n```\n"


def test_a_fence_is_longer_than_backticks_inside():
    out = pandoc.to_markdown(b"<pre>```\nquoted\n```</pre>", "html", "HTML")
    assert out == "````\n```\nquoted\n```\n````\n"


def test_pictures_give_no_text():
    out = pandoc.to_markdown(b"<p>Before <img src='http://example.invalid/x.png' alt='a chart'> after</p>", "html", "HTML")
    assert out == "Before after\n"


def test_sphinx_roles_show_their_title():
    out = pandoc.to_markdown(b"See :attr:`~flask.Flask.debug`, :doc:`the tutorial </tutorial/index>`, "
                             b":func:`!url_for` and :ref:`config`.", "rst", "RST")
    assert out == "See `debug`, the tutorial, `url_for` and config.\n"


def test_divs_of_unknown_classes_leave_only_their_text():
    out = pandoc.to_markdown(b"<div class='note'><p>Inside</p></div><span class='x'>span</span>", "html", "HTML")
    assert out == "Inside\n\nspan\n"


@pytest.mark.bad_input
def test_pandoc_failure_is_damaged_with_its_message():
    with pytest.raises(ConversionFailed) as e:
        pandoc.to_markdown(b"PK\x03\x04 not really a zip", "docx", "DOCX")
    assert e.value.kind == "damaged"
    assert e.value.detail.startswith("damaged DOCX: pandoc cannot read it (exit ")
    assert e.value.detail.endswith("); open it in an editor and save it again as DOCX")
