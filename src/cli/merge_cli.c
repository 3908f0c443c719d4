/* merge_cli.c: `pipegrid merge [--grid KEY=V1,...]... [-o FILE] PART.csv...`:
 * its arguments; the merge itself is the sweep engine's (job/sweep.h,
 * sweep_merge). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "job/sweep.h"

int cmd_merge(int argc, char **argv)
{
    pg_status st;
    pg_status_clear(&st);
    const char *out_path = NULL;
    const char **parts = pg_xcalloc((size_t)argc, sizeof *parts);
    const char **grids = pg_xcalloc((size_t)argc, sizeof *grids);
    int nparts = 0, ngrids = 0, rc = 0;
    sweep_grid g;
    memset(&g, 0, sizeof g);
    for (int i = 2; i < argc && rc == 0; i++) {
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (i + 1 >= argc)
                rc = pg_fail(&st, PG_EXIT_INPUT, "%s: missing value", argv[i]);
            else
                out_path = argv[++i];
        } else if (strcmp(argv[i], "--grid") == 0) {
            if (i + 1 >= argc)
                rc = pg_fail(&st, PG_EXIT_INPUT, "%s: missing value", argv[i]);
            else
                grids[ngrids++] = argv[++i];
        } else if (strncmp(argv[i], "--grid=", strlen("--grid=")) == 0) {
            grids[ngrids++] = argv[i] + strlen("--grid=");
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            rc = pg_fail(&st, PG_EXIT_INPUT, "merge: unknown option '%s' (see pipegrid --help)", argv[i]);
        } else {
            parts[nparts++] = argv[i];
        }
    }
    if (rc == 0 && nparts == 0)
        rc = pg_fail(&st, PG_EXIT_INPUT, "merge: no part files given");
    if (rc == 0 && ngrids > 0)
        rc = sweep_grid_parse(&g, grids, ngrids, &st);
    long missing = 0;
    if (rc == 0)
        rc = sweep_merge(parts, nparts, ngrids > 0 ? &g : NULL, out_path, &missing, &st);
    if (rc == 0 && missing > 0)
        rc = PG_EXIT_INPUT;
    else if (rc != 0)
        rc = cli_report_error(&st);
    sweep_grid_free(&g);
    free(parts);
    free(grids);
    return rc;
}
