"""PyTorch twin of ``cupynet.models.TransformerClassifier`` (same parameter names, weights copied in).

``benchmarks/_torch_twin.py`` maps Sequential models layer by layer; the transformer has a
learned positional embedding and a tokenizer, so its twin is a small module written out here.
Only vector inputs (F,) cut into tokens of ``token_size`` features are supported (what the GPU
benchmark uses).
"""

from __future__ import annotations

import cupynet as cn


def transformer_twin(model, torch):
    """A torch.nn.Module computing what ``model`` computes, with its state dict loaded (strict).

    Args:
        model: a cupynet TransformerClassifier with input_shape (F,).
        torch: the torch module.
    """
    if len(model.input_shape) != 1:
        raise NotImplementedError("transformer_twin: only vector inputs (F,) are supported")
    layer0 = model.encoder.layers[0]
    d_model = model.embed.out_features
    nhead = layer0.self_attn.num_heads
    dim_ff = layer0.linear1.out_features
    tnn = torch.nn

    class Twin(tnn.Module):
        def __init__(self):
            super().__init__()
            tokens = model.pos_embed.shape[1]
            self.token_size = model.token_size
            self.embed = tnn.Linear(model.embed.in_features, d_model)
            self.pos_embed = tnn.Parameter(torch.zeros(1, tokens, d_model))
            layer = tnn.TransformerEncoderLayer(d_model, nhead, dim_ff, dropout=0.0, activation="gelu",
                                                batch_first=True, norm_first=True)
            self.encoder = tnn.TransformerEncoder(layer, len(model.encoder.layers), enable_nested_tensor=False)
            self.norm = tnn.LayerNorm(d_model)
            self.head = tnn.Linear(d_model, model.head.out_features)

        def forward(self, x):
            h = self.embed(x.reshape(x.shape[0], -1, self.token_size)) + self.pos_embed
            return self.head(self.norm(self.encoder(h)).mean(dim=1))

    twin = Twin()
    state = {k: torch.tensor(cn.backend.to_numpy(v.array)) for k, v in model.state_dict().items()}
    twin.load_state_dict(state, strict=True)
    return twin
