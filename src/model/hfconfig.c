/* hfconfig.c: a Hugging Face config.json as an arch (hfconfig.h).
 *
 * jansson parses the file: it reports malformed JSON with line and column,
 * rejects duplicate keys, and keeps integers, reals, booleans and null
 * apart, so "4096.0" or "true" where a size is expected is an error rather
 * than a silent conversion.  It keeps no positions for values, so the line
 * of a bad field is found by scanning the text again (key_line).
 *
 * A config.json holds only what differs from its transformers class's
 * defaults, so model_type selects those defaults (FAMILIES); an unknown
 * model_type gets PretrainedConfig's (tied embeddings) and the rest is told
 * from which keys are present.  Unknown keys are ignored: real configs carry
 * many (token ids, dtype, rope scaling) that change no parameter or FLOP.
 */
#include "model/hfconfig.h"
#include "util/pglimits.h"

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest sizes accepted: util/pglimits.h's, shared with the experiment's
 * keys and the validation CSVs. */
#define HF_MAX_DIM PG_MAX_MODEL_DIM
#define HF_MAX_LAYERS PG_MAX_LAYERS
/* An RMSNorm / LayerNorm epsilon is a small positive guard (1e-5, 1e-6):
 * 1 or more would dominate the variance it guards. */
#define NORM_EPS_MAX 1.0
#define GPT2_FFN_MULT 4           /* GPT-2's n_inner: null means 4 x n_embd */
#define DROPOUT_PROB_MAX 1.0
#define JSON_EXT ".json"
#define HF_CONFIG_STEM "config"   /* DIR/config.json: the model is named by DIR */

#define TRY(expr)                  \
    do {                           \
        int try_rc_ = (expr);      \
        if (try_rc_ != 0)          \
            return try_rc_;        \
    } while (0)

/* A NULL-terminated list of a field's names, the current one first. */
#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* What a config.json leaves to its transformers config class. */
typedef struct hf_family {
    const char *model_type;
    arch_norm_kind norm;
    int tied;               /* the class's tie_word_embeddings default */
    int learned_positions;  /* a learned position table (GPT-2); else rotary */
    int linear_bias;        /* biases on every linear layer */
    int qkv_bias;           /* biases on q, k, v only (hard-wired in Qwen2's attention) */
    int dropout;            /* the class's default dropout probabilities are > 0 */
    int shared_gate;        /* a sigmoid gate on the shared expert (Qwen2-MoE) */
    const char *act;        /* hidden_act / activation_function default */
    int sinks;              /* a learned attention-sink logit per head (GPT-OSS) */
    int llama4;             /* Llama 4: a shared expert of intermediate_size, dense MLPs of intermediate_size_mlp */
} hf_family;

/* gpt2 comes first: it is also the family of GPT-2-style keys (n_embd)
 * without a model_type. */
static const hf_family FAMILIES[] = {
    {"gpt2", ARCH_NORM_LAYERNORM, 1, 1, 1, 0, 1, 0, "gelu_new", 0, 0},
    {"llama", ARCH_NORM_RMSNORM, 0, 0, 0, 0, 0, 0, "silu", 0, 0},
    {"mistral", ARCH_NORM_RMSNORM, 0, 0, 0, 0, 0, 0, "silu", 0, 0},
    {"mixtral", ARCH_NORM_RMSNORM, 0, 0, 0, 0, 0, 0, "silu", 0, 0},
    {"qwen2", ARCH_NORM_RMSNORM, 0, 0, 0, 1, 0, 0, "silu", 0, 0},
    {"qwen2_moe", ARCH_NORM_RMSNORM, 0, 0, 0, 1, 0, 1, "silu", 0, 0},
    {"deepseek_v3", ARCH_NORM_RMSNORM, 0, 0, 0, 0, 0, 0, "silu", 0, 0},
    /* GPT-OSS: biases on every linear layer (q, k, v, o and the experts') */
    {"gpt_oss", ARCH_NORM_RMSNORM, 0, 0, 1, 0, 0, 0, "silu", 1, 0},
    {"llama4_text", ARCH_NORM_RMSNORM, 0, 0, 0, 0, 0, 0, "silu", 0, 1},
    {"nemotron_h", ARCH_NORM_RMSNORM, 0, 0, 0, 0, 0, 0, "relu2", 0, 0},
};

/* Families whose MLP is gated GeLU (GeGLU, three matrices): arch has no such
 * kind, and costing them as GPT's two-matrix GeLU would be silently wrong. */
static const char *const GATED_GELU_TYPES[] = {"gemma", "gemma2", "gemma3_text"};

static const struct {
    const char *name;
    arch_mlp_kind mlp;
} ACTIVATIONS[] = {
    {"gelu", ARCH_MLP_GELU},
    {"gelu_new", ARCH_MLP_GELU},
    {"gelu_pytorch_tanh", ARCH_MLP_GELU},
    {"silu", ARCH_MLP_SWIGLU},   /* SiLU MLPs in these families are all gated (SwiGLU) */
    {"swish", ARCH_MLP_SWIGLU},
    {"relu2", ARCH_MLP_GELU},    /* squared ReLU (Nemotron): not gated, GeLU's two matrices */
};

/* Any of these > 0 turns dropout on (GPT-2's names, then Llama's/Qwen's). */
static const char *const DROPOUT_KEYS[] = {"attn_pdrop", "resid_pdrop", "embd_pdrop", "attention_dropout",
                                           "hidden_dropout"};

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

typedef struct hf_ctx {
    const char *label;  /* names the input in messages */
    const char *path;   /* the file, read again to find a key's line; NULL for a buffer */
    const char *text;   /* the JSON text once known, and its length */
    size_t len;
    char *owned;        /* text read from path */
    json_t *root;
    pg_status *st;
} hf_ctx;

/* ---- messages -------------------------------------------------------------- */

static int is_json_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/* 1-based line of the top-level key KEY, 0 when not found.  Strings are
 * skipped whole and depth is tracked, so a nested object's key of the same
 * name (rope_scaling, quantization_config) does not match. */
static int key_line(const char *text, size_t len, const char *key)
{
    size_t klen = strlen(key);
    int line = 1, depth = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = text[i];
        if (ch == '\n') {
            line++;
        } else if (ch == '{' || ch == '[') {
            depth++;
        } else if (ch == '}' || ch == ']') {
            depth--;
        } else if (ch == '"') {
            size_t start = ++i;
            while (i < len && text[i] != '"')
                i += text[i] == '\\' ? 2 : 1;
            if (i >= len)
                return 0;
            if (depth == 1 && i - start == klen && memcmp(text + start, key, klen) == 0) {
                size_t j = i + 1;
                while (j < len && is_json_space(text[j]))
                    j++;
                if (j < len && text[j] == ':')
                    return line;
            }
        }
    }
    return 0;
}

/* The file's text, for key_line only; NULL when it cannot be read (the
 * message then goes without a line). */
static void load_text(hf_ctx *c)
{
    if (c->text || !c->path)
        return;
    FILE *f = fopen(c->path, "rb");
    if (!f)
        return;
    size_t n = 0, got;
    char chunk[BUFSIZ];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        c->owned = pg_xrealloc(c->owned, n + got);
        memcpy(c->owned + n, chunk, got);
        n += got;
    }
    fclose(f);
    c->text = c->owned;
    c->len = n;
}

static int fail_key(hf_ctx *c, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail_key(hf_ctx *c, const char *key, const char *fmt, ...)
{
    load_text(c);
    char problem[PG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    pg_origin at = {c->label, c->text ? key_line(c->text, c->len, key) : 0};
    return pg_fail_at(c->st, PG_EXIT_INPUT, at, key, "%s", problem);
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "a list";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "an unknown JSON value";
}

/* ---- typed fields ------------------------------------------------------------ */

/* The first of the names present (null included); *which = that name. */
static json_t *lookup(const hf_ctx *c, const char *const *names, const char **which)
{
    for (const char *const *n = names; *n; n++) {
        json_t *v = json_object_get(c->root, *n);
        if (v) {
            *which = *n;
            return v;
        }
    }
    *which = names[0];
    return NULL;
}

/* An integer in lo..HF_MAX_DIM into *out.  Absent or null: 0 with *out
 * untouched and *found = 0 (an error when required: HF's classes give no
 * usable default for the model's shape).  found may be NULL. */
static int get_int(hf_ctx *c, const char *const *names, int required, int lo, int *out, int *found)
{
    const char *name;
    json_t *v = lookup(c, names, &name);
    int present = v && !json_is_null(v);
    if (found)
        *found = present;
    if (!present) {
        if (!required)
            return 0;
        if (v)
            return fail_key(c, name, "must be an integer, not null");
        return fail_key(c, name, "missing (a required field%s%s)", names[1] ? "; also read as " : "",
                        names[1] ? names[1] : "");
    }
    if (!json_is_integer(v))
        return fail_key(c, name, "must be an integer, not %s", type_name(v));
    json_int_t x = json_integer_value(v);
    if (x < lo)
        return fail_key(c, name, "must be at least %d (got %lld)", lo, (long long)x);
    if (x > HF_MAX_DIM)
        return fail_key(c, name, "%lld is larger than any model's (at most %d)", (long long)x, HF_MAX_DIM);
    *out = (int)x;
    return 0;
}

/* A size read by get_int that must not exceed max (pglimits.h). */
static int check_max(hf_ctx *c, const char *name, int value, int max)
{
    if (value > max)
        return fail_key(c, name, "%d is more than any model's (at most %d)", value, max);
    return 0;
}

/* A norm epsilon, when present: a number in (0, 1). */
static int check_norm_eps(hf_ctx *c, const char *name)
{
    json_t *v = json_object_get(c->root, name);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v))
        return fail_key(c, name, "must be a small positive number, not %s", type_name(v));
    double eps = json_number_value(v);
    if (!(eps > 0.0 && eps < NORM_EPS_MAX))   /* NaN and infinity fail too */
        return fail_key(c, name, "%g is not a norm epsilon (a positive number below %g)", eps, NORM_EPS_MAX);
    return 0;
}

/* A boolean into *out when present (null = absent). */
static int get_bool(hf_ctx *c, const char *name, int *out, int *found)
{
    json_t *v = json_object_get(c->root, name);
    *found = v && !json_is_null(v);
    if (!*found)
        return 0;
    if (!json_is_boolean(v))
        return fail_key(c, name, "must be true or false, not %s", type_name(v));
    *out = json_is_true(v);
    return 0;
}

/* A string (the first alias present) or NULL when absent or null. */
static int get_string(hf_ctx *c, const char *const *names, const char **out, const char **which)
{
    json_t *v = lookup(c, names, which);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return fail_key(c, *which, "must be a string, not %s", type_name(v));
    *out = json_string_value(v);
    return 0;
}

/* ---- the model ------------------------------------------------------------------ */

static void set_name(arch *a, const char *label)
{
    const char *base = strrchr(label, '/');
    base = base ? base + 1 : label;
    size_t n = strlen(base);
    if (n > strlen(JSON_EXT) && strcmp(base + n - strlen(JSON_EXT), JSON_EXT) == 0)
        n -= strlen(JSON_EXT);
    if (n == strlen(HF_CONFIG_STEM) && strncmp(base, HF_CONFIG_STEM, n) == 0 && base > label + 1) {
        /* DIR/config.json: the directory's name */
        const char *end = base - 1, *dir = end;
        while (dir > label && dir[-1] != '/')
            dir--;
        if (end > dir) {
            base = dir;
            n = (size_t)(end - dir);
        }
    }
    snprintf(a->name, sizeof a->name, "%.*s", (int)n, base);
}

static int read_family(hf_ctx *c, const hf_family **fam)
{
    const char *type, *key;
    TRY(get_string(c, KEYS("model_type"), &type, &key));
    *fam = NULL;
    if (!type)
        return 0;
    for (size_t i = 0; i < COUNT(GATED_GELU_TYPES); i++)
        if (strcmp(type, GATED_GELU_TYPES[i]) == 0)
            return fail_key(c, key, "'%s' has a gated GeLU MLP (GeGLU), which pipegrid does not model", type);
    for (size_t i = 0; i < COUNT(FAMILIES); i++)
        if (strcmp(type, FAMILIES[i].model_type) == 0)
            *fam = &FAMILIES[i];
    return 0;
}

/* Layers, widths, heads, vocabulary. */
static int read_shape(hf_ctx *c, arch *a, int *gpt2_keys)
{
    TRY(get_int(c, KEYS("hidden_size", "n_embd"), 1, 1, &a->hidden, NULL));
    *gpt2_keys = json_object_get(c->root, "hidden_size") == NULL;
    TRY(get_int(c, KEYS("num_hidden_layers", "n_layer"), 1, 1, &a->layers, NULL));
    if (a->layers > HF_MAX_LAYERS)
        return fail_key(c, json_object_get(c->root, "num_hidden_layers") ? "num_hidden_layers" : "n_layer",
                        "%d layers is more than any model's (at most %d)", a->layers, HF_MAX_LAYERS);
    TRY(get_int(c, KEYS("num_attention_heads", "n_head"), 1, 1, &a->heads, NULL));
    TRY(get_int(c, KEYS("vocab_size"), 1, 1, &a->vocab, NULL));
    a->kv_heads = a->heads;
    TRY(get_int(c, KEYS("num_key_value_heads"), 0, 1, &a->kv_heads, NULL));
    if (a->heads % a->kv_heads != 0)
        return fail_key(c, "num_key_value_heads", "%d key/value heads do not divide the %d attention heads",
                        a->kv_heads, a->heads);
    int has_head_dim;
    TRY(get_int(c, KEYS("head_dim"), 0, 1, &a->head_dim, &has_head_dim));
    TRY(check_max(c, "head_dim", a->head_dim, PG_MAX_HEAD_DIM));
    if (!has_head_dim) {
        if (a->hidden % a->heads != 0)
            return fail_key(c, "num_attention_heads", "%d heads do not divide hidden size %d (give head_dim)",
                            a->heads, a->hidden);
        a->head_dim = a->hidden / a->heads;
    }
    return 0;
}

static int read_mlp(hf_ctx *c, const hf_family *fam, int gpt2_keys, arch *a)
{
    const char *act, *key;
    /* Nemotron-H names its MLP's activation apart from its Mamba's */
    TRY(get_string(c, KEYS("mlp_hidden_act", "hidden_act", "activation_function"), &act, &key));
    if (!act && fam)
        act = fam->act;
    if (!act)
        return fail_key(c, "hidden_act", "missing (a required field for model_type other than gpt2, llama, "
                        "mistral, mixtral, qwen2, qwen2_moe, deepseek_v3)");
    size_t i = 0;
    while (i < COUNT(ACTIVATIONS) && strcmp(act, ACTIVATIONS[i].name) != 0)
        i++;
    if (i == COUNT(ACTIVATIONS))
        return fail_key(c, key, "unknown activation '%s' (known: gelu, gelu_new, gelu_pytorch_tanh, relu2 -> "
                        "two-matrix MLP; silu, swish -> SwiGLU)", act);
    a->mlp = ACTIVATIONS[i].mlp;

    int has_ffn;
    TRY(get_int(c, KEYS("intermediate_size", "n_inner"), !gpt2_keys, 1, &a->ffn, &has_ffn));
    if (!has_ffn) {   /* GPT-2: n_inner absent or null */
        if (a->hidden > HF_MAX_DIM / GPT2_FFN_MULT)
            return fail_key(c, "n_embd", "%d x %d (the default n_inner) is larger than any model's", GPT2_FFN_MULT,
                            a->hidden);
        a->ffn = GPT2_FFN_MULT * a->hidden;
    }
    return 0;
}

/* Norm, tying, positions, biases, dropout: mostly the family's defaults. */
static int read_layout(hf_ctx *c, const hf_family *fam, int gpt2_keys, arch *a)
{
    if (fam)
        a->norm = fam->norm;
    else if (json_object_get(c->root, "rms_norm_eps"))
        a->norm = ARCH_NORM_RMSNORM;
    else if (json_object_get(c->root, "layer_norm_epsilon") || json_object_get(c->root, "layer_norm_eps"))
        a->norm = ARCH_NORM_LAYERNORM;
    else
        return fail_key(c, "rms_norm_eps", "cannot tell RMSNorm from LayerNorm: give rms_norm_eps or "
                        "layer_norm_epsilon, or a known model_type");
    TRY(check_norm_eps(c, "rms_norm_eps"));
    TRY(check_norm_eps(c, "layer_norm_epsilon"));
    TRY(check_norm_eps(c, "layer_norm_eps"));

    int found;
    a->tied_embeddings = fam ? fam->tied : 1;   /* PretrainedConfig's default */
    TRY(get_bool(c, "tie_word_embeddings", &a->tied_embeddings, &found));

    a->learned_positions = fam ? fam->learned_positions : gpt2_keys || json_object_get(c->root, "n_positions");
    TRY(get_int(c, KEYS("max_position_embeddings", "n_positions"), a->learned_positions, 1, &a->max_positions,
                NULL));

    a->linear_bias = fam ? fam->linear_bias : 0;
    a->qkv_bias = fam ? fam->qkv_bias : 0;
    int attention_bias = 0, mlp_bias = 0;
    TRY(get_bool(c, "qkv_bias", &a->qkv_bias, &found));
    TRY(get_bool(c, "attention_bias", &attention_bias, &found));
    TRY(get_bool(c, "mlp_bias", &mlp_bias, &found));
    /* Llama's attention_bias adds q, k, v and o biases: counted as qkv_bias,
     * less o's hidden-sized vector per layer.  mlp_bias has no arch field of
     * its own: linear_bias counts the MLP's and also the attention's. */
    if (attention_bias)
        a->qkv_bias = 1;
    if (mlp_bias)
        a->linear_bias = 1;

    int any_key = 0, on = 0;
    for (size_t i = 0; i < COUNT(DROPOUT_KEYS); i++) {
        json_t *v = json_object_get(c->root, DROPOUT_KEYS[i]);
        if (!v || json_is_null(v))
            continue;
        if (!json_is_number(v))
            return fail_key(c, DROPOUT_KEYS[i], "must be a probability, not %s", type_name(v));
        double p = json_number_value(v);
        if (!(p >= 0.0 && p <= DROPOUT_PROB_MAX))
            return fail_key(c, DROPOUT_KEYS[i], "%g is not a probability in 0..1", p);
        any_key = 1;
        on |= p > 0.0;
    }
    a->dropout = any_key ? on : (fam ? fam->dropout : 0);
    return 0;
}

/* model_types and architectures of MoE models: a name with "moe" in it
 * (qwen2_moe, OlmoeForCausalLM) or one of these. */
static const char *const MOE_TYPE_NAMES[] = {"mixtral", "deepseek_v2", "deepseek_v3", "dbrx", "jamba"};

static int names_moe(const char *name)
{
    if (!name)
        return 0;
    if (strcasestr(name, "moe"))
        return 1;
    for (size_t i = 0; i < COUNT(MOE_TYPE_NAMES); i++)
        if (strcasestr(name, MOE_TYPE_NAMES[i]))
            return 1;
    return 0;
}

/* Whether model_type or an architectures entry names an MoE model. */
static int is_moe_type(hf_ctx *c)
{
    json_t *t = json_object_get(c->root, "model_type");
    if (json_is_string(t) && names_moe(json_string_value(t)))
        return 1;
    json_t *archs = json_object_get(c->root, "architectures");
    for (size_t i = 0; json_is_array(archs) && i < json_array_size(archs); i++) {
        json_t *v = json_array_get(archs, i);
        if (json_is_string(v) && names_moe(json_string_value(v)))
            return 1;
    }
    return 0;
}

/* Llama 4: every MoE layer has a shared expert as wide as a routed one
 * (intermediate_size), and its dense layers are intermediate_size_mlp wide. */
static int read_llama4(hf_ctx *c, arch *a)
{
    a->moe.expert_ffn = a->ffn;
    a->moe.shared_ffn = a->ffn;
    TRY(get_int(c, KEYS("intermediate_size_mlp"), 0, 1, &a->ffn, NULL));
    return 0;
}

/* Spells a per-layer pattern out; fails on the key that asked for it when
 * the model is deeper than arch can hold one for. */
static int pattern_fits(hf_ctx *c, const arch *a, const char *key)
{
    if (a->layers > ARCH_MAX_PATTERN)
        return fail_key(c, key, "a per-layer pattern of %d layers is more than pipegrid models (at most %d)",
                        a->layers, ARCH_MAX_PATTERN);
    return 0;
}

/* Which layers are MoE.  Dense first layers: first_k_dense_replace or
 * mlp_only_layers (any indices); then every step-th layer: Qwen's
 * decoder_sparse_step and Llama 4's interleave_moe_layer_step (layer l when
 * (l + 1) % step == 0), DeepSeek's moe_layer_freq (l % freq == 0).  A prefix
 * alone stays moe.dense_layers; anything else is spelled out in arch.ffns. */
static int read_moe_layers(hf_ctx *c, arch *a)
{
    arch_moe *m = &a->moe;
    int step = 1, interleave = 1, freq = 1, has_interleave;
    const char *step_key = "decoder_sparse_step";
    TRY(get_int(c, KEYS("decoder_sparse_step"), 0, 1, &step, NULL));
    TRY(get_int(c, KEYS("interleave_moe_layer_step"), 0, 1, &interleave, &has_interleave));
    if (has_interleave && interleave != 1) {
        if (step != 1)
            return fail_key(c, "interleave_moe_layer_step", "give the MoE step once (decoder_sparse_step is set too)");
        step = interleave;
        step_key = "interleave_moe_layer_step";
    }
    TRY(get_int(c, KEYS("moe_layer_freq"), 0, 1, &freq, NULL));
    if (step > a->layers)
        return fail_key(c, step_key, "a step of %d leaves none of the %d layers MoE", step, a->layers);
    if (freq > a->layers)
        return fail_key(c, "moe_layer_freq", "a frequency of %d exceeds the %d layers", freq, a->layers);
    const char *dense_key = "first_k_dense_replace";
    TRY(get_int(c, KEYS("first_k_dense_replace"), 0, 0, &m->dense_layers, NULL));
    if (m->dense_layers > a->layers)
        return fail_key(c, dense_key, "%d dense layers exceed the %d layers", m->dense_layers, a->layers);
    json_t *dense = json_object_get(c->root, "mlp_only_layers");
    size_t n = 0;
    int prefix = 1;
    if (dense && !json_is_null(dense)) {
        if (!json_is_array(dense))
            return fail_key(c, "mlp_only_layers", "must be a list of layer indices, not %s", type_name(dense));
        n = json_array_size(dense);
        for (size_t i = 0; i < n; i++) {
            json_t *v = json_array_get(dense, i);
            if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= a->layers)
                return fail_key(c, "mlp_only_layers", "item %zu is not a layer index 0..%d", i, a->layers - 1);
            prefix &= json_integer_value(v) == (json_int_t)i;
        }
        if (n > 0 && m->dense_layers > 0)
            return fail_key(c, "mlp_only_layers", "give the dense layers once (first_k_dense_replace is set too)");
    }
    if (step == 1 && freq == 1 && prefix) {
        if (n > 0)
            m->dense_layers = (int)n;
        return 0;
    }
    TRY(pattern_fits(c, a, step != 1 ? step_key : freq != 1 ? "moe_layer_freq" : "mlp_only_layers"));
    for (int l = 0; l < a->layers; l++) {
        int moe = l >= m->dense_layers && (l + 1) % step == 0 && l % freq == 0;
        a->ffns[l] = moe ? 'E' : 'D';
    }
    for (size_t i = 0; i < n; i++)
        a->ffns[json_integer_value(json_array_get(dense, i))] = 'D';
    a->ffns[a->layers] = '\0';
    m->dense_layers = 0;
    if (!strchr(a->ffns, 'E'))
        return fail_key(c, step_key, "no layer is left MoE");
    return 0;
}

/* Mixtral: num_local_experts, the expert size is intermediate_size.
 * Qwen2-MoE: num_experts, moe_intermediate_size, one gated shared expert of
 * shared_expert_intermediate_size, decoder_sparse_step, mlp_only_layers.
 * DeepSeek-V3: n_routed_experts, moe_intermediate_size, n_shared_experts of
 * that size, first_k_dense_replace dense layers of intermediate_size. */
static int read_moe(hf_ctx *c, const hf_family *fam, arch *a)
{
    arch_moe *m = &a->moe;
    const char *experts_key = NULL;
    json_t *ev = lookup(c, KEYS("num_local_experts", "num_experts", "n_routed_experts"), &experts_key);
    TRY(get_int(c, KEYS("num_local_experts", "num_experts", "n_routed_experts"), 0, 0, &m->experts, NULL));
    TRY(check_max(c, experts_key, m->experts, PG_MAX_EXPERTS));
    if (m->experts == 0) {
        /* 0 experts in a config that is MoE would silently cost a dense model */
        int top_k = 0;
        TRY(get_int(c, KEYS("num_experts_per_tok"), 0, 0, &top_k, NULL));
        if (top_k > 0)
            return fail_key(c, ev ? experts_key : "num_local_experts",
                            "%s experts with num_experts_per_tok = %d: an MoE config needs at least one expert",
                            ev ? "0" : "no", top_k);
        if (ev && !json_is_null(ev) && is_moe_type(c))
            return fail_key(c, experts_key, "0 experts in an MoE model (model_type or architectures say MoE)");
        return 0;
    }
    TRY(get_int(c, KEYS("num_experts_per_tok"), 1, 1, &m->top_k, NULL));
    if (m->top_k > m->experts)
        return fail_key(c, "num_experts_per_tok", "%d exceeds the %d experts", m->top_k, m->experts);
    m->expert_ffn = a->ffn;
    TRY(get_int(c, KEYS("moe_intermediate_size"), 0, 1, &m->expert_ffn, NULL));

    int has_qwen_shared, n_shared = 0;
    TRY(get_int(c, KEYS("shared_expert_intermediate_size", "moe_shared_expert_intermediate_size"), 0, 0,
                &m->shared_ffn, &has_qwen_shared));
    TRY(get_int(c, KEYS("n_shared_experts"), 0, 0, &n_shared, NULL));
    if (!has_qwen_shared && n_shared > 0) {
        if ((long long)n_shared * m->expert_ffn > HF_MAX_DIM)
            return fail_key(c, "n_shared_experts", "%d shared experts of %d is larger than any model's", n_shared,
                            m->expert_ffn);
        m->shared_ffn = n_shared * m->expert_ffn;
    }
    m->shared_gate = fam && fam->shared_gate && m->shared_ffn > 0;

    if (fam && fam->llama4)
        TRY(read_llama4(c, a));
    return read_moe_layers(c, a);
}

/* DeepSeek's multi-head latent attention, when kv_lora_rank is given.
 * head_dim then means the query/key head width (nope + rope); a head_dim key
 * is not MLA's (transformers sets it to the rope part), so it is replaced. */
static int read_mla(hf_ctx *c, arch *a)
{
    int has_mla;
    arch_mla *m = &a->mla;
    TRY(get_int(c, KEYS("kv_lora_rank"), 0, 1, &m->kv_lora_rank, &has_mla));
    if (!has_mla)
        return 0;
    a->attn = ARCH_ATTN_MLA;
    TRY(get_int(c, KEYS("q_lora_rank"), 0, 1, &m->q_lora_rank, NULL));   /* null: queries projected directly */
    TRY(get_int(c, KEYS("qk_nope_head_dim"), 1, 0, &m->qk_nope_head_dim, NULL));
    TRY(get_int(c, KEYS("qk_rope_head_dim"), 1, 1, &m->qk_rope_head_dim, NULL));
    TRY(get_int(c, KEYS("v_head_dim"), 1, 1, &m->v_head_dim, NULL));
    TRY(check_max(c, "qk_nope_head_dim", m->qk_nope_head_dim, PG_MAX_HEAD_DIM));
    TRY(check_max(c, "qk_rope_head_dim", m->qk_rope_head_dim, PG_MAX_HEAD_DIM));
    TRY(check_max(c, "v_head_dim", m->v_head_dim, PG_MAX_HEAD_DIM));
    a->head_dim = m->qk_nope_head_dim + m->qk_rope_head_dim;
    return 0;
}

/* Sliding-window attention: layer_types lists each layer's attention
 * (GPT-OSS: sliding_attention and full_attention in turn) over a window of
 * sliding_window keys; without layer_types a window covers every layer
 * (Mistral) unless use_sliding_window is false (Qwen2). */
static const struct {
    const char *name;
    char letter;
} LAYER_TYPES[] = {{"full_attention", 'A'}, {"sliding_attention", 'S'}};

static int read_window(hf_ctx *c, arch *a)
{
    int has_window, found, use = 1;
    TRY(get_int(c, KEYS("sliding_window"), 0, 1, &a->sliding_window, &has_window));
    TRY(get_bool(c, "use_sliding_window", &use, &found));
    json_t *types = json_object_get(c->root, "layer_types");
    if (types && !json_is_null(types)) {
        if (!json_is_array(types))
            return fail_key(c, "layer_types", "must be a list of \"full_attention\" / \"sliding_attention\", not %s",
                            type_name(types));
        if (json_array_size(types) != (size_t)a->layers)
            return fail_key(c, "layer_types", "has %zu entries for %d layers (num_hidden_layers)",
                            json_array_size(types), a->layers);
        TRY(pattern_fits(c, a, "layer_types"));
        for (int l = 0; l < a->layers; l++) {
            json_t *v = json_array_get(types, (size_t)l);
            size_t k = 0;
            while (k < COUNT(LAYER_TYPES) && !(json_is_string(v) && strcmp(json_string_value(v), LAYER_TYPES[k].name) == 0))
                k++;
            if (k == COUNT(LAYER_TYPES))
                return fail_key(c, "layer_types", "item %d is not \"full_attention\" or \"sliding_attention\"", l);
            a->mixers[l] = LAYER_TYPES[k].letter;
        }
        a->mixers[a->layers] = '\0';
        if (strchr(a->mixers, 'S') && !has_window)
            return fail_key(c, "sliding_window", "missing: layer_types has sliding_attention layers");
        if (!strchr(a->mixers, 'S'))
            memset(a->mixers, 0, sizeof a->mixers);   /* all full: the uniform default */
        return 0;
    }
    if (!has_window || !use) {
        a->sliding_window = 0;
        return 0;
    }
    TRY(pattern_fits(c, a, "sliding_window"));
    memset(a->mixers, 'S', (size_t)a->layers);
    a->mixers[a->layers] = '\0';
    return 0;
}

/* A Mamba-2 block's sizes (Nemotron-H's names), all required with M layers. */
static int read_mamba(hf_ctx *c, arch *a)
{
    arch_mamba *m = &a->mamba;
    TRY(get_int(c, KEYS("mamba_num_heads"), 1, 1, &m->heads, NULL));
    TRY(get_int(c, KEYS("mamba_head_dim"), 1, 1, &m->head_dim, NULL));
    TRY(check_max(c, "mamba_head_dim", m->head_dim, PG_MAX_HEAD_DIM));
    TRY(get_int(c, KEYS("ssm_state_size"), 1, 1, &m->state, NULL));
    TRY(check_max(c, "ssm_state_size", m->state, PG_MAX_HEAD_DIM));
    TRY(get_int(c, KEYS("n_groups"), 1, 1, &m->groups, NULL));
    TRY(get_int(c, KEYS("conv_kernel"), 1, 1, &m->conv_kernel, NULL));
    TRY(check_max(c, "conv_kernel", m->conv_kernel, PG_MAX_HEAD_DIM));
    TRY(get_int(c, KEYS("chunk_size"), 1, 1, &m->chunk, NULL));
    if (m->heads % m->groups != 0)
        return fail_key(c, "n_groups", "%d groups do not divide the %d Mamba heads", m->groups, m->heads);
    return 0;
}

/* Nemotron-H's hybrid_override_pattern: one letter per layer, M a Mamba-2
 * block, * an attention block, - a dense MLP, E an MoE block (each its own
 * layer with one norm). */
static int read_hybrid(hf_ctx *c, arch *a)
{
    const char *pat, *key;
    TRY(get_string(c, KEYS("hybrid_override_pattern"), &pat, &key));
    if (!pat)
        return 0;
    if (a->mixers[0] || a->ffns[0] || a->moe.dense_layers > 0)
        return fail_key(c, key, "a hybrid pattern says every layer's kind: give no layer_types, sliding window or MoE "
                        "layer keys with it");
    if (strlen(pat) != (size_t)a->layers)
        return fail_key(c, key, "has %zu letters for %d layers (num_hidden_layers)", strlen(pat), a->layers);
    TRY(pattern_fits(c, a, key));
    for (int l = 0; l < a->layers; l++) {
        switch (pat[l]) {
        case 'M': a->mixers[l] = 'M'; a->ffns[l] = '-'; break;
        case '*': a->mixers[l] = 'A'; a->ffns[l] = '-'; break;
        case '-': a->mixers[l] = '-'; a->ffns[l] = 'D'; break;
        case 'E': a->mixers[l] = '-'; a->ffns[l] = 'E'; break;
        default:
            return fail_key(c, key, "letter '%c' of layer %d is not M (Mamba-2), * (attention), - (MLP) or E (MoE)",
                            pat[l], l);
        }
    }
    a->mixers[a->layers] = a->ffns[a->layers] = '\0';
    if (strchr(pat, 'E') && a->moe.experts < 1)
        return fail_key(c, key, "E layers need experts (n_routed_experts)");
    return strchr(pat, 'M') ? read_mamba(c, a) : 0;
}

/* pipegrid's own keys, what hfconfig_write says: the per-layer letters
 * (arch.h), the attention sinks and Mamba sizes where no family gives them. */
static int read_pipegrid_keys(hf_ctx *c, arch *a)
{
    static const struct { const char *key; const char *letters; size_t off; } PATS[] = {
        {"layer_mixers", ARCH_MIXER_LETTERS, offsetof(arch, mixers)},
        {"layer_ffns", ARCH_FFN_LETTERS, offsetof(arch, ffns)},
    };
    for (size_t i = 0; i < COUNT(PATS); i++) {
        const char *pat, *key;
        TRY(get_string(c, KEYS(PATS[i].key), &pat, &key));
        if (!pat)
            continue;
        if (strlen(pat) != (size_t)a->layers || strspn(pat, PATS[i].letters) != strlen(pat))
            return fail_key(c, key, "must be %d letters of %s, one per layer", a->layers, PATS[i].letters);
        TRY(pattern_fits(c, a, key));
        memcpy((char *)a + PATS[i].off, pat, (size_t)a->layers + 1);
    }
    int found;
    TRY(get_bool(c, "attention_sinks", &a->attn_sinks, &found));
    if (strchr(a->mixers, 'M') && a->mamba.heads == 0)
        TRY(read_mamba(c, a));
    return 0;
}

/* DeepSeek-V3's multi-token-prediction modules (arch.mtp_layers). */
static int read_mtp(hf_ctx *c, arch *a)
{
    TRY(get_int(c, KEYS("num_nextn_predict_layers"), 0, 0, &a->mtp_layers, NULL));
    return check_max(c, "num_nextn_predict_layers", a->mtp_layers, HF_MAX_LAYERS);
}

static int from_json(hf_ctx *c, arch *out)
{
    arch a;
    memset(&a, 0, sizeof a);
    if (!json_is_object(c->root))
        return pg_fail_at(c->st, PG_EXIT_INPUT, (pg_origin){c->label, 0}, NULL,
                          "a config.json must be a JSON object, not %s", type_name(c->root));
    set_name(&a, c->label);
    const hf_family *fam;
    int gpt2_keys;
    TRY(read_family(c, &fam));
    TRY(read_shape(c, &a, &gpt2_keys));
    if (!fam && gpt2_keys && !json_object_get(c->root, "model_type"))
        fam = &FAMILIES[0];   /* GPT-2's key names and no model_type: GPT2Config's defaults */
    TRY(read_mlp(c, fam, gpt2_keys, &a));
    TRY(read_layout(c, fam, gpt2_keys, &a));
    TRY(read_moe(c, fam, &a));
    TRY(read_mla(c, &a));
    a.attn_sinks = fam ? fam->sinks : 0;
    TRY(read_window(c, &a));
    TRY(read_hybrid(c, &a));
    TRY(read_pipegrid_keys(c, &a));
    TRY(read_mtp(c, &a));
    TRY(arch_check(&a, c->label, c->st));
    *out = a;
    return 0;
}

static int parse_failure(const char *label, const json_error_t *err, pg_status *st)
{
    if (json_error_code(err) == json_error_cannot_open_file)
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){label, 0}, NULL, "cannot read the config.json (%s)",
                          err->text);
    return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){label, err->line > 0 ? err->line : 0}, NULL,
                      "malformed JSON at column %d: %s", err->column, err->text);
}

/* Duplicate keys are an error: which of the two a Python loader keeps is
 * an accident, and one of them is a mistake. */
#define HF_JSON_FLAGS JSON_REJECT_DUPLICATES

int hfconfig_load(const char *path, arch *out, pg_status *st)
{
    json_error_t err;
    json_t *root = json_load_file(path, HF_JSON_FLAGS, &err);
    if (!root)
        return parse_failure(path, &err, st);
    hf_ctx c = {.label = path, .path = path, .root = root, .st = st};
    int rc = from_json(&c, out);
    json_decref(root);
    free(c.owned);
    return rc;
}

int hfconfig_load_buffer(const char *text, size_t len, const char *label, arch *out, pg_status *st)
{
    json_error_t err;
    json_t *root = json_loadb(text, len, HF_JSON_FLAGS, &err);
    if (!root)
        return parse_failure(label, &err, st);
    hf_ctx c = {.label = label, .text = text, .len = len, .root = root, .st = st};
    int rc = from_json(&c, out);
    json_decref(root);
    return rc;
}

/* ---- writing (hfconfig.h) -------------------------------------------------- */

/* The epsilon written to say which norm a model has (its value is not costed). */
#define HF_WRITE_NORM_EPS "1e-05"
/* The dropout probability written for a model that trains with dropout (GPT's). */
#define HF_WRITE_DROPOUT "0.1"

static void put_int(strbuf *out, const char *key, long value)
{
    sb_appendf(out, ",\n  \"%s\": %ld", key, value);
}

static void put_bool(strbuf *out, const char *key, int value)
{
    sb_appendf(out, ",\n  \"%s\": %s", key, value ? "true" : "false");
}

void hfconfig_write(const arch *a, strbuf *out)
{
    /* Only Qwen2-MoE gates its shared expert: the one default taken from a family. */
    int qwen_moe = a->moe.experts > 0 && a->moe.shared_gate;
    sb_appendf(out, "{\n  \"model_type\": \"%s\"", qwen_moe ? "qwen2_moe" : "pipegrid");
    put_int(out, "hidden_size", a->hidden);
    put_int(out, "num_hidden_layers", a->layers);
    put_int(out, "num_attention_heads", a->heads);
    put_int(out, "num_key_value_heads", a->kv_heads);
    put_int(out, "head_dim", a->head_dim);
    put_int(out, "intermediate_size", a->ffn);
    put_int(out, "vocab_size", a->vocab);
    sb_appendf(out, ",\n  \"hidden_act\": \"%s\"", a->mlp == ARCH_MLP_SWIGLU ? "silu" : "gelu");
    sb_appendf(out, ",\n  \"%s\": %s", a->norm == ARCH_NORM_RMSNORM ? "rms_norm_eps" : "layer_norm_epsilon",
               HF_WRITE_NORM_EPS);
    put_bool(out, "tie_word_embeddings", a->tied_embeddings);
    /* Without a family, a learned position table is what n_positions says. */
    if (a->learned_positions)
        put_int(out, "n_positions", a->max_positions);
    else if (a->max_positions > 0)
        put_int(out, "max_position_embeddings", a->max_positions);
    put_bool(out, "qkv_bias", a->qkv_bias);
    put_bool(out, "mlp_bias", a->linear_bias);
    sb_appendf(out, ",\n  \"attention_dropout\": %s", a->dropout ? HF_WRITE_DROPOUT : "0.0");
    if (a->moe.experts > 0) {
        put_int(out, "num_local_experts", a->moe.experts);
        put_int(out, "num_experts_per_tok", a->moe.top_k);
        put_int(out, "moe_intermediate_size", a->moe.expert_ffn);
        put_int(out, "shared_expert_intermediate_size", a->moe.shared_ffn);
        put_int(out, "first_k_dense_replace", a->moe.dense_layers);
    }
    if (a->sliding_window > 0)
        put_int(out, "sliding_window", a->sliding_window);
    if (a->mixers[0])
        sb_appendf(out, ",\n  \"layer_mixers\": \"%s\"", a->mixers);
    if (a->ffns[0])
        sb_appendf(out, ",\n  \"layer_ffns\": \"%s\"", a->ffns);
    put_bool(out, "attention_sinks", a->attn_sinks);
    if (a->mamba.heads > 0) {
        put_int(out, "mamba_num_heads", a->mamba.heads);
        put_int(out, "mamba_head_dim", a->mamba.head_dim);
        put_int(out, "ssm_state_size", a->mamba.state);
        put_int(out, "n_groups", a->mamba.groups);
        put_int(out, "conv_kernel", a->mamba.conv_kernel);
        put_int(out, "chunk_size", a->mamba.chunk);
    }
    if (a->mtp_layers > 0)
        put_int(out, "num_nextn_predict_layers", a->mtp_layers);
    if (a->attn == ARCH_ATTN_MLA) {
        put_int(out, "kv_lora_rank", a->mla.kv_lora_rank);
        put_int(out, "q_lora_rank", a->mla.q_lora_rank);
        put_int(out, "qk_nope_head_dim", a->mla.qk_nope_head_dim);
        put_int(out, "qk_rope_head_dim", a->mla.qk_rope_head_dim);
        put_int(out, "v_head_dim", a->mla.v_head_dim);
    }
    sb_append(out, "\n}\n");
}
