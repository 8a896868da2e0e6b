/*
 * test_einsum_path.c - the planner interface of tenferro.einsum (no
 * session): 'optimal' against a brute force over every contraction order of
 * small random networks (hyperedges, outer products, output indices), 'dp'
 * against the brute force over orders that join connected tensors, every
 * method's reported cost against the test's own recount of its steps, the
 * numpy-style positions, memory and rank limits, the search beating greedy
 * on larger networks, the text and JSON forms, and the refusals.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <tenferro/einsum.h>

#include "json_check.h"
#include "tf_test.h"

static const tf_einsum_planner *g_planner;

static int setup(void **state)
{
    (void)state;
    tf_extension_module *m;
    if (tf_extension_load("einsum", &m) != TF_OK)
        return -1;
    g_planner = tf_einsum_planner_of(m);
    return g_planner ? 0 : -1;
}

/* ---- random networks and the brute force ---- */

#define MAXT 24

typedef struct net {
    uint32_t n, n_labels;
    uint64_t set[MAXT]; /* labels of each tensor (bit l) */
    uint64_t out;
    int64_t ext[64];
    char subscripts[512];
    uint32_t rank[MAXT];
    int64_t shape[MAXT][8];
    const int64_t *shapes[MAXT];
} net;

static unsigned rnd(unsigned *s, unsigned n)
{
    *s = *s * 1103515245u + 12345u;
    return ((*s >> 8) & 0xffffffu) % n;
}

static char label_char(uint32_t l)
{
    return (char)(l < 26 ? 'a' + l : 'A' + (l - 26));
}

/* Writes the subscripts and shapes of the sets (labels in ascending order). */
static void finish_net(net *g)
{
    char *p = g->subscripts;
    for (uint32_t t = 0; t < g->n; t++) {
        if (t)
            *p++ = ',';
        g->rank[t] = 0;
        for (uint32_t l = 0; l < g->n_labels; l++)
            if ((g->set[t] >> l) & 1) {
                *p++ = label_char(l);
                g->shape[t][g->rank[t]++] = g->ext[l];
            }
        g->shapes[t] = g->shape[t];
    }
    *p++ = '-', *p++ = '>';
    for (uint32_t l = 0; l < g->n_labels; l++)
        if ((g->out >> l) & 1)
            *p++ = label_char(l);
    *p = '\0';
}

/* n tensors of rank 1..3 over `labels` labels of extent 2..5; `connected`
   links tensor t to an earlier one. Indices only one tensor has are avoided
   (the module sums those before the path, which the brute force does not). */
static void random_net(unsigned *seed, uint32_t n, uint32_t labels, bool connected, net *g)
{
    memset(g, 0, sizeof *g);
    g->n = n;
    g->n_labels = labels;
    for (uint32_t l = 0; l < labels; l++)
        g->ext[l] = 2 + rnd(seed, 4);
    uint32_t count[64] = {0};
    for (uint32_t t = 0; t < n; t++) {
        uint32_t r = 1 + rnd(seed, 3);
        if (connected && t > 0) {
            uint64_t prev = g->set[rnd(seed, t)];
            uint32_t l;
            do
                l = rnd(seed, labels);
            while (!((prev >> l) & 1));
            g->set[t] |= (uint64_t)1 << l;
        }
        while ((uint32_t)__builtin_popcountll(g->set[t]) < r)
            g->set[t] |= (uint64_t)1 << rnd(seed, labels);
        for (uint32_t l = 0; l < labels; l++)
            count[l] += (g->set[t] >> l) & 1;
    }
    for (uint32_t l = 0; l < labels; l++) {
        if (count[l] == 1 || (count[l] > 1 && rnd(seed, 6) == 0))
            g->out |= (uint64_t)1 << l; /* kept: an output index */
        if (__builtin_popcountll(g->out) > 6)
            g->out &= ~((uint64_t)1 << l);
    }
    for (uint32_t l = 0; l < labels; l++) /* a lone index that fell out of the output */
        if (count[l] == 1 && !((g->out >> l) & 1))
            for (uint32_t t = 0; t < n; t++)
                g->set[t] &= ~((uint64_t)1 << l);
    for (uint32_t t = 0; t < n; t++)
        if (!g->set[t]) /* keep every tensor non-empty: rank 0 is tested elsewhere */
            g->set[t] = g->set[(t + 1) % n] & ~g->out ? g->set[(t + 1) % n] : 1;
    finish_net(g);
}

static double size_of(const net *g, uint64_t s)
{
    double x = 1;
    for (uint32_t l = 0; l < g->n_labels; l++)
        if ((s >> l) & 1)
            x *= (double)g->ext[l];
    return x;
}

/* numpy's count for joining sets a and b among `rest` (the other tensors). */
static double join(const net *g, uint64_t a, uint64_t b, uint64_t rest, uint64_t *res)
{
    uint64_t u = a | b;
    *res = u & (g->out | rest);
    return size_of(g, u) * (u != *res ? 2 : 1);
}

typedef struct brute {
    const net *g;
    double limit; /* largest intermediate; 0 none */
    bool connected;
    double best;
} brute;

static void brute_rec(brute *b, uint64_t *sets, uint32_t n, double cost)
{
    if (cost >= b->best)
        return;
    if (n == 1) {
        b->best = cost;
        return;
    }
    bool any_shared = false;
    for (uint32_t i = 0; i < n && !any_shared; i++)
        for (uint32_t j = i + 1; j < n && !any_shared; j++)
            any_shared = (sets[i] & sets[j]) != 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = i + 1; j < n; j++) {
            if (b->connected && any_shared && !(sets[i] & sets[j]))
                continue;
            uint64_t rest = 0, res;
            for (uint32_t k = 0; k < n; k++)
                if (k != i && k != j)
                    rest |= sets[k];
            double c = join(b->g, sets[i], sets[j], rest, &res);
            if (n > 2 && b->limit > 0 && size_of(b->g, res) > b->limit)
                continue;
            uint64_t next[MAXT];
            uint32_t m = 0;
            for (uint32_t k = 0; k < n; k++)
                if (k != i && k != j)
                    next[m++] = sets[k];
            next[m++] = res;
            brute_rec(b, next, m, cost + c);
        }
}

static double brute_force(const net *g, double limit, bool connected)
{
    brute b = {g, limit, connected, INFINITY};
    uint64_t sets[MAXT];
    memcpy(sets, g->set, g->n * sizeof *sets);
    brute_rec(&b, sets, g->n, 0);
    return b.best;
}

/* The path's cost recounted from its SSA steps; checks the numpy positions too. */
static double recount(const net *g, const tf_einsum_path *p, double *largest)
{
    uint64_t sets[2 * MAXT];
    uint32_t list[MAXT], n_list = g->n;
    bool alive[2 * MAXT] = {false};
    for (uint32_t t = 0; t < g->n; t++)
        sets[t] = g->set[t], alive[t] = true, list[t] = t;
    double total = 0;
    *largest = 0;
    assert_int_equal(p->n_steps, g->n - 1);
    for (uint32_t k = 0; k < p->n_steps; k++) {
        const tf_einsum_step *s = &p->steps[k];
        assert_true(s->lhs < g->n + k && s->rhs < g->n + k && alive[s->lhs] && alive[s->rhs]);
        assert_int_equal(list[s->lhs_pos], s->lhs);
        assert_int_equal(list[s->rhs_pos], s->rhs);
        uint64_t rest = 0, res;
        for (uint32_t t = 0; t < g->n + k; t++)
            if (alive[t] && t != s->lhs && t != s->rhs)
                rest |= sets[t];
        double c = join(g, sets[s->lhs], sets[s->rhs], rest, &res);
        assert_true(fabs(c - s->flops) <= 1e-9 * c);
        total += c;
        if (size_of(g, res) > *largest)
            *largest = size_of(g, res);
        alive[s->lhs] = alive[s->rhs] = false;
        alive[g->n + k] = true;
        sets[g->n + k] = res;
        uint32_t m = 0;
        for (uint32_t i = 0; i < n_list; i++)
            if (list[i] != s->lhs && list[i] != s->rhs)
                list[m++] = list[i];
        list[m++] = g->n + k;
        n_list = m;
    }
    assert_true(fabs(total - p->flops) <= 1e-9 * total);
    return total;
}

static tf_einsum_path *plan(const net *g, uint32_t method, double limit, uint32_t max_rank,
                            double seconds)
{
    tf_einsum_options o = {sizeof o, method, limit, seconds, 7, max_rank, 0};
    tf_einsum_path *p = NULL;
    tf_einsum_error err = {sizeof err, 0, -1, -1, ""};
    tf_status st = g_planner->path(g->subscripts, g->n, g->rank, g->shapes, &o, &p, &err);
    if (st)
        fail_msg("'%s' (method %u): %s: %s", g->subscripts, method, tf_status_name(st),
                 err.message);
    return p;
}

static void test_optimal_and_dp_against_brute_force(void **state)
{
    (void)state;
    unsigned seed = 99;
    for (int k = 0; k < 60; k++) {
        net g;
        random_net(&seed, 3 + (uint32_t)k % 5, 4 + (uint32_t)k % 6, k % 2 == 0, &g);
        double largest, want = brute_force(&g, 0, false);
        tf_einsum_path *p = plan(&g, TF_EINSUM_OPTIMAL, 0, 0, 0);
        double got = recount(&g, p, &largest);
        if (fabs(got - want) > 1e-9 * want)
            fail_msg("'%s': optimal costs %.17g, the brute force finds %.17g", g.subscripts, got,
                     want);
        g_planner->path_free(p);
        if (k % 2 == 0) { /* connected: dp is the best of the connected orders */
            double want_c = brute_force(&g, 0, true);
            p = plan(&g, TF_EINSUM_DP, 0, 0, 0);
            got = recount(&g, p, &largest);
            if (fabs(got - want_c) > 1e-9 * want_c)
                fail_msg("'%s': dp costs %.17g, connected brute force %.17g", g.subscripts, got,
                         want_c);
            g_planner->path_free(p);
        }
        p = plan(&g, TF_EINSUM_GREEDY, 0, 0, 0); /* valid, and never below the optimum */
        assert_true(recount(&g, p, &largest) >= want * (1 - 1e-9));
        g_planner->path_free(p);
    }
}

static void test_memory_limit_against_brute_force(void **state)
{
    (void)state;
    unsigned seed = 5;
    for (int k = 0; k < 30; k++) {
        net g;
        random_net(&seed, 4 + (uint32_t)k % 3, 6, true, &g);
        double unlimited, largest;
        tf_einsum_path *p = plan(&g, TF_EINSUM_OPTIMAL, 0, 0, 0);
        recount(&g, p, &unlimited);
        g_planner->path_free(p);
        double limit = floor(unlimited / 2);
        double want = brute_force(&g, limit, false);
        tf_einsum_options o = {sizeof o, TF_EINSUM_OPTIMAL, limit, 0, 0, 0, 0};
        tf_einsum_error err = {sizeof err, 0, -1, -1, ""};
        tf_status st = g_planner->path(g.subscripts, g.n, g.rank, g.shapes, &o, &p, &err);
        if (isinf(want)) {
            assert_int_equal(st, TF_ERR_UNSUPPORTED);
            continue;
        }
        TF_ASSERT_OK(st);
        double got = recount(&g, p, &largest);
        assert_true(fabs(got - want) <= 1e-9 * want);
        for (uint32_t s = 0; s + 1 < p->n_steps; s++) /* the last result is the output */
            assert_true(p->steps[s].size <= limit);
        g_planner->path_free(p);
    }
}

/* A closed random 3-regular network of n tensors (n even), bond dimension 2. */
static void regular_net(unsigned *seed, uint32_t n, net *g)
{
    memset(g, 0, sizeof *g);
    g->n = n;
    uint32_t stubs[3 * MAXT], m = 3 * n;
    for (;;) {
        for (uint32_t i = 0; i < m; i++)
            stubs[i] = i / 3;
        for (uint32_t i = m; i > 1; i--) {
            uint32_t j = rnd(seed, i), t = stubs[i - 1];
            stubs[i - 1] = stubs[j];
            stubs[j] = t;
        }
        bool ok = true;
        memset(g->set, 0, sizeof g->set);
        g->n_labels = 0;
        for (uint32_t i = 0; i < m && ok; i += 2) {
            uint32_t a = stubs[i], b = stubs[i + 1];
            uint64_t bit = (uint64_t)1 << g->n_labels;
            ok = a != b && !(g->set[a] & g->set[b]); /* no loops, no double bonds */
            g->set[a] |= bit;
            g->set[b] |= bit;
            g->ext[g->n_labels++] = 2;
        }
        if (ok)
            break;
    }
    finish_net(g);
}

static void test_search_and_reconfigured_greedy(void **state)
{
    (void)state;
    unsigned seed = 31;
    for (int k = 0; k < 3; k++) {
        net g;
        regular_net(&seed, 20, &g);
        double largest;
        tf_einsum_path *greedy = plan(&g, TF_EINSUM_GREEDY, 0, 0, 0);
        tf_einsum_path *autop = plan(&g, TF_EINSUM_AUTO, 0, 0, 0);
        tf_einsum_path *search = plan(&g, TF_EINSUM_SEARCH, 0, 0, 0.3);
        double cg = recount(&g, greedy, &largest), ca = recount(&g, autop, &largest);
        double cs = recount(&g, search, &largest);
        assert_int_equal(autop->optimize, TF_EINSUM_SEARCH); /* 20 tensors: fixed effort */
        assert_true(ca <= cg * (1 + 1e-9));
        assert_true(cs <= cg * (1 + 1e-9));
        g_planner->path_free(greedy);
        g_planner->path_free(autop);
        g_planner->path_free(search);
    }
}

static void test_rank_limit(void **state)
{
    (void)state;
    net g;
    unsigned seed = 8;
    regular_net(&seed, 16, &g);
    double largest;
    /* the smallest rank limit greedy meets; dp and search must meet it too */
    uint32_t r = 4;
    for (;; r++) {
        tf_einsum_options o = {sizeof o, TF_EINSUM_GREEDY, 0, 0, 0, r, 0};
        tf_einsum_path *p = NULL;
        if (g_planner->path(g.subscripts, g.n, g.rank, g.shapes, &o, &p, NULL) == TF_OK) {
            g_planner->path_free(p);
            break;
        }
        assert_true(r < 12);
    }
    for (uint32_t method = TF_EINSUM_DP; method <= TF_EINSUM_SEARCH; method++) {
        tf_einsum_path *p = plan(&g, method, 0, r, 0.1);
        recount(&g, p, &largest);
        for (uint32_t s = 0; s + 1 < p->n_steps; s++)
            assert_true(log2(p->steps[s].size) <= r + 1e-9); /* bond 2: rank = log2 size */
        g_planner->path_free(p);
    }
}

/* An MPS-MPO-MPS ladder of `sites` (bond 64, physical 2, MPO bond 4): labels a, w, b
   bonds, then p, q physical. */
static void ladder_net(uint32_t sites, net *g)
{
    memset(g, 0, sizeof *g);
    g->n = 3 * sites;
    uint32_t nb = sites - 1, L = 3 * nb + 2 * sites;
    g->n_labels = L;
    for (uint32_t l = 0; l < L; l++)
        g->ext[l] = l < nb ? 64 : l < 2 * nb ? 4 : l < 3 * nb ? 64 : 2;
    for (uint32_t i = 0; i < sites; i++) {
        uint64_t p = (uint64_t)1 << (3 * nb + i), q = (uint64_t)1 << (3 * nb + sites + i);
        for (uint32_t k = 0; k < 3; k++) { /* k: bra bonds, MPO bonds, ket bonds */
            uint64_t set = k == 0 ? p : k == 1 ? p | q : q;
            if (i > 0)
                set |= (uint64_t)1 << (k * nb + i - 1);
            if (i + 1 < sites)
                set |= (uint64_t)1 << (k * nb + i);
            g->set[3 * i + k] = set;
        }
    }
    finish_net(g);
}

/* Under the 8-axis limit of executions plain greedy can get stuck on ladders (it grows
   blocks of physical indices); auto always finds a path. */
static void test_auto_under_rank_limit_on_ladders(void **state)
{
    (void)state;
    uint32_t stuck = 0;
    for (uint32_t sites = 3; sites <= 8; sites++) {
        net g;
        ladder_net(sites, &g);
        double largest;
        tf_einsum_path *p = plan(&g, TF_EINSUM_AUTO, 0, 8, 0);
        recount(&g, p, &largest);
        g_planner->path_free(p);
        tf_einsum_options o = {sizeof o, TF_EINSUM_GREEDY, 0, 0, 0, 8, 0};
        tf_status st = g_planner->path(g.subscripts, g.n, g.rank, g.shapes, &o, &p, NULL);
        if (st == TF_OK)
            g_planner->path_free(p);
        else
            stuck += st == TF_ERR_UNSUPPORTED;
    }
    assert_true(stuck > 0); /* the case auto must handle: plain greedy got stuck */
}

static void test_text_and_json(void **state)
{
    (void)state;
    const uint32_t ranks[3] = {2, 2, 2};
    const int64_t a[2] = {2, 3}, b[2] = {3, 4}, c[2] = {4, 5}, *shapes[3] = {a, b, c};
    tf_einsum_path *p = NULL;
    TF_ASSERT_OK(g_planner->path("ij,jk,kl->il", 3, ranks, shapes, NULL, &p, NULL));
    assert_int_equal(p->optimize, TF_EINSUM_OPTIMAL);
    assert_string_equal(p->subscripts, "ij,jk,kl->il");
    /* numpy: [(0, 1), (0, 1)], 2*2*3*4 + 2*2*4*5 = 128 flops, largest 10 */
    assert_true(p->flops == 128 && p->largest_intermediate == 10);
    assert_true(fabs(p->log10_flops - log10(128.0)) < 1e-12);
    assert_true(p->naive_flops == 2 * 3 * 4 * 5 * 3);
    assert_string_equal(p->steps[0].subscripts, "ij,jk->ik");
    assert_string_equal(p->steps[1].subscripts, "ik,kl->il");
    char *text = NULL;
    TF_ASSERT_OK(g_planner->format(p, 0, &text));
    assert_non_null(strstr(text, "Complete contraction:  ij,jk,kl->il"));
    assert_non_null(strstr(text, "Path:  [(0, 1), (0, 1)]"));
    assert_non_null(strstr(text, "Largest intermediate:  1.000e+01 elements"));
    g_planner->text_free(text);
    TF_ASSERT_OK(g_planner->format(p, 1, &text));
    assert_true(json_check(text));
    assert_non_null(strstr(text, "\"path\": [[0, 1], [0, 1]]"));
    g_planner->text_free(text);
    g_planner->path_free(p);
    /* ellipses and non-ASCII indices print too */
    const uint32_t r2[2] = {3, 2};
    const int64_t x[3] = {2, 3, 4}, y[2] = {4, 2}, *s2[2] = {x, y};
    TF_ASSERT_OK(g_planner->path("...\xce\xb1,\xce\xb1\xce\xb2", 2, r2, s2, NULL, &p, NULL));
    assert_string_equal(p->subscripts, "ab\xce\xb1,\xce\xb1\xce\xb2->ab\xce\xb2");
    g_planner->path_free(p);
}

static void test_refusals(void **state)
{
    (void)state;
    const uint32_t ranks[2] = {2, 2};
    const int64_t a[2] = {2, 3}, b[2] = {4, 5}, *shapes[2] = {a, b};
    tf_einsum_path *p = (tf_einsum_path *)&p;
    tf_einsum_error err = {sizeof err, 0, -1, -1, ""};
    assert_int_equal(g_planner->path("ij,jk", 2, ranks, shapes, NULL, &p, &err),
                     TF_ERR_SHAPE_MISMATCH);
    assert_int_equal(err.operand, 1);
    assert_int_equal(err.position, 3);
    assert_ptr_equal(p, (tf_einsum_path *)&p); /* untouched */
    assert_int_equal(g_planner->path("ij,j?", 2, ranks, shapes, NULL, &p, &err), TF_ERR_VALIDATION);
    assert_int_equal(err.position, 4);
    assert_non_null(strstr(err.message, "'?' is not an index"));
    assert_int_equal(g_planner->path(NULL, 2, ranks, shapes, NULL, &p, &err), TF_ERR_VALIDATION);
    assert_int_equal(g_planner->path("ij,jk", 2, NULL, shapes, NULL, &p, &err), TF_ERR_VALIDATION);
    tf_einsum_options o = {sizeof o, 17, 0, 0, 0, 0, 0};
    const int64_t c[2] = {3, 5}, *ok[2] = {a, c};
    assert_int_equal(g_planner->path("ij,jk", 2, ranks, ok, &o, &p, &err), TF_ERR_VALIDATION);
    o.optimize = TF_EINSUM_AUTO;
    o.memory_limit = -2;
    assert_int_equal(g_planner->path("ij,jk", 2, ranks, ok, &o, &p, &err), TF_ERR_VALIDATION);
    /* 'optimal' takes at most 16 operands, 'dp' 64 */
    net g;
    unsigned seed = 3;
    regular_net(&seed, 18, &g);
    o = (tf_einsum_options){sizeof o, TF_EINSUM_OPTIMAL, 0, 0, 0, 0, 0};
    assert_int_equal(g_planner->path(g.subscripts, g.n, g.rank, g.shapes, &o, &p, &err),
                     TF_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "at most 16 operands"));
    assert_ptr_equal(p, (tf_einsum_path *)&p);
    assert_int_equal(g_planner->format(NULL, 0, NULL), TF_ERR_VALIDATION);
}

/* Random bytes from the parser's alphabet and its neighbours: every answer is a path or
   a clean refusal (run under the sanitizers, this is a small fuzzer). */
static void test_garbage_subscripts(void **state)
{
    (void)state;
    static const char *const pieces[] = {"a",
                                         "b",
                                         "i",
                                         "Z",
                                         ",",
                                         "-",
                                         ">",
                                         "->",
                                         ".",
                                         "...",
                                         " ",
                                         "\xce\xb1",
                                         "\xe4\xb8\xad",
                                         "\xff",
                                         "\x80",
                                         "\xc2",
                                         "1",
                                         "_"};
    unsigned seed = 4242;
    for (int k = 0; k < 3000; k++) {
        char expr[128] = "";
        uint32_t len = rnd(&seed, 14);
        for (uint32_t i = 0; i < len; i++)
            strcat(expr, pieces[rnd(&seed, sizeof pieces / sizeof pieces[0])]);
        uint32_t n = 1 + rnd(&seed, 3), ranks[3];
        int64_t ext[3][3];
        const int64_t *shapes[3];
        for (uint32_t t = 0; t < n; t++) {
            ranks[t] = rnd(&seed, 4);
            for (uint32_t a = 0; a < ranks[t]; a++)
                ext[t][a] = rnd(&seed, 4);
            shapes[t] = ext[t];
        }
        tf_einsum_path *p = (tf_einsum_path *)&p;
        tf_einsum_error err = {sizeof err, 0, -1, -1, ""};
        tf_status st = g_planner->path(expr, n, ranks, shapes, NULL, &p, &err);
        if (st) {
            if (st != TF_ERR_VALIDATION && st != TF_ERR_SHAPE_MISMATCH)
                fail_msg("'%s': %s", expr, tf_status_name(st));
            assert_ptr_equal(p, (tf_einsum_path *)&p);
            assert_true(err.message[0] != '\0');
            assert_true(err.position >= -1 && err.position <= (int64_t)strlen(expr));
            continue;
        }
        assert_int_equal(p->n_steps, n - 1);
        char *text = NULL;
        TF_ASSERT_OK(g_planner->format(p, 1, &text));
        assert_true(json_check(text));
        g_planner->text_free(text);
        g_planner->path_free(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_optimal_and_dp_against_brute_force),
        cmocka_unit_test(test_memory_limit_against_brute_force),
        cmocka_unit_test(test_search_and_reconfigured_greedy),
        cmocka_unit_test(test_rank_limit),
        cmocka_unit_test(test_auto_under_rank_limit_on_ladders),
        cmocka_unit_test(test_text_and_json),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_garbage_subscripts),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
