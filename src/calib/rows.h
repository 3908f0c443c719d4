/* rows.h: the measured rows of every validation file, each as the job it was.
 *
 * One loader per file of data/validation/ (a copy of ../shared/validation),
 * chosen by the file's header:
 *   vTrain (`# GPUs, ..., iteration time (ms)`): ground_truth_single.csv and
 *     ground_truth_multi_pp1.csv; Megatron-DeepSpeed GPT on A100 80GB nodes of
 *     8 (NVLink), 8x 100 Gb/s NICs per node when it spans nodes, activation
 *     checkpointing, no gradient buckets (no overlap), 1F1B.
 *   Korthikanti et al. Table 5 (`meas_iter_s`): GPT 22B-1T on Selene (DGX
 *     A100, 8x 200 Gb/s HDR per node), full or selective recompute, sequence
 *     parallelism, 1F1B or interleaved.
 *   Korthikanti Table 4 (`meas_fwd_ms`): one 22B layer's forward + backward
 *     (ROW_LAYER rows).
 *   Megatron-Bridge and NeMo 24.07 summaries (`step_time_s`): the model from
 *     models.csv in the same directory (by model_key), TP/PP/VP/CP/EP, batch,
 *     precision and schedule from the row; DGX-H100 / DGX-B200 (8 GPUs per
 *     node, 8x 400 Gb/s per node).
 * A row the model cannot predict -- a GPU type without a profile
 * (GB200, GB300, B300), an architecture arch cannot describe (hybrid Mamba,
 * sliding-window attention, MoE on alternate layers, MLA given only in free
 * text), FP4, or a row with blank numbers -- is not dropped: it is listed in
 * skip with its reason (as are documented regressions, below).  Settings a file does not state are assumptions,
 * named where they are made (rows.c).
 *
 * split_key is the measurement's identity: in the summaries the same
 * measurement is republished in several versions of a table, so the key is
 * the configuration (model, GPU, GPU count, precision, parallelism, batch,
 * MoE token dropping), not the version; every version of one measurement
 * falls on the same side of the fit/held-out split.  vTrain's rows are one
 * measurement each (key = row index, the split calibrate has always used).
 */
#ifndef PG_CALIB_ROWS_H
#define PG_CALIB_ROWS_H

#include "calib/itermodel.h"
#include "util/error.h"

typedef struct calib_skip {
    int line;
    char label[96];
    char reason[200];
} calib_skip;

typedef struct calib_rows {
    char source[64];                /* file label: vtrain, korthikanti_t5, korthikanti_t4, mbridge, nemo */
    train_row *row;
    int n;
    calib_skip *skip;
    int nskip;
} calib_rows;

/* Load path (any of the formats above).  Bad input: PG_EXIT_INPUT naming
 * file, line and column.  Rows that cannot be predicted go to skip, and so
 * do a summary's rows of a release whose number NVIDIA documented as a
 * software regression of that configuration (regressions.csv beside the
 * summary: release, system, model, what, the issue or fixing pull request;
 * token-dropping rows never match), unless flags has CALIB_KEEP_REGRESSIONS. */
#define CALIB_KEEP_REGRESSIONS 1u
int calib_rows_load(const char *path, unsigned flags, calib_rows *out, pg_status *st);
void calib_rows_free(calib_rows *r);

/* Keep the rows of GPU type gpu; the others move to skip ("GPU type X:
 * this run uses Y").  No-op when gpu is NULL. */
void calib_rows_keep_gpu(calib_rows *r, const char *gpu);

/* Move the rows with keep[i] == 0 to skip, each with why[i]. */
void calib_rows_keep(calib_rows *r, const int *keep, char (*why)[200]);

/* Map a system name of the summaries ("DGX-H100", "H100-SXM (DGX-H100)",
 * "DGX-B200", ...) to a pipegrid GPU type, its GPUs per node and its
 * inter-node bytes/s per GPU; 0 if pipegrid has no profile for it. */
int calib_system(const char *name, const char **gpu, int *gpus_per_node, double *nic_bw);

#endif
