"""The adapters of ``rag_ablation.retrieval.external.hits`` on the frameworks' REAL objects.

``hits.py`` recognises LangChain and LlamaIndex objects by their attributes without importing
either package, so these tests build the genuine classes (the optional extra ``app``:
``pip install -e .[app]``) and check what ``as_mapping`` and ``to_passages`` make of them:
LangChain ``Document`` (document from ``metadata["doc"]``, else ``metadata["source"]``; its own
``id``; the score of ``metadata["score"]`` or of a ``(Document, score)`` pair), LlamaIndex
``NodeWithScore`` and a bare ``TextNode`` (document from ``metadata["doc"]``, else
``"file_path"``), and a ``BaseRetriever`` subclass's ``invoke`` output. Every expected value is
written out by hand: a passage without an id of its own gets ``DOC#`` and the first 12 hex digits
of the sha256 of its text, computed once for the two texts below. The file is skipped without
the extra."""
from __future__ import annotations

import pytest

documents = pytest.importorskip("langchain_core.documents")
retrievers = pytest.importorskip("langchain_core.retrievers")
schema = pytest.importorskip("llama_index.core.schema")

from rag_ablation.retrieval.external.hits import BadReply, Passage, as_mapping, ranking_scores, to_passages  # noqa: E402

Document = documents.Document
BaseRetriever = retrievers.BaseRetriever
NodeWithScore = schema.NodeWithScore
TextNode = schema.TextNode

CAPS = "Caps reset at 04:00 local time."
CAPS_SHA12 = "0b67a55040b3"  # sha256(CAPS)[:12]
RETRY = "Validators retry offline taps every 30 s."
RETRY_SHA12 = "103068453d2f"  # sha256(RETRY)[:12]


def passages(hits: list) -> list[Passage]:
    return to_passages(hits, qid="q1", app="team")


# LangChain Document


def test_document_with_doc_score_and_id():
    d = Document(page_content=CAPS, id="c7", metadata={"doc": "guides/fare-capping.md", "score": 0.75})
    assert as_mapping(d) == {"text": CAPS, "doc": "guides/fare-capping.md", "id": "c7", "score": 0.75}
    assert passages([d]) == [Passage(id="guides/fare-capping.md#c7", doc="guides/fare-capping.md", text=CAPS,
                                     score=0.75)]


def test_document_source_without_id_or_score():
    d = Document(page_content=RETRY, metadata={"source": "runbooks/offline-taps.md", "page": 3})
    assert as_mapping(d) == {"text": RETRY, "doc": "runbooks/offline-taps.md", "id": None, "score": None}
    assert passages([d]) == [Passage(id=f"runbooks/offline-taps.md#{RETRY_SHA12}", doc="runbooks/offline-taps.md",
                                     text=RETRY, score=None)]


def test_document_doc_wins_over_source():
    d = Document(page_content=CAPS, metadata={"source": "/abs/loader/path.md", "doc": "guides/fare-capping.md"})
    assert as_mapping(d)["doc"] == "guides/fare-capping.md"


def test_document_id_that_already_names_its_document_is_kept():
    d = Document(page_content=CAPS, id="guides/fare-capping.md#p4", metadata={"doc": "guides/fare-capping.md"})
    assert passages([d])[0].id == "guides/fare-capping.md#p4"


def test_document_score_pair_from_similarity_search_with_score():
    d = Document(page_content=CAPS, metadata={"source": "guides/fare-capping.md", "score": 0.1})
    assert as_mapping((d, 0.42)) == {"text": CAPS, "doc": "guides/fare-capping.md", "id": None, "score": 0.42}
    got = passages([(d, 0.42), (Document(page_content=RETRY, metadata={"source": "runbooks/offline-taps.md"}), 0.4)])
    assert got == [
        Passage(id=f"guides/fare-capping.md#{CAPS_SHA12}", doc="guides/fare-capping.md", text=CAPS, score=0.42),
        Passage(id=f"runbooks/offline-taps.md#{RETRY_SHA12}", doc="runbooks/offline-taps.md", text=RETRY, score=0.4),
    ]


def test_document_without_a_document_is_refused_naming_the_hit():
    d = Document(page_content=CAPS, metadata={"page": 1})
    with pytest.raises(BadReply, match=r"app 'team', question q1, hit 1: \"doc\" is None"):
        passages([d])


def test_the_same_document_passage_twice_is_refused():
    d = Document(page_content=CAPS, metadata={"doc": "guides/fare-capping.md"})
    with pytest.raises(BadReply, match="hit 2: id 'guides/fare-capping.md#0b67a55040b3' was already returned"):
        passages([d, Document(page_content=CAPS, metadata={"doc": "guides/fare-capping.md"})])


# LlamaIndex NodeWithScore and nodes


def test_node_with_score_reads_file_path_id_and_score():
    node = TextNode(text=RETRY, id_="n-12", metadata={"file_path": "runbooks/offline-taps.md", "author": "ops"})
    hit = NodeWithScore(node=node, score=0.5)
    # the text alone: get_content() leaves the metadata out
    assert as_mapping(hit) == {"text": RETRY, "doc": "runbooks/offline-taps.md", "id": "n-12", "score": 0.5}
    assert passages([hit]) == [Passage(id="runbooks/offline-taps.md#n-12", doc="runbooks/offline-taps.md",
                                       text=RETRY, score=0.5)]


def test_node_doc_wins_over_file_path():
    node = TextNode(text=CAPS, id_="n-1", metadata={"file_path": "/tmp/x/fare-capping.md", "doc": "guides/fare-capping.md"})
    assert as_mapping(NodeWithScore(node=node, score=1.0))["doc"] == "guides/fare-capping.md"


def test_node_with_score_none_keeps_no_score():
    node = TextNode(text=CAPS, id_="n-1", metadata={"doc": "guides/fare-capping.md"})
    assert passages([NodeWithScore(node=node)])[0].score is None


def test_bare_text_node_has_no_score_and_ranks_by_position():
    a = TextNode(text=CAPS, id_="a", metadata={"doc": "guides/fare-capping.md"})
    b = TextNode(text=RETRY, id_="b", metadata={"source": "runbooks/offline-taps.md"})
    assert as_mapping(a) == {"text": CAPS, "doc": "guides/fare-capping.md", "id": "a", "score": None}
    got = passages([a, b])
    assert got == [Passage(id="guides/fare-capping.md#a", doc="guides/fare-capping.md", text=CAPS, score=None),
                   Passage(id="runbooks/offline-taps.md#b", doc="runbooks/offline-taps.md", text=RETRY, score=None)]
    assert ranking_scores(got) == [1.0, 0.5]


# a LangChain retriever, as a team's app would return its results


class TwoPassages(BaseRetriever):
    """A retriever that returns the same two Documents for any question, the way a loader
    leaves them (``source``), the first with a score in its metadata."""

    def _get_relevant_documents(self, query: str, *, run_manager) -> list:
        return [Document(page_content=CAPS, metadata={"source": "guides/fare-capping.md", "score": 0.9}),
                Document(page_content=RETRY, id="r1", metadata={"source": "runbooks/offline-taps.md"})]


def test_base_retriever_invoke_output_goes_through_to_passages():
    got = passages(TwoPassages().invoke("When do caps reset?"))
    assert got == [
        Passage(id=f"guides/fare-capping.md#{CAPS_SHA12}", doc="guides/fare-capping.md", text=CAPS, score=0.9),
        Passage(id="runbooks/offline-taps.md#r1", doc="runbooks/offline-taps.md", text=RETRY, score=None),
    ]
    assert ranking_scores(got) == [0.9, 0.5]
