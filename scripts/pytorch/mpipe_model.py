"""An mpipe language model as a PyTorch module, built from an export alone.

`mpipe export` (and `train --export-weights`) write one safetensors file of float32 tensors named
`layers.<i>.<param>`, i the layer's index in `model.layers` with every `repeat` expanded; the
layout is in docs/export.md. The export's metadata `model` holds the run's resolved model (its
`model.*` settings, `--set` overrides included), from which the module is built. An export written
before mpipe recorded it has no `model`: then the experiment YAML it was trained from is given
too, and must still describe the trained model (with any `--set model...` applied by hand).

    import mpipe_model
    model = mpipe_model.load("run.safetensors")   # an eval-mode torch.nn.Module
    logits = model(ids)                           # ids [batch, T] -> [batch, T, vocab]

Covers the sequential language-model layers: embedding (token table and learned positions),
transformer_block (layer_norm or rms_norm, gelu or swiglu MLP, rotary, kv_heads), attention
(causal or not, rotary, kv_heads; without `read`), layer_norm, rms_norm, linear (with `tie:
embedding`), relu, gelu, tanh and dropout (the identity: the module evaluates). Needs Debian's
python3-torch (PyTorch 1.13; run it with /usr/bin/python3), and python3-yaml for an export without
`model`.
"""
import json
import math
import re
import struct
from typing import Any

import torch
import torch.nn.functional as F

# The norms' epsilon where a layer gives none: layer_norm's and rms_norm's `eps` default, and the
# transformer block's norms (which take no eps).
DEFAULT_EPS = 1e-5


def read_safetensors(path: str) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """The float32 tensors of a safetensors file, by name, and its metadata."""
    with open(path, "rb") as f:
        header_size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(header_size))
        data = f.read()
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, entry in header.items():
        if entry["dtype"] != "F32":
            raise ValueError(f"{path}: tensor '{name}' is {entry['dtype']}, not F32")
        begin, end = entry["data_offsets"]
        values = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.float32)
        tensors[name] = values.reshape(entry["shape"])
    return tensors, metadata


def expand_layers(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """model.layers with each `repeat: n, layers: [...]` expanded n times, in mpipe's order."""
    layers = []
    for entry in entries:
        if "repeat" in entry:
            layers += expand_layers(entry["layers"]) * int(entry["repeat"])
        else:
            layers.append(entry)
    return layers


def model_layers(config_path: str) -> list[dict[str, Any]]:
    """The expanded layer list of an experiment YAML."""
    import yaml  # only here: an export with its model needs no YAML
    with open(config_path) as f:
        experiment = yaml.safe_load(f)
    return expand_layers(experiment["model"]["layers"])


LAYER_SETTING = re.compile(r"model\.layers\[(\d+)\]\.(\w+)")


def setting_value(text: str) -> Any:
    """A resolved setting's value from its text as mpipe writes it: a bool, a number or text."""
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def stored_layers(model: str) -> list[dict[str, Any]]:
    """The expanded layer list of an export's metadata `model`: a JSON object of the model's
    resolved settings, "model.layers[<i>].<key>" -> the value as text."""
    layers: dict[int, dict[str, Any]] = {}
    for key, text in json.loads(model).items():
        match = LAYER_SETTING.fullmatch(key)
        if match:
            layers.setdefault(int(match[1]), {})[match[2]] = setting_value(text)
    if sorted(layers) != list(range(len(layers))):
        raise ValueError(f"the model's layers are not numbered 0..{len(layers) - 1}")
    return [layers[i] for i in range(len(layers))]


class RmsNorm(torch.nn.Module):
    """y = x / sqrt(mean(x^2) + eps) * weight over the last axis (PyTorch 1.13 has no RMSNorm)."""

    def __init__(self, weight: torch.Tensor, eps: float) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight)
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def make_norm(params: dict[str, torch.Tensor], rms: bool, eps: float) -> torch.nn.Module:
    """A layer norm (params weight and bias) or an RMS norm (weight only)."""
    if rms:
        return RmsNorm(params["weight"], eps)
    norm = torch.nn.LayerNorm(params["weight"].shape[0], eps=eps)
    norm.weight.data.copy_(params["weight"])
    norm.bias.data.copy_(params["bias"])
    return norm


def make_linear(weight: torch.Tensor, bias: torch.Tensor | None) -> torch.nn.Linear:
    """A Linear holding mpipe's weight [out, in] (PyTorch's layout too) and bias."""
    linear = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None)
    linear.weight.data.copy_(weight)
    if bias is not None:
        linear.bias.data.copy_(bias)
    return linear


def sub(params: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    """The params whose names start with prefix, without it."""
    return {k[len(prefix):]: v for k, v in params.items() if k.startswith(prefix)}


class Embedding(torch.nn.Module):
    """y[b, t] = token[ids[b, t]] + position[t]."""

    def __init__(self, params: dict[str, torch.Tensor]) -> None:
        super().__init__()
        self.token = torch.nn.Parameter(params["token"])  # [vocab, dim]
        self.position = torch.nn.Parameter(params["position"])  # [max_len, dim]

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.token[ids] + self.position[: ids.shape[1]]


class Attention(torch.nn.Module):
    """mpipe's SelfAttention: qkv rows [d + 2c, d] (q's d, then k's c, then v's c with
    c = kv_heads * d / heads), heads split in order within each, query head h attending with
    key/value head h // (heads // kv_heads); rotary "rotate half" pairing on q and k; proj."""

    def __init__(self, params: dict[str, torch.Tensor], heads: int, kv_heads: int, causal: bool,
                 rotary: bool, rotary_base: float) -> None:
        super().__init__()
        self.qkv = make_linear(params["qkv.weight"], params["qkv.bias"])
        self.proj = make_linear(params["proj.weight"], params["proj.bias"])
        self.heads, self.kv_heads, self.causal = heads, kv_heads, causal
        self.rotary, self.rotary_base = rotary, rotary_base

    def rotate(self, x: torch.Tensor) -> torch.Tensor:
        """x [batch, heads, T, e]: pair i < e/2 with i + e/2, turned by t * base^(-2i/e)."""
        t, e = x.shape[2], x.shape[3]
        inverse = self.rotary_base ** (-torch.arange(0, e, 2, dtype=torch.float64) / e)
        angles = torch.outer(torch.arange(t, dtype=torch.float64), inverse)
        cos, sin = angles.cos().float(), angles.sin().float()
        first, second = x[..., : e // 2], x[..., e // 2:]
        return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        e = d // self.heads
        c = self.kv_heads * e
        q, k, v = self.qkv(x).split([d, c, c], dim=2)
        q = q.view(b, t, self.heads, e).transpose(1, 2)  # [batch, heads, T, e]
        k, v = (z.view(b, t, self.kv_heads, e).transpose(1, 2) for z in (k, v))
        if self.rotary:
            q, k = self.rotate(q), self.rotate(k)
        group = self.heads // self.kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(e))
        if self.causal:
            mask = torch.ones(t, t, dtype=torch.bool).tril()
            scores = scores.masked_fill(~mask, float("-inf"))
        merged = (F.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(merged)


def attention_of(layer: dict[str, Any], params: dict[str, torch.Tensor], causal: bool) -> Attention:
    """The Attention of an attention or transformer_block layer's keys."""
    heads = int(layer["heads"])
    return Attention(params, heads, int(layer.get("kv_heads", heads)), causal,
                     bool(layer.get("rotary", False)), float(layer.get("rotary_base", 10000.0)))


class TransformerBlock(torch.nn.Module):
    """y = x1 + MLP(norm2(x1)), x1 = x + Attn(norm1(x)); MLP fc2(gelu_tanh(fc1)) or
    fc2(silu(gate) * up) with fc1's rows the gate's, then up's."""

    def __init__(self, layer: dict[str, Any], params: dict[str, torch.Tensor]) -> None:
        super().__init__()
        rms = layer.get("norm", "layer_norm") == "rms_norm"
        self.ln1 = make_norm(sub(params, "ln1."), rms, DEFAULT_EPS)
        self.attn = attention_of(layer, sub(params, "attn."), causal=True)
        self.ln2 = make_norm(sub(params, "ln2."), rms, DEFAULT_EPS)
        self.fc1 = make_linear(params["mlp.fc1.weight"], params["mlp.fc1.bias"])
        self.fc2 = make_linear(params["mlp.fc2.weight"], params["mlp.fc2.bias"])
        self.swiglu = layer.get("mlp", "gelu") == "swiglu"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        hidden = self.fc1(self.ln2(x))
        if self.swiglu:
            gate, up = hidden.chunk(2, dim=-1)
            return x + self.fc2(F.silu(gate) * up)
        return x + self.fc2(F.gelu(hidden, approximate="tanh"))


class TiedLinear(torch.nn.Module):
    """The output head whose weight is the embedding's token table (`tie: embedding`)."""

    def __init__(self, embedding: Embedding, bias: torch.Tensor | None) -> None:
        super().__init__()
        self.embedding = [embedding]  # a list: not a second owner of the table
        self.bias = None if bias is None else torch.nn.Parameter(bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.embedding[0].token, self.bias)


def build_layer(layer: dict[str, Any], params: dict[str, torch.Tensor],
                embedding: Embedding | None) -> torch.nn.Module:
    """One layer of the model, holding its exported params."""
    kind = layer["type"]
    if kind == "embedding":
        return Embedding(params)
    if kind == "transformer_block":
        return TransformerBlock(layer, params)
    if kind == "attention":
        if "read" in layer:
            raise ValueError("attention with `read` (key padding) is not covered")
        return attention_of(layer, params, causal=bool(layer.get("causal", True)))
    if kind in ("layer_norm", "rms_norm"):
        return make_norm(params, kind == "rms_norm", float(layer.get("eps", DEFAULT_EPS)))
    if kind == "linear":
        if layer.get("tie") == "embedding":
            if embedding is None:
                raise ValueError("a tied linear needs an embedding before it")
            return TiedLinear(embedding, params.get("bias"))
        return make_linear(params["weight"], params.get("bias"))
    activations = {"relu": torch.nn.ReLU(), "gelu": torch.nn.GELU(approximate="tanh"),
                   "tanh": torch.nn.Tanh(), "dropout": torch.nn.Identity()}
    if kind in activations:
        return activations[kind]
    raise ValueError(f"layer type '{kind}' is not covered by mpipe_model.py")


class MpipeModel(torch.nn.Module):
    """The layers in order: token ids [batch, T] -> logits [batch, T, vocab]."""

    def __init__(self, layers: list[dict[str, Any]], tensors: dict[str, torch.Tensor]) -> None:
        super().__init__()
        built: list[torch.nn.Module] = []
        embedding = None
        used = set()
        for i, layer in enumerate(layers):
            prefix = f"layers.{i}."
            params = sub(tensors, prefix)
            used |= {prefix + name for name in params}
            module = build_layer(layer, params, embedding)
            if isinstance(module, Embedding) and embedding is None:
                embedding = module
            built.append(module)
        unused = sorted(set(tensors) - used)
        if unused:
            raise ValueError(f"the export holds tensors no layer of the model takes: {unused}")
        self.layers = torch.nn.Sequential(*built)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.layers(ids)


def load(weights_path: str, config_path: str | None = None) -> MpipeModel:
    """The model of weights_path's metadata `model` holding its weights, in eval mode; for an
    export without `model` (an older mpipe's), the model of the experiment YAML config_path."""
    tensors, metadata = read_safetensors(weights_path)
    if "model" in metadata:
        layers = stored_layers(metadata["model"])
    elif config_path is not None:
        layers = model_layers(config_path)
    else:
        raise ValueError(f"{weights_path}: no model in its metadata (an older mpipe's export): "
                         "give the experiment YAML it was trained from")
    # A tied head's weight is not in the file: TiedLinear reads the embedding's table.
    tied = json.loads(metadata.get("tied_weights", "{}"))
    for copy in tied:
        index = int(copy.split(".")[1])
        if layers[index].get("tie") != "embedding":
            raise ValueError(f"{weights_path}: {copy} is tied, but the model's layer {index} is not")
    model = MpipeModel(layers, tensors)
    model.eval()
    return model
