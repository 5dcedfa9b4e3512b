"""What the ONNX graph memdir builds is: its version and the names of its outputs.

Apart from the builder (`memdir.embeddings.onnx_graph`, which imports the ``onnx`` library)
so that loading a graph already built and cached needs neither.
"""

GRAPH_VERSION = 3
"""Bump whenever the emitted graph changes, so cached ``.onnx`` files rebuild."""
OUTPUT_HIDDEN = "last_hidden_state"
OUTPUT_EMBEDDING = "sentence_embedding"
INPUT_WORD_TABLE = "word_embeddings"
"""The word-embedding table: an initializer as built, a graph input once cached (`onnx_graph.words_apart`)."""
