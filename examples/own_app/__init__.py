"""An example of a team's own retriever, measured by rag-ablation as ``apps:`` in params.yaml.

Written the way a team would write its app, with nothing from rag-ablation: its own chunking
(one Markdown paragraph per passage), its own scoring (TF-IDF cosine) and LangChain-core's
retriever interface. Two ways in, one for each app method:

- ``method: python``, ``target: own_app.retriever:retrieve``, ``path: [examples]``
  (:func:`own_app.retriever.retrieve`);
- ``method: http`` against ``python -m own_app.serve`` (run with ``examples`` on ``PYTHONPATH``):
  ``POST /search`` (passages) and ``POST /ask`` (an extractive answer with its passages).

``__version__`` is the version the app reports; rag-ablation puts it into the key of every cached
call, so bumping it asks every question again.
"""

__version__ = "1"
