/* experiment.c: the schema of experiment keys, and config -> experiment.
 *
 * SCHEMA below is the only list of keys: parsing, defaults (each default is
 * its text run through the key's own parser), range checks, the origins
 * kept for later messages and `pipegrid keys` all read it, so none of them
 * can disagree with another.
 */
#include "model/experiment.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/arch.h"
#include "util/datapath.h"
#include "util/pglimits.h"
#include "util/units.h"
#include "util/yamltree.h"

/* Largest values the integer keys accept: far above any real job, low enough
 * that products such as tp*dp*pp and pp*microbatches*chunks fit in an int64
 * and nothing downstream allocates absurd arrays from a typo.  The pipeline's
 * own (pp, microbatches, chunks) and durations are util/pglimits.h's, which
 * the schedule layer shares, so one key has one limit. */
#define MAX_RANKS 65536
#define MAX_PP PG_MAX_PP
#define MAX_MICROBATCHES PG_MAX_MICROBATCHES
#define MAX_CHUNKS PG_MAX_CHUNKS
#define MAX_DURATION PG_MAX_DURATION_S
#define MAX_BATCH (1 << 30)
#define MAX_MODEL_DIM PG_MAX_MODEL_DIM
#define MAX_NODES (1 << 20)
/* Suggest a key only when the typo is small relative to the key. */
#define SUGGEST_MIN_DISTANCE 2
#define SUGGEST_DIVISOR 3
#define KEY_CMP_MAX 128
#define PATH_MAX_BYTES 4096
#define SCHEDULE_FILE_PREFIX "file:"
#define HF_PREFIX "hf:"

typedef enum {
    T_INT,        /* integer in [min, max], stored as int */
    T_NUMBER,     /* plain number in [min, max], stored as double */
    T_DURATION,   /* seconds, SimGrid units */
    T_BYTES,      /* bytes, SimGrid units */
    T_BANDWIDTH,  /* bytes/s, SimGrid units */
    T_TEXT,       /* free text, stored as char[size] */
    T_SCHEDULE,   /* a generator name or file:PATH, stored as char[size] */
    T_CHOICE,     /* one of a list of words (stored as int), or a data file path if path_value >= 0 */
    T_WORDS,      /* a comma-separated set of words of a list, stored as int: their values (bits) or'ed */
} key_type;

typedef struct choice {
    const char *word;
    int value;
} choice;

typedef struct key_spec {
    const char *key;
    key_type type;
    const char *doc_type;      /* what `pipegrid keys` prints as the type */
    const char *default_text;  /* parsed like user input; NULL = no default (0 / empty) */
    double min, max;
    int min_open;              /* min itself is not allowed */
    size_t offset;             /* field in experiment */
    size_t size;               /* T_TEXT / T_SCHEDULE: capacity of the char array */
    const choice *choices;     /* T_CHOICE: terminated by {NULL, 0}; T_INT: words taken besides integers (or NULL) */
    int path_value;            /* T_CHOICE: value for "a path to an existing file", -1 = not allowed */
    size_t path_offset;        /* T_CHOICE with paths: char[PG_NAME_MAX] receiving the resolved path */
    const char *help;
} key_spec;

static const choice WORKLOADS[] = {{"uniform", WL_UNIFORM}, {"gpt", WL_GPT}, {NULL, 0}};
static const choice PRECISIONS[] = {{"bf16", PRECISION_BF16},          {"fp8", PRECISION_FP8},
                                    {"mxfp8", PRECISION_MXFP8},        {"fp8-block", PRECISION_FP8_BLOCK},
                                    {"nvfp4", PRECISION_NVFP4},        {NULL, 0}};

const char *experiment_precision_word(precision_kind p)
{
    for (const choice *c = PRECISIONS; c->word; c++)
        if (c->value == (int)p)
            return c->word;
    return "?";
}
static const choice ATTENTIONS[] = {{"flash", ATTENTION_FLASH}, {"legacy", ATTENTION_LEGACY}, {NULL, 0}};
static const choice GRAD_PRECISIONS[] = {{"fp32", GRAD_FP32}, {"bf16", GRAD_BF16}, {NULL, 0}};
static const choice NETWORKS[] = {{"ideal", NET_IDEAL}, {"cluster", NET_CLUSTER}, {NULL, 0}};
static const choice OFFLOADS[] = {
    {"none", OFFLOAD_NONE}, {"full", OFFLOAD_FULL}, {"selective", OFFLOAD_SELECTIVE},
    {"plan", OFFLOAD_PLAN}, {NULL, 0}};
static const choice BOOLS[] = {{"false", 0}, {"true", 1}, {"no", 0}, {"yes", 1}, {"0", 0}, {"1", 1}, {NULL, 0}};
static const choice DP_ALGOS[] = {{"auto", 0}, {"ring", 1}, {"hierarchical", 2}, {NULL, 0}};
static const choice COLL_MODES[] = {{"fused", 0}, {"stepwise", 1}, {NULL, 0}};
static const choice ETP_WORDS[] = {{"tp", 0}, {NULL, 0}};
static const choice MOE_PROBS[] = {{"activation", 0}, {"combine", 1}, {NULL, 0}};
static const choice EP_DISPATCHERS[] = {{"alltoall", EP_DISPATCH_ALLTOALL}, {"hybridep", EP_DISPATCH_HYBRIDEP},
                                        {NULL, 0}};
static const choice HEADROOMS[] = {{"auto", 1}, {"none", 0}, {NULL, 0}};
static const choice AUTO_NUMBER[] = {{"auto", EXPERIMENT_AUTO}, {NULL, 0}};
static const choice DP_SHARDINGS[] = {{"none", DP_SHARD_NONE}, {"optimizer", DP_SHARD_OPTIMIZER},
                                      {"gradients", DP_SHARD_GRADIENTS}, {"full", DP_SHARD_FULL}, {NULL, 0}};
/* dp.shard_group's word for "all the dp replicas" (stored as 0, resolved to dp). */
static const choice SHARD_GROUP_WORDS[] = {{"dp", 0}, {NULL, 0}};
static const choice DP_REPLICAS[] = {{"auto", 0}, {"all", 1}, {NULL, 0}};
static const choice SIM_ENGINES[] = {{"auto", 0}, {"actors", 1}, {NULL, 0}};
static const choice ORDERS[] = {{"fixed", 0}, {"search", 1}, {NULL, 0}};
static const choice HOST_LINKS[] = {{"datasheet", 0}, {"measured", 1}, {NULL, 0}};
static const choice LINK_RATES[] = {{"datasheet", 0}, {"fitted", 1}, {NULL, 0}};
static const choice HOST_WAITS[] = {
    {"profile", HOST_WAITS_PROFILE}, {"layer", HOST_WAITS_LAYER}, {"op", HOST_WAITS_OP}, {NULL, 0}};
static const choice LAYER_PROFILES[] = {{"measured", 0}, {"analytic", 1}, {NULL, 0}};
static const choice OFFLOAD_RULES[] = {{"engine", 0}, {"pipeoffload", 1}, {NULL, 0}};
static const choice OFFLOAD_PRESETS[] = {{"none", OFFLOAD_PRESET_NONE}, {"po-h", OFFLOAD_PRESET_PO_H},
                                         {"po-f", OFFLOAD_PRESET_PO_F}, {NULL, 0}};
static const choice COPY_MODELS[] = {
    {"duplex", COPY_MODEL_DUPLEX}, {"single", COPY_MODEL_SINGLE}, {"paired", COPY_MODEL_PAIRED}, {NULL, 0}};
static const choice STAGE_LAYERS_WORDS[] = {{"even", STAGE_LAYERS_EVEN}, {NULL, 0}};
static const choice BACKWARDS[] = {{"keep", 0}, {"recompute", 1}, {NULL, 0}};
static const choice LORA_TARGET_WORDS[] = {{"all", LORA_TARGETS_ALL}, {"qkv", LORA_TARGETS_QKV}, {NULL, 0}};
static const choice RECOMPUTE_MODULES[] = {
    {"core_attn", ARCH_RC_CORE_ATTN}, {"layernorm", ARCH_RC_LAYERNORM}, {"mla_up_proj", ARCH_RC_MLA_UP_PROJ},
    {"mlp", ARCH_RC_MLP}, {"moe_act", ARCH_RC_MOE_ACT}, {"moe", ARCH_RC_MOE}, {NULL, 0}};
static const choice RECOMPUTES[] = {{"none", RECOMPUTE_NONE}, {"full", RECOMPUTE_FULL},
                                    {"selective", RECOMPUTE_SELECTIVE}, {"plan", RECOMPUTE_PLAN},
                                    {"lgd", RECOMPUTE_LGD}, {NULL, 0}};

void experiment_recompute_modules_words(int bits, char *buf, size_t len)
{
    size_t used = 0;
    if (len > 0)
        buf[0] = '\0';
    for (const choice *c = RECOMPUTE_MODULES; c->word && used < len; c++)
        if (bits & c->value) {
            int n = snprintf(buf + used, len - used, "%s%s", used ? "," : "", c->word);
            if (n < 0)
                break;
            used += (size_t)n;
        }
}

#define F(field) offsetof(experiment, field)
#define SZ(field) sizeof(((experiment *)0)->field)
#define INT_KEY(k, field, def, lo, hi, help) {k, T_INT, "int", def, lo, hi, 0, F(field), 0, NULL, -1, 0, help}
/* An integer key that also takes the words of choices (a word's value need not be in [lo, hi]). */
#define INT_OR_WORD_KEY(k, doc, field, def, lo, hi, words, help) \
    {k, T_INT, doc, def, lo, hi, 0, F(field), 0, words, -1, 0, help}
#define NUM_KEY(k, field, type, doc, def, lo, hi, open, help) \
    {k, type, doc, def, lo, hi, open, F(field), 0, NULL, -1, 0, help}
/* A number key that also takes the words of choices (a word's value need not be in [lo, hi]). */
#define NUM_OR_WORD_KEY(k, field, type, doc, def, lo, hi, words, help) \
    {k, type, doc, def, lo, hi, 0, F(field), 0, words, -1, 0, help}
#define TEXT_KEY(k, type, doc, field, def, help) {k, type, doc, def, 0, 0, 0, F(field), SZ(field), NULL, -1, 0, help}
#define CHOICE_KEY(k, doc, field, def, choices, pathv, pathf, help) \
    {k, T_CHOICE, doc, def, 0, 0, 0, F(field), 0, choices, pathv, pathf, help}
#define WORDS_KEY(k, doc, field, def, words, help) {k, T_WORDS, doc, def, 0, 0, 0, F(field), 0, words, -1, 0, help}
#define NO_PATH (-1)
#define HUGE_NUM 1e300

static const key_spec SCHEMA[] = {
    TEXT_KEY("name", T_TEXT, "text", name, NULL, "a short name for the experiment, printed in reports"),
    TEXT_KEY("description", T_TEXT, "text", description, NULL, "free text describing the experiment"),
    TEXT_KEY("schedule", T_SCHEDULE, "name|file:PATH", schedule, "1f1b",
             "pipeline schedule: file:PATH (a torch-csv schedule) or a name from the schedule registry "
             "(`pipegrid schedule list`)"),
    INT_KEY("pp", pp, "4", 1, MAX_PP, "pipeline ranks (GPUs per pipeline)"),
    INT_KEY("microbatches", microbatches, "8", 1, MAX_MICROBATCHES,
            "microbatches per iteration; when absent and global_batch_size is given: "
            "global_batch_size / (micro_batch_size x dp)"),
    INT_KEY("chunks", chunks, "2", 1, MAX_CHUNKS,
            "stages per rank for interleaved / hanayo (V-shape schedules always have 2)"),
    INT_KEY("tp", tp, "1", 1, MAX_RANKS, "tensor-parallel degree"),
    INT_KEY("dp", dp, "1", 1, MAX_RANKS, "data-parallel degree"),
    INT_KEY("ep", ep, "1", 1, MAX_RANKS,
            "expert-parallel degree (MoE models): the experts are spread over ep GPUs taken from the data-parallel "
            "replicas, which exchange tokens by all-to-alls; divides dp"),
    INT_OR_WORD_KEY("etp", "1|tp", etp, "tp", 1, 1, ETP_WORDS,
                    "expert tensor parallelism (MoE): tp = the experts split over tp like the MLP; 1 = whole experts "
                    "on each GPU (Megatron's --expert-tensor-parallel-size 1), the expert-parallel groups then ep "
                    "consecutive GPUs of tp x cp x dp, so ep may exceed dp"),
    CHOICE_KEY("ep.dispatcher", "alltoall|hybridep", ep_dispatcher, "alltoall", EP_DISPATCHERS, NO_PATH, 0,
               "how MoE tokens reach their experts' GPUs: alltoall = one copy per routed expert, straight to its "
               "GPU (Megatron's alltoall dispatcher); hybridep = one copy per remote node holding any of the "
               "token's experts, over the NIC to the GPU of the same local rank, which forwards the copies over "
               "NVLink (Megatron's flex dispatcher with HybridEP, DeepEP's layout): fewer bytes across nodes, "
               "more inside them"),
    CHOICE_KEY("ep.overlap", "true|false", ep_overlap, "false", BOOLS, NO_PATH, 0,
               "MoE, schedule=interleaved (or 1f1b with pp = 1): Megatron-Core's combined 1F1B "
               "(--overlap-moe-expert-parallel-comm, off by default there): one more warm-up forward, then each "
               "steady-state forward and the backward after it run as one step that lasts max(their computes, "
               "their expert-parallel all-to-alls), the all-to-alls on their own stream; not with recompute=full"),
    CHOICE_KEY("dualpipe.overlap", "true|false", dualpipe_overlap, "true", BOOLS, NO_PATH, 0,
               "schedule=dualpipe-v: run its paired forward and backward chunks overlapped, one's expert-parallel "
               "all-to-alls under the other's compute (false: one after the other)"),
    INT_KEY("cp", cp, "1", 1, MAX_RANKS,
            "context-parallel degree: each sequence split over cp GPUs, attention's keys and values passed round "
            "a ring; the job uses tp x cp x dp x pp GPUs"),
    CHOICE_KEY("dp.grad_precision", "fp32|bf16", grad_precision, "fp32", GRAD_PRECISIONS, NO_PATH, 0,
               "gradients accumulated and reduced in fp32 (Megatron's default for bf16 training) or bf16: sets "
               "the gradient's bytes in memory and in the data-parallel all-reduce"),
    CHOICE_KEY("tp.sequence_parallel", "true|false", tp_sequence_parallel, "false", BOOLS, NO_PATH, 0,
               "tensor-parallel collectives as reduce-scatter + all-gather pairs (Megatron's sequence "
               "parallelism) instead of all-reduces, and the LayerNorm and dropout activations sharded too; "
               "when not given, on with tp > 1 (as Megatron-Core's recipes run), off with tp = 1"),
    CHOICE_KEY("tp.comm_overlap", "true|false", tp_comm_overlap, "false", BOOLS, NO_PATH, 0,
               "workload=gpt / hf: each layer's tensor-parallel collective overlaps the GEMM next to it "
               "(Transformer Engine's userbuffer overlap, NVIDIA's recipes; the calibration's tp_comm_overlap): "
               "only what exceeds that GEMM costs time, timed by the cost model at NVLink x coll_bw_eff inside "
               "the ops instead of simulated on the links (so it contends with no other traffic)"),
    CHOICE_KEY("kernel_queue.host_waits", "profile|layer|op", host_waits, "profile", HOST_WAITS, NO_PATH, 0,
               "workload=gpt / hf: where the cost model's host waits for the GPU inside a stage's op: as the GPU "
               "type's profile says (its kernel_queue block, chosen by the calibration: layer on a100-80g, op on "
               "h100-sxm, h200, b200), at every layer's end (layer: each layer's kernel queue starts standing), or "
               "at the op's end only (op: the host issues the next layer while the GPU runs this one)"),
    CHOICE_KEY("layer_profiles", "measured|analytic", layer_profiles_analytic, "measured", LAYER_PROFILES, NO_PATH, 0,
               "workload=gpt / hf: a layer whose shape the GPU type's measurements ran in several jobs runs at its "
               "measured profile (the profile's layer_profiles block, fitted by calibrate: the analytic time times "
               "the measured factor; `run` names it on its cost model line), or every layer at the cost model's "
               "analytic time (analytic)"),
    NUM_KEY("dp.bucket_bytes", dp_bucket_bytes, T_BYTES, "bytes", "80MB", 0, HUGE_NUM, 0,
            "data-parallel gradient all-reduce bucket (Megatron: 40M bf16 gradients); 0 = one bucket per stage; "
            "floor: at least 1MiB and at least 1/256 of the largest stage's gradients (at most 256 buckets per "
            "stage), so that tiny buckets cannot make the simulation crawl"),
    CHOICE_KEY("dp.overlap", "true|false", dp_overlap, "false", BOOLS, NO_PATH, 0,
               "start each gradient bucket's all-reduce during the stage's last backward op, as soon as its "
               "gradients exist (Megatron's overlap_grad_reduce)"),
    CHOICE_KEY("dp.sharding", "none|optimizer|gradients|full", dp_sharding, "none", DP_SHARDINGS, NO_PATH, 0,
               "what the data-parallel replicas shard: none; optimizer (ZeRO-1, Megatron's distributed optimizer: "
               "the same as memory.zero1=true); gradients (ZeRO-2: also the gradients, each layer's reduce-"
               "scattered during its backward, every microbatch); full (ZeRO-3 / PyTorch FSDP2 / Megatron-FSDP: "
               "also the parameters, each layer's all-gathered before its forward and again before its backward, "
               "the next layer's gather prefetched under this layer's compute, on one communication stream)"),
    INT_OR_WORD_KEY("dp.shard_group", "int|dp", dp_shard_group, "dp", 1, MAX_RANKS, SHARD_GROUP_WORDS,
                    "dp.sharding=gradients|full: replicas a shard spans (consecutive ranks); less than dp is HSDP "
                    "(hybrid sharding: sharded inside each group, the groups replicas of each other, whose sharded "
                    "gradients are all-reduced across the groups once per iteration); divides dp; dp = all"),
    CHOICE_KEY("dp.algorithm", "auto|ring|hierarchical", dp_algorithm, "auto", DP_ALGOS, NO_PATH, 0,
               "gradient all-reduce: ring over the replicas, as NCCL runs it (a group spread evenly over "
               "several nodes runs one ring per member of a node, each leaving through its own NIC: "
               "src/sim/collectives.h), or hierarchical: reduce-scatter in node + all-reduce across nodes + "
               "all-gather in node; auto = ring"),
    CHOICE_KEY("dp.replicas", "auto|all", dp_replicas, "auto", DP_REPLICAS, NO_PATH, 0,
               "data-parallel replicas simulated: auto = one for all when the job is symmetric (a generated "
               "cluster, every node holding GPUs of one replica, every replica placed alike, no ep), or the "
               "smallest block of replicas that repeats where replicas share nodes or ep groups, exactly the "
               "same results; all = every replica (the report says which ran)"),
    CHOICE_KEY("sim.engine", "auto|actors", sim_engine, "auto", SIM_ENGINES, NO_PATH, 0,
               "the replay: auto = the replay without actors (kernel timers and one-sided transfers, every job "
               "kind); actors = one SimGrid actor per GPU (the reference, the same results and event count; "
               "simulator.engine in the JSON says which ran)"),
    CHOICE_KEY("collectives.mode", "fused|stepwise", collectives_stepwise, "fused", COLL_MODES, NO_PATH, 0,
               "tp and dp ring collectives: each ring edge's steps as one transfer plus the other steps' "
               "latencies (fused), or step by step (stepwise: the same time uncontended, slower to simulate)"),
    INT_KEY("micro_batch_size", micro_batch_size, "1", 1, MAX_BATCH,
            "samples per microbatch; with a profile workload the default is the profile's measured "
            "model.micro_batch_size, and another value scales the profile's times, activation, workspace and "
            "boundary bytes linearly by micro_batch_size / the profile's"),
    INT_KEY("global_batch_size", global_batch_size, "0", 0, MAX_BATCH,
            "samples per iteration over all data-parallel replicas; 0 = not given"),
    CHOICE_KEY("workload", "uniform|gpt|hf:PATH|PATH", workload, "uniform", WORKLOADS, WL_PROFILE, F(profile_path),
               "uniform (uniform.* keys), gpt (gpt.* keys and the GPU's cost model), hf:PATH (a Hugging Face "
               "config.json, e.g. hf:profiles/models/llama3-8b.json, and the GPU's cost model), or a profile "
               "YAML path"),
    NUM_KEY("uniform.f", uniform_f_s, T_DURATION, "seconds", "1s", 0, MAX_DURATION, 1,
            "workload=uniform: F time of one rank's share of the model for one microbatch"),
    NUM_KEY("uniform.b", uniform_b_s, T_DURATION, "seconds", "1s", 0, MAX_DURATION, 1,
            "workload=uniform: B (input gradient) time of one rank's share for one microbatch"),
    NUM_KEY("uniform.w", uniform_w_s, T_DURATION, "seconds", "1s", 0, MAX_DURATION, 1,
            "workload=uniform: W (weight gradient) time of one rank's share for one microbatch"),
    NUM_KEY("uniform.w_fraction", uniform_w_fraction, T_NUMBER, "fraction", "0.4324", 0, 1, 0,
            "workload=uniform: part of M_B that W still needs after B (32h/(34h+5as) at h=4096, a=32, s=1024)"),
    NUM_KEY("uniform.activation", uniform_activation_bytes, T_BYTES, "bytes", "1GiB", 0, HUGE_NUM, 0,
            "workload=uniform: bytes of one M_B (what one microbatch's F stores on one rank)"),
    NUM_KEY("uniform.boundary", uniform_boundary_bytes, T_BYTES, "bytes", "0", 0, HUGE_NUM, 0,
            "workload=uniform: bytes of the activation a stage sends on (the gradient back is the same size)"),
    NUM_KEY("uniform.params", uniform_params, T_NUMBER, "count", "0", 0, HUGE_NUM, 0,
            "workload=uniform: parameters of one rank's share of the model"),
    INT_KEY("gpt.layers", gpt_layers, NULL, 1, PG_MAX_LAYERS, "workload=gpt: transformer layers (required)"),
    INT_KEY("gpt.hidden", gpt_hidden, NULL, 1, MAX_MODEL_DIM, "workload=gpt: hidden size (required)"),
    INT_KEY("gpt.heads", gpt_heads, NULL, 1, MAX_MODEL_DIM,
            "workload=gpt: attention heads, dividing gpt.hidden (required)"),
    INT_KEY("gpt.seq", gpt_seq, NULL, 1, MAX_MODEL_DIM,
            "workload=gpt and workload=hf:PATH: sequence length in tokens (required)"),
    INT_KEY("gpt.vocab", gpt_vocab, "51200", 1, MAX_MODEL_DIM, "workload=gpt: vocabulary size"),
    INT_KEY("gpt.doc_len", gpt_doc_len, "0", 0, MAX_MODEL_DIM,
            "workload=gpt and workload=hf:PATH: packed sequences (SFT): documents of this many tokens, each "
            "attending only within itself (flash attention), so attention costs gpt.seq x gpt.doc_len instead "
            "of gpt.seq^2; 0 = one document per sequence"),
    INT_KEY("lora.rank", lora_rank, "0", 0, MAX_MODEL_DIM,
            "workload=gpt / hf: LoRA fine-tuning: the base weights are frozen (no weight-gradient GEMMs, no "
            "gradients to reduce, no optimizer state; the embedding, norms and head too) and adapters of this "
            "rank (x A B, in bf16) are trained on the linear layers lora.targets names; 0 = full training"),
    CHOICE_KEY("lora.targets", "all|qkv", lora_targets, "all", LORA_TARGET_WORDS, NO_PATH, 0,
               "lora.rank > 0: the linear layers with adapters: all (QKV, output projection, both MLP layers, "
               "experts included: Megatron-Bridge's default) or qkv (the fused QKV projection: NeMo 1.0's)"),
    INT_OR_WORD_KEY("stage.first_layers", "int|even", stage_first_layers, "even", 0, PG_MAX_LAYERS, STAGE_LAYERS_WORDS,
            "workload=gpt / hf: transformer layers on the first pipeline stage (it also holds the embedding; "
            "Megatron's decoder_first_pipeline_num_layers; 0: the embedding alone); the stages not fixed share the "
            "rest evenly; even: as the even split gives"),
    INT_OR_WORD_KEY("stage.last_layers", "int|even", stage_last_layers, "even", 0, PG_MAX_LAYERS, STAGE_LAYERS_WORDS,
            "workload=gpt / hf: transformer layers on the last pipeline stage (it also holds the LM head and the "
            "loss; 0: the head alone; the zero-bubble and PipeOffload papers' balanced stages put one layer fewer "
            "there and on the first); even: as the even split gives"),
    CHOICE_KEY("precision", "bf16|fp8|mxfp8|fp8-block|nvfp4", precision, "bf16", PRECISIONS, NO_PATH, 0,
               "workload=gpt / hf: the linear layers' GEMM recipe (Transformer Engine: activations stay bf16): fp8 "
               "(one scale per tensor), mxfp8 (a scale per 32 elements) and fp8-block (per 1x128 / 128x128 "
               "block) at the GPU's FP8 rate, nvfp4 at its FP4 rate, each with its casts (docs/blackwell.md)"),
    CHOICE_KEY("attention", "flash|legacy", attention, "flash", ATTENTIONS, NO_PATH, 0,
               "workload=gpt / hf: flash (fused attention, no s x s scores stored, recomputed in its backward) or "
               "legacy (Megatron's 2021-22 fused-softmax path, scores stored)"),
    NUM_KEY("moe.capacity_factor", moe_capacity_factor, T_NUMBER, "factor", "0", 0, HUGE_NUM, 0,
            "MoE models: tokens an expert takes, as a multiple of its even share (capacity factor); 0 = dropless"),
    CHOICE_KEY("moe.probs", "activation|combine", moe_probs_on_outputs, "activation", MOE_PROBS, NO_PATH, 0,
               "MoE models, memory: where the router's probabilities weigh the tokens: activation = in the "
               "experts' activation function (Megatron-Core's weighted SwiGLU, its 2025-26 releases), so the "
               "combine keeps nothing for the backward; combine = on the experts' outputs as they are combined "
               "(older Megatron-Core, e.g. NeMo 24.07's), which keeps the outputs, top_k x hidden bytes a token"),
    CHOICE_KEY("network", "ideal|cluster|PATH", network, "ideal", NETWORKS, NET_PLATFORM, F(platform_path),
               "ideal (latency only), cluster (generated from cluster.*), or a SimGrid platform XML path"),
    NUM_KEY("ideal.latency", ideal_latency_s, T_DURATION, "seconds", "0", 0, MAX_DURATION, 0,
            "network=ideal: seconds added to every dependency between two different ranks"),
    INT_KEY("cluster.nodes", cluster_nodes, "1", 1, MAX_NODES, "network=cluster: nodes"),
    INT_KEY("cluster.gpus_per_node", cluster_gpus_per_node, "8", 1, MAX_RANKS, "network=cluster: GPUs per node"),
    INT_KEY("cluster.nvlink_domain", cluster_nvlink_domain, "0", 0, MAX_RANKS,
            "network=cluster: GPUs on one NVLink switch fabric (tensor-, expert- and context-parallel groups inside "
            "it, pipeline and data parallelism across it: docs/blackwell.md); 0 = the GPU system's: 72 for "
            "gb200 / gb300 (an NVL72 rack), a node (cluster.gpus_per_node) otherwise"),
    NUM_KEY("cluster.oversubscription", cluster_oversubscription, T_NUMBER, "ratio", "1", 1, HUGE_NUM, 0,
            "network=cluster: the rail-optimized leaf/spine above the NVLink domains: a domain's NICs share "
            "(its GPUs x NIC rate) / this ratio towards the spine; 1 = non-blocking"),
    TEXT_KEY("cluster.gpu", T_TEXT, "name", cluster_gpu, "h100-sxm",
             "GPU system (a100-80g, h100-sxm, ...): with network=cluster its speed, memory and link defaults; with "
             "network=ideal and workload=gpt or hf:PATH the GPU the cost model runs on (kernel speeds, memory); "
             "a platform file names its own GPUs"),
    NUM_KEY("cluster.nvlink_bw", cluster_nvlink_bw, T_BANDWIDTH, "bytes/s", "0", 0, HUGE_NUM, 0,
            "network=cluster: NVLink datasheet bandwidth per GPU, each direction (cluster.links=fitted runs it "
            "at the GPU type's fitted efficiency); 0 = the GPU system's"),
    NUM_KEY("cluster.ib_bw", cluster_ib_bw, T_BANDWIDTH, "bytes/s", "0", 0, HUGE_NUM, 0,
            "network=cluster: NIC datasheet bandwidth per GPU (cluster.links=fitted runs it at the GPU type's "
            "fitted efficiency); 0 = the GPU system's"),
    NUM_KEY("cluster.pcie_bw", cluster_pcie_bw, T_BANDWIDTH, "bytes/s", "0", 0, HUGE_NUM, 0,
            "network=cluster: PCIe datasheet bandwidth per GPU, run as given (as the GPU system's: no fitted "
            "efficiency); 0 = the GPU system's"),
    CHOICE_KEY("cluster.links", "fitted|datasheet", cluster_links_fitted, "fitted", LINK_RATES, NO_PATH, 0,
               "network=cluster: NVLink and NIC rates as NCCL achieves them, the datasheet rate x the GPU type's "
               "fitted coll_bw_eff (NVLink) and net_bw_eff (NIC) from profiles/gpus/TYPE.yaml, the efficiencies "
               "the calibration measured (docs/validation.md), and every GPU-to-GPU route with the fitted "
               "coll_latency of one ring step (at least the wire's 1 us in a node, 2.6 us across); or the "
               "datasheet rates and wire latencies. cluster.nvlink_bw / cluster.ib_bw, when given, are datasheet "
               "rates like the GPU system's: the fitted efficiencies apply to them too"),
    CHOICE_KEY("cluster.host_link", "datasheet|measured", cluster_host_link_measured, "datasheet", HOST_LINKS,
               NO_PATH, 0,
               "network=cluster: GPU-to-host-memory links at the datasheet PCIe rate, or at the measured effective "
               "rate of the GPU type's profile (profiles/gpus/TYPE.yaml, host_link: PipeOffload's 15 GB/s A100, "
               "21 GB/s H100 per direction while both GPUs of a PCIe switch copy; a GPU alone gets 1/0.7 of it), "
               "with its source in the platform's header"),
    NUM_KEY("memory.limit", memory_limit, T_NUMBER, "M_B units", "0", 0, HUGE_NUM, 0,
            "activation-memory limit per rank in stage-activation units M_B, for schedules that take one; 0 = none"),
    NUM_KEY("zb_auto.time_limit", zb_auto_time_limit_s, T_DURATION, "seconds", "2s", 0, MAX_DURATION, 0,
            "schedule=zb-auto: time GLPK may spend refining the heuristic with the ZB paper's ILP (only up to 120 "
            "ops); 0 = heuristic only"),
    NUM_KEY("memory.capacity", memory_capacity_bytes, T_BYTES, "bytes", "0", 0, HUGE_NUM, 0,
            "overrides every GPU's memory capacity; 0 = each GPU's own"),
    CHOICE_KEY("memory.headroom", "auto|none", memory_headroom, "auto", HEADROOMS, NO_PATH, 0,
               "what a training process holds on its GPU besides the model's tensors, from the GPU type's "
               "profiles/gpus/TYPE.yaml (memory_headroom: measured, with sources): auto = the CUDA context, "
               "NCCL's buffers per communicator of the rank, and the allocator's fragmentation of the "
               "activations and workspace; none = only memory.reserved.  Runs, OOM and every planner count it"),
    NUM_OR_WORD_KEY("memory.fragmentation", memory_fragmentation, T_NUMBER, "fraction", "auto", 0, 0.999,
                    AUTO_NUMBER,
                    "memory.headroom=auto: the caching allocator's reserved-but-unused memory as a fraction of the "
                    "activations and workspace it holds; auto = the GPU type's measured value"),
    NUM_KEY("memory.reserved", memory_reserved_bytes, T_BYTES, "bytes", "0", 0, HUGE_NUM, 0,
            "a margin of your own per GPU, on top of memory.headroom: counted in every rank's static memory, so "
            "runs and planners keep it free; 0 = none"),
    NUM_KEY("memory.bytes_per_param", bytes_per_param, T_NUMBER, "bytes", "0", 0, HUGE_NUM, 0,
            "bytes per parameter for weights, gradients and optimizer state; 0 = Megatron's mixed-precision Adam: "
            "2 (bf16 weight) + 4 (fp32 gradient; 2 with dp.grad_precision=bf16) + 12 (fp32 master weight and two "
            "moments)"),
    CHOICE_KEY("offload", "none|full|selective|plan", offload, "none", OFFLOADS, NO_PATH, 0,
               "activation offload to host memory (selective: the longest-lived activations first; plan: the "
               "OptPipe-style MILP choosing offload / recompute / keep per activation under memory.capacity)"),
    NUM_KEY("offload.ratio", offload_ratio, T_NUMBER, "fraction", "0.5", 0, 1, 0,
            "offload=selective: fraction of activation bytes offloaded"),
    INT_KEY("offload.chunks", offload_chunks, "0", 0, 64,
            "offload=selective: offload whole chunks, every activation of each rank's first N local chunks "
            "(chunk 0 lives longest; PipeOffload's offload_chunk_num) instead of offload.ratio; 0 = by ratio"),
    CHOICE_KEY("offload.rules", "engine|pipeoffload", offload_rules, "engine", OFFLOAD_RULES, NO_PATH, 0,
               "offload=full|selective: engine (skip an activation whose compute window is under its two copies, "
               "reload k ops ahead) or pipeoffload (the PipeOffload repository's: skip when the gap, idle time "
               "included, is under 3 round trips; the reload ends one B before its B)"),
    CHOICE_KEY("offload.postpone", "true|false", offload_postpone, "true", BOOLS, NO_PATH, 0,
               "offload.rules=pipeoffload: postpone warm-up forwards as late as they can go (PipeOffload's "
               "postpone_forward_in_warmup), so copies can free memory before the warm-up peak"),
    CHOICE_KEY("offload.preset", "none|po-h|po-f", offload_preset, "none", OFFLOAD_PRESETS, NO_PATH, 0,
               "PipeOffload's PO-H (offload the first ceil(v/2) chunks of each rank) or PO-F (all chunks), with "
               "offload.rules=pipeoffload and its admission (offload.copy_slots=1 unless given): sets "
               "offload=selective and offload.chunks; run both with schedule=gis-h (docs/offload.md)"),
    INT_KEY("offload.capacities", offload_capacities, "2", 0, 12,
            "offload=plan: also plan for this many capacities of a fixed grid (4 per doubling, from 1 GiB) below "
            "memory.capacity and run the fastest plan that fits: more memory never runs slower than the plans "
            "made for less (src/opt/offload_ladder.h); each costs one more planning"),
    NUM_KEY("offload.time_limit", offload_time_limit_s, T_DURATION, "seconds", "60s", 0, MAX_DURATION, 0,
            "offload=plan: time GLPK may spend on each planning's MILP after its greedy warm start (each "
            "capacity of offload.capacities is one planning); 0 = greedy only"),
    CHOICE_KEY("offload.order", "fixed|search", offload_order_search, "fixed", ORDERS, NO_PATH, 0,
               "offload=plan: keep the schedule's op order (fixed), or also plan zero-bubble orders with "
               "1 to 2 x pp microbatches in flight and keep the fastest that fits (search; one stage per rank)"),
    CHOICE_KEY("offload.copy_model", "duplex|single|paired", offload_copy_model, "duplex", COPY_MODELS, NO_PATH, 0,
               "offload copies: duplex (a D2H and an H2D engine per GPU, independent), single (one copy stream per "
               "GPU alternating D2H and H2D, PipeOffload's) or paired (one stream per pair of ranks 2k, 2k+1, in "
               "staggered slots)"),
    INT_KEY("offload.copy_slots", offload_copy_slots, "0", 0, MAX_RANKS,
            "offload copies: unfinished D2H copies a rank may have; an offloaded F past it waits for the oldest "
            "to end (PipeOffload's offload_release: the wait is stall time, the memory is freed); 0 = no limit"),
    CHOICE_KEY("recompute", "none|full|selective|lgd|plan", recompute, "none", RECOMPUTES, NO_PATH, 0,
               "activation recomputation: full (each layer keeps its input; the backward recomputes one layer at "
               "a time), selective (the attention core), lgd (norms, activation function and dropout, keeping "
               "the GEMM inputs: PipeOffload's), or plan (the rematerialization ILP under memory.capacity)"),
    WORDS_KEY("recompute.modules", "WORD[,WORD...]", recompute_modules, "core_attn", RECOMPUTE_MODULES,
              "recompute=selective or plan: what selective recomputation recomputes before each layer's backward "
              "(Megatron-Core's --recompute-modules), a comma-separated list of: core_attn (the attention core: "
              "the legacy path's scores; with flash attention it reruns the kernel and frees nothing counted), "
              "layernorm (the norms Transformer Engine does not fuse into a linear layer: an MLA mixer's and a MoE "
              "layer's), mla_up_proj (MLA's query and key/value up-projections and rope), mlp (a dense MLP from "
              "its input), moe_act (the routed experts' activation function), moe (a MoE layer from its input: "
              "router, permutation, experts; its all-to-alls are not sent again); Megatron's shared_experts is "
              "not modelled"),
    CHOICE_KEY("recompute.backward", "keep|recompute", recompute_backward, "keep", BACKWARDS, NO_PATH, 0,
               "split backward: after B keep what W needs (keep), or keep only the stage input and recompute "
               "the forward before W (recompute: the backward option of forward-backward rematerialization planning)"),
    NUM_KEY("recompute.time_limit", recompute_time_limit_s, T_DURATION, "seconds", "20s", 0, MAX_DURATION, 0,
            "recompute=plan: time GLPK may spend on the forward-backward rematerialization ILP after its greedy warm "
            "start; 0 = greedy only"),
    NUM_KEY("recompute.gap", recompute_gap, T_NUMBER, "fraction", "0.001", 0, 1, 0,
            "recompute=plan: relative optimality gap at which the ILP stops"),
    TEXT_KEY("recompute.lp_file", T_TEXT, "PATH|none", recompute_lp_file, "none",
             "recompute=plan: also write the rematerialization ILP (with its cover cuts) to PATH in CPLEX LP "
             "format, for another solver (e.g. cbc PATH sec 600 solve solu OUT); written only when the ILP is "
             "built (a file named none: ./none)"),
    CHOICE_KEY("memory.zero1", "true|false", memory_zero1, "false", BOOLS, NO_PATH, 0,
               "ZeRO-1 (Megatron's distributed optimizer): shard the optimizer state (bytes_per_param beyond the "
               "weight and gradient) over the dp replicas"),
    CHOICE_KEY("memory.fp8_params", "true|false", memory_fp8_params, "false", BOOLS, NO_PATH, 0,
               "precision=fp8, mxfp8 or fp8-block: keep the model's weights in FP8, one byte a weight instead of "
               "bf16's two, and all-gather them so (Megatron's --fp8-param-gather, which Megatron-Bridge's "
               "per-tensor and MXFP8 recipes turn on); the fp32 master weights stay in the optimizer state"),
};
#define NKEYS (sizeof SCHEMA / sizeof SCHEMA[0])

_Static_assert(NKEYS <= EXP_MAX_KEYS, "raise EXP_MAX_KEYS in experiment.h");

static int spec_index(const char *key)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(SCHEMA[i].key, key) == 0)
            return (int)i;
    return -1;
}

int experiment_key_known(const char *key)
{
    return key && spec_index(key) >= 0;
}

/* Levenshtein distance, two rows. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    size_t row0[KEY_CMP_MAX + 1], row1[KEY_CMP_MAX + 1];
    size_t *prev = row0, *cur = row1;
    for (size_t j = 0; j <= nb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= na; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        size_t *t = prev;
        prev = cur;
        cur = t;
    }
    return prev[nb];
}

const char *experiment_suggest_key(const char *key)
{
    if (!key || strlen(key) > KEY_CMP_MAX)
        return NULL;
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < NKEYS; i++) {
        const char *k = SCHEMA[i].key;
        size_t d = edit_distance(key, k);
        /* "latency" for "ideal.latency": the last part alone, spelled right. */
        const char *dot = strrchr(k, '.');
        if (dot && strcmp(dot + 1, key) == 0)
            d = 1;
        if (d < best_d) {
            best_d = d;
            best = k;
        }
    }
    size_t allowed = strlen(best) / SUGGEST_DIVISOR;
    if (allowed < SUGGEST_MIN_DISTANCE)
        allowed = SUGGEST_MIN_DISTANCE;
    /* ...and only when most of what was typed is right ("x" is not a typo of "tp"). */
    return best_d <= allowed && 2 * best_d <= strlen(key) ? best : NULL;
}

/* What a key accepts, for messages ("an integer between 1 and 65536"). */
static void describe(const key_spec *k, char *buf, size_t len)
{
    char range[128] = "";
    if (k->type != T_TEXT && k->type != T_SCHEDULE && k->type != T_CHOICE && k->type != T_WORDS) {
        if (k->max < HUGE_NUM && k->min_open)
            snprintf(range, sizeof range, " > %.15g and <= %.15g", k->min, k->max);
        else if (k->max < HUGE_NUM)
            snprintf(range, sizeof range, " between %.15g and %.15g", k->min, k->max);
        else
            snprintf(range, sizeof range, " %s %.15g", k->min_open ? ">" : ">=", k->min);
    }
    switch (k->type) {
    case T_INT: {
        int n = snprintf(buf, len, "an integer%s", range);
        for (const choice *c = k->choices; c && c->word && n >= 0 && (size_t)n < len; c++)
            n += snprintf(buf + n, len - (size_t)n, ", or %s", c->word);
        break;
    }
    case T_NUMBER: {
        int n = snprintf(buf, len, "a number%s", range);
        for (const choice *c = k->choices; c && c->word && n >= 0 && (size_t)n < len; c++)
            n += snprintf(buf + n, len - (size_t)n, ", or %s", c->word);
        break;
    }
    case T_DURATION:
        snprintf(buf, len, "a duration%s such as 1.5ms, 2us or 3s (a bare number is seconds)", range);
        break;
    case T_BYTES:
        snprintf(buf, len, "a size%s such as 80GiB, 34MiB or 1.5kB (a bare number is bytes)", range);
        break;
    case T_BANDWIDTH:
        snprintf(buf, len, "a bandwidth%s such as 150GBps, 100Gbps or 25GiBps (a bare number is bytes/s)", range);
        break;
    case T_TEXT:
        snprintf(buf, len, "text of at most %zu bytes", k->size - 1);
        break;
    case T_SCHEDULE:
        snprintf(buf, len, "a schedule name or file:PATH, at most %zu bytes", k->size - 1);
        break;
    case T_CHOICE:
    case T_WORDS: {
        size_t used = 0;
        buf[0] = '\0';
        const char *first = k->type == T_WORDS ? "a comma-separated list of " : "one of ";
        for (const choice *c = k->choices; c->word && used < len; c++) {
            int n = snprintf(buf + used, len - used, "%s%s", c == k->choices ? first : ", ", c->word);
            if (n < 0)
                break;
            used += (size_t)n;
        }
        if (k->path_value >= 0 && used < len)
            snprintf(buf + used, len - used, ", or the path of an existing file");
        break;
    }
    }
}

static int fail_value(pg_status *st, const key_spec *k, pg_origin at, const char *value, const char *why)
{
    char accepted[512];
    describe(k, accepted, sizeof accepted);
    return pg_fail_at(st, PG_EXIT_INPUT, at, k->key, "expected %s, got '%s'%s%s%s", accepted, value,
                      why ? " (" : "", why ? why : "", why ? ")" : "");
}

static int in_range(const key_spec *k, double v)
{
    if (k->min_open ? !(v > k->min) : !(v >= k->min))
        return 0;
    return v <= k->max;
}

/* A data file named by a key: as given or in the data directories, else
 * next to the experiment file that named it. */
static int resolve_path(const char *value, pg_origin at, char *out, size_t len)
{
    if (datapath_find(value, out, len) == 0)
        return 0;
    if (!at.file || at.line <= 0 || value[0] == '/')
        return -1;
    const char *slash = strrchr(at.file, '/');
    if (!slash)
        return -1;
    char candidate[PATH_MAX_BYTES];
    int n = snprintf(candidate, sizeof candidate, "%.*s/%s", (int)(slash - at.file), at.file, value);
    if (n < 0 || (size_t)n >= sizeof candidate)
        return -1;
    return datapath_find(candidate, out, len);
}

static int trimmed_eq(const char *value, const char *word)
{
    while (*value == ' ' || *value == '\t')
        value++;
    size_t n = strlen(value);
    while (n > 0 && (value[n - 1] == ' ' || value[n - 1] == '\t'))
        n--;
    return strlen(word) == n && strncmp(value, word, n) == 0;
}

/* Parse value into e's field for k; any failure names the key and what it accepts. */
static int set_value(experiment *e, const key_spec *k, const char *value, pg_origin at, pg_status *st)
{
    char *base = (char *)e;
    const char *why = NULL;
    switch (k->type) {
    case T_INT: {
        for (const choice *c = k->choices; c && c->word; c++)
            if (trimmed_eq(value, c->word)) {
                *(int *)(base + k->offset) = c->value;
                return 0;
            }
        long v;
        if (units_parse_long(value, &v, &why) != 0)
            return fail_value(st, k, at, value, why);
        if (!in_range(k, (double)v))
            return fail_value(st, k, at, value, NULL);
        *(int *)(base + k->offset) = (int)v;
        return 0;
    }
    case T_NUMBER:
    case T_DURATION:
    case T_BYTES:
    case T_BANDWIDTH: {
        for (const choice *c = k->choices; c && c->word; c++)
            if (trimmed_eq(value, c->word)) {
                *(double *)(base + k->offset) = c->value;
                return 0;
            }
        double v;
        int rc = k->type == T_NUMBER     ? units_parse_double(value, &v, &why)
                 : k->type == T_DURATION ? units_parse_duration(value, &v, &why)
                 : k->type == T_BYTES    ? units_parse_bytes(value, &v, &why)
                                         : units_parse_bandwidth(value, &v, &why);
        if (rc != 0)
            return fail_value(st, k, at, value, why);
        if (!in_range(k, v))
            return fail_value(st, k, at, value, NULL);
        *(double *)(base + k->offset) = v;
        return 0;
    }
    case T_TEXT:
    case T_SCHEDULE: {
        size_t n = strlen(value);
        if (n >= k->size)
            return fail_value(st, k, at, value, "too long");
        if (k->type == T_SCHEDULE) {
            if (n == 0 || trimmed_eq(value, ""))
                return fail_value(st, k, at, value, "empty");
            if (strncmp(value, SCHEDULE_FILE_PREFIX, strlen(SCHEDULE_FILE_PREFIX)) == 0 &&
                trimmed_eq(value + strlen(SCHEDULE_FILE_PREFIX), ""))
                return fail_value(st, k, at, value, "file: needs a path");
        }
        memcpy(base + k->offset, value, n + 1);
        return 0;
    }
    case T_WORDS: {
        int bits = 0;
        const char *p = value;
        for (;;) {
            const char *end = strchr(p, ',');
            size_t n = end ? (size_t)(end - p) : strlen(p);
            char word[KEY_CMP_MAX];
            if (n >= sizeof word)
                return fail_value(st, k, at, value, NULL);
            memcpy(word, p, n);
            word[n] = '\0';
            const choice *c = k->choices;
            while (c->word && !trimmed_eq(word, c->word))
                c++;
            if (!c->word)
                return fail_value(st, k, at, value, word[strspn(word, " \t")] ? NULL : "an empty word");
            bits |= c->value;
            if (!end)
                break;
            p = end + 1;
        }
        *(int *)(base + k->offset) = bits;
        return 0;
    }
    case T_CHOICE: {
        for (const choice *c = k->choices; c->word; c++) {
            if (trimmed_eq(value, c->word)) {
                *(int *)(base + k->offset) = c->value;
                return 0;
            }
        }
        if (k->path_value < 0 || value[0] == '\0')
            return fail_value(st, k, at, value, NULL);
        char *path = base + k->path_offset;
        /* workload=hf:PATH names a Hugging Face config.json, costed by the model. */
        if (k->offset == F(workload) && strncmp(value, HF_PREFIX, strlen(HF_PREFIX)) == 0) {
            const char *file = value + strlen(HF_PREFIX);
            if (file[0] == '\0' || resolve_path(file, at, path, PG_NAME_MAX) != 0) {
                path[0] = '\0';
                return fail_value(st, k, at, value, "hf: needs the path of an existing config.json");
            }
            *(int *)(base + k->offset) = WL_HF;
            return 0;
        }
        if (resolve_path(value, at, path, PG_NAME_MAX) != 0) {
            path[0] = '\0';
            return fail_value(st, k, at, value, "no such file, here or in the data directories");
        }
        *(int *)(base + k->offset) = k->path_value;
        return 0;
    }
    }
    return pg_fail(st, PG_EXIT_INTERNAL, "experiment: key '%s' has no parser", k->key);
}

/* memory.bytes_per_param 0 (its default) = Megatron's mixed-precision Adam
 * with the gradient precision asked for; given = as given. */
static void resolve_bytes_per_param(experiment *e, int given)
{
    e->weight_grad_bytes_per_param = experiment_weight_bytes(e) + experiment_grad_bytes(e);
    if (!given || e->bytes_per_param == 0)
        e->bytes_per_param = e->weight_grad_bytes_per_param + MEMORY_ADAM_STATE_BYTES;
    if (e->weight_grad_bytes_per_param > e->bytes_per_param)
        e->weight_grad_bytes_per_param = e->bytes_per_param;
}

void experiment_defaults(experiment *e)
{
    memset(e, 0, sizeof *e);
    pg_origin none = {NULL, 0};
    for (size_t i = 0; i < NKEYS; i++) {
        if (!SCHEMA[i].default_text)
            continue;
        pg_status st;
        if (set_value(e, &SCHEMA[i], SCHEMA[i].default_text, none, &st) != 0) {
            /* A default that does not parse is a bug in SCHEMA; the unit tests
             * call this, so it cannot ship. */
            fprintf(stderr, "pipegrid: internal error: bad default: %s\n", st.msg);
            abort();
        }
    }
    resolve_bytes_per_param(e, 0);
}

pg_origin experiment_origin(const experiment *e, const char *key)
{
    pg_origin none = {NULL, 0};
    int i = key ? spec_index(key) : -1;
    return i < 0 ? none : e->key_origins[i];
}

/* The model.micro_batch_size a profile records, or 0 when the file cannot
 * be read or does not give a valid one (the workload builder, which reads
 * the whole profile, then says why).  Read here because the batch keys are
 * resolved here; model/workload.h gives the rule. */
static int profile_micro_batch_size(const char *path)
{
    yt_doc doc;
    memset(&doc, 0, sizeof doc);
    pg_status ignore;
    pg_status_clear(&ignore);
    if (yt_load_file(path, &doc, &ignore) != 0)
        return 0;
    long mbs = 0;
    const yt_node *model = doc.root && doc.root->kind == YT_MAP ? yt_get(doc.root, "model") : NULL;
    const yt_node *n = model && model->kind == YT_MAP ? yt_get(model, "micro_batch_size") : NULL;
    if (n == NULL || n->kind != YT_SCALAR || units_parse_long(n->scalar, &mbs, NULL) != 0 || mbs < 1 ||
        mbs > INT_MAX)
        mbs = 0;
    yt_free(&doc);
    return (int)mbs;
}

/* dp.sharding with memory.zero1 (its older name for optimizer) and
 * dp.shard_group (0 = dp), after both parsed. */
static int resolve_sharding(const config *c, experiment *e, pg_status *st)
{
    if (e->memory_zero1) {
        if (config_find(c, "dp.sharding") && e->dp_sharding != DP_SHARD_OPTIMIZER)
            return pg_fail_at(st, PG_EXIT_INPUT, experiment_origin(e, "dp.sharding"), "dp.sharding",
                              "contradicts memory.zero1=true (the same as dp.sharding=optimizer)");
        e->dp_sharding = DP_SHARD_OPTIMIZER;
    }
    e->memory_zero1 = e->dp_sharding == DP_SHARD_OPTIMIZER;
    if (e->dp_shard_group == 0)
        e->dp_shard_group = e->dp;
    pg_origin at = experiment_origin(e, "dp.shard_group");
    if (e->dp % e->dp_shard_group != 0)
        return pg_fail_at(st, PG_EXIT_INPUT, at, "dp.shard_group", "%d does not divide dp = %d", e->dp_shard_group,
                          e->dp);
    if (e->dp_shard_group != e->dp && e->dp_sharding != DP_SHARD_GRADIENTS && e->dp_sharding != DP_SHARD_FULL)
        return pg_fail_at(st, PG_EXIT_INPUT, at, "dp.shard_group",
                          "%d with dp.sharding=%s: shard groups smaller than dp (HSDP) need dp.sharding=gradients "
                          "or full", e->dp_shard_group, e->dp_sharding == DP_SHARD_NONE ? "none" : "optimizer");
    return 0;
}

/* Checks between keys, after every key parsed. */
static int cross_check(const config *c, experiment *e, pg_status *st)
{
    pg_origin gbs_at = experiment_origin(e, "global_batch_size");
    pg_origin mb_at = experiment_origin(e, "microbatches");
    /* A profile is measured at one micro batch size: the default, so that
     * global_batch_size counts the samples that run (model/workload.h). */
    if (e->workload == WL_PROFILE && !config_find(c, "micro_batch_size")) {
        int measured = profile_micro_batch_size(e->profile_path);
        if (measured > 0)
            e->micro_batch_size = measured;
    }
    long per_step = (long)e->micro_batch_size * e->dp;
    if (e->global_batch_size > 0) {
        if (e->global_batch_size % per_step != 0)
            return pg_fail_at(st, PG_EXIT_INPUT, gbs_at, "global_batch_size",
                              "%d is not a multiple of micro_batch_size x dp = %d x %d = %ld", e->global_batch_size,
                              e->micro_batch_size, e->dp, per_step);
        long derived = e->global_batch_size / per_step;
        /* A batch size asked for on the command line replaces an experiment
         * file's microbatch count (the usual `--set global_batch_size=...` on
         * a bundled experiment); two contradicting values at the same level
         * are an error. */
        int batch_overrides = config_origin_is_set(gbs_at) && !config_origin_is_set(mb_at);
        if (!config_find(c, "microbatches") || batch_overrides) {
            if (derived > MAX_MICROBATCHES)
                return pg_fail_at(st, PG_EXIT_INPUT, gbs_at, "global_batch_size",
                                  "gives %ld microbatches, more than %d", derived, MAX_MICROBATCHES);
            e->microbatches = (int)derived;
        } else if (derived != e->microbatches) {
            return pg_fail_at(st, PG_EXIT_INPUT, mb_at, "microbatches",
                              "%d contradicts global_batch_size / (micro_batch_size x dp) = %d / %ld = %ld",
                              e->microbatches, e->global_batch_size, per_step, derived);
        }
    }
    resolve_bytes_per_param(e, config_find(c, "memory.bytes_per_param") != NULL);
    if (e->offload_preset != OFFLOAD_PRESET_NONE) {
        const cfg_entry *off = config_find(c, "offload");
        if (off && e->offload != OFFLOAD_SELECTIVE)
            return pg_fail_at(st, PG_EXIT_INPUT, experiment_origin(e, "offload"), "offload",
                              "contradicts offload.preset (a preset is offload=selective by whole chunks)");
        if (config_find(c, "offload.chunks"))
            return pg_fail_at(st, PG_EXIT_INPUT, experiment_origin(e, "offload.chunks"), "offload.chunks",
                              "contradicts offload.preset (the preset sets the chunks)");
        e->offload = OFFLOAD_SELECTIVE;
        e->offload_rules = 1;
        /* PipeOffload's offload_release: a forward waits for the copy of
         * the one before to end, so a deep warm-up cannot pile up copies
         * (what keeps PO-F's activations at about 4 layers at any depth) */
        if (!config_find(c, "offload.copy_slots"))
            e->offload_copy_slots = PIPEOFFLOAD_COPY_SLOTS;
    }
    int rc = resolve_sharding(c, e, st);
    if (rc)
        return rc;
    int grp = e->tp * e->cp;
    if (experiment_expert_tp1(e) && ((grp * e->dp) % e->ep != 0 || (e->ep % grp != 0 && grp % e->ep != 0)))
        return pg_fail_at(st, PG_EXIT_INPUT, experiment_origin(e, "ep"), "ep",
                          "%d does not fit tp x cp = %d and dp = %d with etp=1 (the expert-parallel groups are ep "
                          "consecutive GPUs of tp x cp x dp: ep must divide tp x cp x dp, and tp x cp divide ep or "
                          "ep divide tp x cp)", e->ep, grp, e->dp);
    if (!experiment_expert_tp1(e) && e->dp % e->ep != 0)
        return pg_fail_at(st, PG_EXIT_INPUT, experiment_origin(e, "ep"), "ep",
                          "%d does not divide dp = %d (expert parallelism takes its GPUs from the data-parallel "
                          "replicas; with etp=1 from tp x cp x dp)", e->ep, e->dp);
    if (e->workload == WL_HF && !config_find(c, "gpt.seq"))
        return pg_fail_at(st, PG_EXIT_INPUT, e->origin_workload, "workload",
                          "hf:%s needs gpt.seq (the sequence length to train at)", e->profile_path);
    if (e->workload == WL_GPT) {
        static const char *const required[] = {"gpt.layers", "gpt.hidden", "gpt.heads", "gpt.seq"};
        for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
            if (!config_find(c, required[i]))
                return pg_fail_at(st, PG_EXIT_INPUT, e->origin_workload, "workload",
                                  "gpt needs %s (and gpt.layers, gpt.hidden, gpt.heads, gpt.seq)", required[i]);
        if (e->gpt_hidden % e->gpt_heads != 0)
            return pg_fail_at(st, PG_EXIT_INPUT, experiment_origin(e, "gpt.heads"), "gpt.heads",
                              "%d does not divide gpt.hidden = %d", e->gpt_heads, e->gpt_hidden);
    }
    if (experiment_workload_is_modelled(e) && e->gpt_doc_len > 0 && e->gpt_doc_len > e->gpt_seq)
        return pg_fail_at(st, PG_EXIT_INPUT, experiment_origin(e, "gpt.doc_len"), "gpt.doc_len",
                          "%d is longer than gpt.seq = %d (a document is packed into one sequence)", e->gpt_doc_len,
                          e->gpt_seq);
    if (experiment_workload_is_modelled(e) && e->gpt_doc_len > 0 && e->attention != ATTENTION_FLASH)
        return pg_fail_at(st, PG_EXIT_INPUT, experiment_origin(e, "gpt.doc_len"), "gpt.doc_len",
                          "packed documents need attention=flash (its variable-length path; the legacy softmax "
                          "scores the whole sequence)");
    /* Megatron recommends sequence parallelism with tensor parallelism and
     * its Megatron-Core recipes run it: the default a user expects (without
     * it each GPU keeps the replicated LayerNorm and dropout activations,
     * which put Llama-3-70B tp8 pp4 out of memory with every schedule). */
    if (e->tp > 1 && !config_find(c, "tp.sequence_parallel"))
        e->tp_sequence_parallel = 1;
    return 0;
}

int experiment_rare_settings(const config *c, const experiment *e, void (*report)(const char *msg, void *ctx),
                             void *ctx)
{
    int n = 0;
    if (e->tp > 1 && !e->tp_sequence_parallel && config_find(c, "tp.sequence_parallel")) {
        pg_status msg;
        pg_status_clear(&msg);
        pg_fail_at(&msg, PG_EXIT_OK, experiment_origin(e, "tp.sequence_parallel"), "tp.sequence_parallel",
                   "false with tp = %d: few real jobs run tensor parallelism without sequence parallelism "
                   "(Megatron-Core's recipes turn it on); each GPU then keeps the replicated LayerNorm and "
                   "dropout activations", e->tp);
        if (report)
            report(msg.msg, ctx);
        n++;
    }
    return n;
}

int experiment_check_value(const char *key, const char *value, pg_origin at, pg_status *st)
{
    int i = spec_index(key);
    if (i < 0) {
        const char *hint = experiment_suggest_key(key);
        if (hint)
            return pg_fail_at(st, PG_EXIT_INPUT, at, key, "unknown key (did you mean '%s'?)", hint);
        return pg_fail_at(st, PG_EXIT_INPUT, at, key, "unknown key (`pipegrid keys` lists them all)");
    }
    experiment scratch;
    experiment_defaults(&scratch);
    return set_value(&scratch, &SCHEMA[i], value, at, st);
}

int experiment_from_config(const config *c, experiment *e, pg_status *st)
{
    experiment_defaults(e);
    /* Unknown keys first: a typo is the likeliest mistake, and a wrong value
     * under a misspelled key would otherwise be silently ignored. */
    for (size_t i = 0; i < c->count; i++) {
        const cfg_entry *en = &c->entries[i];
        if (spec_index(en->key) >= 0)
            continue;
        const char *hint = experiment_suggest_key(en->key);
        if (hint)
            return pg_fail_at(st, PG_EXIT_INPUT, en->origin, en->key, "unknown key (did you mean '%s'?)", hint);
        return pg_fail_at(st, PG_EXIT_INPUT, en->origin, en->key, "unknown key (`pipegrid keys` lists them all)");
    }
    for (size_t i = 0; i < NKEYS; i++) {
        const cfg_entry *en = config_find(c, SCHEMA[i].key);
        if (!en)
            continue;
        int rc = set_value(e, &SCHEMA[i], en->value, en->origin, st);
        if (rc)
            return rc;
        e->key_origins[i] = en->origin;
    }
    e->origin_schedule = experiment_origin(e, "schedule");
    e->origin_pp = experiment_origin(e, "pp");
    e->origin_microbatches = experiment_origin(e, "microbatches");
    e->origin_workload = experiment_origin(e, "workload");
    e->origin_network = experiment_origin(e, "network");
    return cross_check(c, e, st);
}

/* ---- keys that do not apply ----------------------------------------------
 * Which keys mean something under which settings: the one table of it.  A key
 * given (in a file or by --set) whose setting is not in force is reported by
 * experiment_ignored_keys; the CLI prints each as a warning and goes on (a
 * sweep or an experiment file legitimately carries keys for other settings,
 * so refusing would break those; silently ignoring them hid typos of intent
 * such as gpt.* with a profile).  An entry's key ending in '.' covers every key
 * under that prefix; the first entry that matches a key decides. */
static int wl_is_gpt(const experiment *e) { return e->workload == WL_GPT; }
static int wl_is_modelled(const experiment *e) { return experiment_workload_is_modelled(e); }
static int lora_is_on(const experiment *e) { return e->lora_rank > 0; }
static int wl_is_uniform(const experiment *e) { return e->workload == WL_UNIFORM; }
static int net_is_cluster(const experiment *e) { return e->network == NET_CLUSTER; }
static int net_is_ideal(const experiment *e) { return e->network == NET_IDEAL; }
/* The GPU type: the generated cluster's, and on an ideal network the one a
 * modelled workload is costed on (costmodel.c platform_gpu_type: kernel
 * speeds and memory); a platform file names its own GPUs' types. */
static int gpu_type_applies(const experiment *e)
{
    return e->network == NET_CLUSTER || (e->network == NET_IDEAL && experiment_workload_is_modelled(e));
}
static int headroom_is_auto(const experiment *e) { return e->memory_headroom; }
static int has_ep(const experiment *e) { return e->ep > 1; }
static int fp8_recipe(const experiment *e)
{
    return wl_is_modelled(e) && experiment_precision_keeps_fp8_weights(e->precision);
}
static int sched_is_dualpipev(const experiment *e) { return strcmp(e->schedule, "dualpipe-v") == 0; }
static int sched_is_zbauto(const experiment *e) { return strcmp(e->schedule, "zb-auto") == 0; }
static int offload_is_selective(const experiment *e) { return e->offload == OFFLOAD_SELECTIVE; }
static int offload_is_plan(const experiment *e) { return e->offload == OFFLOAD_PLAN; }
static int recompute_is_selective(const experiment *e)
{
    return (e->recompute == RECOMPUTE_SELECTIVE || e->recompute == RECOMPUTE_PLAN) && wl_is_modelled(e);
}
static int offload_has_rules(const experiment *e) { return e->offload_rules && e->offload != OFFLOAD_NONE; }
static int offload_is_policy(const experiment *e)
{
    return e->offload == OFFLOAD_FULL || e->offload == OFFLOAD_SELECTIVE;
}
static int offload_is_on(const experiment *e) { return e->offload != OFFLOAD_NONE; }

typedef struct applicability {
    const char *key;                      /* a key, or a prefix ending in '.' */
    int (*applies)(const experiment *e);
    const char *when;                     /* the settings it needs, for the message */
} applicability;

static const applicability APPLIES[] = {
    {"gpt.seq", wl_is_modelled, "workload=gpt or workload=hf:PATH"},
    {"gpt.doc_len", wl_is_modelled, "workload=gpt or workload=hf:PATH"},
    {"stage.", wl_is_modelled, "workload=gpt or workload=hf:PATH (the cost model)"},
    {"lora.rank", wl_is_modelled, "workload=gpt or workload=hf:PATH (the cost model)"},
    {"lora.targets", lora_is_on, "lora.rank > 0"},
    {"gpt.", wl_is_gpt, "workload=gpt"},
    {"precision", wl_is_modelled, "workload=gpt or workload=hf:PATH (the cost model)"},
    {"memory.fp8_params", fp8_recipe, "precision=fp8, mxfp8 or fp8-block, with workload=gpt or workload=hf:PATH"},
    {"tp.comm_overlap", wl_is_modelled, "workload=gpt or workload=hf:PATH (the cost model)"},
    {"kernel_queue.", wl_is_modelled, "workload=gpt or workload=hf:PATH (the cost model)"},
    {"attention", wl_is_modelled, "workload=gpt or workload=hf:PATH (the cost model)"},
    {"moe.capacity_factor", wl_is_modelled, "workload=gpt or workload=hf:PATH (the cost model)"},
    {"moe.probs", wl_is_modelled, "workload=gpt or workload=hf:PATH (the cost model)"},
    {"recompute.modules", recompute_is_selective, "recompute=selective or recompute=plan, with workload=gpt or "
                                                  "workload=hf:PATH"},
    {"uniform.", wl_is_uniform, "workload=uniform"},
    {"cluster.gpu", gpu_type_applies, "network=cluster, or network=ideal with workload=gpt or workload=hf:PATH"},
    {"cluster.", net_is_cluster, "network=cluster"},
    {"ideal.latency", net_is_ideal, "network=ideal"},
    {"memory.fragmentation", headroom_is_auto, "memory.headroom=auto"},
    {"etp", has_ep, "ep > 1"},
    {"ep.dispatcher", has_ep, "ep > 1"},
    {"ep.overlap", has_ep, "ep > 1"},
    {"dualpipe.overlap", sched_is_dualpipev, "schedule=dualpipe-v"},
    {"zb_auto.time_limit", sched_is_zbauto, "schedule=zb-auto"},
    {"offload.ratio", offload_is_selective, "offload=selective"},
    {"offload.chunks", offload_is_selective, "offload=selective"},
    {"offload.rules", offload_is_policy, "offload=full or offload=selective"},
    {"offload.postpone", offload_has_rules, "offload.rules=pipeoffload"},
    {"offload.order", offload_is_plan, "offload=plan"},
    {"offload.capacities", offload_is_plan, "offload=plan"},
    {"offload.time_limit", offload_is_plan, "offload=plan"},
    {"offload.copy_model", offload_is_on, "offload=full, selective or plan"},
    {"offload.copy_slots", offload_is_on, "offload=full, selective or plan"},
};

static const applicability *applicability_of(const char *key)
{
    for (size_t i = 0; i < sizeof APPLIES / sizeof APPLIES[0]; i++) {
        size_t n = strlen(APPLIES[i].key);
        int prefix = n > 0 && APPLIES[i].key[n - 1] == '.';
        if (prefix ? strncmp(key, APPLIES[i].key, n) == 0 : strcmp(key, APPLIES[i].key) == 0)
            return &APPLIES[i];
    }
    return NULL;
}

int experiment_ignored_keys(const config *c, const experiment *e, const exp_schedule_info *sched,
                            void (*report)(const char *msg, void *ctx), void *ctx)
{
    int n = 0;
    for (size_t i = 0; i < c->count; i++) {
        const cfg_entry *en = &c->entries[i];
        pg_status msg;
        pg_status_clear(&msg);
        /* chunks: which schedules read it is the registry's to say. */
        if (strcmp(en->key, "chunks") == 0) {
            if (sched == NULL || sched->uses_chunks == NULL || sched->uses_chunks(e->schedule))
                continue;
            pg_fail_at(&msg, PG_EXIT_OK, en->origin, en->key,
                       "ignored: applies only with schedule=%s (V-shape schedules always have 2)",
                       sched->chunk_schedules ? sched->chunk_schedules : "?");
            if (report)
                report(msg.msg, ctx);
            n++;
            continue;
        }
        const applicability *a = applicability_of(en->key);
        if (!a || a->applies(e))
            continue;
        pg_fail_at(&msg, PG_EXIT_OK, en->origin, en->key, "ignored: applies only with %s", a->when);
        if (report)
            report(msg.msg, ctx);
        n++;
    }
    return n;
}

const exp_key_doc *experiment_key_docs(size_t *count)
{
    static exp_key_doc docs[NKEYS];
    for (size_t i = 0; i < NKEYS; i++) {
        docs[i].key = SCHEMA[i].key;
        docs[i].type = SCHEMA[i].doc_type;
        docs[i].default_text = SCHEMA[i].default_text ? SCHEMA[i].default_text : "none";
        docs[i].help = SCHEMA[i].help;
    }
    if (count)
        *count = NKEYS;
    return docs;
}
