/* row_sim.h: measured rows simulated as `pipegrid run` simulates them.
 *
 * Contract.  Every row of an iter_set becomes its experiment
 * (row_experiment.h), and row_simulate_and_keep simulates each distinct one
 * once, o->jobs processes at a time, through the job layer's process pool
 * (job/sweep.h: a child per simulation, SimGrid allowing one per process);
 * each child runs o->child (the command line's `run`).  Rows the simulator
 * ran are kept in rows and set (rebuilt), their iteration times in *sim_s
 * (owned by the caller, in the rows' new order); the others move to
 * rows->skip with the reason.  A row that is one layer's kernels (Table 4)
 * stays, with NAN: there is no iteration to simulate.  The models of the
 * rows (config.json) are written to o->emit_dir, or to a temporary
 * directory removed afterwards.  The GPU parameters the simulations use are
 * the caller's (gpu_params_override before the call).
 *
 * row_emit writes each row as DIR/STEM-line-N.yaml (its model as
 * STEM-line-N.json) and DIR/rows.csv listing them with the measured times
 * (`validate --emit`).
 */
#ifndef PG_CALIB_ROW_SIM_H
#define PG_CALIB_ROW_SIM_H

#include <stddef.h>

#include "calib/itermodel.h"
#include "calib/rows.h"
#include "job/sweep.h"
#include "util/error.h"

typedef struct row_sim_opts {
    const char *const *files;   /* the files the rows came from (train_row.file indexes it) */
    const char *emit_dir;       /* where the experiments go; NULL: a temporary directory */
    int jobs;                   /* simulations at a time; 0: one per CPU */
    sweep_child_fn child;       /* what each simulation runs (the command line's `run`) */
} row_sim_opts;

int row_emit(const row_sim_opts *o, const iter_set *set, pg_status *st);
/* Make o->emit_dir (one level; an existing directory is fine; none: 0). */
int row_emit_dir_make(const row_sim_opts *o, pg_status *st);
/* ... and *sim_oom[i] 1 where the simulation predicted the row out of
 * memory (though the measured job ran), 0 otherwise (owned by the caller). */
int row_simulate_and_keep(const row_sim_opts *o, calib_rows *rows, iter_set *set, double **sim_s, int **sim_oom,
                          pg_status *st);

/* The stem of a file's name: "data/x/ground_truth_single.csv" -> "ground_truth_single". */
void row_file_stem(const char *path, char *out, size_t len);

#endif
