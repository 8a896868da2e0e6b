/*
 * einsum_search.c - improving contraction trees: subtree reconfiguration
 * and the time-budgeted search (TF_EINSUM_SEARCH).
 *
 * A tree lives as flat arrays over node ids 0 .. 2n-2 (leaves 0 .. n-1):
 * children, parent, the labels each node keeps, how many leaves under it
 * hold each label (a label is kept while some leaf outside holds it, or the
 * output does; the count is kept only for the labels the node keeps), and
 * each internal node's cost.
 *
 * Reconfiguration: a window is a node v and a cut of its subtree into up to
 * W pieces (found by opening the costliest internal nodes below v first, or
 * at random); the exact subset DP (einsum_dp.c) recontracts the pieces into
 * v's labels, and the window's internal nodes are rewired when that is
 * cheaper. The tree outside the window does not change (v keeps its leaves,
 * hence its labels).
 *
 * Search: randomized greedy restarts for a quarter of the budget, then
 * simulated annealing from the best of them: random windows (never worse),
 * and random rotations ((a b) s -> (a s) b below one node) accepted by the
 * Metropolis rule on log10 of the total cost, the temperature falling
 * geometrically to the end of the budget. The best tree seen is the answer.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <math.h>
#include <string.h>
#include <time.h>

#include "einsum_internal.h"

uint32_t ein__emit_subset_tree(const uint32_t *choice, uint32_t full, const uint32_t *leaf_id,
                               uint32_t first_id, uint32_t (*steps)[2]);

typedef struct tree {
    const ein_net *net;
    const ein_limits *lim;
    uint32_t n, ids, words;
    int32_t *left, *right, *parent;
    double *cost;    /* internal nodes: the step's flops */
    uint64_t *idx;   /* ids * words */
    uint32_t *sub;   /* ids * n_labels: leaves under the node holding each label */
    uint32_t *total; /* per label: leaves holding it */
    double flops;
    int32_t root;
} tree;

static uint64_t *idx_of(const tree *t, int32_t v)
{
    return t->idx + (size_t)v * t->words;
}

/* Recomputes v's counts, labels and cost from its children. */
static void refresh(tree *t, int32_t v)
{
    const ein_net *net = t->net;
    uint32_t L = net->n_labels;
    int32_t a = t->left[v], b = t->right[v];
    uint32_t *sv = t->sub + (size_t)v * L;
    const uint32_t *sa = t->sub + (size_t)a * L, *sb = t->sub + (size_t)b * L;
    uint64_t *iv = idx_of(t, v);
    const uint64_t *ia = idx_of(t, a), *ib = idx_of(t, b);
    for (uint32_t w = 0; w < t->words; w++) {
        uint64_t u = ia[w] | ib[w], keep = 0;
        for (uint64_t bits = u; bits; bits &= bits - 1) {
            uint32_t l = w * 64 + (uint32_t)__builtin_ctzll(bits);
            /* a child without the label has no leaf holding it (else the
               label would be in its set); its entry may be stale */
            sv[l] = (ein_has(ia, l) ? sa[l] : 0) + (ein_has(ib, l) ? sb[l] : 0);
            if (ein_has(net->out, l) || sv[l] < t->total[l])
                keep |= (uint64_t)1 << (l & 63);
        }
        iv[w] = keep;
    }
    t->cost[v] = ein_pair_cost(net, ia, ib, iv);
}

static bool tree_alloc(const ein_mem *m, const ein_net *net, const ein_limits *lim, tree *t)
{
    memset(t, 0, sizeof *t);
    t->net = net;
    t->lim = lim;
    t->n = net->n;
    t->ids = 2 * net->n - 1;
    t->words = net->words;
    t->left = ein_calloc(m, t->ids, sizeof *t->left);
    t->right = ein_calloc(m, t->ids, sizeof *t->right);
    t->parent = ein_calloc(m, t->ids, sizeof *t->parent);
    t->cost = ein_calloc(m, t->ids, sizeof *t->cost);
    t->idx = ein_calloc(m, (size_t)t->ids * t->words, sizeof *t->idx);
    t->sub = ein_calloc(m, (size_t)t->ids * net->n_labels + 1, sizeof *t->sub);
    t->total = ein_calloc(m, net->n_labels + 1, sizeof *t->total);
    return t->left && t->right && t->parent && t->cost && t->idx && t->sub && t->total;
}

static void tree_free(const ein_mem *m, tree *t)
{
    ein_free(m, t->left);
    ein_free(m, t->right);
    ein_free(m, t->parent);
    ein_free(m, t->cost);
    ein_free(m, t->idx);
    ein_free(m, t->sub);
    ein_free(m, t->total);
}

/* The tree of `steps` (SSA ids; internal node n+k is step k). */
static void tree_load(tree *t, const uint32_t (*steps)[2])
{
    const ein_net *net = t->net;
    uint32_t L = net->n_labels;
    memset(t->total, 0, L * sizeof *t->total);
    for (uint32_t i = 0; i < t->n; i++) {
        t->left[i] = t->right[i] = -1;
        memcpy(idx_of(t, (int32_t)i), net->sets + (size_t)i * t->words, t->words * 8);
        for (uint32_t l = 0; l < L; l++) {
            t->sub[(size_t)i * L + l] = ein_has(net->sets + (size_t)i * t->words, l);
            t->total[l] += t->sub[(size_t)i * L + l];
        }
    }
    t->flops = 0;
    for (uint32_t k = 0; k + 1 < t->n; k++) {
        int32_t v = (int32_t)(t->n + k);
        t->left[v] = (int32_t)steps[k][0];
        t->right[v] = (int32_t)steps[k][1];
        t->parent[steps[k][0]] = t->parent[steps[k][1]] = v;
        memset(t->sub + (size_t)v * L, 0, L * sizeof *t->sub);
        refresh(t, v);
        t->flops += t->cost[v];
    }
    t->root = (int32_t)t->ids - 1;
    t->parent[t->root] = -1;
}

static void tree_copy(tree *dst, const tree *src)
{
    size_t ids = src->ids, L = src->net->n_labels;
    memcpy(dst->left, src->left, ids * sizeof *dst->left);
    memcpy(dst->right, src->right, ids * sizeof *dst->right);
    memcpy(dst->parent, src->parent, ids * sizeof *dst->parent);
    memcpy(dst->cost, src->cost, ids * sizeof *dst->cost);
    memcpy(dst->idx, src->idx, ids * src->words * sizeof *dst->idx);
    memcpy(dst->sub, src->sub, ids * L * sizeof *dst->sub);
    dst->flops = src->flops;
    dst->root = src->root;
}

/* Post-order SSA steps of the tree. */
static uint32_t tree_emit(const tree *t, int32_t v, uint32_t *next, uint32_t (*steps)[2],
                          uint32_t *k)
{
    if (t->left[v] < 0)
        return (uint32_t)v;
    uint32_t a = tree_emit(t, t->left[v], next, steps, k);
    uint32_t b = tree_emit(t, t->right[v], next, steps, k);
    steps[*k][0] = a;
    steps[*k][1] = b;
    ++*k;
    return (*next)++;
}

static void tree_store(const tree *t, uint32_t (*steps)[2])
{
    uint32_t next = t->n, k = 0;
    tree_emit(t, t->root, &next, steps, &k);
}

/* ---- windows ---- */

#define MAX_WINDOW 12

typedef struct window {
    int32_t pieces[MAX_WINDOW];
    int32_t inner[MAX_WINDOW]; /* the window's internal nodes, v first */
    uint32_t n_pieces, n_inner;
    double old_cost;
} window;

/* Opens v's subtree into up to `size` pieces: the costliest internal piece
   first, or (rng non-NULL) a random one. */
static void window_open(const tree *t, int32_t v, uint32_t size, uint64_t *rng, window *w)
{
    w->n_pieces = 2;
    w->pieces[0] = t->left[v];
    w->pieces[1] = t->right[v];
    w->n_inner = 1;
    w->inner[0] = v;
    w->old_cost = t->cost[v];
    while (w->n_pieces < size) {
        int32_t pick = -1;
        uint32_t seen = 0;
        for (uint32_t i = 0; i < w->n_pieces; i++) {
            int32_t p = w->pieces[i];
            if (t->left[p] < 0)
                continue;
            seen++;
            bool take =
                rng ? ((uint32_t)((*rng = *rng * 6364136223846793005ull + 1442695040888963407ull) >>
                                  33) %
                       seen) == 0
                    : pick < 0 || t->cost[p] > t->cost[w->pieces[pick]];
            if (take)
                pick = (int32_t)i;
        }
        if (pick < 0)
            break;
        int32_t p = w->pieces[pick];
        w->pieces[pick] = t->left[p];
        w->pieces[w->n_pieces++] = t->right[p];
        w->inner[w->n_inner++] = p;
        w->old_cost += t->cost[p];
    }
}

/* Rewires the window's internal nodes along choice (root: inner[0]). */
static int32_t rewire(tree *t, const window *w, const uint32_t *choice, uint32_t s, uint32_t *used)
{
    if ((s & (s - 1)) == 0)
        return w->pieces[__builtin_ctz(s)];
    int32_t v = w->inner[(*used)++];
    int32_t a = rewire(t, w, choice, choice[s], used);
    int32_t b = rewire(t, w, choice, s ^ choice[s], used);
    t->left[v] = a;
    t->right[v] = b;
    t->parent[a] = t->parent[b] = v;
    refresh(t, v);
    return v;
}

/* Recontracts v's window optimally; true when the tree got cheaper. */
static bool window_improve(const ein_mem *m, tree *t, int32_t v, uint32_t size, uint64_t *rng,
                           uint64_t *sets, uint32_t *choice)
{
    window w;
    window_open(t, v, size, rng, &w);
    if (w.n_pieces < 3)
        return false;
    for (uint32_t i = 0; i < w.n_pieces; i++)
        memcpy(sets + (size_t)i * t->words, idx_of(t, w.pieces[i]), t->words * 8);
    double best =
        ein_subset_dp(m, t->net, w.n_pieces, sets, idx_of(t, v), t->lim, w.old_cost, choice);
    if (!(best < w.old_cost * (1 - 1e-12)))
        return false;
    int32_t up = t->parent[v];
    uint32_t used = 0;
    rewire(t, &w, choice, (1u << w.n_pieces) - 1, &used);
    t->parent[v] = up;
    t->flops += best - w.old_cost;
    return true;
}

typedef struct scratch {
    uint64_t *sets;
    uint32_t *choice;
} scratch;

static bool scratch_init(const ein_mem *m, const ein_net *net, scratch *s)
{
    s->sets = ein_calloc(m, (size_t)MAX_WINDOW * net->words, sizeof *s->sets);
    s->choice = ein_calloc(m, (size_t)1 << MAX_WINDOW, sizeof *s->choice);
    return s->sets && s->choice;
}

static void scratch_free(const ein_mem *m, scratch *s)
{
    ein_free(m, s->sets);
    ein_free(m, s->choice);
}

/* Internal nodes in post-order (children before parents). */
static uint32_t post_order(const tree *t, int32_t v, int32_t *out, uint32_t k)
{
    if (t->left[v] < 0)
        return k;
    k = post_order(t, t->left[v], out, k);
    k = post_order(t, t->right[v], out, k);
    out[k++] = v;
    return k;
}

static bool sweep(const ein_mem *m, tree *t, uint32_t size, scratch *s, int32_t *order)
{
    uint32_t n = post_order(t, t->root, order, 0);
    bool better = false;
    for (uint32_t i = 0; i < n; i++)
        better |= window_improve(m, t, order[i], size, NULL, s->sets, s->choice);
    return better;
}

tf_status ein_reconfigure(const ein_mem *m, const ein_net *net, const ein_limits *lim,
                          uint32_t size, uint32_t passes, uint32_t (*steps)[2])
{
    if (net->n < 3)
        return TF_OK;
    if (size > MAX_WINDOW)
        size = MAX_WINDOW;
    tree t;
    scratch s = {NULL, NULL};
    int32_t *order = ein_calloc(m, net->n, sizeof *order);
    tf_status st = TF_ERR_OUT_OF_MEMORY;
    if (order && tree_alloc(m, net, lim, &t) && scratch_init(m, net, &s)) {
        tree_load(&t, (const uint32_t(*)[2])steps);
        for (uint32_t p = 0; p < passes && sweep(m, &t, size, &s, order); p++)
            ;
        tree_store(&t, steps);
        st = TF_OK;
    }
    scratch_free(m, &s);
    tree_free(m, &t);
    ein_free(m, order);
    return st;
}

/* ---- annealing ---- */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double unit(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(*state >> 11) + 0.5) / 9007199254740992.0;
}

static bool fits_node(const tree *t, int32_t v)
{
    const ein_limits *lim = t->lim;
    if (lim->memory > 0 && ein_set_size(t->net, idx_of(t, v)) > lim->memory)
        return false;
    return lim->max_rank == 0 || ein_set_count(t->words, idx_of(t, v)) <= lim->max_rank;
}

/* Below p = (v s) with v = (a b): v becomes (a s) and p (v b), kept when the
   Metropolis rule accepts the new total at temperature temp. */
static void rotate(tree *t, int32_t v, double temp, uint64_t *rng)
{
    int32_t p = t->parent[v];
    if (p < 0 || t->left[v] < 0)
        return;
    bool v_left = t->left[p] == v, a_left = unit(rng) < 0.5;
    int32_t s = v_left ? t->right[p] : t->left[p];
    int32_t a = a_left ? t->left[v] : t->right[v], b = a_left ? t->right[v] : t->left[v];
    double before = t->cost[v] + t->cost[p], old_flops = t->flops;
    int32_t saved[4] = {t->left[v], t->right[v], t->left[p], t->right[p]};
    t->left[v] = a, t->right[v] = s;
    t->left[p] = v, t->right[p] = b;
    t->parent[s] = v, t->parent[b] = p;
    refresh(t, v);
    refresh(t, p);
    double flops = old_flops - before + t->cost[v] + t->cost[p];
    bool accept = fits_node(t, v) && (flops <= old_flops ||
                                      unit(rng) < exp(-(log10(flops) - log10(old_flops)) / temp));
    if (accept) {
        t->flops = flops;
        return;
    }
    t->left[v] = saved[0], t->right[v] = saved[1];
    t->left[p] = saved[2], t->right[p] = saved[3];
    t->parent[saved[0]] = t->parent[saved[1]] = v;
    t->parent[saved[2]] = t->parent[saved[3]] = p;
    refresh(t, v);
    refresh(t, p);
    t->flops = old_flops;
}

/* Randomized greedy restarts, at least `count` and until `until` (the first
   one plain greedy); the best feasible path into steps, its cost returned. */
static double restarts(const ein_mem *m, const ein_net *net, const ein_limits *lim, uint32_t count,
                       double until, uint64_t *rng, uint32_t (*steps)[2], uint32_t (*trial)[2])
{
    double best = INFINITY;
    /* under a tight rank limit most greedy runs get stuck: keep trying (up to 16x
       `count`) until one gets through */
    for (uint32_t r = 0; r < count || now_seconds() < until || (isinf(best) && r < 16 * count);
         r++) {
        double temp = r == 0 ? 0.0 : exp(log(0.001) + unit(rng) * (log(1.0) - log(0.001)));
        double costmod = r == 0 ? 1.0 : 0.1 + 3.9 * unit(rng);
        double flops, largest;
        bool feasible;
        if (!ein_greedy_random(m, net, lim, temp, costmod, rng, trial) ||
            !ein_path_cost(m, net, (const uint32_t(*)[2])trial, lim, &flops, &largest, &feasible) ||
            !feasible || !(flops < best))
            continue;
        best = flops;
        memcpy(steps, trial, (size_t)(net->n - 1) * sizeof *steps);
    }
    return best;
}

/* Anneals cur until `until` (seconds; iters 0) or for `iters` moves (then
   deterministic), keeping the best tree seen in best. */
static void anneal(const ein_mem *m, tree *cur, tree *best, double start, double until,
                   uint64_t iters, uint64_t *rng, scratch *s)
{
    const double t0 = 0.3, t1 = 0.002;
    uint32_t inner = cur->n - 1;
    double now = start;
    for (uint64_t it = 0;; it++) {
        if (iters ? it >= iters : it % 16 == 0 && (now = now_seconds()) >= until)
            break;
        double frac = iters ? (double)it / (double)iters : (now - start) / (until - start);
        double temp = t0 * pow(t1 / t0, frac < 0 ? 0 : frac > 1 ? 1 : frac);
        int32_t v = (int32_t)(cur->n + (uint32_t)(unit(rng) * inner) % inner);
        if (unit(rng) < 0.6) {
            uint32_t size = 4 + (uint32_t)(unit(rng) * 7);
            window_improve(m, cur, v, size, unit(rng) < 0.5 ? rng : NULL, s->sets, s->choice);
        } else {
            rotate(cur, v, temp, rng);
        }
        if (cur->flops < best->flops * (1 - 1e-12))
            tree_copy(best, cur);
    }
}

/* Anneals the tree of `steps` until `until` (iters 0) or for `iters` moves, and
   stores the best tree seen back in steps; false on OOM. */
static bool anneal_steps(const ein_mem *m, const ein_net *net, const ein_limits *lim, double until,
                         uint64_t iters, uint64_t *rng, uint32_t (*steps)[2])
{
    tree cur, best;
    scratch s = {NULL, NULL};
    bool ok =
        tree_alloc(m, net, lim, &cur) && tree_alloc(m, net, lim, &best) && scratch_init(m, net, &s);
    if (ok) {
        tree_load(&cur, (const uint32_t(*)[2])steps);
        tree_load(&best, (const uint32_t(*)[2])steps);
        anneal(m, &cur, &best, iters ? 0 : now_seconds(), until, iters, rng, &s);
        tree_store(&best, steps);
    }
    scratch_free(m, &s);
    tree_free(m, &cur);
    tree_free(m, &best);
    return ok;
}

tf_status ein_search(const ein_mem *m, const ein_net *net, const ein_limits *lim,
                     uint32_t (*steps)[2], ein_err *err)
{
    if (net->n <= 12) /* the exact answer costs less than any budget */
        return ein_optimal(m, net, lim, steps, err);
    double start = now_seconds(), budget = lim->seconds > 0 ? lim->seconds : 1.0;
    uint64_t rng = lim->seed ? lim->seed : 0x5eed5eedull;
    uint32_t(*trial)[2] = ein_calloc(m, net->n, sizeof *trial);
    if (!trial)
        return ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    double found = restarts(m, net, lim, 16, start + budget / 4, &rng, steps, trial);
    ein_free(m, trial);
    if (isinf(found))
        return ein_fail(err, TF_ERR_UNSUPPORTED, EIN_ARG_MEMORY, -1, -1,
                        "the search found no order keeping every intermediate within the "
                        "memory limit and rank");
    if (!anneal_steps(m, net, lim, start + budget, 0, &rng, steps))
        return ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    return TF_OK;
}

tf_status ein_restarts_polished(const ein_mem *m, const ein_net *net, const ein_limits *lim,
                                uint32_t count, uint32_t (*steps)[2], ein_err *err)
{
    uint64_t rng = 0x5eed5eedull; /* a fixed stream: the same path on every run */
    uint32_t(*trial)[2] = ein_calloc(m, net->n, sizeof *trial);
    if (!trial)
        return ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    double found = restarts(m, net, lim, count, -INFINITY, &rng, steps, trial);
    ein_free(m, trial);
    if (isinf(found))
        return ein_fail(err, TF_ERR_UNSUPPORTED, EIN_ARG_MEMORY, -1, -1,
                        "no greedy order (plain or randomized) keeps every intermediate within "
                        "the memory limit and rank");
    uint64_t moves = 64 * (uint64_t)net->n;
    if (moves > 8192)
        moves = 8192;
    if (net->n >= 3 && (!anneal_steps(m, net, lim, 0, moves, &rng, steps) ||
                        ein_reconfigure(m, net, lim, 10, 16, steps)))
        return ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    return TF_OK;
}
