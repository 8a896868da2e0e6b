/*
 * einsum_dp.c - the two dynamic programmings over contraction trees.
 *
 * A tree's cost is the sum of its internal nodes' costs, and a node's cost
 * depends only on the two sets of tensors it joins (the labels a set keeps
 * are those it shares with the rest or the output), so the best tree of a
 * set is the best split into two best trees.
 *
 * ein_subset_dp: every split of every subset of k <= 16 pieces, outer
 * products included - exhaustive, O(3^k), bounded by a known cost (a
 * greedy path's: subsets costing more are dropped, and splits whose two
 * halves already cost more than the best split found are skipped). It is
 * TF_EINSUM_OPTIMAL on the whole network and the window optimiser of the
 * subtree reconfiguration (einsum_search.c).
 *
 * ein_dp: splits of connected sets into two connected sets that share a
 * label, level by level (Kourtis et al., as opt_einsum's 'dp'), under a
 * cost cap that grows eightfold until the whole network is reached: every
 * subtree of the best tree costs no more than the tree, so the first cap
 * that lets the whole set through gives the least cost among trees that
 * join only connected sets. Disconnected parts are then joined by outer
 * products, the smallest first. For up to 64 tensors; a table past its
 * budget gives TF_ERR_UNSUPPORTED.
 */
#include <math.h>
#include <string.h>

#include "einsum_internal.h"

/* ---- exhaustive over subsets ---- */

typedef struct pieces {
    uint32_t k, n_rel, rw;
    uint32_t *occ; /* per relevant label: the pieces holding it */
    uint8_t *in_out;
    double *ext;
    uint64_t *idx; /* 2^k * rw: the labels each subset keeps */
    double *size;
} pieces;

static void keep_labels(pieces *p, uint32_t s)
{
    uint32_t full = (p->k == 32 ? 0u : (1u << p->k)) - 1u;
    uint64_t *dst = p->idx + (size_t)s * p->rw;
    double size = 1;
    for (uint32_t j = 0; j < p->n_rel; j++)
        if ((p->occ[j] & s) && ((p->occ[j] & ~s & full) || p->in_out[j])) {
            dst[j >> 6] |= (uint64_t)1 << (j & 63);
            size *= p->ext[j];
        }
    p->size[s] = size;
}

static bool pieces_init(const ein_mem *m, const ein_net *net, uint32_t k, const uint64_t *sets,
                        const uint64_t *out, pieces *p)
{
    memset(p, 0, sizeof *p);
    p->k = k;
    uint32_t cap = net->n_labels;
    p->occ = ein_calloc(m, cap + 1, sizeof *p->occ);
    p->in_out = ein_calloc(m, cap + 1, 1);
    p->ext = ein_calloc(m, cap + 1, sizeof *p->ext);
    if (!p->occ || !p->in_out || !p->ext)
        return false;
    for (uint32_t l = 0; l < net->n_labels; l++) {
        uint32_t occ = 0;
        for (uint32_t i = 0; i < k; i++)
            if (ein_has(sets + (size_t)i * net->words, l))
                occ |= 1u << i;
        if (!occ)
            continue;
        p->occ[p->n_rel] = occ;
        p->in_out[p->n_rel] = ein_has(out, l);
        p->ext[p->n_rel++] = net->extent[l];
    }
    p->rw = p->n_rel ? (p->n_rel + 63) / 64 : 1;
    size_t subsets = (size_t)1 << k;
    p->idx = ein_calloc(m, subsets * p->rw, sizeof *p->idx);
    p->size = ein_calloc(m, subsets, sizeof *p->size);
    if (!p->idx || !p->size)
        return false;
    for (uint32_t s = 1; s < subsets; s++)
        keep_labels(p, s);
    return true;
}

static void pieces_free(const ein_mem *m, pieces *p)
{
    ein_free(m, p->occ);
    ein_free(m, p->in_out);
    ein_free(m, p->ext);
    ein_free(m, p->idx);
    ein_free(m, p->size);
}

/* numpy's count for joining subsets a and b into s. */
static double split_cost(const pieces *p, uint32_t a, uint32_t b, uint32_t s)
{
    const uint64_t *ia = p->idx + (size_t)a * p->rw, *ib = p->idx + (size_t)b * p->rw;
    const uint64_t *is = p->idx + (size_t)s * p->rw;
    double size = 1;
    uint64_t removed = 0;
    for (uint32_t w = 0; w < p->rw; w++) {
        uint64_t u = ia[w] | ib[w];
        removed |= u & ~is[w];
        for (; u; u &= u - 1)
            size *= p->ext[w * 64 + (uint32_t)__builtin_ctzll(u)];
    }
    return removed ? 2 * size : size;
}

static bool subset_fits(const pieces *p, uint32_t s, const ein_limits *lim)
{
    if (lim->memory > 0 && p->size[s] > lim->memory)
        return false;
    return lim->max_rank == 0 || ein_set_count(p->rw, p->idx + (size_t)s * p->rw) <= lim->max_rank;
}

/* The best split of s (two or more pieces) into best[] and choice[]. */
static void best_split(const pieces *p, uint32_t s, double *best, uint32_t *choice)
{
    uint32_t low = s & (~s + 1), rest = s ^ low;
    double b = INFINITY;
    uint32_t pick = 0;
    for (uint32_t sub = rest;; sub = (sub - 1) & rest) {
        uint32_t a = sub | low, c = s ^ a;
        if (c) {
            double base = best[a] + best[c];
            if (base < b) {
                double total = base + split_cost(p, a, c, s);
                if (total < b) {
                    b = total;
                    pick = a;
                }
            }
        }
        if (!sub)
            break;
    }
    best[s] = b;
    choice[s] = pick;
}

double ein_subset_dp(const ein_mem *m, const ein_net *net, uint32_t k, const uint64_t *sets,
                     const uint64_t *out, const ein_limits *lim, double bound, uint32_t *choice)
{
    pieces p;
    memset(&p, 0, sizeof p);
    double result = NAN;
    double *best = NULL;
    if (k > 16 || !pieces_init(m, net, k, sets, out, &p))
        goto done;
    uint32_t full = (1u << k) - 1;
    best = ein_calloc(m, (size_t)full + 1, sizeof *best);
    if (!best)
        goto done;
    for (uint32_t s = 1; s <= full; s++) {
        if ((s & (s - 1)) == 0) {
            best[s] = 0;
            choice[s] = 0;
            continue;
        }
        if (s != full && !subset_fits(&p, s, lim)) {
            best[s] = INFINITY;
            continue;
        }
        best_split(&p, s, best, choice);
        if (best[s] > bound)
            best[s] = INFINITY;
    }
    result = best[full];
done:
    ein_free(m, best);
    pieces_free(m, &p);
    return result;
}

/* Emits the steps of subset s's tree (post-order); returns its id. */
static uint32_t emit_subset(const uint32_t *choice, uint32_t s, const uint32_t *leaf_id,
                            uint32_t *next, uint32_t (*steps)[2], uint32_t *k)
{
    if ((s & (s - 1)) == 0)
        return leaf_id[__builtin_ctz(s)];
    uint32_t a = emit_subset(choice, choice[s], leaf_id, next, steps, k);
    uint32_t b = emit_subset(choice, s ^ choice[s], leaf_id, next, steps, k);
    steps[*k][0] = a;
    steps[*k][1] = b;
    ++*k;
    return (*next)++;
}

uint32_t ein__emit_subset_tree(const uint32_t *choice, uint32_t full, const uint32_t *leaf_id,
                               uint32_t first_id, uint32_t (*steps)[2]);

uint32_t ein__emit_subset_tree(const uint32_t *choice, uint32_t full, const uint32_t *leaf_id,
                               uint32_t first_id, uint32_t (*steps)[2])
{
    uint32_t next = first_id, k = 0;
    emit_subset(choice, full, leaf_id, &next, steps, &k);
    return k;
}

tf_status ein_optimal(const ein_mem *m, const ein_net *net, const ein_limits *lim,
                      uint32_t (*steps)[2], ein_err *err)
{
    if (net->n > 16)
        return ein_fail(err, TF_ERR_UNSUPPORTED, EIN_ARG_OPTIMIZE, -1, -1,
                        "optimize 'optimal' takes at most 16 operands, got %u (use dp, greedy or "
                        "search)",
                        net->n);
    /* a greedy path bounds the search (when there is one) */
    double bound = INFINITY, flops, largest;
    bool feasible;
    ein_err ignored;
    if (ein_greedy(m, net, lim, steps, &ignored) == TF_OK &&
        ein_path_cost(m, net, (const uint32_t(*)[2])steps, lim, &flops, &largest, &feasible) &&
        feasible)
        bound = flops * (1 + 1e-12);
    uint32_t *choice = ein_calloc(m, (size_t)1 << net->n, sizeof *choice);
    if (!choice)
        return ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    double best = ein_subset_dp(m, net, net->n, net->sets, net->out, lim, bound, choice);
    tf_status st = TF_OK;
    if (isnan(best))
        st = ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    else if (isinf(best))
        st = ein_fail(err, TF_ERR_UNSUPPORTED, EIN_ARG_MEMORY, -1, -1,
                      "no contraction order keeps every intermediate within the memory limit "
                      "and rank");
    else {
        uint32_t leaf[16];
        for (uint32_t i = 0; i < net->n; i++)
            leaf[i] = i;
        ein__emit_subset_tree(choice, (1u << net->n) - 1, leaf, net->n, steps);
    }
    ein_free(m, choice);
    return st;
}

/* ---- connected subnetworks ---- */

typedef struct dp_entry {
    uint64_t mask, left;
    double cost;
} dp_entry;

typedef struct dp_table {
    const ein_net *net;
    const ein_limits *lim;
    dp_entry *e;
    uint64_t *labels; /* per entry, net->words */
    size_t n, cap;
    uint32_t *slot; /* open addressing: entry index + 1, 0 empty */
    size_t n_slots;
    uint32_t **level; /* per size: entry indices */
    size_t *level_n, *level_cap;
    uint64_t *occ; /* per label: tensors holding it */
    uint64_t all;  /* every tensor: the whole network's result is the output */
    uint64_t visits;
} dp_table;

#define DP_MAX_ENTRIES ((size_t)1 << 21)
#define DP_MAX_VISITS ((uint64_t)1 << 27)

static size_t hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

static dp_entry *dp_find(const dp_table *t, uint64_t mask)
{
    for (size_t h = hash64(mask) & (t->n_slots - 1);; h = (h + 1) & (t->n_slots - 1)) {
        if (!t->slot[h])
            return NULL;
        if (t->e[t->slot[h] - 1].mask == mask)
            return &t->e[t->slot[h] - 1];
    }
}

static bool dp_grow(const ein_mem *m, dp_table *t)
{
    size_t cap = t->cap ? 2 * t->cap : 1024, w = t->net->words;
    dp_entry *e = ein_calloc(m, cap, sizeof *e);
    uint64_t *lab = ein_calloc(m, cap * w, sizeof *lab);
    uint32_t *slot = ein_calloc(m, 2 * cap, sizeof *slot);
    if (!e || !lab || !slot) {
        ein_free(m, e);
        ein_free(m, lab);
        ein_free(m, slot);
        return false;
    }
    if (t->n) {
        memcpy(e, t->e, t->n * sizeof *e);
        memcpy(lab, t->labels, t->n * w * sizeof *lab);
    }
    ein_free(m, t->e);
    ein_free(m, t->labels);
    ein_free(m, t->slot);
    t->e = e;
    t->labels = lab;
    t->slot = slot;
    t->cap = cap;
    t->n_slots = 2 * cap;
    for (size_t i = 0; i < t->n; i++) {
        size_t h = hash64(e[i].mask) & (t->n_slots - 1);
        while (slot[h])
            h = (h + 1) & (t->n_slots - 1);
        slot[h] = (uint32_t)i + 1;
    }
    return true;
}

static bool level_push(const ein_mem *m, dp_table *t, uint32_t size, uint32_t entry)
{
    if (t->level_n[size] == t->level_cap[size]) {
        size_t cap = t->level_cap[size] ? 2 * t->level_cap[size] : 64;
        uint32_t *v = ein_calloc(m, cap, sizeof *v);
        if (!v)
            return false;
        if (t->level_n[size])
            memcpy(v, t->level[size], t->level_n[size] * sizeof *v);
        ein_free(m, t->level[size]);
        t->level[size] = v;
        t->level_cap[size] = cap;
    }
    t->level[size][t->level_n[size]++] = entry;
    return true;
}

/* The labels set `mask` keeps, into dst. */
static void dp_keep(const dp_table *t, uint64_t mask, uint64_t *dst)
{
    const ein_net *net = t->net;
    memset(dst, 0, net->words * sizeof *dst);
    for (uint32_t l = 0; l < net->n_labels; l++)
        if ((t->occ[l] & mask) && ((t->occ[l] & ~mask) || ein_has(net->out, l)))
            ein_add(dst, l);
}

/* Adds or improves the entry of `mask`; -1 on OOM or past the budget. */
static int dp_offer(const ein_mem *m, dp_table *t, uint64_t mask, uint64_t left, double cost,
                    const uint64_t *labels)
{
    dp_entry *e = dp_find(t, mask);
    if (e) {
        if (cost < e->cost) {
            e->cost = cost;
            e->left = left;
        }
        return 0;
    }
    if (t->n >= DP_MAX_ENTRIES)
        return -1;
    if (t->n + 1 > t->cap && !dp_grow(m, t)) /* slots stay at most half full */
        return -1;
    size_t i = t->n++, w = t->net->words;
    t->e[i] = (dp_entry){mask, left, cost};
    memcpy(t->labels + i * w, labels, w * sizeof *labels);
    size_t h = hash64(mask) & (t->n_slots - 1);
    while (t->slot[h])
        h = (h + 1) & (t->n_slots - 1);
    t->slot[h] = (uint32_t)i + 1;
    return level_push(m, t, (uint32_t)__builtin_popcountll(mask), (uint32_t)i) ? 0 : -1;
}

static bool intersect(const uint64_t *a, const uint64_t *b, uint32_t words)
{
    for (uint32_t w = 0; w < words; w++)
        if (a[w] & b[w])
            return true;
    return false;
}

/* Level `size` from the smaller ones, under cap; -1 OOM/budget. */
static int dp_level(const ein_mem *m, dp_table *t, uint32_t size, double cap, uint64_t *tmp)
{
    const ein_net *net = t->net;
    uint32_t w = net->words;
    for (uint32_t ka = 1; ka <= size / 2; ka++) {
        uint32_t kb = size - ka;
        for (size_t i = 0; i < t->level_n[ka]; i++) {
            dp_entry a = t->e[t->level[ka][i]];
            for (size_t j = ka == kb ? i + 1 : 0; j < t->level_n[kb]; j++) {
                if (++t->visits > DP_MAX_VISITS)
                    return -1;
                dp_entry b = t->e[t->level[kb][j]];
                /* fetched each time: dp_offer may move the labels */
                const uint64_t *la = t->labels + (size_t)t->level[ka][i] * w;
                const uint64_t *lb = t->labels + (size_t)t->level[kb][j] * w;
                if ((a.mask & b.mask) || !intersect(la, lb, w))
                    continue;
                double base = a.cost + b.cost;
                if (base > cap)
                    continue;
                uint64_t s = a.mask | b.mask;
                dp_keep(t, s, tmp);
                double size_s = ein_set_size(net, tmp);
                if (s != t->all && ((t->lim->memory > 0 && size_s > t->lim->memory) ||
                                    (t->lim->max_rank && ein_set_count(w, tmp) > t->lim->max_rank)))
                    continue;
                double cost = base + ein_pair_cost(net, la, lb, tmp);
                if (cost <= cap && dp_offer(m, t, s, a.mask, cost, tmp) < 0)
                    return -1;
            }
        }
    }
    return 0;
}

static void dp_reset(const ein_mem *m, dp_table *t)
{
    for (uint32_t k = 0; k <= 64; k++)
        t->level_n[k] = 0;
    memset(t->slot, 0, t->n_slots * sizeof *t->slot);
    t->n = 0;
    t->visits = 0;
    (void)m;
}

/* One component's best tree under a growing cap; 1 found, 0 budget, -1 OOM. */
static int dp_component(const ein_mem *m, dp_table *t, uint64_t comp, uint64_t *tmp)
{
    const ein_net *net = t->net;
    double cap = 1;
    for (;;) {
        dp_reset(m, t);
        for (uint32_t i = 0; i < net->n; i++)
            if ((comp >> i) & 1)
                if (dp_offer(m, t, (uint64_t)1 << i, 0, 0.0, net->sets + (size_t)i * net->words) <
                    0)
                    return -1;
        uint32_t size = (uint32_t)__builtin_popcountll(comp);
        for (uint32_t k = 2; k <= size; k++)
            if (dp_level(m, t, k, cap, tmp) < 0)
                return 0;
        if (dp_find(t, comp))
            return 1;
        if (cap > 1e300)
            return 0;
        cap *= 8;
    }
}

static uint32_t dp_emit(const dp_table *t, uint64_t mask, uint32_t *next, uint32_t (*steps)[2],
                        uint32_t *k)
{
    if ((mask & (mask - 1)) == 0)
        return (uint32_t)__builtin_ctzll(mask);
    const dp_entry *e = dp_find(t, mask);
    uint32_t a = dp_emit(t, e->left, next, steps, k);
    uint32_t b = dp_emit(t, mask ^ e->left, next, steps, k);
    steps[*k][0] = a;
    steps[*k][1] = b;
    ++*k;
    return (*next)++;
}

/* Connected components (tensors sharing labels), as masks. */
static uint32_t components(const dp_table *t, uint64_t *comp)
{
    const ein_net *net = t->net;
    uint64_t seen = 0;
    uint32_t n = 0;
    for (uint32_t i = 0; i < net->n; i++) {
        if ((seen >> i) & 1)
            continue;
        uint64_t c = (uint64_t)1 << i, grown;
        do {
            grown = c;
            for (uint32_t l = 0; l < net->n_labels; l++)
                if (t->occ[l] & c)
                    c |= t->occ[l];
        } while (c != grown);
        seen |= c;
        comp[n++] = c;
    }
    return n;
}

static void dp_free(const ein_mem *m, dp_table *t)
{
    ein_free(m, t->e);
    ein_free(m, t->labels);
    ein_free(m, t->slot);
    if (t->level)
        for (uint32_t k = 0; k <= 64; k++)
            ein_free(m, t->level[k]);
    ein_free(m, t->level);
    ein_free(m, t->level_n);
    ein_free(m, t->level_cap);
    ein_free(m, t->occ);
}

/* Joins the components' roots by outer products, the smallest first. */
uint32_t ein__join_roots(const ein_net *net, uint32_t *roots, double *sizes, uint32_t n_roots,
                         uint32_t next, uint32_t (*steps)[2], uint32_t k);

uint32_t ein__join_roots(const ein_net *net, uint32_t *roots, double *sizes, uint32_t n_roots,
                         uint32_t next, uint32_t (*steps)[2], uint32_t k)
{
    (void)net;
    while (n_roots > 1) {
        uint32_t a = 0, b = 1;
        if (sizes[b] < sizes[a])
            a = 1, b = 0;
        for (uint32_t i = 2; i < n_roots; i++) {
            if (sizes[i] < sizes[a]) {
                b = a;
                a = i;
            } else if (sizes[i] < sizes[b]) {
                b = i;
            }
        }
        steps[k][0] = roots[a];
        steps[k++][1] = roots[b];
        roots[a] = next++;
        sizes[a] *= sizes[b];
        roots[b] = roots[--n_roots];
        sizes[b] = sizes[n_roots];
    }
    return k;
}

static tf_status dp_run(const ein_mem *m, dp_table *t, uint32_t (*steps)[2], ein_err *err)
{
    const ein_net *net = t->net;
    uint64_t comp[64], *tmp = ein_calloc(m, net->words, sizeof *tmp);
    uint32_t roots[64], next = net->n, k = 0;
    double sizes[64];
    if (!tmp)
        return ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    uint32_t n_comp = components(t, comp);
    tf_status st = TF_OK;
    for (uint32_t c = 0; c < n_comp && !st; c++) {
        int rc = dp_component(m, t, comp[c], tmp);
        if (rc < 0)
            st = ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
        else if (rc == 0)
            st = ein_fail(err, TF_ERR_UNSUPPORTED, EIN_ARG_OPTIMIZE, -1, -1,
                          "optimize 'dp' outgrew its budget (or no path fits the limits) on "
                          "this network of %u tensors; use greedy or search",
                          net->n);
        else {
            roots[c] = dp_emit(t, comp[c], &next, steps, &k);
            dp_keep(t, comp[c], tmp);
            sizes[c] = ein_set_size(net, tmp);
        }
    }
    if (!st)
        ein__join_roots(net, roots, sizes, n_comp, next, steps, k);
    ein_free(m, tmp);
    return st;
}

tf_status ein_dp(const ein_mem *m, const ein_net *net, const ein_limits *lim, uint32_t (*steps)[2],
                 ein_err *err)
{
    if (net->n > 64)
        return ein_fail(err, TF_ERR_UNSUPPORTED, EIN_ARG_OPTIMIZE, -1, -1,
                        "optimize 'dp' takes at most 64 operands, got %u (use greedy or search)",
                        net->n);
    dp_table t;
    memset(&t, 0, sizeof t);
    t.net = net;
    t.lim = lim;
    t.all = net->n == 64 ? ~(uint64_t)0 : ((uint64_t)1 << net->n) - 1;
    t.level = ein_calloc(m, 65, sizeof *t.level);
    t.level_n = ein_calloc(m, 65, sizeof *t.level_n);
    t.level_cap = ein_calloc(m, 65, sizeof *t.level_cap);
    t.occ = ein_calloc(m, net->n_labels + 1, sizeof *t.occ);
    tf_status st = TF_OK;
    if (!t.level || !t.level_n || !t.level_cap || !t.occ || !dp_grow(m, &t))
        st = ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    for (uint32_t l = 0; !st && l < net->n_labels; l++)
        for (uint32_t i = 0; i < net->n; i++)
            if (ein_has(net->sets + (size_t)i * net->words, l))
                t.occ[l] |= (uint64_t)1 << i;
    if (!st)
        st = dp_run(m, &t, steps, err);
    dp_free(m, &t);
    return st;
}
