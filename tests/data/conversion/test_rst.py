from __future__ import annotations

import re

import pytest

from rag_ablation.data.conversion.converted import ConversionFailed
from rag_ablation.data.conversion.rst import convert_rst, converter_name, undomain


def test_converter_name_is_pandoc():
    assert converter_name() == "pandoc 3.9"


def test_undomain_renames_domain_directives_only():
    src = ".. py:data:: DEBUG\n\n   Body with :py:func:`f`.\n\n   .. py:function:: g(x)\n\n.. note::\n.. _label:\n"
    assert undomain(src) == (".. py-data:: DEBUG\n\n   Body with :py:func:`f`.\n\n"
                             "   .. py-function:: g(x)\n\n.. note::\n.. _label:\n")


def test_generated_rst(pandoc_maker):
    c = convert_rst(pandoc_maker("# Title\n\nText with `code`.\n\n```python\nprint('hi')\n```\n", "rst"))
    assert c.pages == ()
    assert c.text == "# Title\n\nText with `code`.\n\n```python\nprint('hi')\n```\n"


def test_sphinx_directives_keep_their_argument_and_content_without_divs():
    src = (b"Config\n======\n\n.. py:data:: SECRET_KEY\n\n   A secret, see :attr:`~flask.Flask.secret_key`.\n\n"
           b"   .. versionadded:: 2.0\n\n.. tabs::\n\n   .. group-tab:: Bash\n\n      .. code-block:: text\n\n"
           b"         $ export A=1\n\n.. autoclass:: Flask\n   :members:\n")
    assert convert_rst(src).text == ("# Config\n\nSECRET_KEY\n\nA secret, see `secret_key`.\n\n2.0\n\nBash\n\n"
                                     "```text\n$ export A=1\n```\n\nFlask\n")


@pytest.mark.bad_input
def test_not_utf8_is_damaged():
    with pytest.raises(ConversionFailed) as e:
        convert_rst(b"Title\n=====\n\ncaf\xe9\n")
    assert (e.value.kind, e.value.detail) == (
        "damaged", "not UTF-8 (invalid continuation byte at byte 16); re-save it as UTF-8")


@pytest.mark.bad_input
def test_only_a_comment_is_empty():
    with pytest.raises(ConversionFailed) as e:
        convert_rst(b".. a comment only\n")
    assert e.value.kind == "empty"


@pytest.mark.parametrize("name", ["flask_api.rst", "flask_config.rst", "flask_errorhandling.rst",
                                  "flask_quickstart.rst", "flask_testing.rst"])
def test_real_flask_pages_have_no_html_wrappers(documents, name):
    text = convert_rst((documents / "rst" / name).read_bytes()).text
    assert "<div" not in text and "<span" not in text and ":::" not in text
    assert not re.search(r"^\.\. ", text, re.MULTILINE)  # no directive left unread


def test_real_config_keys_and_code_blocks(documents):
    text = convert_rst((documents / "rst/flask_config.rst").read_bytes()).text
    keys = re.findall(r"^\.\. py:data:: (\w+)", (documents / "rst/flask_config.rst").read_text(), re.MULTILINE)
    assert len(keys) == 29
    assert all(f"\n{k}\n" in text for k in keys)
    assert "```text\n$ flask --app hello run --debug\n```" in text
    assert "    SECRET_KEY='192b9bdd22ab9ed4d12e236c78afcb9a393ec15f71bbf5dc987d54727823bcbf'\n" in text


def test_real_quickstart_code_block(documents):
    text = convert_rst((documents / "rst/flask_quickstart.rst").read_bytes()).text
    assert '@app.route("/")\ndef hello_world():\n    return "<p>Hello, World!</p>"' in text
