/* platform.c: read a SimGrid platform XML without SimGrid (platform.h).
 *
 * libxml2 parses the file (no network, no external DTD: SimGrid files name
 * https://simgrid.org/simgrid.dtd, which we never fetch); the first parse
 * error is reported as FILE:LINE.  Then every <host> anywhere in the tree is
 * examined: hosts with prop kind=gpu are GPUs, kind=cpu the host-memory
 * endpoint of a node, hosts without a kind are ignored (SimGrid files may
 * hold other machines).  GPUs need props node, local_rank and memory; cpu
 * hosts need node and may give memory.
 *
 * platform_make_ideal (network=ideal): every host has one private link of
 * latency latency_s / 2 and every host-to-host route is [link_a, link_b],
 * so its latency is exactly latency_s (halving a double and adding the
 * halves back is exact) and its bandwidth IDEAL_BW.  Small platforms list
 * the routes (Full); large ones are a DijkstraCache star through a router
 * (same routes, linear size).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "model/platform.h"
#include "model/numtext.h"
#include "util/strbuf.h"

/* A number as exact shortest text, valid until the end of the enclosing block. */
#define NUM(v) pg_numtext((v), (char[PG_NUMTEXT_MAX]){0})
#include "util/pglimits.h"
#include "util/units.h"

/* "No bandwidth limit worth the name": 1 EB/s moves a 1 GB activation in
 * 1e-9 s, below any latency anyone would model, and stays far from the
 * range where SimGrid's solver loses precision. */
#define IDEAL_BW_BYTES_PER_S 1e18
#define IDEAL_CPU_SPEED_FLOPS 1e12
/* Up to this many GPUs the ideal zone is Full (explicit routes, quadratic
 * but small); above, a DijkstraCache star (linear).  SimGrid computes
 * Dijkstra routes only once the platform is sealed (simgrid_run started):
 * sg_host_get_route* on a star called from main() aborts. */
#define IDEAL_FULL_MAX_GPUS 128
#define TMP_TEMPLATE "pipegrid-platform-XXXXXX.xml"
#define TMP_SUFFIX_LEN 4 /* ".xml": SimGrid picks its loader by extension */

/* ---------------------------------------------------------------- parsing */

typedef struct xml_err {
    int have;
    int line;
    char msg[512];
} xml_err;

/* libxml2's structured error callback: keep the first error only, which is
 * the cause; later ones are consequences. */
static void on_xml_error(void *user, xmlErrorPtr err)
{
    xmlParserCtxtPtr ctxt = user;
    xml_err *e = ctxt ? ctxt->_private : NULL;
    if (e == NULL || e->have || err == NULL || err->level < XML_ERR_ERROR) /* warnings are not causes */
        return;
    e->have = 1;
    e->line = err->line;
    snprintf(e->msg, sizeof e->msg, "%s", err->message ? err->message : "malformed XML");
    size_t n = strlen(e->msg);
    while (n > 0 && (e->msg[n - 1] == '\n' || e->msg[n - 1] == ' '))
        e->msg[--n] = '\0';
}

typedef struct host_rec {
    char name[64];
    int line;
    double speed_flops;
    int is_gpu;
    int node, local_rank;
    double memory_bytes;
    char type[32];
} host_rec;

typedef struct walk {
    const char *file;
    pg_status *st;
    host_rec *hosts;
    size_t nhosts, cap;
} walk;

static int attr_dup(xmlNodePtr n, const char *name, char **out)
{
    xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
    *out = v ? pg_xstrdup((const char *)v) : NULL;
    xmlFree(v);
    return *out != NULL;
}

/* The <prop id=ID value=.../> child of host n, or NULL; *line its line. */
static char *host_prop(xmlNodePtr host, const char *id, int *line)
{
    for (xmlNodePtr c = host->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE || xmlStrcmp(c->name, (const xmlChar *)"prop") != 0)
            continue;
        char *pid = NULL, *val = NULL;
        attr_dup(c, "id", &pid);
        int match = pid && strcmp(pid, id) == 0;
        free(pid);
        if (match) {
            attr_dup(c, "value", &val);
            *line = (int)xmlGetLineNo(c);
            return val ? val : pg_xstrdup("");
        }
    }
    *line = (int)xmlGetLineNo(host);
    return NULL;
}

static int fail_prop(walk *wk, int line, const char *host, const char *prop, const char *problem)
{
    return pg_fail_at(wk->st, PG_EXIT_INPUT, (pg_origin){wk->file, line}, prop, "host '%s': %s", host, problem);
}

static int int_prop(walk *wk, xmlNodePtr n, const char *host, const char *id, int *value)
{
    int line;
    char *v = host_prop(n, id, &line);
    if (v == NULL)
        return fail_prop(wk, line, host, id, "missing prop");
    long x;
    const char *why = NULL;
    int bad = units_parse_long(v, &x, &why) != 0 || x < 0 || x > INT_MAX;
    free(v);
    if (bad)
        return fail_prop(wk, line, host, id, "expected a non-negative integer");
    *value = (int)x;
    return 0;
}

static int bytes_prop(walk *wk, xmlNodePtr n, const char *host, const char *id, int required, double *value)
{
    int line;
    char *v = host_prop(n, id, &line);
    *value = 0;
    if (v == NULL)
        return required ? fail_prop(wk, line, host, id, "missing prop (bytes with a unit, e.g. 80GiB)") : 0;
    const char *why = NULL;
    int bad = units_parse_bytes(v, value, &why) != 0;
    char msg[256];
    snprintf(msg, sizeof msg, "'%.64s': %s", v, why ? why : "bad byte count");
    free(v);
    if (bad)
        return fail_prop(wk, line, host, id, msg);
    return 0;
}

static int read_host(walk *wk, xmlNodePtr n)
{
    int line = (int)xmlGetLineNo(n);
    char *id = NULL, *speed = NULL;
    if (!attr_dup(n, "id", &id))
        return pg_fail_at(wk->st, PG_EXIT_INPUT, (pg_origin){wk->file, line}, "id", "<host> without an id");
    int pline;
    char *kind = host_prop(n, "kind", &pline);
    int rc = 0;
    if (kind == NULL || (strcmp(kind, "gpu") != 0 && strcmp(kind, "cpu") != 0)) {
        if (kind != NULL)
            rc = fail_prop(wk, pline, id, "kind", "expected 'gpu' or 'cpu' (leave kind out for other hosts)");
        free(kind);
        free(id);
        return rc;
    }
    host_rec h;
    memset(&h, 0, sizeof h);
    h.line = line;
    h.is_gpu = strcmp(kind, "gpu") == 0;
    free(kind);
    if (strlen(id) >= sizeof h.name) {
        rc = pg_fail_at(wk->st, PG_EXIT_INPUT, (pg_origin){wk->file, line}, "id",
                        "host name '%.80s' too long (at most %zu characters)", id, sizeof h.name - 1);
        free(id);
        return rc;
    }
    strcpy(h.name, id);
    free(id);

    if (!attr_dup(n, "speed", &speed))
        return pg_fail_at(wk->st, PG_EXIT_INPUT, (pg_origin){wk->file, line}, "speed", "host '%s': missing",
                          h.name);
    /* A list of pstates ("100Gf,50Gf"): the first one is the running speed. */
    char *comma = strchr(speed, ',');
    if (comma)
        *comma = '\0';
    const char *why = NULL;
    if (units_parse_speed(speed, &h.speed_flops, &why) != 0 || h.speed_flops <= 0)
        rc = pg_fail_at(wk->st, PG_EXIT_INPUT, (pg_origin){wk->file, line}, "speed", "host '%s': '%.64s': %s",
                        h.name, speed, why ? why : "must be positive");
    free(speed);
    if (rc || (rc = int_prop(wk, n, h.name, "node", &h.node)))
        return rc;
    if (h.is_gpu) {
        if ((rc = int_prop(wk, n, h.name, "local_rank", &h.local_rank)) ||
            (rc = bytes_prop(wk, n, h.name, "memory", 1, &h.memory_bytes)))
            return rc;
        if (h.memory_bytes <= 0)
            return fail_prop(wk, line, h.name, "memory", "must be positive");
        char *type = host_prop(n, "gpu", &pline);
        if (type != NULL) {
            if (strlen(type) >= sizeof h.type)
                rc = fail_prop(wk, pline, h.name, "gpu", "type name too long");
            else
                strcpy(h.type, type);
            free(type);
            if (rc)
                return rc;
        }
    } else if ((rc = bytes_prop(wk, n, h.name, "memory", 0, &h.memory_bytes))) {
        return rc;
    }
    pg_grow((void **)&wk->hosts, &wk->cap, wk->nhosts + 1, sizeof *wk->hosts);
    wk->hosts[wk->nhosts++] = h;
    return 0;
}

/* The routing values SimGrid 3.32 knows (sg_platf.cpp, compared ignoring
 * case); anything else makes it abort ("Not a valid model!") instead of
 * throwing, so it is refused here.  Fat trees, tori and dragonflies are
 * <cluster topology=...>, not routings. */
static const char *const ROUTINGS[] = {"Full", "Floyd", "Dijkstra", "DijkstraCache", "None", "Vivaldi", "Cluster",
                                       "Wifi"};

static int check_routing(walk *wk, xmlNodePtr n)
{
    char *routing = NULL;
    if (!attr_dup(n, "routing", &routing))
        return 0;   /* SimGrid's default (None) */
    int known = 0;
    for (size_t i = 0; i < sizeof ROUTINGS / sizeof ROUTINGS[0]; i++)
        known = known || strcasecmp(routing, ROUTINGS[i]) == 0;
    int rc = 0;
    if (!known) {
        char *id = NULL;
        attr_dup(n, "id", &id);
        rc = pg_fail_at(wk->st, PG_EXIT_INPUT, (pg_origin){wk->file, (int)xmlGetLineNo(n)}, "routing",
                        "zone '%.64s': unknown routing '%.64s' (SimGrid knows Full, Floyd, Dijkstra, DijkstraCache, "
                        "None, Vivaldi, Cluster, Wifi)",
                        id ? id : "?", routing);
        free(id);
    }
    free(routing);
    return rc;
}

/* A bandwidth attribute (a comma-separated list for Wifi links) must be
 * positive: SimGrid's solver aborts on a zero or negative capacity. */
static int check_bandwidth(walk *wk, xmlNodePtr n, const char *attr)
{
    char *bw = NULL;
    if (!attr_dup(n, attr, &bw))
        return 0;
    int rc = 0;
    char *save = NULL;
    for (char *part = strtok_r(bw, ",", &save); part && !rc; part = strtok_r(NULL, ",", &save)) {
        double bytes_per_s = 0;
        const char *why = NULL;
        /* the parser refuses negative values: say "must be positive" for them too */
        int neg = strchr(part, '-') != NULL && strspn(part, " \t") == (size_t)(strchr(part, '-') - part);
        if (neg || units_parse_bandwidth(part, &bytes_per_s, &why) != 0 || !(bytes_per_s > 0)) {
            char *id = NULL;
            attr_dup(n, "id", &id);
            rc = pg_fail_at(wk->st, PG_EXIT_INPUT, (pg_origin){wk->file, (int)xmlGetLineNo(n)}, attr,
                            "<%s id='%.64s'>: bandwidth '%.64s' %s", (const char *)n->name, id ? id : "?", part,
                            neg || why == NULL ? "must be positive" : why);
            free(id);
        }
    }
    free(bw);
    return rc;
}

/* A latency attribute must parse as a duration (>= 0, at most
 * PG_MAX_DURATION_S): collect_links reads it later for the host routes, and
 * SimGrid itself aborts on a latency it cannot parse. */
static int check_latency(walk *wk, xmlNodePtr n, const char *attr)
{
    char *lat = NULL;
    if (!attr_dup(n, attr, &lat))
        return 0;
    double s = 0;
    const char *why = NULL;
    int rc = 0;
    if (units_parse_duration(lat, &s, &why) != 0 || s > PG_MAX_DURATION_S) {
        char *id = NULL;
        attr_dup(n, "id", &id);
        rc = pg_fail_at(wk->st, PG_EXIT_INPUT, (pg_origin){wk->file, (int)xmlGetLineNo(n)}, attr,
                        "<%s id='%.64s'>: latency '%.64s': %s%s", (const char *)n->name, id ? id : "?", lat,
                        why ? why : "longer than the longest duration allowed, ", why ? "" : NUM(PG_MAX_DURATION_S));
        free(id);
    }
    free(lat);
    return rc;
}

static int walk_tree(walk *wk, xmlNodePtr n)
{
    for (; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE)
            continue;
        int rc;
        if (xmlStrcmp(n->name, (const xmlChar *)"host") == 0)
            rc = read_host(wk, n);
        else if (xmlStrcmp(n->name, (const xmlChar *)"link") == 0 ||
                 xmlStrcmp(n->name, (const xmlChar *)"backbone") == 0) {
            if ((rc = check_bandwidth(wk, n, "bandwidth")) == 0)
                rc = check_latency(wk, n, "latency");
        } else if (xmlStrcmp(n->name, (const xmlChar *)"cluster") == 0) {
            if ((rc = check_bandwidth(wk, n, "bw")) == 0 && (rc = check_bandwidth(wk, n, "bb_bw")) == 0 &&
                (rc = check_latency(wk, n, "lat")) == 0 && (rc = check_latency(wk, n, "bb_lat")) == 0)
                rc = walk_tree(wk, n->children);
        } else if ((rc = check_routing(wk, n)) == 0)
            rc = walk_tree(wk, n->children);
        if (rc)
            return rc;
    }
    return 0;
}

static int cmp_gpu(const void *a, const void *b)
{
    const pg_gpu *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->local_rank < y->local_rank ? -1 : x->local_rank > y->local_rank;
}

typedef struct cpu_key {
    int node, index;   /* index into platform_desc.cpu_host */
} cpu_key;

static int cmp_cpu_node(const void *a, const void *b)
{
    const cpu_key *x = a, *y = b;
    return x->node < y->node ? -1 : x->node > y->node;
}

static int cmp_cpu_key(const void *a, const void *b)
{
    const cpu_key *x = a, *y = b;
    int c = cmp_cpu_node(a, b);
    return c ? c : x->index < y->index ? -1 : x->index > y->index;
}

/* Fill p from the host records; checks duplicates and pairs GPUs with the
 * cpu host of their node. */
static int fill_desc(walk *wk, platform_desc *p)
{
    size_t ng = 0, nc = 0;
    for (size_t i = 0; i < wk->nhosts; i++)
        wk->hosts[i].is_gpu ? ng++ : nc++;
    if (ng == 0)
        return pg_fail_at(wk->st, PG_EXIT_INPUT, (pg_origin){wk->file, 0}, "kind",
                          "no GPU: no <host> has <prop id=\"kind\" value=\"gpu\"/>");
    p->gpu = pg_xcalloc(ng, sizeof *p->gpu);
    p->cpu_host = nc ? pg_xcalloc(nc, sizeof *p->cpu_host) : NULL;
    p->cpu_memory_bytes = nc ? pg_xcalloc(nc, sizeof *p->cpu_memory_bytes) : NULL;
    int *cpu_node = nc ? pg_xcalloc(nc, sizeof *cpu_node) : NULL;
    int *cpu_line = nc ? pg_xcalloc(nc, sizeof *cpu_line) : NULL;
    for (size_t i = 0; i < wk->nhosts; i++) {
        const host_rec *h = &wk->hosts[i];
        if (h->is_gpu) {
            pg_gpu *g = &p->gpu[p->ngpus++];
            snprintf(g->host, sizeof g->host, "%s", h->name);
            g->node = h->node;
            g->local_rank = h->local_rank;
            g->speed_flops = h->speed_flops;
            g->memory_bytes = h->memory_bytes;
            snprintf(g->type, sizeof g->type, "%s", h->type);
            g->cpu_index = -1;
            g->line = h->line;
        } else {
            cpu_node[p->ncpus] = h->node;
            cpu_line[p->ncpus] = h->line;
            snprintf(p->cpu_host[p->ncpus], sizeof p->cpu_host[0], "%s", h->name);
            p->cpu_memory_bytes[p->ncpus] = h->memory_bytes;
            p->ncpus++;
        }
    }
    /* cpu hosts by node (then file order): duplicates are neighbours and
     * each GPU finds its node's by binary search, O(n log n) in hosts
     * (a linear scan per GPU was quadratic at thousands of nodes). */
    cpu_key *by_node = pg_xmalloc((size_t)(p->ncpus > 0 ? p->ncpus : 1) * sizeof *by_node);
    for (int k = 0; k < p->ncpus; k++)
        by_node[k] = (cpu_key){cpu_node[k], k};
    qsort(by_node, (size_t)p->ncpus, sizeof *by_node, cmp_cpu_key);
    int rc = 0;
    for (int k = 1; k < p->ncpus && !rc; k++)
        if (by_node[k].node == by_node[k - 1].node) {
            int later = by_node[k].index, earlier = by_node[k - 1].index;
            rc = pg_fail_at(wk->st, PG_EXIT_INPUT, (pg_origin){wk->file, cpu_line[later]}, "node",
                            "host '%s': node %d already has a cpu host ('%s')", p->cpu_host[later],
                            cpu_node[later], p->cpu_host[earlier]);
        }
    qsort(p->gpu, (size_t)p->ngpus, sizeof *p->gpu, cmp_gpu);
    for (int i = 0; i < p->ngpus && !rc; i++) {
        if (i > 0 && cmp_gpu(&p->gpu[i - 1], &p->gpu[i]) == 0) {
            rc = pg_fail_at(wk->st, PG_EXIT_INPUT, (pg_origin){wk->file, 0}, "local_rank",
                            "hosts '%s' and '%s' are both node %d local_rank %d", p->gpu[i - 1].host,
                            p->gpu[i].host, p->gpu[i].node, p->gpu[i].local_rank);
            break;
        }
        cpu_key want = {p->gpu[i].node, 0};
        const cpu_key *hit = p->ncpus ? bsearch(&want, by_node, (size_t)p->ncpus, sizeof *by_node, cmp_cpu_node)
                                      : NULL;
        if (hit != NULL)
            p->gpu[i].cpu_index = hit->index;
    }
    free(by_node);
    free(cpu_node);
    free(cpu_line);
    if (rc)
        return rc;
    return 0;
}

/* ---------------------------------------------------------------- host routes */

typedef struct link_rec {
    char *id;
    double bw, latency_s;   /* bw 0: unparsable (SimGrid reports it when it loads the file) */
    int fatpipe;            /* sharing_policy FATPIPE: every flow gets bw, none shares it */
    int host_routes;        /* GPU-to-host-memory routes crossing it */
} link_rec;

typedef struct link_list {
    link_rec *link;
    size_t n, cap;
} link_list;

/* Lookups by name in O(log n) (a generated cluster of N nodes has O(N)
 * links, GPUs and routes: a linear search per route made reading it
 * quadratic, 64 % of an 8,192-GPU run's CPU). */
static int cmp_link_id(const void *a, const void *b)
{
    const link_rec *x = a, *y = b;
    return strcmp(x->id, y->id);
}

typedef struct gpu_name {
    const char *host;
    int index;
} gpu_name;

static int cmp_gpu_name(const void *a, const void *b)
{
    const gpu_name *x = a, *y = b;
    int c = strcmp(x->host, y->host);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

static int cmp_gpu_name_key(const void *key, const void *elem)
{
    return strcmp(key, ((const gpu_name *)elem)->host);
}

/* The GPUs sorted by host name (first index first among equal names). */
typedef struct gpu_index {
    gpu_name *by_name;
    int n;
} gpu_index;

/* The first GPU named host, or -1. */
static int gpu_named(const gpu_index *gi, const char *host)
{
    const gpu_name *hit = gi->n ? bsearch(host, gi->by_name, (size_t)gi->n, sizeof *gi->by_name, cmp_gpu_name_key)
                                : NULL;
    if (hit == NULL)
        return -1;
    while (hit > gi->by_name && strcmp(hit[-1].host, host) == 0)
        hit--;
    return hit->index;
}

static void collect_links(xmlNodePtr n, link_list *ll)
{
    for (; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE)
            continue;
        if (xmlStrcmp(n->name, (const xmlChar *)"link") != 0) {
            collect_links(n->children, ll);
            continue;
        }
        char *id = NULL, *bw = NULL, *lat = NULL, *policy = NULL;
        if (!attr_dup(n, "id", &id))
            continue;
        link_rec l = {.id = id};
        if (attr_dup(n, "bandwidth", &bw) && units_parse_bandwidth(bw, &l.bw, NULL) != 0)
            l.bw = 0.0;
        if (attr_dup(n, "latency", &lat) && units_parse_duration(lat, &l.latency_s, NULL) != 0)
            l.latency_s = 0.0;
        l.fatpipe = attr_dup(n, "sharing_policy", &policy) && strcmp(policy, "FATPIPE") == 0;
        free(bw);
        free(lat);
        free(policy);
        pg_grow((void **)&ll->link, &ll->cap, ll->n + 1, sizeof *ll->link);
        ll->link[ll->n++] = l;
    }
}

/* ll sorted by id (cmp_link_id); SimGrid refuses two links of one id. */
static link_rec *find_link(const link_list *ll, const char *id)
{
    link_rec key = {.id = (char *)id};
    return ll->n ? bsearch(&key, ll->link, ll->n, sizeof *ll->link, cmp_link_id) : NULL;
}

/* The GPU whose host-memory route is route (src, dst), or NULL. */
static pg_gpu *route_gpu(platform_desc *p, const gpu_index *gi, const char *src, const char *dst)
{
    const char *ends[2][2] = {{src, dst}, {dst, src}};   /* (GPU, cpu), either direction */
    for (int k = 0; k < 2; k++) {
        int i = gpu_named(gi, ends[k][0]);
        if (i < 0)
            continue;
        pg_gpu *g = &p->gpu[i];
        if (g->cpu_index >= 0 && strcmp(ends[k][1], p->cpu_host[g->cpu_index]) == 0)
            return g;
    }
    return NULL;
}

/* The host-memory routes under n: in the counting pass each adds one to its
 * links' host_routes; in the second each sets its GPU's host_bw,
 * host_shared_bw and host_latency_s (platform.h). */
static void route_links(xmlNodePtr n, platform_desc *p, const gpu_index *gi, const link_list *ll, int counting)
{
    for (; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE)
            continue;
        if (xmlStrcmp(n->name, (const xmlChar *)"route") != 0) {
            route_links(n->children, p, gi, ll, counting);
            continue;
        }
        char *src = NULL, *dst = NULL;
        pg_gpu *g = NULL;
        if (attr_dup(n, "src", &src) && attr_dup(n, "dst", &dst))
            g = route_gpu(p, gi, src, dst);
        free(src);
        free(dst);
        if (g == NULL)
            continue;
        double bw = 0, shared_bw = 0, latency_s = 0;
        int known = 1, any = 0;
        for (xmlNodePtr c = n->children; c && known; c = c->next) {
            char *id = NULL;
            if (c->type != XML_ELEMENT_NODE || xmlStrcmp(c->name, (const xmlChar *)"link_ctn") != 0 ||
                !attr_dup(c, "id", &id))
                continue;
            link_rec *l = find_link(ll, id);
            free(id);
            known = l != NULL && l->bw > 0;
            if (!known)
                break;
            if (counting) {
                l->host_routes++;
                continue;
            }
            double share_bw = l->fatpipe || l->host_routes < 1 ? l->bw : l->bw / l->host_routes;
            bw = any && bw < l->bw ? bw : l->bw;
            shared_bw = any && shared_bw < share_bw ? shared_bw : share_bw;
            latency_s += l->latency_s;
            any = 1;
        }
        if (known && any) {
            g->host_bw = bw;
            g->host_shared_bw = shared_bw;
            g->host_latency_s = latency_s;
        }
    }
}

/* Each GPU's route to its host memory, where the XML lists it (platform.h). */
static void read_host_routes(xmlNodePtr root, platform_desc *p)
{
    link_list ll = {NULL, 0, 0};
    collect_links(root->children, &ll);
    if (ll.n > 0)   /* no link: ll.link is NULL, which qsort must not get */
        qsort(ll.link, ll.n, sizeof *ll.link, cmp_link_id);
    gpu_index gi = {pg_xmalloc((size_t)(p->ngpus > 0 ? p->ngpus : 1) * sizeof *gi.by_name), p->ngpus};
    for (int i = 0; i < p->ngpus; i++)
        gi.by_name[i] = (gpu_name){p->gpu[i].host, i};
    qsort(gi.by_name, (size_t)gi.n, sizeof *gi.by_name, cmp_gpu_name);
    route_links(root->children, p, &gi, &ll, 1);
    route_links(root->children, p, &gi, &ll, 0);
    free(gi.by_name);
    for (size_t i = 0; i < ll.n; i++)
        free(ll.link[i].id);
    free(ll.link);
}

int platform_load(const char *path, platform_desc *p, pg_status *st)
{
    memset(p, 0, sizeof *p);
    if (strlen(path) >= sizeof p->xml_path)
        return pg_fail(st, PG_EXIT_INPUT, "%.200s...: platform path too long", path);
    snprintf(p->xml_path, sizeof p->xml_path, "%s", path);
    if (access(path, R_OK) != 0)
        return pg_fail(st, PG_EXIT_INPUT, "%s: cannot read platform: %s", path, strerror(errno));

    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (ctxt == NULL)
        return pg_fail(st, PG_EXIT_INTERNAL, "%s: libxml2 could not allocate a parser", path);
    xml_err err = {0};
    ctxt->_private = &err;
    ctxt->sax->serror = on_xml_error; /* takes precedence over printing to stderr */
    xmlDocPtr doc = xmlCtxtReadFile(ctxt, path, NULL, XML_PARSE_NONET | XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES);
    int rc = 0;
    if (doc == NULL || !ctxt->wellFormed) {
        if (err.have)
            rc = pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){path, err.line}, NULL, "malformed XML: %s", err.msg);
        else
            rc = pg_fail(st, PG_EXIT_INPUT, "%s: malformed XML", path);
    }
    xmlNodePtr root = doc ? xmlDocGetRootElement(doc) : NULL;
    if (!rc && (root == NULL || xmlStrcmp(root->name, (const xmlChar *)"platform") != 0))
        rc = pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){path, root ? (int)xmlGetLineNo(root) : 1}, NULL,
                        "not a SimGrid platform (the root element must be <platform>)");
    if (!rc) {
        walk wk = {path, st, NULL, 0, 0};
        rc = walk_tree(&wk, root->children);
        if (!rc)
            rc = fill_desc(&wk, p);
        if (!rc)
            read_host_routes(root, p);
        free(wk.hosts);
    }
    xmlFreeDoc(doc);
    xmlFreeParserCtxt(ctxt);
    if (rc)
        platform_free(p);
    return rc;
}

/* ---------------------------------------------------------------- generated files */

int platform_load_text(const char *xml_text, const char *what, platform_desc *p, pg_status *st)
{
    memset(p, 0, sizeof *p);
    const char *dir = getenv("TMPDIR");
    if (dir == NULL || dir[0] == '\0')
        dir = "/tmp";
    char path[sizeof p->xml_path];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, TMP_TEMPLATE) >= sizeof path)
        return pg_fail(st, PG_EXIT_INTERNAL, "%s: TMPDIR too long", what);
    int fd = mkstemps(path, TMP_SUFFIX_LEN);
    if (fd < 0)
        return pg_fail(st, PG_EXIT_INTERNAL, "%s: cannot create a temporary platform file in %s: %s", what, dir,
                       strerror(errno));
    FILE *f = fdopen(fd, "w");
    int bad = f == NULL;
    if (!bad) {
        size_t len = strlen(xml_text);
        bad = fwrite(xml_text, 1, len, f) != len;
        bad = (fclose(f) != 0) || bad;
    } else {
        close(fd);
    }
    if (bad) {
        int saved = errno;
        unlink(path);
        return pg_fail(st, PG_EXIT_INTERNAL, "%s: cannot write %s: %s", what, path, strerror(saved));
    }
    int rc = platform_load(path, p, st);
    if (rc) {
        unlink(path);
        pg_status_prefix(st, "%s (generated platform)", what);
        return rc;
    }
    p->is_temporary = 1;
    return 0;
}

int platform_make_ideal(int ngpus, double latency_s, double speed_flops, double memory_bytes,
                        platform_desc *p, pg_status *st)
{
    memset(p, 0, sizeof *p);
    if (ngpus < 1)
        return pg_fail(st, PG_EXIT_INPUT, "network=ideal: need at least one GPU (got %d)", ngpus);
    if (!(latency_s >= 0) || !(speed_flops > 0) || !(memory_bytes > 0))
        return pg_fail(st, PG_EXIT_INPUT,
                       "network=ideal: latency must be >= 0, speed and memory > 0 (got %g s, %g flop/s, %g B)",
                       latency_s, speed_flops, memory_bytes);
    int width = 1;
    for (int n = ngpus - 1; n >= 10; n /= 10)
        width++;
    double half_s = latency_s * 0.5;
    strbuf sb;
    sb_init(&sb);
    sb_append(&sb, "<?xml version='1.0'?>\n"
                   "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n");
    sb_appendf(&sb,
               "<!-- pipegrid network=ideal: %d GPUs; every host has its own link of half the latency and every\n"
               "     route between two hosts crosses two of them: latency %s s exactly. -->\n",
               ngpus, NUM(latency_s));
    int star = ngpus > IDEAL_FULL_MAX_GPUS;
    sb_appendf(&sb, "<platform version=\"4.1\">\n  <zone id=\"ideal\" routing=\"%s\">\n",
               star ? "DijkstraCache" : "Full");
    for (int i = 0; i < ngpus; i++)
        sb_appendf(&sb,
                   "    <host id=\"gpu%0*d\" speed=\"%sf\"><prop id=\"kind\" value=\"gpu\"/>"
                   "<prop id=\"node\" value=\"0\"/><prop id=\"local_rank\" value=\"%d\"/>"
                   "<prop id=\"memory\" value=\"%sB\"/></host>\n",
                   width, i, NUM(speed_flops), i, NUM(memory_bytes));
    sb_appendf(&sb,
               "    <host id=\"cpu\" speed=\"%sf\"><prop id=\"kind\" value=\"cpu\"/>"
               "<prop id=\"node\" value=\"0\"/></host>\n",
               NUM(IDEAL_CPU_SPEED_FLOPS));
    for (int i = 0; i < ngpus; i++)
        sb_appendf(&sb, "    <link id=\"gpu%0*d-link\" bandwidth=\"%sBps\" latency=\"%ss\"/>\n", width, i,
                   NUM(IDEAL_BW_BYTES_PER_S), NUM(half_s));
    sb_appendf(&sb, "    <link id=\"cpu-link\" bandwidth=\"%sBps\" latency=\"%ss\"/>\n",
               NUM(IDEAL_BW_BYTES_PER_S), NUM(half_s));
    if (star) {
        sb_append(&sb, "    <router id=\"switch\"/>\n");
        for (int i = 0; i < ngpus; i++)
            sb_appendf(&sb, "    <route src=\"gpu%0*d\" dst=\"switch\"><link_ctn id=\"gpu%0*d-link\"/></route>\n",
                       width, i, width, i);
        sb_append(&sb, "    <route src=\"cpu\" dst=\"switch\"><link_ctn id=\"cpu-link\"/></route>\n");
    } else {
        for (int i = 0; i < ngpus; i++) {
            for (int j = i + 1; j < ngpus; j++)
                sb_appendf(&sb,
                           "    <route src=\"gpu%0*d\" dst=\"gpu%0*d\"><link_ctn id=\"gpu%0*d-link\"/>"
                           "<link_ctn id=\"gpu%0*d-link\"/></route>\n",
                           width, i, width, j, width, i, width, j);
            sb_appendf(&sb,
                       "    <route src=\"gpu%0*d\" dst=\"cpu\"><link_ctn id=\"gpu%0*d-link\"/>"
                       "<link_ctn id=\"cpu-link\"/></route>\n",
                       width, i, width, i);
        }
    }
    sb_append(&sb, "  </zone>\n</platform>\n");
    int rc = platform_load_text(sb.data, "network=ideal", p, st);
    sb_free(&sb);
    return rc;
}

void platform_free(platform_desc *p)
{
    if (p == NULL)
        return;
    if (p->is_temporary && p->xml_path[0])
        unlink(p->xml_path);
    free(p->gpu);
    free(p->cpu_host);
    free(p->cpu_memory_bytes);
    p->gpu = NULL;
    p->cpu_host = NULL;
    p->cpu_memory_bytes = NULL;
    p->ngpus = p->ncpus = 0;
    p->is_temporary = 0;
}
