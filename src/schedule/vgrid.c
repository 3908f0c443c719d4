/* vgrid.c: see vgrid.h.
 *
 * State: for every rank r, pass kind k and microbatch j the slot t[r][k][j];
 * for every rank a grid row mapping slot -> pass (k * m + j) or empty.  The
 * grid is scanned slot by slot, ranks in order within a slot: that is the
 * order in which passes are visited, and a pass only ever moves to an
 * earlier slot, so the visit order fixed by the starting slots stays valid.
 */
#include "schedule/vgrid.h"

#include <stdlib.h>
#include <string.h>

/* Pass kinds on the grid: the four block passes, then the W's.  With one W
 * list (reorder with W's) VG_WA holds them in the order of the backwards;
 * with two lists VG_WA follows VG_B1 and VG_WB follows VG_B0. */
enum { VG_F0 = VB_F0, VG_F1 = VB_F1, VG_B1 = VB_B1, VG_B0 = VB_B0, VG_WA, VG_WB, VG_KINDS };
#define VG_EMPTY (-1)

typedef struct vg {
    int pp, m, len;
    int nkinds;        /* kinds currently on the grid: 4, 5 (one W list) or 6 */
    int *t;            /* [pp][VG_KINDS][m] */
    int *nt;           /* squeeze output, same shape */
    int *grid;         /* [pp][len] */
    int *cnt;          /* [len] scratch: running count of one rank */
    int *wp;           /* [len] scratch: pending W's (virtual W count) */
} vg;

static int *T(const vg *g, int *base, int r, int k)
{
    return base + ((size_t)r * VG_KINDS + k) * g->m;
}

static int *row(const vg *g, int r)
{
    return g->grid + (size_t)r * g->len;
}

static int kind_of(const vg *g, int code)
{
    return code / g->m;
}

/* Lay kinds 0..nk-1 of rank r on its grid row; 0 or -1 on a collision. */
static int fill_row(vg *g, int r, int nk)
{
    int *gr = row(g, r);
    for (int s = 0; s < g->len; s++) gr[s] = VG_EMPTY;
    for (int k = 0; k < nk; k++) {
        int *tk = T(g, g->t, r, k);
        for (int j = 0; j < g->m; j++) {
            if (tk[j] < 0 || tk[j] >= g->len || gr[tk[j]] != VG_EMPTY) return -1;
            gr[tk[j]] = k * g->m + j;
        }
    }
    return 0;
}

static int last_slot(const vg *g, int r)
{
    int hi = 0;
    for (int k = 0; k < VG_WA; k++) {
        int s = T(g, g->t, r, k)[g->m - 1];
        if (s > hi) hi = s;
    }
    return hi;
}

/* Put each W of rank r in the first free slot after its backward (split:
 * two lists, the first backward chunk's W's first), the rest after the last
 * pass.  Leaves the row filled with the 4 + (1 or 2) kinds. */
static int put_w(vg *g, int r, int split)
{
    if (fill_row(g, r, VG_WA)) return -1;
    int *gr = row(g, r), bound = last_slot(g, r);
    int pending[2] = {0, 0}, placed[2] = {0, 0};
    for (int s = 0; s <= bound; s++) {
        if (gr[s] != VG_EMPTY) {
            int k = kind_of(g, gr[s]);
            if (k == VG_B1) pending[0]++;
            else if (k == VG_B0) pending[split ? 1 : 0]++;
            continue;
        }
        for (int w = 0; w < 2; w++)
            if (pending[w]) {
                T(g, g->t, r, VG_WA + w)[placed[w]] = s;
                gr[s] = (VG_WA + w) * g->m + placed[w]++;
                pending[w]--;
                break;
            }
    }
    int s = bound;
    for (int w = 0; w < 2; w++)
        while (pending[w]-- > 0) {
            if (++s >= g->len) return -1;
            T(g, g->t, r, VG_WA + w)[placed[w]] = s;
            gr[s] = (VG_WA + w) * g->m + placed[w]++;
        }
    return 0;
}

/* Slot of the pass that (r, k, j) waits for across ranks or chunks (not
 * counting the rank's own order), -1 if none; on the grid, with t. */
static int dep_slot(const vg *g, const int *t, int r, int k, int j)
{
    int pp = g->pp;
    switch (k) {
    case VG_F0: return r > 0 ? T(g, (int *)t, r - 1, VG_F0)[j] : -1;
    case VG_F1: return r < pp - 1 ? T(g, (int *)t, r + 1, VG_F1)[j] : T(g, (int *)t, r, VG_F0)[j];
    case VG_B1: return r > 0 ? T(g, (int *)t, r - 1, VG_B1)[j] : T(g, (int *)t, r, VG_F1)[j];
    case VG_B0: return r < pp - 1 ? T(g, (int *)t, r + 1, VG_B0)[j] : T(g, (int *)t, r, VG_B1)[j];
    default: return -1;
    }
}

static int max_i(int a, int b)
{
    return a > b ? a : b;
}

/* The j-th earliest backward (either chunk) of rank r: what the j-th W of a
 * single W list waits for. */
static int jth_backward(const vg *g, int r, int j)
{
    const int *a = T(g, g->t, r, VG_B1), *b = T(g, g->t, r, VG_B0);
    int ia = 0, ib = 0, s = -1;
    for (int n = 0; n <= j; n++) {
        if (ib >= g->m || (ia < g->m && a[ia] < b[ib])) s = a[ia++];
        else s = b[ib++];
    }
    return s;
}

/* Earliest slot a pass may take in the reorder: after its cross-rank or
 * cross-chunk dependency, the previous pass of the same kind and, for the
 * block passes, the previous pass of the same microbatch on the rank. */
static int earliest_slot(const vg *g, int r, int k, int j)
{
    if (k >= VG_WA) {
        /* W's are on the grid only as one list of 2m (put_w with split 0):
         * its n-th entry, stored past VG_WA's m as VG_WB's j, waits for the
         * rank's n-th backward and for the list's previous W. */
        int n = (k - VG_WA) * g->m + j;
        int d = jth_backward(g, r, n);
        if (n > 0) d = max_i(d, T(g, g->t, r, VG_WA)[n - 1]);
        return d + 1;
    }
    int d = dep_slot(g, g->t, r, k, j);
    if (k >= VG_F1) d = max_i(d, T(g, g->t, r, k - 1)[j]);
    if (j > 0) d = max_i(d, T(g, g->t, r, k)[j - 1]);
    return d + 1;
}

static int delta_of(int k)
{
    return k == VG_F0 || k == VG_F1 ? 1 : (k == VG_WA || k == VG_WB ? -1 : 0);
}

/* Live-activation count of rank r along its row into g->cnt; with_w == 0:
 * W's are virtual, one per free slot while some backward's W is pending
 * (g->wp).  Returns the row's peak. */
static int count_row(vg *g, int r, int from, int with_w)
{
    const int *gr = row(g, r);
    int cur = from > 0 ? g->cnt[from - 1] : 0, wp = from > 0 ? g->wp[from - 1] : 0, peak = 0;
    for (int s = from; s < g->len; s++) {
        if (gr[s] != VG_EMPTY) {
            int k = kind_of(g, gr[s]);
            cur += delta_of(k);
            if (!with_w && (k == VG_B1 || k == VG_B0)) wp++;
        } else if (!with_w && wp > 0) {
            cur--;
            wp--;
        }
        g->cnt[s] = cur;
        g->wp[s] = wp;
        if (cur > peak) peak = cur;
    }
    return peak;
}

/* Without W's on the grid: would moving pass (kind k) from slot x to the
 * free slot s keep rank r's count within limit?  Replays from s until the
 * state rejoins the stored one after x (g->cnt / g->wp hold the current row). */
static int virtual_ok(vg *g, int r, int k, int s, int x, int limit)
{
    const int *gr = row(g, r);
    int cur = s > 0 ? g->cnt[s - 1] : 0, wp = s > 0 ? g->wp[s - 1] : 0;
    for (int y = s; y < g->len; y++) {
        int code = y == s ? k * g->m : (y == x ? VG_EMPTY : gr[y]);
        if (code != VG_EMPTY) {
            int kk = kind_of(g, code);
            cur += delta_of(kk);
            if (kk == VG_B1 || kk == VG_B0) wp++;
        } else if (wp > 0) {
            cur--;
            wp--;
        }
        if (cur > limit) return 0;
        if (y > x && cur == g->cnt[y] && wp == g->wp[y]) return 1;
    }
    return 1;
}

/* One reorder pass (vgrid.h steps 2 and 4).  with_w: W's on the grid (one
 * list) and warm-up reordered too; else only the cool-down, W's virtual. */
static int reorder(vg *g, int with_w)
{
    int nk = with_w ? VG_WB : VG_WA;
    int limit = 0;
    for (int r = 0; r < g->pp; r++) {
        if (with_w ? put_w(g, r, 0) : fill_row(g, r, nk)) return -1;
        int pk = count_row(g, r, 0, with_w);
        if (pk > limit) limit = pk;
    }
    /* The count arrays are per rank: keep one rank's at a time, recomputed
     * when the scan's rank changes would cost a row per op; instead keep all. */
    int *cnt_all = pg_xmalloc((size_t)g->pp * g->len * sizeof(int));
    int *wp_all = pg_xmalloc((size_t)g->pp * g->len * sizeof(int));
    int *save_cnt = g->cnt, *save_wp = g->wp;
    for (int r = 0; r < g->pp; r++) {
        g->cnt = cnt_all + (size_t)r * g->len;
        g->wp = wp_all + (size_t)r * g->len;
        count_row(g, r, 0, with_w);
    }
    int phase = 0, rc = 0;
    for (int x = 0; x < g->len && rc == 0; x++)
        for (int r = 0; r < g->pp; r++) {
            int *gr = row(g, r), code = gr[x];
            if (code == VG_EMPTY) continue;
            int k = kind_of(g, code), j = code % g->m;
            if (phase == 0 && k == VG_B0 && r == 0) phase = 1;
            if (phase == 1) {
                if (k == VG_F0 && j == g->m - 1) phase = 2;
                continue;
            }
            if (phase == 0 && !with_w) continue;
            int lo = earliest_slot(g, r, k, j);
            if (lo > x) {
                rc = -1;
                break;
            }
            g->cnt = cnt_all + (size_t)r * g->len;
            g->wp = wp_all + (size_t)r * g->len;
            for (int s = lo; s < x; s++) {
                if (gr[s] != VG_EMPTY) continue;
                int ok;
                if (with_w) {
                    ok = 1;
                    if (delta_of(k) > 0)
                        for (int y = s; y < x && ok; y++) ok = g->cnt[y] + 1 <= limit;
                } else {
                    ok = virtual_ok(g, r, k, s, x, limit);
                }
                if (!ok) continue;
                gr[s] = code;
                gr[x] = VG_EMPTY;
                T(g, g->t, r, k)[j] = s;
                if (with_w) {
                    for (int y = s; y < x; y++) g->cnt[y] += delta_of(k);
                } else {
                    count_row(g, r, s, 0);
                }
                break;
            }
        }
    g->cnt = save_cnt;
    g->wp = save_wp;
    free(cnt_all);
    free(wp_all);
    return rc;
}

/* Every pass as early as its rank's order and its dependency allow, unit
 * costs, free messages; the kinds on the grid (nk of them) get new slots. */
static int squeeze(vg *g, int nk)
{
    int *free_at = pg_xcalloc((size_t)g->pp, sizeof(int));
    for (int x = 0; x < g->len; x++)
        for (int r = 0; r < g->pp; r++) {
            int code = row(g, r)[x];
            if (code == VG_EMPTY) continue;
            int k = kind_of(g, code), j = code % g->m;
            int start = free_at[r];
            if (k < VG_WA) {
                /* the dependency was visited earlier: its new slot is set */
                int d = dep_slot(g, g->nt, r, k, j);
                if (d >= 0 && d + 1 > start) start = d + 1;
            }
            T(g, g->nt, r, k)[j] = start;
            free_at[r] = start + 1;
        }
    free(free_at);
    size_t n = (size_t)g->pp * VG_KINDS * g->m;
    memcpy(g->t, g->nt, n * sizeof(int));
    for (int r = 0; r < g->pp; r++)
        if (fill_row(g, r, nk)) return -1;
    return 0;
}

static void emit(const vg *g, schedule *out)
{
    int pp = g->pp;
    for (int r = 0; r < pp; r++) {
        int s0 = r, s1 = 2 * pp - 1 - r;
        const int *gr = row(g, r);
        for (int x = 0; x < g->len; x++) {
            if (gr[x] == VG_EMPTY) continue;
            int k = kind_of(g, gr[x]), j = gr[x] % g->m;
            static const op_kind kind[VG_KINDS] = {OP_F, OP_F, OP_B, OP_B, OP_W, OP_W};
            int stage = (k == VG_F0 || k == VG_B0 || k == VG_WB) ? s0 : s1;
            sched_push(out, r, kind[k], stage, j);
        }
    }
}

int vgrid_build(const int (*slot)[VB_PASSES], schedule *out, pg_status *st)
{
    vg g;
    memset(&g, 0, sizeof g);
    g.pp = out->pp;
    g.m = out->m;
    int hi = 0;
    for (int r = 0; r < g.pp; r++)
        for (int k = 0; k < VB_PASSES; k++) {
            if (slot[r][k] < 0) return pg_fail(st, PG_EXIT_INTERNAL, "building block: negative slot");
            if (slot[r][k] > hi) hi = slot[r][k];
        }
    /* room for the repeated block and every W after it */
    g.len = hi + VB_PERIOD * g.m + 2 * g.m + 2;
    size_t n = (size_t)g.pp * VG_KINDS * g.m;
    g.t = pg_xmalloc(n * sizeof(int));
    g.nt = pg_xmalloc(n * sizeof(int));
    g.grid = pg_xmalloc((size_t)g.pp * g.len * sizeof(int));
    g.cnt = pg_xmalloc((size_t)g.len * sizeof(int));
    g.wp = pg_xmalloc((size_t)g.len * sizeof(int));
    for (int r = 0; r < g.pp; r++)
        for (int k = 0; k < VB_PASSES; k++)
            for (int j = 0; j < g.m; j++) T(&g, g.t, r, k)[j] = slot[r][k] + VB_PERIOD * j;
    int rc = 0;
    for (int r = 0; r < g.pp && rc == 0; r++) rc = fill_row(&g, r, VG_WA);
    if (rc == 0) rc = reorder(&g, 1);
    if (rc == 0) rc = squeeze(&g, VG_WB);
    if (rc == 0) rc = reorder(&g, 0);
    if (rc == 0) {
        /* step 4's squeeze runs with the W's the count assumed */
        for (int r = 0; r < g.pp && rc == 0; r++) rc = put_w(&g, r, 0);
        if (rc == 0) rc = squeeze(&g, VG_WB);
    }
    for (int r = 0; r < g.pp && rc == 0; r++) rc = put_w(&g, r, 1);
    if (rc == 0) emit(&g, out);
    free(g.t);
    free(g.nt);
    free(g.grid);
    free(g.cnt);
    free(g.wp);
    if (rc) return pg_fail(st, PG_EXIT_INTERNAL, "building block: passes collide or wait for later ones");
    return 0;
}
