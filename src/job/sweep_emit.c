/* sweep_emit.c: `sweep --emit slurm|parallel`: the same sweep split into
 * chunks for a cluster.
 *
 * Every chunk is an ordinary `pipegrid sweep ... --chunk K/N -o part-K.csv`
 * command, so a chunk that dies is simply run again and resumes its part
 * file, and `pipegrid merge part-*.csv` restores the grid order.  Commands
 * carry absolute paths (this binary, the experiment file) and first cd to
 * the directory the script was written from, where the part files go: with
 * a shared file system, they run the same from any node or host (GNU
 * parallel's --sshlogin starts commands in the remote home directory).
 * Every argument is single-quoted for the shell.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job/sweep.h"

#define PART_PREFIX "part-"
#define SLURM_TASK_VAR "${SLURM_ARRAY_TASK_ID}"

int sweep_emit_parse_kind(const char *text, sweep_emit_kind *kind, pg_status *st)
{
    if (strcmp(text, "slurm") == 0)
        *kind = EMIT_SLURM;
    else if (strcmp(text, "parallel") == 0)
        *kind = EMIT_PARALLEL;
    else
        return pg_fail(st, PG_EXIT_INPUT, "--emit: '%s' is not slurm or parallel", text);
    return 0;
}

/* 'text' for a POSIX shell: a quote inside becomes '\''. */
static void shell_quote(strbuf *sb, const char *text)
{
    sb_append(sb, "'");
    for (const char *p = text; *p; p++) {
        if (*p == '\'')
            sb_append(sb, "'\\''");
        else
            sb_append_n(sb, p, 1);
    }
    sb_append(sb, "'");
}

typedef struct emit_paths {
    char bin[PATH_MAX];
    char dir[PATH_MAX];
    char exp[PATH_MAX];     /* "" for the bundled default */
} emit_paths;

static int resolve_paths(const sweep_emit_spec *s, emit_paths *p, pg_status *st)
{
    ssize_t n = readlink("/proc/self/exe", p->bin, sizeof p->bin - 1);
    if (n < 0)
        return pg_fail(st, PG_EXIT_INTERNAL, "--emit: cannot find this binary: %s", strerror(errno));
    p->bin[n] = '\0';
    if (!getcwd(p->dir, sizeof p->dir))
        return pg_fail(st, PG_EXIT_INTERNAL, "--emit: getcwd: %s", strerror(errno));
    p->exp[0] = '\0';
    if (s->experiment_path && !realpath(s->experiment_path, p->exp))
        return pg_fail(st, PG_EXIT_INPUT, "%s: %s", s->experiment_path, strerror(errno));
    return 0;
}

static void cd_command(const emit_paths *p, strbuf *sb)
{
    sb_append(sb, "cd ");
    shell_quote(sb, p->dir);
}

static void grid_options(const sweep_emit_spec *s, strbuf *sb)
{
    for (int i = 0; i < s->ngrids; i++) {
        sb_append(sb, " --grid ");
        shell_quote(sb, s->grids[i]);
    }
}

/* `BIN sweep ... --chunk K/N -o part-K.csv [EXP]`; chunk is a number or, in
 * the Slurm script, the array task variable (unquoted). */
static void chunk_command(const sweep_emit_spec *s, const emit_paths *p, const char *chunk, int chunk_is_var,
                          strbuf *sb)
{
    shell_quote(sb, p->bin);
    sb_append(sb, " sweep");
    grid_options(s, sb);
    for (int i = 0; i < s->nsets; i++) {
        sb_append(sb, " --set ");
        shell_quote(sb, s->sets[i]);
    }
    sb_appendf(sb, " -j %d --format csv", s->jobs);
    if (chunk_is_var)
        sb_appendf(sb, " --chunk \"%s/%d\" -o \"" PART_PREFIX "%s.csv\"", chunk, s->chunks, chunk);
    else
        sb_appendf(sb, " --chunk %s/%d -o " PART_PREFIX "%s.csv", chunk, s->chunks, chunk);
    if (p->exp[0]) {
        sb_append(sb, " ");
        shell_quote(sb, p->exp);
    }
}

/* The merge afterwards, given the grid so it can name what is missing. */
static void merge_command(const sweep_emit_spec *s, const emit_paths *p, strbuf *sb)
{
    cd_command(p, sb);
    sb_append(sb, " && ");
    shell_quote(sb, p->bin);
    sb_append(sb, " merge");
    grid_options(s, sb);
    sb_append(sb, " -o sweep.csv " PART_PREFIX "*.csv");
}

static void emit_slurm(const sweep_emit_spec *s, const emit_paths *p, strbuf *sb)
{
    sb_append(sb, "#!/bin/bash\n");
    sb_appendf(sb, "# pipegrid sweep as a Slurm job array: %d chunks, one per array task.\n", s->chunks);
    sb_append(sb, "# Submit it with `sbatch THIS_FILE`; each task writes " PART_PREFIX "K.csv in the directory below,\n"
                  "# and a task run again (requeued, or `sbatch --array=K THIS_FILE`) resumes its part file.\n"
                  "# When all are done (or submit it with --dependency=afterok:JOBID):\n#   ");
    merge_command(s, p, sb);
    sb_append(sb, "\n");
    sb_append(sb, "#SBATCH --job-name=pipegrid-sweep\n");
    sb_appendf(sb, "#SBATCH --array=1-%d\n", s->chunks);
    sb_append(sb, "#SBATCH --ntasks=1\n");
    sb_appendf(sb, "#SBATCH --cpus-per-task=%d\n", s->jobs);
    /* #SBATCH lines are not shell: a directory with blanks cannot be named
     * there, and then the logs land where sbatch was called. */
    if (!strpbrk(p->dir, " \t\n'\"\\"))
        sb_appendf(sb, "#SBATCH --chdir=%s\n", p->dir);
    sb_append(sb, "#SBATCH --output=pipegrid-sweep-%A_%a.log\n");
    sb_append(sb, "set -eu\n");
    cd_command(p, sb);
    sb_append(sb, "\nexec ");
    chunk_command(s, p, SLURM_TASK_VAR, 1, sb);
    sb_append(sb, "\n");
}

static void emit_parallel(const sweep_emit_spec *s, const emit_paths *p, strbuf *sb)
{
    /* One command per line and nothing else: GNU parallel runs every line. */
    for (int k = 1; k <= s->chunks; k++) {
        char chunk[32];
        snprintf(chunk, sizeof chunk, "%d", k);
        cd_command(p, sb);
        sb_append(sb, " && ");
        chunk_command(s, p, chunk, 0, sb);
        sb_append(sb, "\n");
    }
}

int sweep_emit(const sweep_emit_spec *s, FILE *out, pg_status *st)
{
    emit_paths *p = pg_xmalloc(sizeof *p);
    int rc = resolve_paths(s, p, st);
    if (rc == 0) {
        strbuf sb;
        sb_init(&sb);
        if (s->kind == EMIT_SLURM)
            emit_slurm(s, p, &sb);
        else
            emit_parallel(s, p, &sb);
        if (sb_write(&sb, out) != 0 || fflush(out) != 0)
            rc = pg_fail(st, PG_EXIT_INTERNAL, "--emit: write error");
        sb_free(&sb);
    }
    if (rc == 0 && s->kind == EMIT_PARALLEL) {
        strbuf merge;
        sb_init(&merge);
        merge_command(s, p, &merge);
        fprintf(stderr,
                "pipegrid: %d chunk commands; run them with `parallel --jobs N -a FILE` (add --sshlogin HOST,... "
                "for hosts sharing %s), then:\n  %s\n", s->chunks, p->dir, merge.data);
        sb_free(&merge);
    }
    free(p);
    return rc;
}
