/*
 * bench_einsum.c - the einsum workloads of `tenferro bench` (docs/performance.md):
 *
 *   einsum_path  path quality, no tensors: the log10 flops of TF_EINSUM_OPTIMAL on
 *                small expressions (under NumPy's default memory limit, the largest
 *                input or output, to compare with numpy.einsum_path(optimize=
 *                'optimal'), and without a limit), and of greedy, auto and a 10 s
 *                TF_EINSUM_SEARCH on closed random 3-regular networks of 30, 40 and 80
 *                tensors with bond dimension 2 (the peers: bench/einsum_peers.py).
 *   einsum_tn    execution: the expectation value <A|W|B> of an MPS-MPO-MPS sandwich
 *                (32 sites, bond 64, physical 2, MPO bond 4) as one einsum of 96
 *                operands, forward and forward+backward (gradients of all 96), and
 *                the four-index transformation pi,qj,ijkl,rk,sl->pqrs at N = 24, f64.
 *
 * The networks come from the same 64-bit LCG and stub matching as the Python peers,
 * so both sides see the same expressions. Figures: `einsum_path <case>_log10_flops
 * <x> log10`, `einsum_tn <case> <ms> ms` (median of the timed repetitions after one
 * untimed warm-up, which also plans).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tenferro/einsum.h>
#include <tenferro/ops.h>

#include "bench_einsum.h"
#include "bench_util.h"

static void fig(const char *workload, const char *metric, double value, const char *unit)
{
    printf("%s %s %.6g %s\n", workload, metric, value, unit);
    fflush(stdout);
}

/* ---- expressions ---- */

/* Index k as UTF-8: the 52 letters, then U+0100 onwards (as einsum_peers.symbol). */
static size_t put_symbol(char *p, uint32_t k)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    if (k < 52) {
        *p = letters[k];
        return 1;
    }
    uint32_t c = 0x100 + (k - 52);
    if (c < 0x800) {
        p[0] = (char)(0xc0 | (c >> 6));
        p[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    p[0] = (char)(0xe0 | (c >> 12));
    p[1] = (char)(0x80 | ((c >> 6) & 0x3f));
    p[2] = (char)(0x80 | (c & 0x3f));
    return 3;
}

typedef struct network {
    uint32_t n;
    char *subscripts; /* malloc'd */
    uint32_t *rank;
    int64_t (*shape)[TF_MAX_RANK];
    const int64_t **shapes;
} network;

static void network_free(network *g)
{
    free(g->subscripts);
    free(g->rank);
    free(g->shape);
    free(g->shapes);
}

static int network_alloc(network *g, uint32_t n, size_t text)
{
    g->n = n;
    g->subscripts = calloc(text, 1);
    g->rank = calloc(n, sizeof *g->rank);
    g->shape = calloc(n, sizeof *g->shape);
    g->shapes = calloc(n, sizeof *g->shapes);
    for (uint32_t t = 0; g->shapes && g->shape && t < n; t++)
        g->shapes[t] = g->shape[t];
    return g->subscripts && g->rank && g->shape && g->shapes ? 0 : -1;
}

typedef struct lcg {
    uint64_t state;
} lcg;

static uint32_t lcg_below(lcg *r, uint32_t n)
{
    r->state = r->state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((r->state >> 33) % n);
}

/* The closed random 3-regular network einsum_peers.regular_network(n, seed) makes. */
static int regular_network(uint32_t n, uint64_t seed, network *g)
{
    uint32_t m = 3 * n, *stubs = calloc(m, sizeof *stubs), (*edges)[3] = calloc(n, sizeof *edges);
    uint32_t *deg = calloc(n, sizeof *deg);
    lcg r = {seed};
    int ok = stubs && edges && deg && network_alloc(g, n, (size_t)n * 12 + 8) == 0;
    for (int done = 0; ok && !done;) {
        for (uint32_t i = 0; i < m; i++)
            stubs[i] = i / 3;
        for (uint32_t i = m; i > 1; i--) {
            uint32_t j = lcg_below(&r, i), t = stubs[i - 1];
            stubs[i - 1] = stubs[j];
            stubs[j] = t;
        }
        memset(deg, 0, n * sizeof *deg);
        done = 1;
        for (uint32_t e = 0; e < m && done; e += 2) {
            uint32_t a = stubs[e], b = stubs[e + 1];
            for (uint32_t x = 0; x < deg[a] && a != b; x++)
                for (uint32_t y = 0; y < deg[b]; y++)
                    if (edges[a][x] == edges[b][y])
                        done = 0;
            if (a == b)
                done = 0;
            edges[a][deg[a]++] = e / 2;
            edges[b][deg[b]++] = e / 2;
        }
    }
    char *p = ok ? g->subscripts : NULL;
    for (uint32_t t = 0; ok && t < n; t++) {
        if (t)
            *p++ = ',';
        g->rank[t] = 3;
        for (uint32_t k = 0; k < 3; k++) {
            p += put_symbol(p, edges[t][k]);
            g->shape[t][k] = 2;
        }
    }
    if (ok)
        strcpy(p, "->");
    free(stubs);
    free(edges);
    free(deg);
    return ok ? 0 : -1;
}

/* The small expressions (the same list as einsum_peers.SMALL). */
static const char *const k_small[][2] = {
    {"ij,jk,kl,lm->im", "20x30,30x40,40x10,10x50"},
    {"pi,qj,ijkl,rk,sl->pqrs", "24x24,24x24,24x24x24x24,24x24,24x24"},
    {"ea,fb,abcd,gc,hd->efgh", "10x10,10x10,10x10x10x10,10x10,10x10"},
    {"ab,bc,cd,de,ef,fg,ga->", "5x4,4x6,6x3,3x5,5x2,2x6,6x5"},
    {"abA,bcA,cdB,deB,efC,fgC,ghD,haD->", "4x3x2,3x5x2,5x2x3,2x4x3,4x3x5,3x2x5,2x4x2,4x4x2"},
    {"abA,bcA,cdB,deB,efC,fgC,ghD,hiD,ia->", "4x3x2,3x5x2,5x2x3,2x4x3,4x3x5,3x2x5,2x4x2,4x3x2,3x4"},
    {"abA,bcA,cdB,deB,efC,fgC,ghD,hiD,ijE,jaE->",
     "4x3x2,3x5x2,5x2x3,2x4x3,4x3x5,3x2x5,2x4x2,4x3x2,3x5x3,5x4x3"},
    {"ai,ab,bc,cd,de,ef,fg,gh,hi->", "3x5,3x4,4x6,6x3,3x5,5x2,2x6,6x4,4x5"},
};

/* An ASCII expression and its shapes; limit gets NumPy's default memory limit. */
static int small_network(const char *expr, const char *text, network *g, double *limit)
{
    uint32_t n = 1;
    for (const char *c = text; *c; c++)
        n += *c == ',';
    if (network_alloc(g, n, strlen(expr) + 1))
        return -1;
    strcpy(g->subscripts, expr);
    int64_t ext[128] = {0};
    const char *c = text, *e = expr;
    *limit = 1;
    for (uint32_t t = 0; t < n; t++, c += *c == ',', e++) {
        double size = 1;
        while (*c && *c != ',') {
            char *end;
            g->shape[t][g->rank[t]++] = strtoll(c, &end, 10);
            size *= (double)g->shape[t][g->rank[t] - 1];
            ext[(unsigned char)*e++] = g->shape[t][g->rank[t] - 1];
            c = *end == 'x' ? end + 1 : end;
        }
        *limit = fmax(*limit, size);
    }
    double out = 1;
    for (e = strstr(expr, "->") + 2; *e; e++)
        out *= (double)ext[(unsigned char)*e];
    *limit = fmax(*limit, out);
    return 0;
}

/* ---- einsum_path ---- */

static tf_status path_log10(const tf_einsum_planner *p, const network *g, uint32_t method,
                            double limit, double seconds, double *log10_flops)
{
    tf_einsum_options o = {sizeof o, method, limit, seconds, 0, 0, 0};
    tf_einsum_path *path = NULL;
    tf_einsum_error err = {sizeof err, 0, -1, -1, ""};
    tf_status st = p->path(g->subscripts, g->n, g->rank, g->shapes, &o, &path, &err);
    if (st) {
        fprintf(stderr, "bench: einsum_path: %s: %s\n", g->subscripts, err.message);
        return st;
    }
    *log10_flops = path->log10_flops;
    p->path_free(path);
    return TF_OK;
}

static tf_status planner(const tf_einsum_planner **out)
{
    tf_extension_module *m;
    tf_status st = tf_extension_load("einsum", &m);
    if (!st && !(*out = tf_einsum_planner_of(m)))
        st = TF_ERR_UNSUPPORTED;
    return st;
}

static tf_status small_cases(const tf_einsum_planner *p)
{
    tf_status st = TF_OK;
    for (size_t k = 0; k < sizeof k_small / sizeof k_small[0] && !st; k++) {
        network g = {0};
        double limit = 0, capped = 0, free_ = 0;
        st = small_network(k_small[k][0], k_small[k][1], &g, &limit) ? TF_ERR_OUT_OF_MEMORY : 0;
        /* no pairwise path under NumPy's limit: NumPy then leaves a multi-operand
           step, which is no path to compare with */
        tf_status capped_st = st ? st : path_log10(p, &g, TF_EINSUM_OPTIMAL, limit, 0, &capped);
        TRY(capped_st == TF_ERR_UNSUPPORTED ? TF_OK : capped_st);
        TRY(path_log10(p, &g, TF_EINSUM_OPTIMAL, 0, 0, &free_));
        if (!st) {
            char metric[64];
            snprintf(metric, sizeof metric, "small%zu_log10_flops", k);
            if (!capped_st)
                fig("einsum_path", metric, capped, "log10");
            snprintf(metric, sizeof metric, "small%zu_unlimited_log10_flops", k);
            fig("einsum_path", metric, free_, "log10");
        }
        network_free(&g);
    }
    return st;
}

static tf_status regular_cases(const tf_einsum_planner *p, int quick)
{
    static const uint32_t sizes[3] = {30, 40, 80};
    const char *names[3] = {"greedy", "auto", "search"};
    const uint32_t methods[3] = {TF_EINSUM_GREEDY, TF_EINSUM_AUTO, TF_EINSUM_SEARCH};
    tf_status st = TF_OK;
    for (int k = 0; k < 3 && !st; k++) {
        network g = {0};
        st = regular_network(sizes[k], sizes[k], &g) ? TF_ERR_OUT_OF_MEMORY : 0;
        for (int m = 0; m < 3 && !st; m++) {
            double t0 = tf_bench_now(), v = 0;
            st = path_log10(p, &g, methods[m], 0, quick ? 0.2 : 10.0, &v);
            char metric[64];
            snprintf(metric, sizeof metric, "reg%u_%s_log10_flops", sizes[k], names[m]);
            if (!st)
                fig("einsum_path", metric, v, "log10");
            snprintf(metric, sizeof metric, "reg%u_%s_seconds", sizes[k], names[m]);
            if (!st)
                fig("einsum_path", metric, tf_bench_now() - t0, "s");
        }
        network_free(&g);
    }
    return st;
}

tf_status tf_bench_einsum_path(tf_engine *engine, tf_runtime *rt, tf_session *s, int quick)
{
    (void)engine, (void)rt, (void)s;
    const tf_einsum_planner *p = NULL;
    tf_status st = planner(&p);
    TRY(small_cases(p));
    TRY(regular_cases(p, quick));
    return st;
}

/* ---- einsum_tn ---- */

/* A variable of rt, f64, uniform in [-scale, scale). */
static tf_status variable(tf_runtime *rt, uint32_t rank, const int64_t *shape, double scale,
                          tf_bench_rng *rng, tf_eager **out)
{
    size_t n = 1;
    for (uint32_t i = 0; i < rank; i++)
        n *= (size_t)shape[i];
    double *d = malloc((n ? n : 1) * sizeof *d);
    if (!d)
        return TF_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++)
        d[i] = scale * (2 * tf_bench_rng_uniform(rng) - 1);
    tf_tensor *t = NULL;
    tf_status st = tf_tensor_from_host(TF_F64, rank, shape, d, n, &t);
    free(d);
    TRY(tf_runtime_variable_from(rt, t, out));
    tf_tensor_release(t);
    return st;
}

typedef struct tn_case {
    network g;
    tf_eager **ops;
} tn_case;

static void tn_free(tn_case *c)
{
    for (uint32_t t = 0; c->ops && t < c->g.n; t++)
        tf_eager_release(c->ops[t]);
    free(c->ops);
    network_free(&c->g);
}

/* Appends labels to one term of c->g (t) with their extents. */
static char *term(tn_case *c, char *p, uint32_t t, const uint32_t *labels, const int64_t *ext,
                  uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        p += put_symbol(p, labels[i]);
        c->g.shape[t][c->g.rank[t]++] = ext[i];
    }
    return p;
}

/* <A|W|B> over `sites` (MPS bond D, physical d, MPO bond dw); the boundary tensors
   have no outer bond. Labels: a_i, w_i, b_i (bonds after site i), p_i, q_i. */
static int mps_network(uint32_t sites, int64_t D, int64_t d, int64_t dw, tn_case *c)
{
    uint32_t n = 3 * sites, nb = sites - 1;
    if (network_alloc(&c->g, n, (size_t)n * 16 + 8))
        return -1;
    char *p = c->g.subscripts;
    for (uint32_t i = 0; i < sites; i++) {
        uint32_t a0 = i - 1, a1 = i, w0 = nb + i - 1, w1 = nb + i, b0 = 2 * nb + i - 1,
                 b1 = 2 * nb + i, pi = 3 * nb + i, qi = 3 * nb + sites + i;
        bool first = i == 0, last = i + 1 == sites;
        uint32_t la[3], lw[4], lb[3], k;
        int64_t ea[3], ew[4], eb[3];
        k = 0;
        if (!first)
            la[k] = a0, ea[k++] = D;
        la[k] = pi, ea[k++] = d;
        if (!last)
            la[k] = a1, ea[k++] = D;
        p = term(c, p, 3 * i, la, ea, k);
        *p++ = ',';
        k = 0;
        if (!first)
            lw[k] = w0, ew[k++] = dw;
        lw[k] = pi, ew[k++] = d;
        lw[k] = qi, ew[k++] = d;
        if (!last)
            lw[k] = w1, ew[k++] = dw;
        p = term(c, p, 3 * i + 1, lw, ew, k);
        *p++ = ',';
        k = 0;
        if (!first)
            lb[k] = b0, eb[k++] = D;
        lb[k] = qi, eb[k++] = d;
        if (!last)
            lb[k] = b1, eb[k++] = D;
        p = term(c, p, 3 * i + 2, lb, eb, k);
        if (!last)
            *p++ = ',';
    }
    strcpy(p, "->");
    return 0;
}

static int four_index_network(int64_t N, tn_case *c)
{
    if (network_alloc(&c->g, 5, 32))
        return -1;
    strcpy(c->g.subscripts, "pi,qj,ijkl,rk,sl->pqrs");
    for (uint32_t t = 0; t < 5; t++) {
        c->g.rank[t] = t == 2 ? 4 : 2;
        for (uint32_t a = 0; a < c->g.rank[t]; a++)
            c->g.shape[t][a] = N;
    }
    return 0;
}

static tf_status tn_operands(tf_runtime *rt, tn_case *c, double scale)
{
    tf_bench_rng rng = tf_bench_rng_seed(2226);
    c->ops = calloc(c->g.n, sizeof *c->ops);
    tf_status st = c->ops ? TF_OK : TF_ERR_OUT_OF_MEMORY;
    for (uint32_t t = 0; t < c->g.n && !st; t++)
        st = variable(rt, c->g.rank[t], c->g.shape[t], scale, &rng, &c->ops[t]);
    return st;
}

/* One forward (and with bwd, backward of the sum) through einsum; seconds in *sec. */
static tf_status tn_once(tf_engine *engine, tf_session *s, tn_case *c, int bwd, double *sec)
{
    tf_status st = TF_OK;
    for (uint32_t t = 0; t < c->g.n && bwd; t++)
        TRY(tf_eager_clear_grad(c->ops[t]));
    double t0 = tf_bench_now();
    tf_eager *out = NULL, *loss = NULL;
    TRY(tf_einsum(s, c->g.subscripts, c->g.n, c->ops, &out));
    if (bwd) {
        TRY(tf_session_reduce_sum(s, out, NULL, 0, &loss));
        TRY(tf_eager_backward(loss, engine));
    }
    TRY(tf_engine_synchronize(engine));
    *sec = tf_bench_now() - t0;
    tf_eager_release(loss);
    tf_eager_release(out);
    return st;
}

static tf_status tn_time(tf_engine *engine, tf_session *s, tn_case *c, const char *name, int reps)
{
    tf_status st = TF_OK;
    for (int bwd = 0; bwd < 2 && !st; bwd++) {
        double secs[TF_BENCH_MAX_REPS], warm;
        TRY(tn_once(engine, s, c, bwd, &warm)); /* plans (the first time), then runs */
        for (int r = 0; r < reps && !st; r++)
            st = tn_once(engine, s, c, bwd, &secs[r]);
        char metric[64];
        snprintf(metric, sizeof metric, "%s_%s", name, bwd ? "fwd_bwd" : "fwd");
        if (!st)
            fig("einsum_tn", metric, 1e3 * tf_bench_median(secs, reps), "ms");
    }
    return st;
}

/* The path the execution uses (auto, at most TF_MAX_RANK axes): its log10 flops. */
static void tn_path_figure(const tn_case *c, const char *name)
{
    const tf_einsum_planner *p = NULL;
    tf_einsum_options o = {sizeof o, TF_EINSUM_AUTO, 0, 0, 0, TF_MAX_RANK, 0};
    tf_einsum_path *path = NULL;
    if (planner(&p) || p->path(c->g.subscripts, c->g.n, c->g.rank, c->g.shapes, &o, &path, NULL))
        return;
    char metric[64];
    snprintf(metric, sizeof metric, "%s_path_log10_flops", name);
    fig("einsum_tn", metric, path->log10_flops, "log10");
    p->path_free(path);
}

tf_status tf_bench_einsum_tn(tf_engine *engine, tf_runtime *rt, tf_session *s, int quick)
{
    tf_status st = tf_einsum_install(rt, NULL);
    int reps = quick ? 1 : 5;
    tn_case mps = {{0}, NULL}, four = {{0}, NULL};
    uint32_t sites = quick ? 4 : 32;
    int64_t D = quick ? 4 : 64, N = quick ? 4 : 24;
    if (!st && (mps_network(sites, D, 2, 4, &mps) || four_index_network(N, &four)))
        st = TF_ERR_OUT_OF_MEMORY;
    TRY(tn_operands(rt, &mps, 1.0 / sqrt((double)D)));
    TRY(tn_operands(rt, &four, 1.0));
    if (!st) {
        tn_path_figure(&mps, "mps");
        tn_path_figure(&four, "four_index");
    }
    TRY(tn_time(engine, s, &mps, "mps", reps));
    TRY(tn_time(engine, s, &four, "four_index", reps));
    tn_free(&mps);
    tn_free(&four);
    return st;
}
