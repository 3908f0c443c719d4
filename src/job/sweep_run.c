/* sweep_run.c: run a sweep's combinations in child processes, N at a time,
 * and hand their rows back in grid order.
 *
 * Why fork without exec: SimGrid keeps one engine per process, so every
 * simulation needs a fresh process, but that process does not need a fresh
 * program.  A forked child already has the binary, SimGrid and its C++
 * runtime loaded and relocated; it calls plan->child (cmd_run) with the combination as
 * extra --set options, exactly as `pipegrid run ... --format csv` would, and
 * writes the same CSV to a pipe.  exec would repeat the dynamic loading of
 * SimGrid for every combination (the larger part of a small run's cost) and
 * would need /proc/self/exe, for nothing gained: the parent never starts a
 * SimGrid engine, so the child inherits none.  The parent flushes its stdio
 * before each fork and the child leaves with _exit, so no buffered output
 * is written twice and no atexit handler of the parent runs in a child.
 *
 * Order: results arrive in completion order; a ring of REORDER_PER_JOB
 * slots per worker holds them until every earlier combination is done, and
 * no combination further ahead than the ring is started, so memory stays
 * bounded however long one slow combination takes.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "job/sweep.h"
#include "report/report.h"

#define REORDER_PER_JOB 64
#define READ_CHUNK_BYTES 4096
#define PROGRESS_BAR_WIDTH 30
#define SECONDS_PER_MINUTE 60
#define TICK_MS 1000   /* a plan's tick runs at least this often: --time-limit holds to about a second */

typedef struct worker {
    pid_t pid;              /* 0: free */
    long slot;              /* position in plan->indices */
    int out_fd, err_fd;     /* -1 once at end of file */
    strbuf out;             /* the child's stdout: the run's CSV */
    strbuf err;             /* the child's stderr line being read */
    strbuf prefix;          /* "[key=value ...] " for its stderr lines */
    strbuf error;           /* the child's last "pipegrid: " line that is not a warning: its row's error */
} worker;

typedef struct progress {
    int enabled;
    long done, failed, oom, total;   /* oom: completed runs that predict out of memory (exit 3) */
    long done_before;                /* runs counted in done that an earlier call ran (not in the rate) */
    const char *label;
    int quiet;                       /* drop the children's stderr lines */
    struct timespec start;
} progress;

static double elapsed_s(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) * 1e-9;
}

static void progress_clear(const progress *p)
{
    if (p->enabled)
        fputs("\r\033[K", stderr);
}

static void progress_draw(const progress *p)
{
    if (!p->enabled)
        return;
    double t = elapsed_s(&p->start);
    int filled = p->total ? (int)(PROGRESS_BAR_WIDTH * p->done / p->total) : PROGRESS_BAR_WIDTH;
    char bar[PROGRESS_BAR_WIDTH + 1];
    for (int i = 0; i < PROGRESS_BAR_WIDTH; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[PROGRESS_BAR_WIDTH] = '\0';
    long ran = p->done - p->done_before;
    long left_s = ran > 0 ? (long)(t / (double)ran * (double)(p->total - p->done)) : 0;
    fprintf(stderr, "\r\033[K%s [%s] %ld/%ld", p->label, bar, p->done, p->total);
    if (p->oom)
        fprintf(stderr, ", %ld OOM", p->oom);
    if (p->failed)
        fprintf(stderr, ", %ld failed", p->failed);
    fprintf(stderr, ", %ld:%02ld left", left_s / SECONDS_PER_MINUTE, left_s % SECONDS_PER_MINUTE);
    fflush(stderr);
}

/* In the child: become `pipegrid run [EXP] --set ... --format csv`. */
static void run_child(const sweep_plan *p, long index, int out_fd, int err_fd)
{
    if (dup2(out_fd, STDOUT_FILENO) < 0 || dup2(err_fd, STDERR_FILENO) < 0)
        _exit(PG_EXIT_INTERNAL);
    close(out_fd);
    close(err_fd);
    const sweep_grid *g = p->grid;
    const char **values = pg_xcalloc((size_t)g->nkeys, sizeof *values);
    sweep_grid_combination(g, index, values);
    int argc = 0, nextra = 0;
    const char *const *extra = p->index_sets ? p->index_sets(index, &nextra, p->index_ctx) : NULL;
    char **argv = pg_xcalloc((size_t)(2 * (p->nsets + g->nkeys + nextra) + 6), sizeof *argv);
    argv[argc++] = "pipegrid";
    argv[argc++] = "run";
    for (int i = 0; i < p->nsets; i++) {
        argv[argc++] = "--set";
        argv[argc++] = (char *)p->sets[i];
    }
    for (int k = 0; k < g->nkeys; k++) {
        strbuf kv;
        sb_init(&kv);
        sb_appendf(&kv, "%s=%s", g->keys[k].name, values[k]);
        argv[argc++] = "--set";
        argv[argc++] = kv.data;      /* lives until _exit */
    }
    for (int i = 0; i < nextra; i++) {
        argv[argc++] = "--set";
        argv[argc++] = (char *)extra[i];
    }
    argv[argc++] = "--format";
    argv[argc++] = "csv";
    if (p->experiment_path)
        argv[argc++] = (char *)p->experiment_path;
    int rc = p->child(argc, argv);
    fflush(stdout);
    fflush(stderr);
    _exit(rc);
}

static int start_worker(const sweep_plan *p, worker *w, long slot, pg_status *st)
{
    int out[2], err[2];
    if (pipe(out) != 0)
        return pg_fail(st, PG_EXIT_INTERNAL, "sweep: pipe: %s", strerror(errno));
    if (pipe(err) != 0) {
        close(out[0]);
        close(out[1]);
        return pg_fail(st, PG_EXIT_INTERNAL, "sweep: pipe: %s", strerror(errno));
    }
    fflush(NULL);   /* nothing buffered here may be written again by the child */
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(out[0]), close(out[1]), close(err[0]), close(err[1]);
        return pg_fail(st, PG_EXIT_INTERNAL, "sweep: fork: %s", strerror(e));
    }
    if (pid == 0) {
        close(out[0]);
        close(err[0]);
        run_child(p, p->indices[slot], out[1], err[1]);
    }
    close(out[1]);
    close(err[1]);
    w->pid = pid;
    w->slot = slot;
    w->out_fd = out[0];
    w->err_fd = err[0];
    sb_reset(&w->out);
    sb_reset(&w->err);
    sb_reset(&w->prefix);
    sb_reset(&w->error);
    sb_append(&w->prefix, "[");
    sweep_grid_describe(p->grid, p->indices[slot], &w->prefix);
    sb_append(&w->prefix, "] ");
    return 0;
}

#define MSG_PREFIX "pipegrid: "
#define MSG_WARNING MSG_PREFIX "warning: "

static void copy_err_line(worker *w, const char *line, size_t len, const progress *pr)
{
    /* The message a failed run dies with is its last error line (cmd_run
     * reports one error and exits); warnings come before it. */
    size_t plen = strlen(MSG_PREFIX), wlen = strlen(MSG_WARNING);
    if (len > plen && memcmp(line, MSG_PREFIX, plen) == 0 && !(len >= wlen && memcmp(line, MSG_WARNING, wlen) == 0)) {
        sb_reset(&w->error);
        sb_append_n(&w->error, line + plen, len - plen);
    }
    if (pr->quiet)
        return;
    progress_clear(pr);
    fprintf(stderr, "%s%.*s\n", w->prefix.data, (int)len, line);
    progress_draw(pr);
}

/* Read what is there; close at end of file. */
static void drain(worker *w, int is_err, const progress *pr)
{
    int *fd = is_err ? &w->err_fd : &w->out_fd;
    char buf[READ_CHUNK_BYTES];
    ssize_t got = read(*fd, buf, sizeof buf);
    if (got < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (got <= 0) {
        close(*fd);
        *fd = -1;
        if (is_err && w->err.len > 0) {
            copy_err_line(w, w->err.data, w->err.len, pr);
            sb_reset(&w->err);
        }
        return;
    }
    if (!is_err) {
        sb_append_n(&w->out, buf, (size_t)got);
        return;
    }
    sb_append_n(&w->err, buf, (size_t)got);
    char *start = w->err.data, *nl;
    while ((nl = memchr(start, '\n', w->err.len - (size_t)(start - w->err.data))) != NULL) {
        copy_err_line(w, start, (size_t)(nl - start), pr);
        start = nl + 1;
    }
    size_t rest = w->err.len - (size_t)(start - w->err.data);
    memmove(w->err.data, start, rest);
    w->err.len = rest;
    w->err.data[rest] = '\0';
}

/* The child's CSV is the run header and one row; anything else is no row. */
static const char *child_row(strbuf *out, const char *run_header, size_t *row_len)
{
    size_t hlen = strlen(run_header);
    if (out->len <= hlen || memcmp(out->data, run_header, hlen) != 0)
        return NULL;
    const char *row = out->data + hlen;
    const char *nl = strchr(row, '\n');
    if (!nl || nl[1] != '\0' || nl == row)
        return NULL;
    *row_len = (size_t)(nl - row);
    return row;
}

static void finish_worker(const sweep_plan *p, worker *w, int wstatus, const char *run_header,
                          sweep_result *r, const progress *pr)
{
    const sweep_grid *g = p->grid;
    long index = p->indices[w->slot];
    int code;
    if (WIFEXITED(wstatus)) {
        code = WEXITSTATUS(wstatus);
    } else {
        code = SWEEP_EXIT_SIGNAL_BASE + (WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0);
        sb_reset(&w->error);
        sb_appendf(&w->error, "sweep: the run was killed by signal %d (%s)", code - SWEEP_EXIT_SIGNAL_BASE,
                   strsignal(code - SWEEP_EXIT_SIGNAL_BASE));
        progress_clear(pr);
        fprintf(stderr, "%s" MSG_PREFIX "%s\n", w->prefix.data, w->error.data);
        progress_draw(pr);
    }
    strbuf row, run_row;
    sb_init(&row);
    sb_init(&run_row);
    size_t row_len = 0;
    const char *child = WIFEXITED(wstatus) ? child_row(&w->out, run_header, &row_len) : NULL;
    if (child) {
        sb_append_n(&run_row, child, row_len);
        if (sweep_csv_row(g, index, run_row.data, &row) != 0) {
            child = NULL;
            sb_reset(&row);
        }
    }
    if (!child) {
        if (code == PG_EXIT_OK) {
            /* Exit 0 with no row: a bug, not a result. */
            code = PG_EXIT_INTERNAL;
            sb_reset(&w->error);
            sb_append(&w->error, "sweep: the run printed no CSV row");
            progress_clear(pr);
            fprintf(stderr, "%s" MSG_PREFIX "%s\n", w->prefix.data, w->error.data);
            progress_draw(pr);
        }
        if (w->error.len == 0)
            sb_appendf(&w->error, "exit code %d (the run printed no message)", code);
        sb_reset(&run_row);
        report_csv_row_failed(NULL, 0, code, w->error.data, &run_row);
        if (run_row.len > 0 && run_row.data[run_row.len - 1] == '\n')
            run_row.data[--run_row.len] = '\0';
        sweep_csv_row(g, index, run_row.data, &row);
    }
    sb_free(&run_row);
    r->index = index;
    r->exit_code = code;
    r->row = row.data;
}

int sweep_run(const sweep_plan *p, sweep_sink sink, void *ctx, pg_status *st)
{
    int jobs = p->jobs < 1 ? 1 : p->jobs;
    long window = (long)jobs * REORDER_PER_JOB;
    worker *ws = pg_xcalloc((size_t)jobs, sizeof *ws);
    sweep_result *ring = pg_xcalloc((size_t)window, sizeof *ring);
    struct pollfd *pfd = pg_xcalloc((size_t)jobs * 2, sizeof *pfd);
    strbuf run_header;
    sb_init(&run_header);
    report_csv_header(NULL, 0, &run_header);
    progress pr = {.enabled = p->progress, .total = p->progress_total > 0 ? p->progress_total : p->count,
                   .done = p->progress_done_before, .done_before = p->progress_done_before,
                   .oom = p->progress_oom_before, .failed = p->progress_failed_before,
                   .label = p->progress_label ? p->progress_label : "sweep", .quiet = p->quiet_children};
    clock_gettime(CLOCK_MONOTONIC, &pr.start);
    long next_start = 0, next_emit = 0;
    int running = 0, rc = 0;
    for (int i = 0; i < jobs; i++)
        ws[i].out_fd = ws[i].err_fd = -1;
    progress_draw(&pr);

    while (next_emit < p->count && rc == 0) {
        for (int i = 0; i < jobs && next_start < p->count && next_start < next_emit + window; i++) {
            if (ws[i].pid != 0)
                continue;
            if (start_worker(p, &ws[i], next_start, st) != 0) {
                if (running > 0)
                    break;            /* out of processes for now: wait for one */
                rc = st->code;
                goto done;
            }
            next_start++;
            running++;
        }
        int n = 0;
        for (int i = 0; i < jobs; i++) {
            if (ws[i].out_fd >= 0)
                pfd[n++] = (struct pollfd){.fd = ws[i].out_fd, .events = POLLIN};
            if (ws[i].err_fd >= 0)
                pfd[n++] = (struct pollfd){.fd = ws[i].err_fd, .events = POLLIN};
        }
        if (n > 0 && poll(pfd, (nfds_t)n, p->tick ? TICK_MS : -1) < 0 && errno != EINTR) {
            rc = pg_fail(st, PG_EXIT_INTERNAL, "sweep: poll: %s", strerror(errno));
            goto done;
        }
        for (int j = 0; j < n; j++) {
            if (!(pfd[j].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            for (int i = 0; i < jobs; i++) {
                if (ws[i].out_fd == pfd[j].fd)
                    drain(&ws[i], 0, &pr);
                else if (ws[i].err_fd == pfd[j].fd)
                    drain(&ws[i], 1, &pr);
            }
        }
        for (int i = 0; i < jobs; i++) {
            worker *w = &ws[i];
            if (w->pid == 0 || w->out_fd >= 0 || w->err_fd >= 0)
                continue;
            int wstatus = 0;
            while (waitpid(w->pid, &wstatus, 0) < 0) {
                if (errno != EINTR) {
                    rc = pg_fail(st, PG_EXIT_INTERNAL, "sweep: waitpid: %s", strerror(errno));
                    goto done;
                }
            }
            sweep_result *r = &ring[w->slot % window];
            finish_worker(p, w, wstatus, run_header.data, r, &pr);
            w->pid = 0;
            running--;
            pr.done++;
            if (r->exit_code == PG_EXIT_OOM)
                pr.oom++;   /* a result (the row is complete), not a failure */
            else if (r->exit_code != PG_EXIT_OK)
                pr.failed++;
            progress_draw(&pr);
        }
        while (next_emit < p->count && ring[next_emit % window].row != NULL) {
            sweep_result *r = &ring[next_emit % window];
            if (rc == 0 && sink(r, ctx) != 0)
                rc = pg_fail(st, PG_EXIT_INTERNAL, "sweep: cannot write the results");
            free(r->row);
            r->row = NULL;
            next_emit++;
        }
        if (rc == 0 && p->tick && next_emit < p->count && p->tick(p->tick_ctx) != 0) {
            /* stopped: what is complete goes to the sink, the rest is dropped */
            for (long i = next_emit; i < next_start && rc == 0; i++) {
                sweep_result *r = &ring[i % window];
                if (r->row != NULL && sink(r, ctx) != 0)
                    rc = pg_fail(st, PG_EXIT_INTERNAL, "sweep: cannot write the results");
            }
            if (p->stopped)
                *p->stopped = 1;
            break;
        }
    }
done:
    progress_clear(&pr);
    for (int i = 0; i < jobs; i++) {
        if (ws[i].pid != 0) {
            kill(ws[i].pid, SIGTERM);
            waitpid(ws[i].pid, NULL, 0);
        }
        if (ws[i].out_fd >= 0)
            close(ws[i].out_fd);
        if (ws[i].err_fd >= 0)
            close(ws[i].err_fd);
        sb_free(&ws[i].out);
        sb_free(&ws[i].err);
        sb_free(&ws[i].prefix);
        sb_free(&ws[i].error);
    }
    for (long i = 0; i < window; i++)
        free(ring[i].row);
    free(ring);
    free(ws);
    free(pfd);
    sb_free(&run_header);
    return rc;
}
