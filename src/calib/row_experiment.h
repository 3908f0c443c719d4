/* row_experiment.h: a measured row as the experiment `pipegrid run` simulates.
 *
 * Contract.  row_experiment_make turns one train_row (rows.h: a measured
 * job as it ran) into the experiment keys that describe the same job to the
 * simulator, as "KEY=VALUE" strings in the order a reader expects them.
 * This is the one place a row becomes a job: `validate` simulates rows
 * through it and `validate --emit DIR` writes it out as experiment files a
 * user can run, read and change (row_experiment_yaml).  A row with an
 * architecture (has_arch) needs its model as a config.json: the caller
 * writes hf_json (hfconfig_write's text) to the path it named in hf_path,
 * which the experiment's workload key refers to.
 *
 * A row that is not one training iteration (ROW_LAYER: Table 4's single
 * layer) has no experiment: PG_EXIT_INPUT saying so.  Settings the simulator
 * has no key for are named in `unmodelled` (empty when there is none), so a
 * report can say what the simulated job leaves out.
 */
#ifndef PG_CALIB_ROW_EXPERIMENT_H
#define PG_CALIB_ROW_EXPERIMENT_H

#include "calib/itermodel.h"
#include "util/error.h"
#include "util/strbuf.h"

#define ROW_UNMODELLED_MAX 160

typedef struct row_experiment {
    char **sets;                    /* "KEY=VALUE", owned */
    int nsets;
    char *hf_json;                  /* owned; NULL when the workload is workload=gpt */
    char unmodelled[ROW_UNMODELLED_MAX];
} row_experiment;

int row_experiment_make(const train_row *r, const char *hf_path, row_experiment *out, pg_status *st);
void row_experiment_free(row_experiment *x);

/* The shipped profiles/models/ config.json (a path relative to the data
 * directory, for datapath_find) of a models.csv model whose architecture
 * models.csv gives only in its free-text notes (multi-head latent
 * attention, sliding windows, hybrid Mamba layers, MoE on alternate layers:
 * no structured columns for them), or NULL when none is shipped.
 * *held_back: NULL, or why the rows do not take that config yet. */
const char *row_model_profile(const char *model_key, const char **held_back);

/* The GEMM recipe (a precision_kind, experiment.h) a summary row's
 * precision column names, as it ran on GPU type gpu: BF16; FP8 and FP8-CS
 * (one scale per tensor: Transformer Engine's default FP8 recipes); MXFP8
 * and FP8-MX; "FP8 blockwise/MX" (Megatron-Bridge 25.09's parenthesised
 * values: MXFP8 on Blackwell, 1x128 / 128x128 blockwise FP8 on Hopper,
 * which has no MX tensor cores); NVFP4. */
int row_precision_recipe(const char *precision, const char *gpu);

/* The experiment as a YAML file: a comment with the row's source, label and
 * measured time, then one `key: value` line per setting.  Appended to out. */
void row_experiment_yaml(const row_experiment *x, const train_row *r, const char *source, strbuf *out);

#endif
