/* hfconfig.h: a Hugging Face config.json as an arch (model/arch.h).
 *
 * Contract.  hfconfig_load reads the config.json of a decoder-only model
 * (the file `transformers` writes next to the weights) and fills an arch,
 * or fails with PG_EXIT_INPUT and a message naming the file, the key and,
 * where it can be found, the line:
 *     FILE:LINE: key 'KEY': problem
 * Malformed JSON reports jansson's line and column.  The result has passed
 * arch_check, so every consumer of arch may rely on its invariants.
 *
 * What is read (aliases in brackets; the full mapping is in hfconfig.c's
 * tables and docs of profiles/models/README.md):
 *   hidden_size [n_embd], num_hidden_layers [n_layer], num_attention_heads
 *   [n_head], num_key_value_heads (absent = heads), head_dim (absent =
 *   hidden/heads), intermediate_size [n_inner; GPT-2's null = 4h],
 *   vocab_size, hidden_act [activation_function], tie_word_embeddings,
 *   max_position_embeddings [n_positions], rms_norm_eps / layer_norm_epsilon
 *   / layer_norm_eps, attention_bias, mlp_bias, qkv_bias, the dropout
 *   probabilities, and the MoE and MLA keys of Mixtral, Qwen2-MoE and
 *   DeepSeek-V3.  model_type supplies what its transformers class defaults
 *   (norm, tying, learned positions, biases, dropout) when a key is absent.
 *
 * And the layers of 2026's models: sliding_window with layer_types
 * (GPT-OSS) and gpt_oss's attention sinks; interleave_moe_layer_step /
 * decoder_sparse_step / moe_layer_freq / mlp_only_layers (MoE on some
 * layers) and Llama 4's intermediate_size_mlp; Nemotron-H's
 * hybrid_override_pattern with its Mamba-2 sizes (mamba_num_heads,
 * mamba_head_dim, ssm_state_size, n_groups, conv_kernel, chunk_size) and
 * mlp_hidden_act; num_nextn_predict_layers (DeepSeek-V3's multi-token
 * prediction, arch.mtp_layers); pipegrid's own layer_mixers / layer_ffns /
 * attention_sinks (what hfconfig_write states).
 *
 * Not modelled, so refused (PG_EXIT_INPUT) rather than costed wrongly:
 * gated GeLU MLPs (Gemma's GeGLU), per-layer patterns of more than
 * ARCH_MAX_PATTERN layers.  Ignored on purpose: rope scaling and Llama 4's
 * chunked attention (attention_chunk_size: full attention at training
 * lengths up to the chunk).
 */
#ifndef PG_MODEL_HFCONFIG_H
#define PG_MODEL_HFCONFIG_H

#include <stddef.h>

#include "model/arch.h"
#include "util/error.h"
#include "util/strbuf.h"

/* arch.name is the file's stem ("llama3-8b" for llama3-8b.json), or the
 * directory's name for a file called config.json (a downloaded model). */
int hfconfig_load(const char *path, arch *out, pg_status *st);

/* The same from text in memory (len bytes, need not be NUL-terminated);
 * label names it in messages and gives arch.name.  For tests and fuzzing. */
int hfconfig_load_buffer(const char *text, size_t len, const char *label, arch *out, pg_status *st);

/* The inverse: a config.json that hfconfig_load reads back as an arch equal
 * to a in every field but name (max_positions only where positions are
 * learned: rotary models do not cost it).  It states every field
 * explicitly, so no model_type default is involved, except Qwen2-MoE's for
 * a gated shared expert (only that family has one).  Appended to out.
 * What `validate --emit` writes beside each measured row's experiment. */
void hfconfig_write(const arch *a, strbuf *out);

#endif
