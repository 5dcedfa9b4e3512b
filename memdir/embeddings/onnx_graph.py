"""Build an ONNX graph of a BERT sentence encoder straight from safetensors weights.

memdir must embed text without torch, and no model hub is reachable at run time,
so there is no ready ``model.onnx`` to download. The original
all-MiniLM-L6-v2 checkpoint (``model.safetensors`` + ``config.json``) is all we
get, and a BERT encoder is small enough to write out by hand with
``onnx.helper``: embeddings, N post-LN transformer layers, then masked mean
pooling and L2 normalisation, so one ``session.run`` returns finished sentence
embeddings.

Two flavours exist:

* ``fused=True`` (default) emits onnxruntime's ``com.microsoft`` kernels
  (``EmbedLayerNormalization``, ``Attention``, ``SkipLayerNormalization``,
  ``BiasGelu``), the same ops onnxruntime's own BERT optimiser would produce;
  they are markedly faster on CPU than what ORT fuses from plain ops.
* ``fused=False`` uses only standard ``ai.onnx`` ops (opset 17), for any ONNX
  runtime, and serves as a cross-check of the fused graph.

Both take ``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64,
``[batch, seq]``) and return ``last_hidden_state`` ``[batch, seq, hidden]`` and
``sentence_embedding`` ``[batch, hidden]`` (mean-pooled over the mask, unit
length).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import set_external_data

from memdir.embeddings.graph_format import GRAPH_VERSION, INPUT_WORD_TABLE, OUTPUT_EMBEDDING, OUTPUT_HIDDEN

OPSET = 17
_MS_DOMAIN = "com.microsoft"
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")

#: Added to attention scores of padding keys (plain graph). HF uses finfo.min;
#: any value this negative makes exp() exactly 0 in fp32, so results agree.
_MASK_NEG = -1.0e9


@dataclass(frozen=True)
class BertConfig:
    """The subset of a Hugging Face ``config.json`` the graph depends on."""

    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    layer_norm_eps: float
    max_position_embeddings: int
    type_vocab_size: int

    @classmethod
    def from_file(cls, path: Path) -> BertConfig:
        """Read ``config.json``, refusing models this builder cannot represent.

        Raises:
            ValueError: the config is not an absolute-position BERT with erf GELU.
        """
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        if raw.get("model_type", "bert") != "bert":
            raise ValueError(f"only BERT encoders are supported, got {raw.get('model_type')!r}")
        if raw.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"only erf GELU is supported, got {raw.get('hidden_act')!r}")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute position embeddings are supported")
        return cls(
            hidden_size=int(raw["hidden_size"]),
            num_layers=int(raw["num_hidden_layers"]),
            num_heads=int(raw["num_attention_heads"]),
            intermediate_size=int(raw["intermediate_size"]),
            layer_norm_eps=float(raw.get("layer_norm_eps", 1e-12)),
            max_position_embeddings=int(raw.get("max_position_embeddings", 512)),
            type_vocab_size=int(raw.get("type_vocab_size", 2)),
        )


class _Graph:
    """Accumulates nodes and initializers with unique names; keeps builders short."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0

    def const(self, name: str, array: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def i64(self, name: str, values: list[int]) -> str:
        return self.const(name, np.array(values, np.int64))

    def f32(self, name: str, value: float) -> str:
        return self.const(name, np.array(value, np.float32))

    def op(self, op_type: str, inputs: list[str], n_out: int = 1, domain: str = "", **attrs: Any) -> list[str]:
        self._n += 1
        outs = [f"{op_type}_{self._n}_{i}" for i in range(n_out)]
        self.nodes.append(
            helper.make_node(op_type, inputs, outs, name=f"{op_type}_{self._n}", domain=domain or None, **attrs)
        )
        return outs

    def op1(self, op_type: str, inputs: list[str], domain: str = "", **attrs: Any) -> str:
        return self.op(op_type, inputs, 1, domain, **attrs)[0]


def _weights(weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Drop the ``bert.`` prefix some checkpoints carry, so lookups are uniform."""
    return {k.removeprefix("bert."): v.astype(np.float32) if v.dtype != np.int64 else v for k, v in weights.items()}


def build_model(weights: dict[str, np.ndarray], config: BertConfig, *, fused: bool = True) -> onnx.ModelProto:
    """Assemble the encoder + pooling graph from already loaded weights.

    Args:
        weights: safetensors tensors keyed by their Hugging Face names.
        config: the encoder's shape.
        fused: emit onnxruntime contrib kernels (fast) instead of standard ops.

    Returns:
        A checked ``onnx.ModelProto`` ready to serialise or hand to onnxruntime.
    """
    w = _weights(weights)
    g = _Graph()
    if fused:
        hidden, mask_f = _fused_encoder(g, w, config)
    else:
        hidden, mask_f = _plain_encoder(g, w, config)
    g.nodes.append(helper.make_node("Identity", [hidden], [OUTPUT_HIDDEN], name="out_hidden"))
    _pool_and_normalise(g, OUTPUT_HIDDEN, mask_f)

    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        g.nodes,
        "memdir_bert_encoder",
        [helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in _INPUTS],
        [
            helper.make_tensor_value_info(OUTPUT_HIDDEN, TensorProto.FLOAT, [*dims, config.hidden_size]),
            helper.make_tensor_value_info(OUTPUT_EMBEDDING, TensorProto.FLOAT, ["batch", config.hidden_size]),
        ],
        initializer=g.inits,
    )
    opsets = [helper.make_opsetid("", OPSET)]
    if fused:
        opsets.append(helper.make_opsetid(_MS_DOMAIN, 1))
    model = helper.make_model(graph, opset_imports=opsets, producer_name="memdir", producer_version=str(GRAPH_VERSION))
    model.ir_version = 8  # readable by onnxruntime >= 1.14
    onnx.checker.check_model(model, full_check=False)
    return model


def build_from_directory(model_dir: Path, *, fused: bool = True) -> onnx.ModelProto:
    """Read ``model.safetensors`` + ``config.json`` from a directory and build the graph."""
    from safetensors.numpy import load_file

    model_dir = Path(model_dir)
    config = BertConfig.from_file(model_dir / "config.json")
    return build_model(load_file(str(model_dir / "model.safetensors")), config, fused=fused)


WEIGHTS_APART_MIN = 1024
"""Bytes from which an initializer's data moves to the weights file (`weights_apart`)."""
_PAGE = 4096
_READ_BY_ROWS = frozenset({"Gather", "EmbedLayerNormalization"})


def weights_apart(model: onnx.ModelProto, location: str) -> bytes:
    """Move the data of ``model``'s large weight matrices into one blob, the ONNX external-data file
    ``location`` (a name beside the graph file), and return it.

    onnxruntime maps an external weights file into memory instead of reading it into its own, and
    repacks the matrices of its MatMul and attention kernels from there: loading the model no longer
    holds the graph's copy of them beside the repacked one (a served process peaked 36 MB lower).
    The tables read row by row stay in the graph: mapped, a table becomes resident whole after a
    few hundred queries all the same (the kernel maps a file's cached pages in blocks around each
    one read); the word table, the large one, is taken apart first (`words_apart`). Each tensor
    starts on a page boundary, so it can be mapped alone.
    """
    by_rows = {name for node in model.graph.node if node.op_type in _READ_BY_ROWS for name in node.input}
    blob = bytearray()
    for tensor in model.graph.initializer:
        if len(tensor.raw_data) < WEIGHTS_APART_MIN or tensor.name in by_rows:
            continue
        blob.extend(bytes(-len(blob) % _PAGE))
        data = tensor.raw_data
        set_external_data(tensor, location, offset=len(blob), length=len(data))  # (and marks it external)
        tensor.ClearField("raw_data")
        blob.extend(data)
    return bytes(blob)


def words_apart(model: onnx.ModelProto) -> np.ndarray:
    """Turn ``model``'s word-embedding table from an initializer into a graph input of the same
    shape, and return the table: a process then holds only the rows of the words it meets
    (`memdir.embeddings.word_table`)."""
    table = next(t for t in model.graph.initializer if t.name == INPUT_WORD_TABLE)
    array = numpy_helper.to_array(table)
    model.graph.initializer.remove(table)
    model.graph.input.append(helper.make_tensor_value_info(INPUT_WORD_TABLE, TensorProto.FLOAT, list(array.shape)))
    return array


def words_back(model: onnx.ModelProto, array: np.ndarray) -> None:
    """Undo `words_apart`: the table an initializer again (a graph that cannot be written beside
    its table runs from memory)."""
    model.graph.input.remove(next(i for i in model.graph.input if i.name == INPUT_WORD_TABLE))
    model.graph.initializer.append(numpy_helper.from_array(array, INPUT_WORD_TABLE))


def weights_back(model: onnx.ModelProto, blob: bytes) -> None:
    """Undo `weights_apart`: put the data of ``blob`` back into ``model``'s initializers (a graph
    that cannot be written beside its weights runs from memory)."""
    for tensor in model.graph.initializer:
        if tensor.data_location != TensorProto.EXTERNAL:
            continue
        where = {entry.key: entry.value for entry in tensor.external_data}
        offset, length = int(where["offset"]), int(where["length"])
        tensor.raw_data = blob[offset:offset + length]
        del tensor.external_data[:]
        tensor.data_location = TensorProto.DEFAULT


# --------------------------------------------------------------------------- plain ops


def _plain_encoder(g: _Graph, w: dict[str, np.ndarray], c: BertConfig) -> tuple[str, str]:
    """Standard-op BERT: returns (hidden state name, float mask [B,S] name)."""
    eps, h, nh = c.layer_norm_eps, c.hidden_size, c.num_heads
    head = h // nh
    # Positions 0..S-1 as a slice of the table (no Range: simpler for ORT's rewriters).
    seq_1d = g.op1("Slice", [g.op1("Shape", ["input_ids"]), g.i64("i64_1", [1]), g.i64("i64_2", [2])])
    zero_1d = g.i64("i64_0", [0])
    pos = g.op1("Slice", [g.const("pos_emb", w["embeddings.position_embeddings.weight"]), zero_1d, seq_1d, zero_1d])
    words = g.op1("Gather", [g.const(INPUT_WORD_TABLE, w["embeddings.word_embeddings.weight"]), "input_ids"])
    types = g.op1("Gather", [g.const("type_emb", w["embeddings.token_type_embeddings.weight"]), "token_type_ids"])
    emb = g.op1("Add", [g.op1("Add", [words, pos]), types])
    x = _layer_norm(g, emb, w, "embeddings.LayerNorm", eps)

    mask_f = g.op1("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    neg = g.op1("Mul", [g.op1("Sub", [g.f32("one_f", 1.0), mask_f]), g.f32("mask_neg", _MASK_NEG)])
    bias4 = g.op1("Unsqueeze", [neg, g.i64("axes_12", [1, 2])])  # [B,1,1,S]

    split_shape = g.i64("split_heads", [0, 0, nh, head])
    merge_shape = g.i64("merge_heads", [0, 0, h])
    scale = g.f32("attn_scale", 1.0 / math.sqrt(head))
    for i in range(c.num_layers):
        p = f"encoder.layer.{i}."
        q = _linear(g, x, w, p + "attention.self.query", f"l{i}_q")
        k = _linear(g, x, w, p + "attention.self.key", f"l{i}_k")
        v = _linear(g, x, w, p + "attention.self.value", f"l{i}_v")
        q = g.op1("Transpose", [g.op1("Reshape", [q, split_shape])], perm=[0, 2, 1, 3])
        k = g.op1("Transpose", [g.op1("Reshape", [k, split_shape])], perm=[0, 2, 3, 1])
        v = g.op1("Transpose", [g.op1("Reshape", [v, split_shape])], perm=[0, 2, 1, 3])
        scores = g.op1("Add", [g.op1("Mul", [g.op1("MatMul", [q, k]), scale]), bias4])
        ctx = g.op1("MatMul", [g.op1("Softmax", [scores], axis=-1), v])
        ctx = g.op1("Reshape", [g.op1("Transpose", [ctx], perm=[0, 2, 1, 3]), merge_shape])
        attn = _linear(g, ctx, w, p + "attention.output.dense", f"l{i}_o")
        x = _layer_norm(g, g.op1("Add", [attn, x]), w, p + "attention.output.LayerNorm", eps)
        inter = _linear(g, x, w, p + "intermediate.dense", f"l{i}_ff1")
        inter = _gelu_erf(g, inter)
        out = _linear(g, inter, w, p + "output.dense", f"l{i}_ff2")
        x = _layer_norm(g, g.op1("Add", [out, x]), w, p + "output.LayerNorm", eps)
    return x, mask_f


def _linear(g: _Graph, x: str, w: dict[str, np.ndarray], prefix: str, name: str) -> str:
    """``x @ W.T + b``: torch stores Linear weights as [out, in], MatMul wants [in, out]."""
    weight = g.const(f"{name}_w", w[prefix + ".weight"].T)
    return g.op1("Add", [g.op1("MatMul", [x, weight]), g.const(f"{name}_b", w[prefix + ".bias"])])


def _layer_norm(g: _Graph, x: str, w: dict[str, np.ndarray], prefix: str, eps: float) -> str:
    gamma = g.const(prefix + ".weight", w[prefix + ".weight"])
    beta = g.const(prefix + ".bias", w[prefix + ".bias"])
    return g.op1("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=eps)


def _gelu_erf(g: _Graph, x: str) -> str:
    """Exact GELU, ``x * 0.5 * (1 + erf(x / sqrt 2))``, the form ORT fuses into one kernel."""
    inv_sqrt2 = g.f32(f"inv_sqrt2_{len(g.inits)}", 1.0 / math.sqrt(2.0))
    one = g.f32(f"gelu_one_{len(g.inits)}", 1.0)
    half = g.f32(f"gelu_half_{len(g.inits)}", 0.5)
    erf = g.op1("Erf", [g.op1("Mul", [x, inv_sqrt2])])
    return g.op1("Mul", [g.op1("Mul", [x, g.op1("Add", [erf, one])]), half])


# --------------------------------------------------------------------------- fused ops


def _fused_encoder(g: _Graph, w: dict[str, np.ndarray], c: BertConfig) -> tuple[str, str]:
    """BERT from onnxruntime contrib kernels: returns (hidden state, float mask [B,S])."""
    eps = c.layer_norm_eps
    ids32 = g.op1("Cast", ["input_ids"], to=TensorProto.INT32)
    types32 = g.op1("Cast", ["token_type_ids"], to=TensorProto.INT32)
    mask32 = g.op1("Cast", ["attention_mask"], to=TensorProto.INT32)
    x, mask_index = g.op(
        "EmbedLayerNormalization",
        [
            ids32,
            types32,
            g.const(INPUT_WORD_TABLE, w["embeddings.word_embeddings.weight"]),
            g.const("pos_emb", w["embeddings.position_embeddings.weight"]),
            g.const("type_emb", w["embeddings.token_type_embeddings.weight"]),
            g.const("emb_ln_w", w["embeddings.LayerNorm.weight"]),
            g.const("emb_ln_b", w["embeddings.LayerNorm.bias"]),
            mask32,
        ],
        n_out=2,
        domain=_MS_DOMAIN,
        epsilon=eps,
    )
    del mask_index  # 1-D lengths; Attention gets the full 2-D mask so any padding pattern works
    for i in range(c.num_layers):
        p = f"encoder.layer.{i}."
        qkv_w = np.concatenate([w[p + f"attention.self.{n}.weight"].T for n in ("query", "key", "value")], axis=1)
        qkv_b = np.concatenate([w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
        ctx = g.op1(
            "Attention",
            [x, g.const(f"l{i}_qkv_w", qkv_w), g.const(f"l{i}_qkv_b", qkv_b), mask32],
            domain=_MS_DOMAIN,
            num_heads=c.num_heads,
        )
        attn = g.op1("MatMul", [ctx, g.const(f"l{i}_o_w", w[p + "attention.output.dense.weight"].T)])
        x = _skip_ln(g, attn, x, w, p + "attention.output", f"l{i}_ln1", eps)
        inter = g.op1("MatMul", [x, g.const(f"l{i}_ff1_w", w[p + "intermediate.dense.weight"].T)])
        inter = g.op1("BiasGelu", [inter, g.const(f"l{i}_ff1_b", w[p + "intermediate.dense.bias"])], domain=_MS_DOMAIN)
        out = g.op1("MatMul", [inter, g.const(f"l{i}_ff2_w", w[p + "output.dense.weight"].T)])
        x = _skip_ln(g, out, x, w, p + "output", f"l{i}_ln2", eps)
    mask_f = g.op1("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    return x, mask_f


def _skip_ln(g: _Graph, x: str, skip: str, w: dict[str, np.ndarray], prefix: str, name: str, eps: float) -> str:
    """``LayerNorm(x + dense_bias + skip)`` in one kernel (bias of the preceding dense folded in)."""
    inputs = [
        x,
        skip,
        g.const(f"{name}_w", w[prefix + ".LayerNorm.weight"]),
        g.const(f"{name}_b", w[prefix + ".LayerNorm.bias"]),
        g.const(f"{name}_dense_b", w[prefix + ".dense.bias"]),
    ]
    return g.op1("SkipLayerNormalization", inputs, domain=_MS_DOMAIN, epsilon=eps)


# --------------------------------------------------------------------------- pooling


def _pool_and_normalise(g: _Graph, hidden: str, mask_f: str) -> None:
    """Masked mean over tokens then L2 normalisation, as sentence-transformers does.

    The clamps mirror sentence-transformers (token count >= 1e-9, norm >= 1e-12)
    so an all-padding row yields zeros instead of NaN.
    """
    mask3 = g.op1("Unsqueeze", [mask_f, g.i64("axis_2", [2])])  # [B,S,1]
    axis1 = g.i64("axis_1", [1])
    summed = g.op1("ReduceSum", [g.op1("Mul", [hidden, mask3]), axis1], keepdims=0)  # [B,H]
    count = g.op1("Max", [g.op1("ReduceSum", [mask3, axis1], keepdims=0), g.f32("min_count", 1e-9)])
    mean = g.op1("Div", [summed, count])
    norm = g.op1("ReduceL2", [mean], axes=[-1], keepdims=1)  # opset 17: axes is an attribute
    norm = g.op1("Max", [norm, g.f32("min_norm", 1e-12)])
    g.nodes.append(helper.make_node("Div", [mean, norm], [OUTPUT_EMBEDDING], name="l2_normalise"))
