/* itermodel.h: predict measured training-iteration times, and fit the
 * GPU-type parameters of the cost model to them (pipegrid calibrate /
 * validate).
 *
 * A row is one measured Megatron-style run: GPUs, global and micro batch,
 * model shape, tp / dp / pp and the iteration time.  Its prediction is one
 * training iteration, computed without SimGrid (SimGrid allows one
 * simulation per process, and a fit needs thousands of predictions):
 *   pipeline   the "1f1b" generator's op order timed by the schedule
 *              layer's evaluator with per-stage durations
 *              (sched_eval_staged) from the cost model (costmodel.h): F, and a fused
 *              backward costing F again (full activation checkpointing
 *              recomputes the forward) + B + W; every cross-stage edge
 *              costs the p2p time of the boundary activation
 *              (alpha + bytes / (NVLink * coll_bw_eff)).  Stages are
 *              unequal (the first holds the embedding, the last the LM head).
 *   + the tied-embedding gradient all-reduce between first and last stage
 *     (pp > 1), the data-parallel gradient all-reduce (the slowest stage's),
 *     one Adam step of the largest stage, and iter_overhead.
 *   ZeRO-2 / FSDP rows (sharding): each op's per-layer gathers and reduce-
 *     scatters on one stream, as the simulator runs them, lengthen the op
 *     (layer_stream_s); HSDP's all-reduce across shard groups and ZeRO-2's
 *     parameter gather after the step are the data-parallel part.
 * Collectives are analytic alpha-beta times over NVLink (one node).
 */
#ifndef PG_CALIB_ITERMODEL_H
#define PG_CALIB_ITERMODEL_H

#include "model/arch.h"
#include "model/costmodel.h"
#include "schedule/sched_index.h"
#include "schedule/schedule.h"
#include "util/error.h"

/* How a row's job ran the backward. */
typedef enum {
    ROW_RECOMPUTE_FULL = 0,         /* activation checkpointing of every layer (vTrain, Korthikanti "full") */
    ROW_RECOMPUTE_SELECTIVE,        /* Megatron's selective: the attention core only */
    ROW_RECOMPUTE_NONE,
    ROW_RECOMPUTE_LGD               /* PipeOffload's: norm outputs, activation function, dropout masks */
} row_recompute;

/* What a row measures. */
typedef enum {
    ROW_ITERATION = 0,              /* one training iteration (measured_s) */
    ROW_LAYER                       /* one transformer layer's forward + backward (Korthikanti Table 4) */
} row_kind;

typedef struct train_row {
    int line;                       /* in the CSV, for messages */
    int gpus, global_batch, micro_batch;
    int hidden, heads, layers, seq, vocab;
    int tp, dp, pp;
    double measured_s;
    /* The job as it ran; the vTrain loader leaves what it does not say at
     * the values of its setup (calib_row_defaults). */
    row_kind kind;
    char gpu[32];                   /* pipegrid GPU type (profiles/gpus/TYPE.yaml) */
    char label[96];                 /* the source's name for the row, for reports */
    int file;                       /* index of the file it came from, when several are read together */
    unsigned long long split_key;   /* measurement identity: rows with the same key are one measurement
                                     * (republished versions) and fall on the same side of the split */
    int vp, cp, ep;                 /* model chunks per pipeline rank (interleaved), context, expert parallel */
    int sequence_parallel, flash, fp8;   /* fp8: the GEMM recipe, a precision_kind (gpt_shape.fp8; 0 = bf16) */
    int doc_len;                    /* packed documents of this many tokens (gpt_shape.doc_len); 0 = none */
    int tp_overlap;                 /* tp collectives overlapped with the GEMMs (gpt_shape.tp_comm_overlap) */
    int expert_tp1;                 /* experts not split over tp (gpt_shape.expert_tp1): the expert-parallel
                                     * group is ep consecutive ranks; else ep ranks tp x cp apart */
    int ep_hybrid;                  /* MoE tokens dispatched by HybridEP (experiment.h ep.dispatcher); a
                                     * function of the model and the GPU type (rows.c), so not in job_id */
    int ep_overlap;                 /* Megatron-Core's combined 1F1B (experiment.h ep.overlap; rows.c
                                     * A2A_OVERLAP_RECIPES): steady-state forward and backward as one step,
                                     * their all-to-alls under their computes (schedule.h sched_eval_combined);
                                     * a function of the release, the GPU type and the model, so not in job_id */
    double capacity_factor;         /* MoE token dropping at this expert capacity (gpt_shape.capacity_factor);
                                     * 0 = dropless */
    int moe_probs_on_outputs;       /* experiment.h moe.probs=combine (memory only): NeMo 24.07's Megatron-Core */
    int fp8_params;                 /* experiment.h memory.fp8_params: weights in FP8, all-gathered so */
    row_recompute recompute;
    unsigned recompute_modules;     /* ROW_RECOMPUTE_SELECTIVE: experiment.h recompute.modules (arch.h bits);
                                     * 0 = Megatron's default, core_attn */
    int dp_overlap;                 /* gradient reduction overlapped with the last microbatch's backward */
    int zero1;                      /* distributed optimizer: each data-parallel rank steps 1/dp of the state */
    dp_shard_mode sharding;         /* DP_SHARD_FULL: FSDP (Megatron-FSDP, ZeRO-3), GRADIENTS: ZeRO-2, as the
                                     * simulator runs them (src/sim/gradsync.c); NONE / OPTIMIZER: zero1 says */
    int shard_group;                /* replicas a shard spans with sharding GRADIENTS / FULL (divides dp) */
    double grad_bytes;              /* bytes per parameter of the data-parallel gradient reduction */
    int gpus_per_node;              /* NVLink domain */
    double nic_bw;                  /* inter-node bytes/s per GPU, each direction (datasheet of the system) */
    int has_arch;                   /* arch below describes the model; 0 = GPT of the five numbers above */
    arch arch;
    /* A job beyond Megatron's schedules (PipeOffload's Figure 15): the
     * simulator runs it; the surrogate does not (iter_row_unmodelled). */
    char schedule[20];              /* the generator the source names; "" = Megatron's: 1f1b, or
                                     * interleaved when vp > 1 */
    int first_layers, last_layers;  /* stage.first_layers / last_layers; < 0 = the simulator's default */
    char offload_preset[8];         /* offload.preset; "" = none */
    int host_link_measured;         /* cluster.host_link=measured */
    double measured_mfu;            /* > 0: the source gave MFU (0..1), measured_s derived from it */
    int lora_rank;                  /* LoRA fine-tuning (experiment.h lora.rank): frozen base weights, adapters of
                                     * this rank; 0 = full training */
    int lora_qkv_only;              /* the adapters on the QKV projection alone (lora.targets=qkv), else on every
                                     * linear layer */
} train_row;

/* NULL when the surrogate (iter_predict) models row r; else why not (its
 * schedule, memory plan or recomputation): iter_predict then gives NAN and
 * calibrate, which fits with the surrogate, leaves the row out. */
const char *iter_row_unmodelled(const train_row *r);


/* A row's gradient buckets (dp.bucket_bytes): Megatron's when the reduction
 * overlaps the backward (the experiment key's default), none when it runs
 * after it (vTrain's multi-node jobs: buckets off; one per stage). */
#define ROW_DP_BUCKET_BYTES 80e6
static inline double row_bucket_bytes(const train_row *r)
{
    return r->dp_overlap ? ROW_DP_BUCKET_BYTES : 0.0;
}

/* Bits per byte and bits per second of a Gb/s, for the NICs' datasheet rates. */
#define BITS_PER_BYTE 8.0
#define GBIT 1e9
/* GPUs per node of the DGX systems the rows ran on. */
#define DGX_GPUS_PER_NODE 8
/* vTrain's multi-node cluster (its README / ../shared/validation README):
 * 8x 100 Gb/s NICs per node. */
#define VTRAIN_NIC_BW (100.0 * GBIT / BITS_PER_BYTE)

/* The setup of vTrain's measurements (Megatron-DeepSpeed, one node of 8
 * A100s, activation checkpointing, fp32 gradient reduction, no overlap) as
 * the defaults of a row (itermodel.c: with the row's type, so that the rows'
 * readers, this file's vTrain CSV and rows.c, call down to it). */
void calib_row_defaults(train_row *r);

/* Read a CSV with the columns of vTrain's ground_truth_single.csv
 * ("# GPUs", "global batch", "micro batch", "hidden size", "attention heads",
 * "# layers", "sequence length", "tensor parallelism", "data parallelism",
 * "pipeline parallelism", "iteration time (ms)"), in any order, plus an
 * optional "vocab" column (default: GPT-2's 50257 padded the Megatron way
 * to a multiple of 128 * tp).  Errors name file, line and column. */
int train_csv_load(const char *path, train_row **rows, int *nrows, pg_status *st);

/* GPT-2 BPE vocabulary padded as Megatron does (multiple of 128 * tp). */
int megatron_padded_vocab(int vocab, int tp);

typedef struct iter_breakdown {
    double total_s;
    double pipeline_s, embed_sync_s, dp_allreduce_s, optimizer_s, overhead_s;
} iter_breakdown;

/* Prepared rows: the schedule of each row is generated once. */
typedef struct iter_set {
    int n;
    train_row *row;                 /* borrowed */
    schedule *sched;                /* [n] */
    sched_replay *replay;           /* [n] each schedule's replay order, built once (order NULL: none) */
} iter_set;

int iter_set_prepare(iter_set *set, train_row *rows, int nrows, pg_status *st);
void iter_set_free(iter_set *set);

/* Predict row i of set. */
int iter_predict(const gpu_params *g, const iter_set *set, int i, iter_breakdown *out, pg_status *st);

/* The layer shape row i runs (costmodel_layer_key), into out. */
void iter_row_layer_key(const iter_set *set, int i, char *out, size_t len);

/* The deterministic split: 1 if row index i (0-based data row) belongs to
 * the fit part for fraction f of the rows (a hash of i, not of the data). */
int iter_in_fit_part(int i, double fit_fraction);
/* The same for a row: a hash of its split_key (vTrain's rows: their index,
 * so the split is iter_in_fit_part's). */
int iter_row_in_fit_part(const train_row *r, double fit_fraction);

typedef struct error_stats {
    int n;
    double mape;                    /* mean |pred - meas| / meas */
    double max_err;                 /* max of the same */
    int worst;                      /* index of the worst row, -1 if n = 0 */
} error_stats;

/* Errors over the rows with mask[i] != 0 (mask NULL = all); pred[i] must be
 * filled for those rows. */
error_stats iter_errors(const iter_set *set, const double *pred, const int *mask);

/* The same statistics of |pred / ref - 1| over the rows where pred is a
 * number (not NAN): how far one prediction (the simulator's) is from
 * another (the surrogate's). */
error_stats iter_gap(const iter_set *set, const double *pred, const double *ref);

/* The smallest MAPE over the rows of mask that any model predicting one
 * time per job can reach: rows of one job (equal in every setting the row
 * gives the cost model, and so predicted alike) measured at different times
 * cost at least the smallest sum of their errors about one time; rows of a
 * job measured once cost nothing.  0 when every job was measured once. */
double iter_mape_floor(const iter_set *set, const double *pred, const int *mask);

/* The same, except that mape is the mean over files (train_row.file) of
 * each file's MAPE: what the fit minimises, so that 1,440 rows of one file
 * do not drown 9 of another (with one file it is iter_errors). */
error_stats iter_errors_by_file(const iter_set *set, const double *pred, const int *mask);

/* The largest of the files' MAPEs over the rows of mask (0 if none). */
double iter_worst_file_mape(const iter_set *set, const double *pred, const int *mask);

/* Hyper-parameters of the fit: chosen before it, never by the fitted
 * parameters themselves (fit_select.h picks them by cross-validation inside
 * the fit part). */
typedef struct fit_hyper {
    double max_weight;              /* weight of the largest relative error in the objective */
    double ratio_cap;               /* upper bound of the efficiencies (achieved/peak) */
} fit_hyper;

/* The physical bound of an efficiency: achieved cannot exceed peak. */
#define FIT_RATIO_CAP 1.0
/* The lower bound of mem_eff in a fit: the memory-bound kernels of the
 * model (LayerNorm, activations, residual adds, casts over tensors of
 * megabytes) stream their bytes at well over half the datasheet HBM
 * bandwidth (STREAM-style copy kernels reach about 80-90 % of it on A100
 * and H100).  Without the bound a fit parks time the model lacks (slow
 * GEMMs) in these kernels, at an unphysical fraction of the bandwidth. */
#define FIT_MEM_EFF_FLOOR 0.5
/* The lower bound of coll_bw_eff: NCCL's ring all-reduce over NVLink moves
 * large messages at most of the link rate (nccl-tests' bus bandwidth on
 * DGX A100 / H100 is about 75-80 % of it); the size dependence below that
 * is coll_latency's (alpha-beta).  Without the bound the fit stretches
 * every tensor-parallel all-reduce of the large models to carry the host
 * costs of small tp = 8 runs. */
#define FIT_COLL_BW_EFF_FLOOR 0.5
/* The upper bound of gemm_eff in a fit: the best dense bf16 GEMMs of
 * cuBLAS on A100 and H100 sustain about 85-90 % of the datasheet tensor
 * peak (clocks drop under that power draw), never all of it.  The A100
 * rows cannot pin gemm_eff (every unbounded A100 fit ends at the cap of 1,
 * pushing the time GEMMs lack into attention and collectives); the H100
 * fit, unbounded, lands at 0.89.  0.9 was chosen after held-out errors of
 * both values were seen: docs/validation.md says so. */
#define FIT_GEMM_EFF_CAP 0.9

/* Reset the fitted parameters of g to fixed, data-independent starting
 * values (plausible A100-class numbers, named in itermodel.c), and drop its
 * measured layer profiles, so that a calibration does not depend on the
 * file it starts from. */
void iter_fit_initial(gpu_params *g);

/* Fit the fitted parameters of g (gpu_param_fitted) to the rows with
 * mask[i] != 0, minimising the per-file mean MAPE (iter_errors_by_file)
 * + h->max_weight * (largest relative error)
 * over those rows only (rows with mask[i] == 0 are never predicted).
 * Nelder-Mead on the logarithms of the parameters, restarted with turned
 * simplexes until a restart no longer improves (at most 16); efficiencies
 * are capped at h->ratio_cap.  Starts from g's values; g is updated in
 * place.  Deterministic. */
int iter_fit(gpu_params *g, const iter_set *set, const int *mask, const fit_hyper *h, error_stats *fit_err,
             pg_status *st);

/* Legacy and flash attention have an efficiency each; rows of one GPU type
 * often ran one kind only.  Given which parameters the fit rows exercise,
 * the attention efficiency none of them does (GP_FLASH_EFF or GP_ATTN_EFF),
 * which iter_fit sets to the other's fitted value rather than leave it at
 * the starting value; -1 when both or neither are exercised. */
int iter_attention_tied(const int exercised[GP_COUNT]);
/* The other attention efficiency: GP_ATTN_EFF for GP_FLASH_EFF and back. */
gpu_param_id iter_attention_other(gpu_param_id attention_eff);

/* 1 if some row of mask is predicted differently when parameter id of g
 * changes: a parameter no fit row exercises (fp8_gemm_eff without FP8
 * rows, net_bw_eff on one node) is not fitted by a fit on them. */
int iter_param_exercised(const gpu_params *g, const iter_set *set, const int *mask, gpu_param_id id);

#endif
