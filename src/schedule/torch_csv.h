/* torch_csv.h: schedules as PyTorch torch.distributed.pipelining CSV files.
 *
 * The "compute_only" format PyTorch's schedules dump and load: one row per
 * rank (row 1 is rank 0), cells separated by commas, each cell one action
 * STAGE KIND MICROBATCH with KIND one of
 *     F  forward            -> OP_F
 *     I  backward input     -> OP_B
 *     W  backward weight    -> OP_W
 *     B  full backward      -> OP_BW
 * e.g. "0F0,0F1,0I0,0W0".  An empty cell is an idle slot and is skipped.
 * Communication actions (SEND_F, RECV_B, ...) are not part of this format.
 *
 * The importer infers everything from the file: pp = number of rows, the
 * stages = 0 .. largest stage index, the placement = the row each stage
 * appears on, m = largest microbatch + 1.  Every problem is PG_EXIT_INPUT
 * with "FILE:ROW:COL: ..." (or "FILE:ROW: ..." when no single cell is at
 * fault); an order that cannot complete is PG_EXIT_DEADLOCK naming the
 * blocked ops.  Export then import gives the same schedule (same placement
 * and per-rank op order); only the name becomes "file:PATH".
 */
#ifndef PG_SCHEDULE_TORCH_CSV_H
#define PG_SCHEDULE_TORCH_CSV_H

#include <stddef.h>

#include "schedule/schedule.h"
#include "util/error.h"
#include "util/strbuf.h"

/* Appends the CSV (one line per rank, '\n' line ends) to out. */
void sched_export_torch_csv(const schedule *s, strbuf *out);

/* Reads the CSV file at path into out (initialised here; free with
 * sched_free on success, untouched memory-wise on failure). */
int sched_import_torch_csv(const char *path, schedule *out, pg_status *st);

/* The same from text already in memory; origin names it in messages. */
int sched_import_torch_csv_text(const char *text, size_t len, const char *origin, schedule *out, pg_status *st);

#endif
