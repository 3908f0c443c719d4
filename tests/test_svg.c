/* test_svg.c: the SVG picture of a run (report_svg).
 *
 * The fixture is a real schedule (1F1B, p 4, m 8, or ZB-V) timed by the
 * schedule layer's ideal evaluator, so the picture is checked against a
 * timeline with the shape the simulator produces, plus hand-made recompute
 * ops, offload copies and stalls.  The SVG is parsed by libxml2 (it must be
 * well-formed XML) and its elements are checked against the timeline: one
 * rect per op of the right kind at the right place, one memory curve per
 * rank whose heights are in the ratio of the ranks' peaks, and a render by
 * rsvg-convert at the size the SVG declares (skipped, with a message, when
 * the tool is not installed).
 */
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/report.h"
#include "testutil.h"

#define MAX_PP 8
#define ACT_BYTES 100.0
#define PARAMS 1000.0
#define GPU_BYTES 3000.0          /* static 2000 + at most 4 activations of 100: near the peaks */
#define GPU_BYTES_HUGE 1e9       /* far above them: off the memory scale */
/* rounding of coordinates to 1/100 px, plus float slack */
#define PX_TOL 0.02

typedef struct fixture {
    schedule sched;
    stage_cost cost[2 * MAX_PP];
    workload wl;
    pg_gpu gpu[MAX_PP];
    platform_desc plat;
    int rank_gpu[MAX_PP];
    timeline tl;
    run_metrics m;
    sim_outcome outcome;
    report_input in;
} fixture;

static void fixture_init(fixture *f, const char *sched_name, int pp, int m)
{
    memset(f, 0, sizeof *f);
    pg_status st;
    pg_status_clear(&st);
    sched_params p = { .pp = pp, .m = m, .chunks = 2, .t_f = 1, .t_b = 1, .t_w = 1, .w_fraction = 0.4 };
    ck_assert_int_eq(sched_generate(sched_name, &p, &f->sched, &st), 0);
    sched_times t;
    ck_assert_int_eq(sched_eval_ideal(&f->sched, 1, 1, 1, 0, &t, &st), 0);
    timeline_init(&f->tl);
    for (int r = 0; r < pp; r++)
        for (int i = 0; i < f->sched.nops[r]; i++) {
            sched_op op = f->sched.ops[r][i];
            tl_op o = { t.start[r][i], t.end[r][i], r, op.stage, op.mb, op.kind };
            timeline_add_op(&f->tl, &o);
        }
    sched_times_free(&f->sched, &t);
    for (int s = 0; s < f->sched.nstages; s++)
        f->cost[s] = (stage_cost){ .f_s = 1, .b_s = 1, .w_s = 1, .act_b_bytes = ACT_BYTES / f->sched.v,
                                   .act_w_bytes = 0.4 * ACT_BYTES / f->sched.v, .param_count = PARAMS };
    f->wl = (workload){ .nstages = f->sched.nstages, .stage = f->cost };
    strcpy(f->wl.name, "uniform <test> & co");   /* must come out escaped */
    for (int r = 0; r < pp; r++) {
        f->gpu[r] = (pg_gpu){ .memory_bytes = GPU_BYTES, .cpu_index = -1, .speed_flops = 1e12 };
        snprintf(f->gpu[r].host, sizeof f->gpu[r].host, "gpu%d", r);
        f->rank_gpu[r] = r;
    }
    f->plat = (platform_desc){ .ngpus = pp, .gpu = f->gpu };
    f->outcome = (sim_outcome){ .completed = 1 };
}

static void fixture_run(fixture *f)
{
    metrics_input mi = { .sched = &f->sched, .wl = &f->wl, .plat = &f->plat, .rank_gpu = f->rank_gpu,
                         .tl = &f->tl, .bytes_per_param = 2 };
    metrics_compute(&mi, &f->m);
    f->in = (report_input){ .sched = &f->sched, .wl = &f->wl, .plat = &f->plat, .rank_gpu = f->rank_gpu,
                            .tl = &f->tl, .m = &f->m, .outcome = &f->outcome };
}

static void fixture_free(fixture *f)
{
    metrics_free(&f->m);
    timeline_free(&f->tl);
    sched_free(&f->sched);
}

/* ---- files ---------------------------------------------------------------- */

#define TMPDIR_TEMPLATE "/tmp/pg-test-svg-XXXXXX"
static char tmpdir[] = TMPDIR_TEMPLATE;

static void setup(void)
{
    strcpy(tmpdir, TMPDIR_TEMPLATE);
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    ck_assert_int_ge(n, 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Writes the SVG of f to tmpdir/name and parses it; the caller frees the doc. */
static xmlDocPtr write_and_parse(const fixture *f, const char *name, char *path, size_t path_len)
{
    snprintf(path, path_len, "%s/%s", tmpdir, name);
    pg_status st;
    pg_status_clear(&st);
    ck_assert_int_eq(report_svg(&f->in, path, &st), 0);
    size_t len;
    char *text = slurp(path, &len);
    xmlDocPtr doc = xmlReadMemory(text, (int)len, path, "UTF-8", XML_PARSE_NONET | XML_PARSE_NOERROR);
    free(text);
    ck_assert_msg(doc != NULL, "%s is not well-formed XML", path);
    xmlNodePtr root = xmlDocGetRootElement(doc);
    ck_assert_str_eq((const char *)root->name, "svg");
    return doc;
}

/* ---- walking the tree -------------------------------------------------------- */

typedef struct elem {
    double x, y, w, h;
    char cls[32];               /* whole class attribute */
    char fill[16];
    char title[128];
    char d[1 << 14];            /* path data (memory curves are short here) */
} elem;

#define MAX_ELEMS 2048

typedef struct found {
    elem *e;
    int n;
} found;

static double attr_num(xmlNodePtr n, const char *name)
{
    xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
    double d = v ? atof((const char *)v) : 0.0;
    xmlFree(v);
    return d;
}

static void attr_str(xmlNodePtr n, const char *name, char *out, size_t len)
{
    xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
    snprintf(out, len, "%s", v ? (const char *)v : "");
    xmlFree(v);
}

/* Whether the class attribute's first token is cls0 (and, if given, the second is cls1). */
static int has_class(const char *attr, const char *cls0, const char *cls1)
{
    size_t n0 = strlen(cls0);
    if (strncmp(attr, cls0, n0) != 0 || (attr[n0] != '\0' && attr[n0] != ' ')) return 0;
    if (!cls1) return 1;
    return attr[n0] == ' ' && strcmp(attr + n0 + 1, cls1) == 0;
}

static void collect(xmlNodePtr node, const char *tag, const char *cls0, const char *cls1, found *out)
{
    for (xmlNodePtr n = node; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE) continue;
        if (strcmp((const char *)n->name, tag) == 0) {
            char cls[32];
            attr_str(n, "class", cls, sizeof cls);
            if (has_class(cls, cls0, cls1)) {
                ck_assert_int_lt(out->n, MAX_ELEMS);
                elem *e = &out->e[out->n++];
                memset(e, 0, sizeof *e);
                snprintf(e->cls, sizeof e->cls, "%s", cls);
                e->x = attr_num(n, "x");
                e->y = attr_num(n, "y");
                e->w = attr_num(n, "width");
                e->h = attr_num(n, "height");
                attr_str(n, "d", e->d, sizeof e->d);
                attr_str(n, "fill", e->fill, sizeof e->fill);
                for (xmlNodePtr c = n->children; c; c = c->next)
                    if (c->type == XML_ELEMENT_NODE && strcmp((const char *)c->name, "title") == 0) {
                        xmlChar *t = xmlNodeGetContent(c);
                        snprintf(e->title, sizeof e->title, "%s", (const char *)t);
                        xmlFree(t);
                    }
            }
        }
        collect(n->children, tag, cls0, cls1, out);
    }
}

static found find(xmlDocPtr doc, const char *tag, const char *cls0, const char *cls1)
{
    found f = { calloc(MAX_ELEMS, sizeof(elem)), 0 };
    ck_assert_ptr_nonnull(f.e);
    collect(xmlDocGetRootElement(doc), tag, cls0, cls1, &f);
    return f;
}

/* All text content of the document's <text> elements, concatenated with '|'. */
static void all_text(xmlNodePtr node, char *buf, size_t len)
{
    for (xmlNodePtr n = node; n; n = n->next) {
        if (n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, "text") == 0) {
            xmlChar *t = xmlNodeGetContent(n);
            size_t used = strlen(buf);
            snprintf(buf + used, len - used, "%s|", (const char *)t);
            xmlFree(t);
        } else {
            all_text(n->children, buf, len);
        }
    }
}

static int count_kind(const timeline *tl, int kind)
{
    int n = 0;
    for (size_t i = 0; i < tl->nops; i++) n += timeline_op(tl, i).kind == kind;
    return n;
}

/* ---- tests ------------------------------------------------------------------ */

/* One rect per op, of its kind, where its times say: x and width are
 * proportional to start and duration over the idle lane (the plot area),
 * all ops of a rank on its lane, ranks top to bottom. */
static void check_ops(const fixture *f, xmlDocPtr doc)
{
    found ops = find(doc, "rect", "op", NULL);
    ck_assert_int_eq(ops.n, (int)f->tl.nops);
    for (int k = 0; k < OP_KIND_COUNT; k++) {
        found byk = find(doc, "rect", "op", op_kind_name((op_kind)k));
        ck_assert_int_eq(byk.n, count_kind(&f->tl, k));
        free(byk.e);
    }
    found lanes = find(doc, "rect", "idle", NULL);
    ck_assert_int_eq(lanes.n, f->sched.pp);
    double t0 = timeline_op(&f->tl, 0).start_s, t1 = timeline_op(&f->tl, 0).end_s;
    for (size_t i = 0; i < f->tl.nops; i++) {
        if (timeline_op(&f->tl, i).start_s < t0) t0 = timeline_op(&f->tl, i).start_s;
        if (timeline_op(&f->tl, i).end_s > t1) t1 = timeline_op(&f->tl, i).end_s;
    }
    double px_per_s = lanes.e[0].w / (t1 - t0);
    for (int r = 1; r < lanes.n; r++) ck_assert(lanes.e[r].y > lanes.e[r - 1].y);
    /* every op of the timeline has a rect at its place (matched by its tooltip's mb and stage) */
    for (size_t i = 0; i < f->tl.nops; i++) {
        const tl_op op_rec = timeline_op(&f->tl, i), *op = &op_rec;
        char want[64];
        snprintf(want, sizeof want, "%s mb %d, stage %d:", op_kind_name((op_kind)op->kind), op->mb, op->stage);
        int hits = 0;
        for (int j = 0; j < ops.n; j++) {
            if (strncmp(ops.e[j].title, want, strlen(want)) != 0) continue;
            hits++;
            ck_assert_msg(fabs(ops.e[j].x - (lanes.e[0].x + (op->start_s - t0) * px_per_s)) <= PX_TOL,
                          "%s at x %g", want, ops.e[j].x);
            ck_assert(fabs(ops.e[j].w - (op->end_s - op->start_s) * px_per_s) <= 2 * PX_TOL);
            ck_assert(fabs(ops.e[j].y - lanes.e[op->rank].y) <= PX_TOL);
        }
        ck_assert_msg(hits == 1, "%s: %d rects", want, hits);
    }
    free(ops.e);
    free(lanes.e);
}

/* Highest point of a step path above y_bottom: the path is M x y then H x / V y. */
static double path_height(const char *d, double y_bottom)
{
    double min_y = 1e300;
    const char *p = d;
    while (*p) {
        char c = *p++;
        if (c == 'M') {
            double x, y;
            int used = 0;
            ck_assert_int_eq(sscanf(p, "%lf %lf%n", &x, &y, &used), 2);
            p += used;
            if (y < min_y) min_y = y;
        } else if (c == 'V') {
            double y;
            int used = 0;
            ck_assert_int_eq(sscanf(p, "%lf%n", &y, &used), 1);
            p += used;
            if (y < min_y) min_y = y;
        } else if (c == 'H') {
            double x;
            int used = 0;
            ck_assert_int_eq(sscanf(p, "%lf%n", &x, &used), 1);
            p += used;
        } else {
            ck_assert_msg(c == ' ', "unexpected path command '%c'", c);
        }
    }
    return y_bottom - min_y;
}

/* One memory curve per rank, all panels on one scale: the curves' heights
 * are in the ratio of the ranks' peaks (metrics), and the capacity line is
 * there when the capacity is near the peaks. */
static void check_memory(const fixture *f, xmlDocPtr doc, int expect_capacity)
{
    found paths = find(doc, "path", "mem", NULL);
    found panels = find(doc, "rect", "mem-panel", NULL);
    found caps = find(doc, "line", "capacity", NULL);
    ck_assert_int_eq(paths.n, f->sched.pp);
    ck_assert_int_eq(panels.n, f->sched.pp);
    ck_assert_int_eq(caps.n, expect_capacity ? f->sched.pp : 0);
    double h0 = path_height(paths.e[0].d, panels.e[0].y + panels.e[0].h);
    ck_assert(h0 > 0);
    for (int r = 1; r < paths.n; r++) {
        double h = path_height(paths.e[r].d, panels.e[r].y + panels.e[r].h);
        ck_assert_msg(fabs(h / h0 - f->m.rank[r].peak_memory_bytes / f->m.rank[0].peak_memory_bytes) < 0.01,
                      "rank %d: height %g vs rank 0 %g, peaks %g vs %g", r, h, h0, f->m.rank[r].peak_memory_bytes,
                      f->m.rank[0].peak_memory_bytes);
    }
    free(paths.e);
    free(panels.e);
    free(caps.e);
}

START_TEST(test_1f1b_structure)
{
    fixture f;
    fixture_init(&f, "1f1b", 4, 8);
    fixture_run(&f);
    char path[256];
    xmlDocPtr doc = write_and_parse(&f, "1f1b.svg", path, sizeof path);
    check_ops(&f, doc);
    check_memory(&f, doc, 1);
    char texts[1 << 15] = "";
    all_text(xmlDocGetRootElement(doc), texts, sizeof texts);
    ck_assert_ptr_nonnull(strstr(texts, "1f1b"));
    ck_assert_ptr_nonnull(strstr(texts, "pp 4"));
    ck_assert_ptr_nonnull(strstr(texts, "m 8"));
    ck_assert_ptr_nonnull(strstr(texts, "makespan"));
    ck_assert_ptr_nonnull(strstr(texts, "uniform <test> & co"));   /* escaped in the file, intact once parsed */
    ck_assert_ptr_nonnull(strstr(texts, "time (s)"));
    ck_assert_ptr_nonnull(strstr(texts, "F forward"));                /* legend */
    ck_assert_ptr_nonnull(strstr(texts, "BW fused backward"));
    ck_assert_ptr_null(strstr(texts, "W weight grad"));               /* no W in 1F1B: not in the legend */
    ck_assert_ptr_nonnull(strstr(texts, "rank 3"));
    xmlFreeDoc(doc);
    fixture_free(&f);
}
END_TEST

START_TEST(test_zbv_structure)
{
    fixture f;
    fixture_init(&f, "zb-v", 4, 8);
    fixture_run(&f);
    ck_assert_int_eq(f.sched.v, 2);
    char path[256];
    xmlDocPtr doc = write_and_parse(&f, "zbv.svg", path, sizeof path);
    check_ops(&f, doc);
    check_memory(&f, doc, 1);
    /* chunks of one kind are told apart by shade: F ops of both chunks, two fills */
    found fs = find(doc, "rect", "op", "F");
    ck_assert_int_eq(fs.n, f.sched.nstages * f.sched.m);
    int differs = 0;
    for (int i = 1; i < fs.n; i++) differs |= strcmp(fs.e[i].fill, fs.e[0].fill) != 0;
    ck_assert_msg(differs, "the two chunks' F ops share the colour %s", fs.e[0].fill);
    free(fs.e);
    xmlFreeDoc(doc);
    fixture_free(&f);
}
END_TEST

/* A capacity far above the peaks would flatten the curves: no capacity
 * line, the heading names it, the curves keep their ratio. */
START_TEST(test_capacity_off_scale)
{
    fixture f;
    fixture_init(&f, "1f1b", 4, 8);
    for (int r = 0; r < 4; r++) f.gpu[r].memory_bytes = GPU_BYTES_HUGE;
    fixture_run(&f);
    char path[256];
    xmlDocPtr doc = write_and_parse(&f, "huge.svg", path, sizeof path);
    check_memory(&f, doc, 0);
    char texts[1 << 15] = "";
    all_text(xmlDocGetRootElement(doc), texts, sizeof texts);
    ck_assert_ptr_nonnull(strstr(texts, "off scale"));
    xmlFreeDoc(doc);
    fixture_free(&f);
}
END_TEST

START_TEST(test_deterministic)
{
    fixture f;
    fixture_init(&f, "zb-v", 4, 8);
    fixture_run(&f);
    char a[256], b[256];
    xmlFreeDoc(write_and_parse(&f, "a.svg", a, sizeof a));
    xmlFreeDoc(write_and_parse(&f, "b.svg", b, sizeof b));
    size_t la, lb;
    char *ta = slurp(a, &la), *tb = slurp(b, &lb);
    ck_assert_uint_eq(la, lb);
    ck_assert_int_eq(memcmp(ta, tb, la), 0);
    free(ta);
    free(tb);
    fixture_free(&f);
}
END_TEST

/* Recompute ops, offload copies, stalls and a kind the table does not know
 * yet: each drawn once, in its own class. */
START_TEST(test_plan_marks)
{
    fixture f;
    fixture_init(&f, "1f1b", 4, 8);
    const tl_op extra[] = {
        { 30.0, 30.5, 0, 0, 7, TL_OP_R },
        { 30.5, 31.0, 1, 1, 7, TL_OP_RW },
        { 31.0, 31.2, 2, 2, 7, TL_OP_KIND_COUNT + 3 },
    };
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) timeline_add_op(&f.tl, &extra[i]);
    const tl_copy copies[] = {
        { 1.0, 2.0, 50, 0, 0, 1, COPY_D2H },
        { 2.0, 3.0, 50, 0, 0, 2, COPY_D2H },
        { 9.0, 10.0, 50, 0, 0, 1, COPY_H2D },
    };
    for (size_t i = 0; i < sizeof copies / sizeof copies[0]; i++) timeline_add_copy(&f.tl, &copies[i]);
    const tl_stall stall = { 10.0, 10.5, 0, 0, 1 };
    timeline_add_stall(&f.tl, &stall);
    fixture_run(&f);
    char path[256];
    xmlDocPtr doc = write_and_parse(&f, "plan.svg", path, sizeof path);
    found all = find(doc, "rect", "op", NULL), r = find(doc, "rect", "op", "R"), rw = find(doc, "rect", "op", "RW");
    char unknown_name[16];
    snprintf(unknown_name, sizeof unknown_name, "op%d", TL_OP_KIND_COUNT + 3);
    found unknown = find(doc, "rect", "op", unknown_name);
    found d2h = find(doc, "rect", "d2h", NULL), h2d = find(doc, "rect", "h2d", NULL);
    found stalls = find(doc, "rect", "stall", NULL);
    ck_assert_int_eq(all.n, (int)f.tl.nops);
    ck_assert_int_eq(r.n, 1);
    ck_assert_int_eq(rw.n, 1);
    ck_assert_int_eq(unknown.n, 1);
    ck_assert_int_eq(d2h.n, 2);
    ck_assert_int_eq(h2d.n, 1);
    ck_assert_int_eq(stalls.n, 1);
    ck_assert(d2h.e[0].y > all.e[0].y);   /* under rank 0's ops */
    char texts[1 << 15] = "";
    all_text(xmlDocGetRootElement(doc), texts, sizeof texts);
    ck_assert_ptr_nonnull(strstr(texts, "R recompute"));
    ck_assert_ptr_nonnull(strstr(texts, "offload D2H"));
    ck_assert_ptr_nonnull(strstr(texts, "reload H2D"));
    ck_assert_ptr_nonnull(strstr(texts, "stall"));
    found *fl[] = { &all, &r, &rw, &unknown, &d2h, &h2d, &stalls };
    for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) free(fl[i]->e);
    xmlFreeDoc(doc);
    fixture_free(&f);
}
END_TEST

/* Tensor / data parallelism: tp collectives and gradient all-reduce buckets
 * on strips under the lanes, optimizer steps on the compute row after the
 * pipeline (the time axis stretches to them), replica spans not drawn. */
START_TEST(test_parallel_marks)
{
    fixture f;
    fixture_init(&f, "1f1b", 4, 8);
    double end = 0;
    for (size_t i = 0; i < f.tl.nops; i++)
        if (timeline_op(&f.tl, i).end_s > end) end = timeline_op(&f.tl, i).end_s;
    const tl_coll colls[] = {
        { .start_s = 0.8, .end_s = 1.0, .bytes = 64, .rank = 0, .replica = 0, .stage = 0, .mb = 0, .count = 2,
          .kind = TLC_TP_ALLREDUCE, .op_kind = OP_F },
        { .start_s = 1.8, .end_s = 2.0, .bytes = 64, .rank = 1, .replica = 0, .stage = 1, .mb = 0, .count = 2,
          .kind = TLC_TP_ALLGATHER, .op_kind = OP_F },
        { .start_s = end - 1, .end_s = end + 1, .bytes = 4000, .rank = 0, .replica = -1, .stage = 0, .mb = -1,
          .kind = TLC_DP_ALLREDUCE },
        { .start_s = end + 1, .end_s = end + 2, .rank = 0, .replica = -1, .stage = -1, .mb = -1, .kind = TLC_OPTIMIZER },
        { .start_s = end + 1, .end_s = end + 2, .rank = 1, .replica = -1, .stage = -1, .mb = -1, .kind = TLC_OPTIMIZER },
        { .start_s = 0, .end_s = end, .rank = -1, .replica = 1, .stage = -1, .mb = -1, .kind = TLC_PIPELINE },
    };
    for (size_t i = 0; i < sizeof colls / sizeof colls[0]; i++) timeline_add_coll(&f.tl, &colls[i]);
    fixture_run(&f);
    char path[256];
    xmlDocPtr doc = write_and_parse(&f, "parallel.svg", path, sizeof path);
    found tp = find(doc, "rect", "tp", NULL), dp = find(doc, "rect", "dp", NULL);
    found opt = find(doc, "rect", "optimizer", NULL), lanes = find(doc, "rect", "idle", NULL);
    found ops = find(doc, "rect", "op", NULL);
    ck_assert_int_eq(tp.n, 2);
    ck_assert_int_eq(dp.n, 1);
    ck_assert_int_eq(opt.n, 2);
    ck_assert_int_eq(ops.n, (int)f.tl.nops);
    ck_assert(tp.e[0].y > lanes.e[0].y + lanes.e[0].h - PX_TOL);    /* under rank 0's row */
    ck_assert(tp.e[1].y > lanes.e[1].y + lanes.e[1].h - PX_TOL);    /* under rank 1's */
    ck_assert(dp.e[0].y > tp.e[0].y);                                /* a row of its own */
    /* the optimizer ends the picture: its right edge is the plot's */
    ck_assert(fabs(opt.e[0].x + opt.e[0].w - (lanes.e[0].x + lanes.e[0].w)) <= 2 * PX_TOL);
    char texts[1 << 15] = "";
    all_text(xmlDocGetRootElement(doc), texts, sizeof texts);
    ck_assert_ptr_nonnull(strstr(texts, "optimizer step"));
    ck_assert_ptr_nonnull(strstr(texts, "tensor-parallel collectives"));
    ck_assert_ptr_nonnull(strstr(texts, "gradient all-reduce"));
    found *fl[] = { &tp, &dp, &opt, &lanes, &ops };
    for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) free(fl[i]->e);
    xmlFreeDoc(doc);
    fixture_free(&f);
}
END_TEST

/* A deadlocked run with nothing recorded, no metrics: still a valid picture
 * with its lanes and flat memory curves. */
START_TEST(test_empty_run)
{
    fixture f;
    fixture_init(&f, "1f1b", 2, 2);
    f.tl.nops = 0;
    f.outcome.completed = 0;
    f.in = (report_input){ .sched = &f.sched, .wl = &f.wl, .tl = &f.tl, .outcome = &f.outcome };
    char path[256];
    xmlDocPtr doc = write_and_parse(&f, "empty.svg", path, sizeof path);
    found ops = find(doc, "rect", "op", NULL), paths = find(doc, "path", "mem", NULL);
    ck_assert_int_eq(ops.n, 0);
    ck_assert_int_eq(paths.n, 2);
    char texts[1 << 14] = "";
    all_text(xmlDocGetRootElement(doc), texts, sizeof texts);
    ck_assert_ptr_nonnull(strstr(texts, "DEADLOCK"));
    free(ops.e);
    free(paths.e);
    xmlFreeDoc(doc);
    fixture_free(&f);
}
END_TEST

START_TEST(test_unwritable_path)
{
    fixture f;
    fixture_init(&f, "1f1b", 2, 2);
    fixture_run(&f);
    char path[256];
    snprintf(path, sizeof path, "%s/no/such/dir/x.svg", tmpdir);
    pg_status st;
    pg_status_clear(&st);
    ck_assert_int_eq(report_svg(&f.in, path, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "x.svg"));
    fixture_free(&f);
}
END_TEST

/* rsvg-convert renders it at the size the SVG declares. */
START_TEST(test_renders_to_png)
{
    fixture f;
    fixture_init(&f, "zb-v", 4, 8);
    fixture_run(&f);
    char path[256], png[300], cmd[700];
    xmlDocPtr doc = write_and_parse(&f, "render.svg", path, sizeof path);
    xmlNodePtr root = xmlDocGetRootElement(doc);
    double want_w = attr_num(root, "width"), want_h = attr_num(root, "height");
    xmlFreeDoc(doc);
    ck_assert(want_w > 0 && want_h > 0);
    snprintf(png, sizeof png, "%s/render.png", tmpdir);
    snprintf(cmd, sizeof cmd, "rsvg-convert '%s' -o '%s'", path, png);
    ck_assert_int_eq(system(cmd), 0);
    size_t len;
    unsigned char *data = (unsigned char *)slurp(png, &len);
    static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    ck_assert_uint_ge(len, 24);
    ck_assert_int_eq(memcmp(data, sig, sizeof sig), 0);
    ck_assert_int_eq(memcmp(data + 12, "IHDR", 4), 0);
    uint32_t w = (uint32_t)data[16] << 24 | (uint32_t)data[17] << 16 | (uint32_t)data[18] << 8 | data[19];
    uint32_t h = (uint32_t)data[20] << 24 | (uint32_t)data[21] << 16 | (uint32_t)data[22] << 8 | data[23];
    ck_assert_uint_eq(w, (uint32_t)want_w);
    ck_assert_uint_eq(h, (uint32_t)want_h);
    free(data);
    fixture_free(&f);
}
END_TEST

static Suite *svg_suite(void)
{
    Suite *s = suite_create("svg");
    TCase *tc = tcase_create("svg");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_1f1b_structure);
    tcase_add_test(tc, test_zbv_structure);
    tcase_add_test(tc, test_capacity_off_scale);
    tcase_add_test(tc, test_deterministic);
    tcase_add_test(tc, test_plan_marks);
    tcase_add_test(tc, test_parallel_marks);
    tcase_add_test(tc, test_empty_run);
    tcase_add_test(tc, test_unwritable_path);
    suite_add_tcase(s, tc);
    return s;
}

/* The render check is its own program (test_svg_render: this file built with
 * PG_SVG_RENDER_TEST), so that without rsvg-convert the harness reports it
 * skipped rather than passed. */
static Suite *render_suite(void)
{
    Suite *s = suite_create("svg-render");
    TCase *tc = tcase_create("render");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_renders_to_png);
    suite_add_tcase(s, tc);
    return s;
}

/* automake's test harness reads this exit code as SKIP. */
#define TEST_EXIT_SKIP 77

int main(void)
{
#ifdef PG_SVG_RENDER_TEST
    if (system("command -v rsvg-convert >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test_svg_render: SKIP: rsvg-convert not installed "
                        "(Debian librsvg2-bin; scripts/install-deps.sh installs it)\n");
        return TEST_EXIT_SKIP;
    }
    (void)svg_suite;
    return pg_run_suite(render_suite());
#else
    (void)render_suite;
    return pg_run_suite(svg_suite());
#endif
}
