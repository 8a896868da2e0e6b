/*
 * einsum_path.c - contraction paths: the cost model, greedy (plain and
 * randomized), exhaustive dynamic programming over every subset, and the
 * method dispatch. The connected-subnetwork DP lives in einsum_dp.c, the
 * time-budgeted search in einsum_search.c.
 *
 * Cost model (numpy.einsum_path's, so that figures compare): contracting
 * tensors A and B costs the product of the extents of every index of A or
 * B, twice that when an index is summed away; a path costs the sum over
 * its steps. The result of a step keeps the indices still needed: those of
 * the output and those another remaining tensor has. A path is feasible
 * when every result has at most max_rank indices and memory_limit
 * elements. Costs are doubles (exact while below 2^53).
 */
#include <math.h>
#include <string.h>

#include "einsum_internal.h"

/* ---- sets ---- */

double ein_set_size(const ein_net *net, const uint64_t *set)
{
    double size = 1;
    for (uint32_t w = 0; w < net->words; w++)
        for (uint64_t bits = set[w]; bits; bits &= bits - 1)
            size *= net->extent[w * 64 + (uint32_t)__builtin_ctzll(bits)];
    return size;
}

uint32_t ein_set_count(uint32_t words, const uint64_t *set)
{
    uint32_t n = 0;
    for (uint32_t w = 0; w < words; w++)
        n += (uint32_t)__builtin_popcountll(set[w]);
    return n;
}

double ein_pair_cost(const ein_net *net, const uint64_t *a, const uint64_t *b, const uint64_t *res)
{
    double size = 1;
    uint64_t removed = 0;
    for (uint32_t w = 0; w < net->words; w++) {
        uint64_t u = a[w] | b[w];
        removed |= u & ~res[w];
        for (; u; u &= u - 1)
            size *= net->extent[w * 64 + (uint32_t)__builtin_ctzll(u)];
    }
    return removed ? 2 * size : size;
}

static bool fits(const ein_net *net, const ein_limits *lim, const uint64_t *set, double size)
{
    return (lim->memory <= 0 || size <= lim->memory) &&
           (lim->max_rank == 0 || ein_set_count(net->words, set) <= lim->max_rank);
}

/* ---- the state of a contraction in progress (SSA ids) ---- */

typedef struct live {
    const ein_net *net;
    uint32_t words, next;
    uint64_t *sets; /* (2n - 1) * words */
    double *size;   /* per id */
    uint8_t *alive;
    uint32_t *count; /* per label: alive tensors holding it */
    uint64_t *tmp;   /* words */
} live;

static bool live_init(const ein_mem *m, const ein_net *net, live *s)
{
    uint32_t ids = 2 * net->n - 1, w = net->words;
    memset(s, 0, sizeof *s);
    s->net = net;
    s->words = w;
    s->next = net->n;
    s->sets = ein_calloc(m, (size_t)ids * w + w, sizeof *s->sets);
    s->size = ein_calloc(m, ids, sizeof *s->size);
    s->alive = ein_calloc(m, ids, 1);
    s->count = ein_calloc(m, net->n_labels + 1, sizeof *s->count);
    if (!s->sets || !s->size || !s->alive || !s->count)
        return false;
    s->tmp = s->sets + (size_t)ids * w;
    memcpy(s->sets, net->sets, (size_t)net->n * w * sizeof *s->sets);
    for (uint32_t t = 0; t < net->n; t++) {
        s->alive[t] = 1;
        s->size[t] = ein_set_size(net, net->sets + (size_t)t * w);
        for (uint32_t l = 0; l < net->n_labels; l++)
            s->count[l] += ein_has(net->sets + (size_t)t * w, l);
    }
    return true;
}

static void live_free(const ein_mem *m, live *s)
{
    ein_free(m, s->sets);
    ein_free(m, s->size);
    ein_free(m, s->alive);
    ein_free(m, s->count);
}

/* The labels contracting a and b keeps, into res: the output's, and those
   another alive tensor holds. */
static void result_of(const live *s, uint32_t a, uint32_t b, uint64_t *res)
{
    const uint64_t *sa = s->sets + (size_t)a * s->words, *sb = s->sets + (size_t)b * s->words;
    const uint64_t *out = s->net->out;
    for (uint32_t w = 0; w < s->words; w++) {
        uint64_t both = sa[w] & sb[w], u = sa[w] | sb[w], keep = u & out[w];
        for (uint64_t bits = u & ~out[w]; bits; bits &= bits - 1) {
            uint32_t bit = (uint32_t)__builtin_ctzll(bits);
            uint32_t others = s->count[w * 64 + bit] - 1 - (uint32_t)((both >> bit) & 1);
            if (others > 0)
                keep |= (uint64_t)1 << bit;
        }
        res[w] = keep;
    }
}

/* Contracts a and b into the next id; returns it. */
static uint32_t live_contract(live *s, uint32_t a, uint32_t b)
{
    uint32_t c = s->next++;
    uint64_t *res = s->sets + (size_t)c * s->words;
    result_of(s, a, b, res);
    const uint64_t *sa = s->sets + (size_t)a * s->words, *sb = s->sets + (size_t)b * s->words;
    for (uint32_t w = 0; w < s->words; w++)
        for (uint64_t bits = sa[w] | sb[w]; bits; bits &= bits - 1) {
            uint32_t l = w * 64 + (uint32_t)__builtin_ctzll(bits);
            s->count[l] -= ein_has(sa, l) + ein_has(sb, l);
            s->count[l] += ein_has(res, l);
        }
    s->alive[a] = s->alive[b] = 0;
    s->alive[c] = 1;
    s->size[c] = ein_set_size(s->net, res);
    return c;
}

static bool shares(const live *s, uint32_t a, uint32_t b)
{
    const uint64_t *sa = s->sets + (size_t)a * s->words, *sb = s->sets + (size_t)b * s->words;
    for (uint32_t w = 0; w < s->words; w++)
        if (sa[w] & sb[w])
            return true;
    return false;
}

bool ein_path_cost(const ein_mem *m, const ein_net *net, const uint32_t (*steps)[2],
                   const ein_limits *lim, double *flops, double *largest, bool *feasible)
{
    *flops = 0;
    *largest = 0;
    *feasible = true;
    if (net->n < 2)
        return true;
    live s;
    bool ok = live_init(m, net, &s);
    for (uint32_t k = 0; ok && k + 1 < net->n; k++) {
        uint32_t a = steps[k][0], b = steps[k][1];
        if (a == b || a >= s.next || b >= s.next || !s.alive[a] || !s.alive[b]) {
            ok = false;
            break;
        }
        result_of(&s, a, b, s.tmp);
        *flops +=
            ein_pair_cost(net, s.sets + (size_t)a * s.words, s.sets + (size_t)b * s.words, s.tmp);
        uint32_t c = live_contract(&s, a, b);
        if (s.size[c] > *largest)
            *largest = s.size[c];
        /* the limits are on intermediates: the last result is the output */
        if (k + 2 < net->n && !fits(net, lim, s.sets + (size_t)c * s.words, s.size[c]))
            *feasible = false;
    }
    live_free(m, &s);
    return ok;
}

/* ---- greedy ---- */

typedef struct cand {
    double key, flops;
    uint32_t a, b;
} cand;

typedef struct heap {
    cand *v;
    size_t n, cap;
} heap;

static bool cand_less(const cand *x, const cand *y)
{
    return x->key < y->key || (x->key == y->key && x->flops < y->flops);
}

static bool heap_push(const ein_mem *m, heap *h, cand c)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        cand *v = ein_calloc(m, cap, sizeof *v);
        if (!v)
            return false;
        if (h->n)
            memcpy(v, h->v, h->n * sizeof *v);
        ein_free(m, h->v);
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0 && cand_less(&c, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = c;
    return true;
}

static cand heap_pop(heap *h)
{
    cand top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && cand_less(&h->v[c + 1], &h->v[c]))
            c++;
        if (!cand_less(&h->v[c], &last))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = last;
    return top;
}

/* A uniform double in (0, 1) from a splitmix64 stream. */
static double uniform(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

typedef struct greedy {
    live s;
    heap h;
    const ein_limits *lim;
    double temperature, costmod;
    uint64_t *rng;
} greedy;

/* Queues the pair (a, b) if it fits; false on OOM. */
static bool consider(const ein_mem *m, greedy *g, uint32_t a, uint32_t b)
{
    live *s = &g->s;
    result_of(s, a, b, s->tmp);
    double size = ein_set_size(s->net, s->tmp);
    bool last = s->next == 2 * s->net->n - 2; /* this step's result would be the output */
    if (!last && !fits(s->net, g->lim, s->tmp, size))
        return true;
    double key = size - g->costmod * (s->size[a] + s->size[b]);
    if (g->temperature > 0) {
        /* Gumbel noise on a log scale: a Boltzmann choice among the best pairs */
        double z = key < 0 ? -log1p(-key) : log1p(key);
        key = z - g->temperature * log(-log(uniform(g->rng)));
    }
    double flops = ein_pair_cost(s->net, s->sets + (size_t)a * s->words,
                                 s->sets + (size_t)b * s->words, s->tmp);
    return heap_push(m, &g->h, (cand){key, flops, a, b});
}

/* Outer products of what is left, the two smallest first. */
static bool finish_outer(live *s, const ein_limits *lim, uint32_t (*steps)[2], uint32_t *k)
{
    while (*k + 1 < s->net->n) {
        uint32_t a = UINT32_MAX, b = UINT32_MAX;
        for (uint32_t t = 0; t < s->next; t++) {
            if (!s->alive[t])
                continue;
            if (a == UINT32_MAX || s->size[t] < s->size[a]) {
                b = a;
                a = t;
            } else if (b == UINT32_MAX || s->size[t] < s->size[b]) {
                b = t;
            }
        }
        uint32_t c = live_contract(s, a, b);
        steps[*k][0] = a;
        steps[*k][1] = b;
        ++*k;
        if (*k + 1 < s->net->n && !fits(s->net, lim, s->sets + (size_t)c * s->words, s->size[c]))
            return false;
    }
    return true;
}

/* 1: a path, 0: none within the limits, -1: out of memory. */
static int greedy_run(const ein_mem *m, const ein_net *net, const ein_limits *lim,
                      double temperature, double costmod, uint64_t *rng, uint32_t (*steps)[2])
{
    greedy g = {{0}, {NULL, 0, 0}, lim, temperature, costmod, rng};
    if (!live_init(m, net, &g.s)) {
        live_free(m, &g.s);
        return -1;
    }
    bool ok = true;
    for (uint32_t a = 0; ok && a < net->n; a++)
        for (uint32_t b = a + 1; ok && b < net->n; b++)
            if (shares(&g.s, a, b))
                ok = consider(m, &g, a, b);
    uint32_t k = 0;
    while (ok && g.h.n && k + 1 < net->n) {
        cand c = heap_pop(&g.h);
        if (!g.s.alive[c.a] || !g.s.alive[c.b])
            continue;
        uint32_t id = live_contract(&g.s, c.a, c.b);
        steps[k][0] = c.a;
        steps[k++][1] = c.b;
        for (uint32_t t = 0; ok && t < id; t++)
            if (g.s.alive[t] && shares(&g.s, t, id))
                ok = consider(m, &g, t, id);
    }
    int rc = !ok ? -1 : finish_outer(&g.s, lim, steps, &k) ? 1 : 0;
    ein_free(m, g.h.v);
    live_free(m, &g.s);
    return rc;
}

tf_status ein_greedy(const ein_mem *m, const ein_net *net, const ein_limits *lim,
                     uint32_t (*steps)[2], ein_err *err)
{
    int rc = greedy_run(m, net, lim, 0.0, 1.0, NULL, steps);
    if (rc < 0)
        return ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    if (rc == 0)
        return ein_fail(err, TF_ERR_UNSUPPORTED, EIN_ARG_MEMORY, -1, -1,
                        "the greedy path found no order keeping every intermediate within the "
                        "memory limit and rank");
    return TF_OK;
}

bool ein_greedy_random(const ein_mem *m, const ein_net *net, const ein_limits *lim,
                       double temperature, double costmod, uint64_t *state, uint32_t (*steps)[2])
{
    return greedy_run(m, net, lim, temperature, costmod, state, steps) > 0;
}

/* ---- choosing the method ---- */

/* AUTO's large networks: 32 greedy runs (plain, then randomized), annealed and polished. */
static tf_status greedy_polished(const ein_mem *m, const ein_net *net, const ein_limits *lim,
                                 uint32_t (*steps)[2], ein_err *err)
{
    return ein_restarts_polished(m, net, lim, 32, steps, err);
}

static tf_status run_method(const ein_mem *m, const ein_net *net, uint32_t *method,
                            const ein_limits *lim, uint32_t (*steps)[2], ein_err *err)
{
    if (*method == TF_EINSUM_AUTO) {
        if (net->n <= 10) {
            *method = TF_EINSUM_OPTIMAL;
        } else if (net->n <= 16) {
            *method = TF_EINSUM_DP;
            tf_status st = ein_dp(m, net, lim, steps, err);
            if (st != TF_ERR_UNSUPPORTED)
                return st;
            *method = TF_EINSUM_SEARCH; /* the DP outgrew its budget */
            return greedy_polished(m, net, lim, steps, err);
        } else {
            *method = TF_EINSUM_SEARCH; /* a search of fixed effort: deterministic */
            tf_status st = greedy_polished(m, net, lim, steps, err);
            if (st != TF_ERR_UNSUPPORTED || net->n > 64)
                return st;
            *method = TF_EINSUM_DP; /* every greedy run got stuck under the limits */
            return ein_dp(m, net, lim, steps, err);
        }
    }
    switch (*method) {
    case TF_EINSUM_OPTIMAL: return ein_optimal(m, net, lim, steps, err);
    case TF_EINSUM_DP: return ein_dp(m, net, lim, steps, err);
    case TF_EINSUM_GREEDY: return ein_greedy(m, net, lim, steps, err);
    case TF_EINSUM_SEARCH: return ein_search(m, net, lim, steps, err);
    default:
        return ein_fail(err, TF_ERR_VALIDATION, EIN_ARG_OPTIMIZE, -1, -1,
                        "optimize %u is not a tf_einsum_optimize (0 auto, 1 optimal, 2 dp, "
                        "3 greedy, 4 search)",
                        *method);
    }
}

tf_status ein_find_path(const ein_mem *m, const ein_net *net, uint32_t method,
                        const ein_limits *lim, ein_path *path, ein_err *err)
{
    memset(path, 0, sizeof *path);
    path->n = net->n;
    path->steps = ein_calloc(m, net->n, sizeof *path->steps);
    if (!path->steps)
        return ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    tf_status st = TF_OK;
    if (net->n < 2) {
        path->method = method == TF_EINSUM_AUTO ? TF_EINSUM_OPTIMAL : method;
        path->largest = ein_set_size(net, net->out);
        if (method > TF_EINSUM_SEARCH)
            st = run_method(m, net, &method, lim, path->steps, err);
    } else {
        st = run_method(m, net, &method, lim, path->steps, err);
        path->method = method;
        bool feasible = false;
        if (!st && (!ein_path_cost(m, net, (const uint32_t(*)[2])path->steps, lim, &path->flops,
                                   &path->largest, &feasible) ||
                    !feasible))
            st = ein_fail(err, TF_ERR_UNSUPPORTED, EIN_ARG_MEMORY, -1, -1,
                          "no contraction path found keeps every intermediate within the memory "
                          "limit and rank");
    }
    if (st) {
        ein_free(m, path->steps);
        path->steps = NULL;
    }
    return st;
}
