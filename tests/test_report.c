/* test_report.c: the text, JSON, CSV and trace writers.
 *
 * The fixture is the hand-worked 1F1B of test_metrics.c (pp 2, m 2, F 1 s,
 * BW 2 s; makespan 9, span 9, bubble 3/9, rank 0 peaks at 2210 B) with four
 * transfers, two of which overlap.  Structured outputs are checked by
 * python3's json and csv modules (run through system()), which both parses
 * them for real and checks their fields against the known numbers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/report.h"
#include "report/report_opt.h"
#include "testutil.h"
#include "util/units.h"

#define NOPS 8
#define NXFERS 4

typedef struct fixture {
    int stage_rank[2];
    int nops[2];
    schedule sched;
    stage_cost cost[2];
    workload wl;
    pg_gpu gpu[2];
    platform_desc plat;
    int rank_gpu[2];
    tl_op ops[NOPS];
    tl_xfer xfers[NXFERS];
    timeline tl;
    run_metrics m;
    sim_outcome outcome;
    report_input in;
} fixture;

static void fixture_init(fixture *f, const char *sched_name)
{
    memset(f, 0, sizeof *f);
    f->stage_rank[0] = 0;
    f->stage_rank[1] = 1;
    f->nops[0] = f->nops[1] = 4;
    f->sched = (schedule){ .pp = 2, .v = 1, .nstages = 2, .m = 2, .stage_rank = f->stage_rank, .nops = f->nops };
    snprintf(f->sched.name, sizeof f->sched.name, "%s", sched_name);
    for (int s = 0; s < 2; s++)
        f->cost[s] = (stage_cost){ .f_s = 1, .b_s = 2, .act_b_bytes = 100, .param_count = 1000,
                                   .workspace_bytes = 10, .fwd_flops = 1e12 };
    f->wl = (workload){ .nstages = 2, .stage = f->cost, .micro_batch_size = 4, .seq_len = 128 };
    strcpy(f->wl.name, "hand");
    for (int r = 0; r < 2; r++) {
        f->gpu[r] = (pg_gpu){ .node = 0, .local_rank = r, .speed_flops = 1e12, .memory_bytes = 3000, .cpu_index = -1 };
        snprintf(f->gpu[r].host, sizeof f->gpu[r].host, "node0-gpu%d", r);
        strcpy(f->gpu[r].type, "test-gpu");
        f->rank_gpu[r] = r;
    }
    f->plat = (platform_desc){ .ngpus = 2, .gpu = f->gpu };
    strcpy(f->plat.xml_path, "platforms/hand.xml");
    const tl_op ops[NOPS] = {
        { 0, 1, 0, 0, 0, OP_F }, { 1, 2, 0, 0, 1, OP_F }, { 4, 6, 0, 0, 0, OP_BW }, { 7, 9, 0, 0, 1, OP_BW },
        { 1, 2, 1, 1, 0, OP_F }, { 2, 4, 1, 1, 0, OP_BW }, { 4, 5, 1, 1, 1, OP_F }, { 5, 7, 1, 1, 1, OP_BW },
    };
    /* Activations of mb 0 and 1 overlap in flight: each needs a second lane. */
    const tl_xfer xfers[NXFERS] = {
        { 1.0, 1.5, 64, 0, 1, 0, 0, XFER_ACTIVATION },
        { 1.2, 2.0, 64, 0, 1, 0, 1, XFER_ACTIVATION },
        { 4.0, 4.0, 64, 1, 0, 1, 0, XFER_GRADIENT },
        { 7.0, 7.0, 64, 1, 0, 1, 1, XFER_GRADIENT },
    };
    memcpy(f->ops, ops, sizeof ops);
    memcpy(f->xfers, xfers, sizeof xfers);
    timeline_init(&f->tl);   /* recorded as the engine records (packed): fixture_free frees it */
    for (int i = 0; i < NOPS; i++)
        timeline_add_op(&f->tl, &f->ops[i]);
    for (int i = 0; i < NXFERS; i++)
        timeline_add_xfer(&f->tl, &f->xfers[i]);
    f->outcome = (sim_outcome){ .completed = 1, .ops_done = NOPS, .ops_total = NOPS, .wall_s = 0.25, .events = 12 };
}

static void fixture_free(fixture *f)
{
    metrics_free(&f->m);
    timeline_free(&f->tl);
}

/* Computes the metrics (capacity override 0 = the GPUs' 3000 B). */
static void fixture_run(fixture *f, double capacity_override_bytes)
{
    metrics_input mi = { .sched = &f->sched, .wl = &f->wl, .plat = &f->plat, .rank_gpu = f->rank_gpu,
                         .tl = &f->tl, .bytes_per_param = 2, .capacity_override_bytes = capacity_override_bytes };
    metrics_compute(&mi, &f->m);
    f->in = (report_input){ .sched = &f->sched, .wl = &f->wl, .plat = &f->plat, .rank_gpu = f->rank_gpu,
                            .tl = &f->tl, .m = &f->m, .outcome = &f->outcome };
}

/* ---- python3 as the parser -------------------------------------------------- */

#define TMPDIR_TEMPLATE "/tmp/pg-test-report-XXXXXX"
/* check's per-test limit for the writers' tests (python3 runs inside). */
#define PYTHON_TCASE_TIMEOUT_S 600
static char tmpdir[] = TMPDIR_TEMPLATE;

static void setup(void)
{
    strcpy(tmpdir, TMPDIR_TEMPLATE);   /* mkdtemp fills it in; CK_FORK=no reuses it */
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
}

/* Runs python3 SCRIPT DATA and asserts it exits 0 (its assertion message
 * goes to stderr, in the test log). */
static void python_check(const char *name, const char *script, const char *data_path)
{
    char script_path[128], cmd[512];
    snprintf(script_path, sizeof script_path, "%s/check_%s.py", tmpdir, name);   /* not json.py: it would shadow the module */
    write_file(script_path, script);
    snprintf(cmd, sizeof cmd, "python3 '%s' '%s'", script_path, data_path);
    int rc = system(cmd);
    ck_assert_msg(rc == 0, "%s: python3 check failed (status %d)", name, rc);
}

static void check_text_with_python(const char *name, const char *script, const strbuf *data)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s.out", tmpdir, name);
    write_file(path, data->data);
    python_check(name, script, path);
}

/* ---- JSON ------------------------------------------------------------------- */

static const char json_check[] =
    "import json, sys\n"
    "text = open(sys.argv[1]).read()\n"
    "d = json.loads(text)\n"              /* exactly one object: loads rejects trailing data */
    "assert isinstance(d, dict)\n"
    "for k in ['makespan','span','stage_span','bubble_ratio','peak_activations','peak_memory_bytes','oom',\n"
    "          'recompute_seconds','offload_bytes','iteration_seconds','lower_bound','schedule','pp',\n"
    "          'microbatches','samples_per_second','tokens_per_second','mfu','ranks','simulator',\n"
    "          'max_peak_memory_bytes','exit_code']:\n"
    "    assert k in d, k\n"
    "assert d['schedule'] == 'file:a\"b,c.csv', d['schedule']\n"
    "assert d['pp'] == 2 and d['microbatches'] == 2\n"
    "assert d['makespan'] == 9 and d['span'] == 9 and d['stage_span'] == [9, 6]\n"
    "assert abs(d['bubble_ratio'] - 1/3) < 1e-12\n"
    "assert d['peak_activations'] == [2, 1]\n"
    "assert d['peak_memory_bytes'] == [2210, 2110] and d['max_peak_memory_bytes'] == 2210\n"
    "assert d['oom'] == [0] and d['exit_code'] == 3\n"
    "assert d['recompute_seconds'] == [0, 0] and d['offload_bytes'] == [0, 0]\n"
    "assert d['iteration_seconds'] == 9 and d['lower_bound'] is None\n"
    "assert abs(d['samples_per_second'] - 8/9) < 1e-12 and abs(d['tokens_per_second'] - 1024/9) < 1e-9\n"
    "assert abs(d['mfu'] - 2/3) < 1e-12\n"
    "r0 = d['ranks'][0]\n"
    "assert len(d['ranks']) == 2 and r0['rank'] == 0 and r0['host'] == 'node0-gpu0' and r0['oom'] is True\n"
    "assert r0['busy_seconds'] == 6 and r0['idle_seconds'] == 3 and r0['stages'] == [0] and r0['ops'] == 4\n"
    "b = r0['peak_breakdown']\n"
    "assert b['static_bytes'] == 2000 and b['activation_bytes'] == 200 and b['workspace_bytes'] == 10, b\n"
    "assert r0['peak_time'] == 1 and r0['capacity_bytes'] == 2150 and d['ranks'][1]['oom'] is False\n"
    "s = d['simulator']\n"
    "assert s['events'] == 12 and s['wall_seconds'] == 0.25 and s['completed'] is True\n";

START_TEST(test_json_parses_and_has_fields)
{
    fixture f;
    fixture_init(&f, "file:a\"b,c.csv");
    fixture_run(&f, 2150);
    strbuf sb;
    sb_init(&sb);
    report_json(&f.in, &sb);
    check_text_with_python("json", json_check, &sb);
    sb_free(&sb);
    fixture_free(&f);
}
END_TEST

/* The configuration echoed (experiment given): tp 2, dp 3, ep 3, cp 1,
 * micro batch 4, so 4 x 3 x 2 microbatches = 24 samples per iteration;
 * the policies as their keys spell them; offload_k as the metrics give it
 * (0.75), null without one. */
static const char json_config_check[] =
    "import json, sys\n"
    "d = json.loads(open(sys.argv[1]).read())\n"
    "want = {'tp': 2, 'dp': 3, 'pp': 2, 'ep': 3, 'cp': 1, 'micro_batch_size': 4, 'global_batch_size': 24,\n"
    "        'recompute': 'selective', 'offload': 'full', 'precision': 'fp8', 'attention': 'legacy',\n"
    "        'offload_k': 0.75, 'offload_k_shared': 1.5}\n"
    "for k, v in want.items():\n"
    "    assert d[k] == v, (k, d[k], v)\n";

static const char json_no_k_check[] =
    "import json, sys\n"
    "d = json.loads(open(sys.argv[1]).read())\n"
    "assert d['offload'] == 'none' and d['offload_k'] is None and d['offload_k_shared'] is None, d['offload_k']\n"
    "assert d['recompute'] == 'none' and d['precision'] == 'bf16' and d['attention'] == 'flash'\n";

static void config_experiment(experiment *e)
{
    experiment_defaults(e);
    e->pp = 2;
    e->tp = 2;
    e->dp = 3;
    e->ep = 3;
    e->micro_batch_size = 4;
    e->recompute = RECOMPUTE_SELECTIVE;
    e->offload = OFFLOAD_FULL;
    e->precision = PRECISION_FP8;
    e->attention = ATTENTION_LEGACY;
}

START_TEST(test_json_and_text_configuration)
{
    fixture f;
    fixture_init(&f, "1f1b");
    fixture_run(&f, 0);
    experiment e;
    config_experiment(&e);
    f.in.exp = &e;
    f.m.has_offload_k = 1;
    f.m.offload_k = 0.75;
    f.m.offload_k_shared = 1.5;
    strbuf sb;
    sb_init(&sb);
    report_json(&f.in, &sb);
    check_text_with_python("json_config", json_config_check, &sb);
    sb_reset(&sb);
    report_text(&f.in, &sb);
    ck_assert_ptr_nonnull(strstr(sb.data, "tp 2, cp 1, dp 3, pp 2 (ep 3)"));
    ck_assert_ptr_nonnull(strstr(sb.data, "4 per microbatch, 24 per iteration"));
    ck_assert_ptr_nonnull(strstr(sb.data, "recompute selective, offload full, fp8, legacy attention"));
    ck_assert_ptr_nonnull(strstr(sb.data, "offload k      0.75 "));
    ck_assert_ptr_nonnull(strstr(sb.data, "; 1.5 with the other GPU of its PCIe switch copying too"));

    experiment_defaults(&e);
    f.m.has_offload_k = 0;
    sb_reset(&sb);
    report_json(&f.in, &sb);
    check_text_with_python("json_no_k", json_no_k_check, &sb);
    sb_reset(&sb);
    report_text(&f.in, &sb);
    ck_assert_ptr_null(strstr(sb.data, "offload k"));
    sb_free(&sb);
    fixture_free(&f);
}
END_TEST

static const char json_deadlock_check[] =
    "import json, sys\n"
    "d = json.loads(open(sys.argv[1]).read())\n"
    "assert d['exit_code'] == 4 and d['simulator']['completed'] is False\n"
    "assert 'rank 0 blocked' in d['simulator']['blocked']\n"
    "assert d['lower_bound'] == 7.5 and d['oom'] == []\n";

START_TEST(test_json_deadlock_and_bound)
{
    fixture f;
    fixture_init(&f, "1f1b");
    fixture_run(&f, 0);
    f.m.lower_bound = 7.5;
    f.outcome.completed = 0;
    snprintf(f.outcome.blocked, sizeof f.outcome.blocked, "rank 0 blocked at BW(stage 0, mb 1)");
    ck_assert_int_eq(report_exit_code(&f.in), PG_EXIT_DEADLOCK);
    strbuf sb;
    sb_init(&sb);
    report_json(&f.in, &sb);
    check_text_with_python("json_deadlock", json_deadlock_check, &sb);
    sb_free(&sb);
    fixture_free(&f);
}
END_TEST

/* ---- CSV -------------------------------------------------------------------- */

static const char csv_check[] =
    "import csv, sys\n"
    "rows = list(csv.reader(open(sys.argv[1], newline='')))\n"
    "assert len(rows) == 3, rows\n"
    "head, ok, failed = rows\n"
    "assert len(ok) == len(head) and len(failed) == len(head), (len(head), len(ok), len(failed))\n"
    "assert head[:2] == ['schedule.name', 'pp']\n"
    "for k in ['makespan','span','bubble_ratio','max_peak_memory_bytes','oom','exit_code','samples_per_second']:\n"
    "    assert k in head, k\n"
    "r = dict(zip(head[2:], ok[2:]))\n"
    "assert ok[:2] == ['x,\"y\"', '2'], ok[:2]\n"
    "assert r['schedule'] == 'file:a\"b,c.csv'\n"
    "assert float(r['makespan']) == 9 and float(r['span']) == 9 and abs(float(r['bubble_ratio']) - 1/3) < 1e-12\n"
    "assert float(r['max_peak_memory_bytes']) == 2210\n"
    "assert r['oom'] == '1' and r['oom_ranks'] == '0' and r['exit_code'] == '3'\n"
    "assert r['lower_bound'] == ''\n"
    "f = dict(zip(head[2:], failed[2:]))\n"
    "assert failed[:2] == ['bad', '3'] and f['exit_code'] == '2' and f['makespan'] == ''\n"
    "assert f['error'] == 'x.yaml:3: key \\'pp\\': \"0\", not >= 1', f['error']\n"
    "assert r['error'] == 'out of memory predicted on 1 rank (see oom)', r['error']\n";

START_TEST(test_csv_columns)
{
    fixture f;
    fixture_init(&f, "file:a\"b,c.csv");
    fixture_run(&f, 2150);
    const char *keys[] = { "schedule.name", "pp" };
    const char *vals[] = { "x,\"y\"", "2" };
    const char *bad[] = { "bad", "3" };
    strbuf sb;
    sb_init(&sb);
    report_csv_header(keys, 2, &sb);
    report_csv_row(&f.in, vals, 2, &sb);
    report_csv_row_failed(bad, 2, PG_EXIT_INPUT, "x.yaml:3: key 'pp': \"0\", not >= 1", &sb);
    check_text_with_python("csv", csv_check, &sb);
    sb_free(&sb);
    fixture_free(&f);
}
END_TEST

/* ---- text ------------------------------------------------------------------- */

START_TEST(test_text_summary)
{
    fixture f;
    fixture_init(&f, "1f1b");
    fixture_run(&f, 2150);
    strbuf sb;
    sb_init(&sb);
    report_text(&f.in, &sb);
    const char *t = sb.data;
    ck_assert_ptr_nonnull(strstr(t, "1f1b"));
    ck_assert_ptr_nonnull(strstr(t, "pp 2"));
    ck_assert_ptr_nonnull(strstr(t, "2 microbatches"));
    ck_assert_ptr_nonnull(strstr(t, "node0-gpu1"));
    ck_assert_ptr_nonnull(strstr(t, "makespan"));
    ck_assert_ptr_nonnull(strstr(t, "33.33 %"));   /* bubble ratio 3/9 */
    ck_assert_ptr_nonnull(strstr(t, "MFU"));
    ck_assert_ptr_nonnull(strstr(t, "OOM ranks      0"));
    /* The table is aligned: the header and both rank lines have the same
     * width (the OOM mark comes after the last column). */
    const char *head = strstr(t, "rank  ");
    ck_assert_ptr_nonnull(head);
    size_t width = strcspn(head, "\n");
    const char *line = head;
    for (int i = 0; i < 3; i++) line = strchr(line, '\n') + 1;   /* header, rule, rank 0 -> rank 1 */
    ck_assert_uint_eq(strcspn(line, "\n"), width);
    ck_assert_ptr_nonnull(strstr(t, "  OOM\n"));
    sb_free(&sb);
    fixture_free(&f);
}
END_TEST

/* ---- trace ------------------------------------------------------------------ */

static const char trace_check[] =
    "import json, sys, collections\n"
    "d = json.loads(open(sys.argv[1]).read())\n"
    "ev = d['traceEvents']\n"
    "US = 1e6\n"
    "procs = {e['pid']: e['args']['name'] for e in ev if e['ph'] == 'M' and e['name'] == 'process_name'}\n"
    "assert procs == {0: 'node0-gpu0', 1: 'node0-gpu1'}, procs\n"   /* one process per GPU, by its name */
    "pargs = {e['pid']: e['args'] for e in ev if e['ph'] == 'M' and e['name'] == 'process_name'}\n"
    "assert pargs[1]['pipeline_rank'] == 1 and pargs[1]['gpu'] == 1 and pargs[1]['stages'] == [1], pargs\n"
    "threads = collections.defaultdict(dict)\n"
    "for e in ev:\n"
    "    if e['ph'] == 'M' and e['name'] == 'thread_name': threads[e['pid']][e['tid']] = e['args']['name']\n"
    "for p in (0, 1):\n"
    "    names = set(threads[p].values())\n"
    "    assert {'compute', 'send', 'recv'} <= names, names\n"
    "assert 'send #2' in threads[0].values() and 'recv #2' in threads[1].values(), threads\n"
    "tid = {(p, n): t for p in threads for t, n in threads[p].items()}\n"
    "X = [e for e in ev if e['ph'] == 'X']\n"
    "ops = [e for e in X if e['cat'] in ('F', 'B', 'W', 'BW')]\n"
    "assert len(ops) == 8, len(ops)\n"
    "for e in ops:\n"
    "    assert e['tid'] == tid[(e['pid'], 'compute')]\n"
    "    assert set(e['args']) >= {'stage', 'microbatch', 'kind'} and e['args']['kind'] == e['cat']\n"
    "f1 = [e for e in ops if e['pid'] == 1 and e['args']['kind'] == 'F' and e['args']['microbatch'] == 1][0]\n"
    "assert f1['ts'] == 4 * US and f1['dur'] == 1 * US, f1\n"
    "bub = [e for e in X if e['name'] == 'bubble']\n"
    "assert all(e['tid'] == tid[(e['pid'], 'compute')] for e in bub)\n"
    "assert sum(e['dur'] for e in bub if e['pid'] == 0) == 3 * US\n"   /* span - busy of rank 0 */
    "assert not [e for e in bub if e['pid'] == 1]\n"
    "# slices on one thread nest (no partial overlap)\n"
    "lanes = collections.defaultdict(list)\n"
    "for e in X: lanes[(e['pid'], e['tid'])].append((e['ts'], e['ts'] + e['dur']))\n"
    "for k, iv in lanes.items():\n"
    "    iv.sort()\n"
    "    for a, b in zip(iv, iv[1:]): assert b[0] >= a[1] or b[1] <= a[1], (k, a, b)\n"
    "starts = {e['id']: e for e in ev if e['ph'] == 's'}\n"
    "ends = {e['id']: e for e in ev if e['ph'] == 'f'}\n"
    "assert len(starts) == 4 and starts.keys() == ends.keys()\n"
    "for i, s in starts.items():\n"
    "    f = ends[i]\n"
    "    assert f['bp'] == 'e'\n"
    "    assert threads[s['pid']][s['tid']].startswith('send') and threads[f['pid']][f['tid']].startswith('recv')\n"
    "    assert s['pid'] != f['pid']\n"
    "    for x in (s, f):\n"   /* each flow end sits inside a slice of its thread */
    "        assert any(a <= x['ts'] <= b for a, b in lanes[(x['pid'], x['tid'])]), x\n"
    "C = [e for e in ev if e['ph'] == 'C']\n"
    "mem = [e for e in C if e['name'] == 'memory bytes']\n"
    "assert {e['pid'] for e in mem} == {0, 1}\n"
    "peak0 = max(sum(e['args'].values()) for e in mem if e['pid'] == 0)\n"
    "assert peak0 == 2210, peak0\n"
    "act = [e for e in C if e['name'] == 'stored activations' and e['pid'] == 0]\n"
    "assert max(e['args']['stage units'] for e in act) == 2\n";

START_TEST(test_trace_structure)
{
    fixture f;
    fixture_init(&f, "1f1b");
    fixture_run(&f, 0);
    char path[128];
    snprintf(path, sizeof path, "%s/trace.json", tmpdir);
    pg_status st;
    pg_status_clear(&st);
    ck_assert_int_eq(report_trace(&f.in, path, &st), 0);
    python_check("trace", trace_check, path);
    fixture_free(&f);
}
END_TEST

START_TEST(test_trace_unwritable_path)
{
    fixture f;
    fixture_init(&f, "1f1b");
    fixture_run(&f, 0);
    char path[160];
    snprintf(path, sizeof path, "%s/no/such/dir/trace.json", tmpdir);
    pg_status st;
    pg_status_clear(&st);
    ck_assert_int_eq(report_trace(&f.in, path, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, path));
    fixture_free(&f);
}
END_TEST

/* A run with nothing recorded (deadlock at the first op) still gives valid
 * JSON, CSV and trace. */
static const char empty_check[] =
    "import json, sys\n"
    "d = json.loads(open(sys.argv[1]).read())\n"
    "assert d['traceEvents'] and not [e for e in d['traceEvents'] if e['ph'] == 'X']\n";

/* ---- bound and plan remat (report_opt.h): through the same JSON writer ------ */

static const char bound_check[] =
    "import json, sys\n"
    "d = json.loads(open(sys.argv[1]).read())\n"
    "assert d['lower_bound'] == 36.5 and d['active_bound'] == 'memory' and d['active_rank'] == 2, d\n"
    "assert d['exact'] is False and 'exact_reason' not in d\n"
    "assert d['critical_path_bound'] == 11 and d['machine_bound'] == 24 and d['machine_rank'] == 1\n"
    "assert d['memory_bound'] == 36.5 and d['memory_rank'] == 2 and d['remat_ops'] == 3\n"
    "assert d['schedule'] == 'zb-h1' and d['schedule_class'] == 'split'\n"
    "assert d['schedule_class_lower_bound'] == 37.25\n"
    "assert d['pp'] == 4 and d['microbatches'] == 8 and d['stages_per_rank'] == 1\n"
    "assert d['memory_limit'] == 2 and d['latency'] == 0.5 and d['remat'] is True\n";

START_TEST(test_bound_report)
{
    bound_input in = {.pp = 4, .nstages = 4, .m = 8, .comm_s = 0.5, .mem_limit = 2, .split = 1, .remat = 1};
    bound_result any = {.lower_bound = 36.5, .active = BOUND_MEMORY, .active_rank = 2, .path_s = 11,
                        .machine_s = 24, .machine_rank = 1, .memory_s = 36.5, .memory_rank = 2, .remat_ops = 3,
                        .exact = 0, .exact_reason = ""};
    bound_result cls = any;
    cls.lower_bound = 37.25;
    report_bound_input b = {.schedule = "zb-h1", .own_split = 1, .in = &in, .any = &any, .cls = &cls};
    strbuf sb;
    sb_init(&sb);
    report_bound_json(&b, &sb);
    ck_assert_int_eq(sb.data[sb.len - 1], '\n');
    check_text_with_python("bound", bound_check, &sb);
    sb_reset(&sb);
    report_bound_text(&b, &sb);
    ck_assert_ptr_nonnull(strstr(sb.data, "lower bound on makespan: 36.5 s (memory bound, rank 2)\n"));
    ck_assert_ptr_nonnull(strstr(sb.data, "memory.limit K = 2 M_B per rank, recomputation allowed\n"));
    ck_assert_ptr_nonnull(strstr(sb.data, "memory (rank 2)    36.5 s (assuming recomputations)\n"));
    ck_assert_ptr_nonnull(strstr(sb.data, "split-backward schedules (like zb-h1): 37.25 s\n"));
    sb_free(&sb);
}
END_TEST

static const char remat_check[] =
    "import json, sys\n"
    "d = json.loads(open(sys.argv[1]).read())\n"
    "assert d['schedule'] == 'gpipe' and d['pp'] == 2 and d['microbatches'] == 2 and d['method'] == 'greedy', d\n"
    "assert d['makespan'] == 10 and d['no_recompute_makespan'] == 9 and d['full'] == 1\n"
    "r = d['ranks']\n"
    "assert [x['budget_bytes'] for x in r] == [700, 800] and r[0]['peak_memory_bytes'] == 650\n"
    "assert r[0]['least_recompute_seconds'] == 0.5 and r[1]['least_recompute_seconds'] is None\n"
    "assert len(d['plan']) == 4 and d['plan'][1] == {'rank': 0, 'stage': 0, 'mb': 1, 'forward': 'full', "
    "'backward': 'keep'}, d['plan']\n";

START_TEST(test_remat_report)
{
    fixture f;
    fixture_init(&f, "gpipe");
    memplan p;
    plan_init(&p, &f.sched);
    plan_set(&p, 0, 1, (plan_choice){.fwd = PLAN_FWD_FULL, .bwd = PLAN_BWD_KEEP});
    double peak[2] = {350, 100}, rec[2] = {1, 0}, least[2] = {0.5, -1}, cap[2] = {1000, 1000}, stat[2] = {300, 200};
    remat_result res = {.method = REMAT_GREEDY, .makespan_s = 10, .span_s = 10, .keep_makespan_s = 9, .nfull = 1,
                        .pp = 2, .peak_bytes = peak, .recompute_s = rec, .least_recompute_s = least};
    report_remat_input in = {.sched = &f.sched, .plan = &p, .res = &res, .capacity_bytes = cap, .static_bytes = stat};
    strbuf sb;
    sb_init(&sb);
    report_remat_json(&in, &sb);
    check_text_with_python("remat", remat_check, &sb);
    sb_reset(&sb);
    report_remat_text(&in, &sb);
    ck_assert_ptr_nonnull(strstr(sb.data, "rank 0 stage 0: kk fk\n"));
    sb_free(&sb);
    plan_free(&p);
    fixture_free(&f);
}
END_TEST

static const char offload_check[] =
    "import json, sys\n"
    "d = json.loads(open(sys.argv[1]).read())\n"
    "assert d['schedule'] == 'zb-h1' and d['pp'] == 2 and d['microbatches'] == 2, d\n"
    "assert d['solver'] == 'milp-optimal' and d['binaries'] == 12 and d['rows'] == 30 and d['nodes'] == 5\n"
    "assert d['offloaded'] == 1 and d['recomputed'] == 1 and d['model_makespan'] == 8.75\n"
    "assert d['makespan'] == 9 and d['max_peak_memory_bytes'] == 2210 and d['oom_ranks'] == 1\n"
    "assert d['plans_weighed'] == 2 and d['orders_searched'] == 0\n"
    "assert d['chosen'] == 'zb-h1 (given)' and d['copy_model'] == 'whole'\n";

/* plan offload: the chosen candidate marked, the counts per rank from the
 * plan, the OOM line, and the JSON through the one writer. */
START_TEST(test_offload_report)
{
    fixture f;
    fixture_init(&f, "zb-h1");
    fixture_run(&f, 2150);
    memplan p;
    plan_init(&p, &f.sched);
    plan_set(&p, 0, 0, (plan_choice){.offload = 1});
    plan_set(&p, 1, 1, (plan_choice){.fwd = PLAN_FWD_FULL});
    offload_plan_result res = {.status = OFFLOAD_SOLVED_OPTIMAL, .model_makespan_s = 8.75, .nbinaries = 12,
                               .nrows = 30, .nodes = 5, .noffload = 1, .nrecompute = 1};
    static offload_order_result ores;
    memset(&ores, 0, sizeof ores);
    ores.n = 2;
    ores.chosen = 1;
    ores.cand[0] = (offload_order_candidate){.name = "zb-h1 (given)", .copy_model = OFFLOAD_COPIES_SHARED,
                                             .status = OFFLOAD_SOLVED_INFEASIBLE};
    ores.cand[1] = (offload_order_candidate){.name = "zb-h1 (given)", .copy_model = OFFLOAD_COPIES_WHOLE,
                                             .status = OFFLOAD_SOLVED_OPTIMAL, .model_makespan_s = 8.75,
                                             .judged_makespan_s = 9, .fits = 1};
    report_offload_input in = {.sched = &f.sched, .plan = &p, .res = &res, .orders = &ores, .m = &f.m,
                               .outcome = &f.outcome};
    strbuf sb;
    sb_init(&sb);
    report_offload_json(&in, &sb);
    check_text_with_python("offload", offload_check, &sb);
    sb_reset(&sb);
    report_offload_text(&in, &sb);
    ck_assert_ptr_nonnull(strstr(sb.data, "offload plan for zb-h1: pp 2, 2 microbatches, 1 stage per rank\n"));
    ck_assert_ptr_nonnull(strstr(sb.data, "  order        the schedule's (offload.order=search tries others)\n"));
    ck_assert_ptr_nonnull(strstr(sb.data, "    zb-h1 (given)              shared       no fit            -\n"));
    ck_assert_ptr_nonnull(strstr(sb.data, "  * zb-h1 (given)              whole          8.75            9\n"));
    ck_assert_ptr_nonnull(strstr(sb.data, "  solver       milp-optimal (12 binaries, 30 rows, 5 nodes)\n"));
    ck_assert_ptr_nonnull(strstr(sb.data, "  simulated    makespan 9 s\n"));
    /* rank 0 keeps mb 1 and offloads mb 0; rank 1 keeps mb 0 and recomputes mb 1 */
    ck_assert_ptr_nonnull(strstr(sb.data, "\n   0      1          1           0  "));
    ck_assert_ptr_nonnull(strstr(sb.data, "\n   1      1          0           1  "));
    ck_assert_ptr_nonnull(strstr(sb.data, "out of memory on 1 rank: nothing the planner may choose fits\n"));
    sb_free(&sb);
    plan_free(&p);
    fixture_free(&f);
}
END_TEST

START_TEST(test_empty_run)
{
    fixture f;
    fixture_init(&f, "1f1b");
    timeline_free(&f.tl);   /* nothing recorded */
    f.outcome.completed = 0;
    fixture_run(&f, 0);
    strbuf sb;
    sb_init(&sb);
    report_json(&f.in, &sb);
    check_text_with_python("empty_json", "import json, sys\njson.loads(open(sys.argv[1]).read())\n", &sb);
    sb_reset(&sb);
    report_text(&f.in, &sb);
    ck_assert_ptr_nonnull(strstr(sb.data, "DEADLOCK"));
    sb_free(&sb);
    char path[128];
    snprintf(path, sizeof path, "%s/empty.json", tmpdir);
    pg_status st;
    pg_status_clear(&st);
    ck_assert_int_eq(report_trace(&f.in, path, &st), 0);
    python_check("empty_trace", empty_check, path);
    fixture_free(&f);
}
END_TEST

/* optimize's front and candidate table: every point on its own line with its
 * settings, the best one marked; CSV rows carry the run columns then the
 * search's own, an empty cell where a value does not exist. */
START_TEST(test_optimize_report)
{
    report_optimize_point pt[2] = {
        {.samples_per_s = 25.5, .iteration_s = 2.5, .makespan_s = 2.25, .peak_bytes = 15.0 * GIB,
         .settings = "pp=2 schedule=gpipe"},
        {.samples_per_s = 37.25, .iteration_s = 1.75, .makespan_s = 1.5, .peak_bytes = 17.0 * GIB,
         .settings = "pp=1 schedule=1f1b", .best = 1},
    };
    report_optimize_row rows[2] = {
        {.run_columns = "a,b", .status = "simulated", .samples_per_s_bound = 40.0, .static_bytes = 1e9,
         .on_front = 1, .best = 1},
        {.run_columns = "c,d", .status = "invalid", .samples_per_s_bound = INFINITY, .static_bytes = NAN},
    };
    report_optimize_input in = {.global_batch = 72, .gpus = 8, .nfront = 2, .front = pt, .csv_header = "x,y",
                                .ncandidates = 2, .rows = rows};
    strbuf sb;
    sb_init(&sb);
    report_optimize_text(&in, &sb);
    ck_assert_ptr_nonnull(strstr(sb.data, "2 points; global batch 72 samples on 8 GPUs; of the candidates"));
    ck_assert_ptr_nonnull(strstr(sb.data, "       25.5000     2.5000 s     2.2500 s     15.000  pp=2 schedule=gpipe\n"));
    ck_assert_ptr_nonnull(strstr(sb.data, "       37.2500     1.7500 s     1.5000 s     17.000  pp=1 schedule=1f1b   <- best\n"));
    sb_reset(&sb);
    in.full_front = 1;
    report_optimize_text(&in, &sb);
    ck_assert_ptr_null(strstr(sb.data, "--full-front"));
    sb_reset(&sb);
    report_optimize_csv(&in, &sb);
    ck_assert_str_eq(sb.data, "x,y,status,samples_per_second_bound,static_bytes,front,best\n"
                              "a,b,simulated,40,1000000000,1,1\n"
                              "c,d,invalid,,,0,0\n");
    sb_free(&sb);
}
END_TEST

static Suite *report_suite(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("writers");
    /* Each test starts python3 a few times: on a loaded machine (or under a
     * sanitizer) that can take longer than check's 4 s default, which would
     * make the result depend on wall time.  The limit only catches a hang. */
    tcase_set_timeout(tc, PYTHON_TCASE_TIMEOUT_S);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_json_parses_and_has_fields);
    tcase_add_test(tc, test_json_deadlock_and_bound);
    tcase_add_test(tc, test_json_and_text_configuration);
    tcase_add_test(tc, test_csv_columns);
    tcase_add_test(tc, test_text_summary);
    tcase_add_test(tc, test_trace_structure);
    tcase_add_test(tc, test_trace_unwritable_path);
    tcase_add_test(tc, test_empty_run);
    tcase_add_test(tc, test_bound_report);
    tcase_add_test(tc, test_remat_report);
    tcase_add_test(tc, test_offload_report);
    tcase_add_test(tc, test_optimize_report);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pg_run_suite(report_suite());
}
