"""The causal LM's logits at the last positions only, with the last decoder layer computed there alone.

Scoring a response reads the LM head at its R + 1 last positions. Every layer but the last must run at
every position (the next layer's keys and values are read from all of them), but the last layer's
query, attention output, MLP and norms feed only the LM head: at any other position they are
computed and thrown away. ``scored_logits`` runs the layers before the last as the model does, and
the last one's keys and values at every position but the rest at the ``keep`` last positions only.
Each kept position sees the same keys, values and mask as in the full forward, so its logits are the
same function of the weights; only the float rounding of the smaller matmuls may differ.

At the default sizes (prompts of 48-64 tokens, responses of 2-12, so 3-13 kept positions of 50-76) that
skips about three quarters of the last layer's matrix work, forward and backward: docs/benchmarks.md,
"The last layer at the scored positions".
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel, Qwen2ForCausalLM
from transformers.masking_utils import create_causal_mask
from transformers.models.qwen2.modeling_qwen2 import rotate_half


def check_supported(model: PreTrainedModel) -> None:
    """Raise ``ValueError`` unless ``scored_logits`` can run ``model`` (a Qwen2 causal LM without sliding
    windows: the layer it recomputes is Qwen2's)."""
    if not isinstance(model, Qwen2ForCausalLM):
        raise ValueError(
            f"trainer.last_layer=scored_positions needs a Qwen2 causal LM, got {type(model).__name__}; "
            "use trainer.last_layer=every_position"
        )
    if "sliding_attention" in (getattr(model.config, "layer_types", None) or ()):
        raise ValueError(
            "trainer.last_layer=scored_positions does not handle sliding-window attention; "
            "use trainer.last_layer=every_position"
        )


def scored_logits(
    model: PreTrainedModel,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    position_ids: torch.Tensor,
    keep: int,
) -> torch.Tensor:
    """Logits [B, keep, V] at the ``keep`` last positions, as ``model(..., logits_to_keep=keep).logits``.

    Args:
        input_ids, attention_mask, position_ids: [B, T], as the model's forward takes them (the
            attention mask 1 on real tokens, 0 on padding).
        keep: how many last positions to score, 1 <= keep <= T.
    """
    check_supported(model)
    base = model.model
    hidden = base.embed_tokens(input_ids)  # [B, T, d]
    cos, sin = base.rotary_emb(hidden, position_ids)  # [B, T, head_dim] each
    mask = create_causal_mask(
        config=base.config,
        inputs_embeds=hidden,
        attention_mask=attention_mask,
        past_key_values=None,
        position_ids=position_ids,
    )
    for layer in base.layers[:-1]:
        hidden = layer(hidden, attention_mask=mask, position_embeddings=(cos, sin), position_ids=position_ids)

    last = base.layers[-1]
    attention = last.self_attn
    batch, width, _ = hidden.shape
    head_dim = attention.head_dim
    normed = last.input_layernorm(hidden)
    query = attention.q_proj(normed[:, -keep:]).view(batch, keep, -1, head_dim).transpose(1, 2)
    key = attention.k_proj(normed).view(batch, width, -1, head_dim).transpose(1, 2)
    value = attention.v_proj(normed).view(batch, width, -1, head_dim).transpose(1, 2)
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)  # [B, 1, T, head_dim]: broadcast over heads
    query = query * cos[:, :, -keep:] + rotate_half(query) * sin[:, :, -keep:]
    key = key * cos + rotate_half(key) * sin
    # Kept position i (absolute width - keep + i) attends to the real tokens at or before it.
    positions = torch.arange(width, device=input_ids.device)
    causal = positions[None, :] <= positions[-keep:, None]  # [keep, T]
    allowed = causal[None, None] & attention_mask.bool()[:, None, None, :]  # [B, 1, keep, T]
    attended = F.scaled_dot_product_attention(
        query, key, value, attn_mask=allowed, scale=attention.scaling, enable_gqa=True
    )  # [B, heads, keep, head_dim]
    out = hidden[:, -keep:] + attention.o_proj(attended.transpose(1, 2).reshape(batch, keep, -1))
    out = out + last.mlp(last.post_attention_layernorm(out))
    return model.lm_head(base.norm(out))
