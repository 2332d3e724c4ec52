"""rag-ablation: measure whether a change to a RAG pipeline helped."""
