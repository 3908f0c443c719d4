/* pglimits.h: the one set of size limits on a pipeline, shared by the
 * experiment schema (src/model/experiment.c, which enforces them on user
 * input with file:line messages) and the schedule layer (src/schedule/
 * registry.c, which re-checks what library callers pass), so no two messages
 * can name different limits for one key.
 *
 * They are far beyond any real pipeline and low enough that a typo cannot
 * make a generator allocate gigabytes of op lists. */
#ifndef PG_UTIL_PGLIMITS_H
#define PG_UTIL_PGLIMITS_H

#define PG_MAX_PP 4096                 /* key pp: pipeline ranks */
#define PG_MAX_CHUNKS 64               /* key chunks: stages per rank */
#define PG_MAX_MICROBATCHES 1000000    /* key microbatches */
/* Longest duration any key takes (an op's time, a latency, a solver's time
 * limit): about 11.6 days.  Far above any real op; low enough that sums over
 * a whole schedule stay finite and exact to the simulator's precision, where
 * 1e300 s would overflow to infinity and look like a deadlock. */
#define PG_MAX_DURATION_S 1e6

/* A model's sizes, the same for every way of giving them: experiment keys
 * (gpt.layers, ...), Hugging Face configs (hfconfig.c) and validation CSV
 * rows (calib/rows.c, calib/itermodel.c).  Each is far above any published
 * model and low enough that a typo fails at once with the key's name instead
 * of costing minutes or predicting a 1e19-byte peak. */
/* Layers are looped over (arch.c costs each), so their bound keeps a typo
 * from costing seconds; real models have < 200. */
#define PG_MAX_LAYERS 65536
/* Widths (hidden, ffn, vocabulary, sequence, heads): below 2^30 the sum of
 * two (arch.c adds MLA's head widths as int) still fits an int. */
#define PG_MAX_MODEL_DIM ((1 << 30) - 1)
/* One attention head's width: real models use 64 to 256. */
#define PG_MAX_HEAD_DIM 65536
/* Routed experts of an MoE layer: real models have <= 384. */
#define PG_MAX_EXPERTS 65536

#endif
