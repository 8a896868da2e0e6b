/*
 * einsum_plan.c - from a problem and its path to what runs and what is
 * shown: the executable plan (one block of plain bytes, so the runtime's
 * extension cache can keep it as is) and the numpy-style description.
 *
 * A pairwise step joins tensors A and B with one DOT_GENERAL: an index of
 * both is a batch axis when it is still needed (the output or another
 * tensor has it) and a contracting axis otherwise; every other index is
 * free (it is always still needed: indices only one tensor has were summed
 * before the path). DOT_GENERAL lays its result out as [A's free axes, B's
 * free axes, batch axes in A's order], and the plan follows every tensor's
 * axis order through the steps, so no step transposes anything: the only
 * permutation is the view of the last result into the output's order.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "einsum_internal.h"

/* ---- the executable plan ---- */

typedef struct orders {
    uint32_t (*lab)[8]; /* per SSA id, its labels in axis order */
    uint8_t *len;
    uint32_t *count; /* per label: tensors holding it */
} orders;

static bool in_list(const uint32_t *v, uint32_t n, uint32_t x, uint32_t *at)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i] == x) {
            if (at)
                *at = i;
            return true;
        }
    return false;
}

/* Fills step st's dimension numbers and the result's axis order (id c). */
static tf_status plan_step(const ein_problem *p, orders *o, uint32_t a, uint32_t b, uint32_t c,
                           ein_step *st, ein_err *err)
{
    const uint32_t *la = o->lab[a], *lb = o->lab[b];
    uint32_t na = o->len[a], nb = o->len[b], res[24], nr = 0, batch[8], nbatch = 0;
    tf_dot_general_params *d = &st->dims;
    memset(st, 0, sizeof *st);
    d->struct_size = sizeof *d;
    st->lhs = a;
    st->rhs = b;
    for (uint32_t i = 0; i < na; i++) {
        uint32_t l = la[i], j;
        if (!in_list(lb, nb, l, &j)) {
            res[nr++] = l;
            continue;
        }
        bool kept = ein_has(p->out, l) || o->count[l] > 2;
        uint32_t *lhs = kept ? d->lhs_batch : d->lhs_contracting;
        uint32_t *rhs = kept ? d->rhs_batch : d->rhs_contracting;
        uint32_t *n = kept ? &d->n_batch : &d->n_contracting;
        lhs[*n] = i;
        rhs[(*n)++] = j;
        if (kept)
            batch[nbatch++] = l;
    }
    for (uint32_t j = 0; j < nb; j++)
        if (!in_list(la, na, lb[j], NULL))
            res[nr++] = lb[j];
    for (uint32_t k = 0; k < nbatch; k++)
        res[nr++] = batch[k];
    if (nr > TF_MAX_RANK)
        return ein_fail(err, TF_ERR_UNSUPPORTED, EIN_ARG_SUBSCRIPTS, -1, -1,
                        "the path has an intermediate of rank %u; tensors have at most %d axes", nr,
                        TF_MAX_RANK);
    for (uint32_t i = 0; i < na; i++)
        o->count[la[i]]--;
    for (uint32_t j = 0; j < nb; j++)
        o->count[lb[j]]--;
    for (uint32_t k = 0; k < nr; k++)
        o->count[res[k]]++;
    memcpy(o->lab[c], res, nr * sizeof *res);
    o->len[c] = (uint8_t)nr;
    return TF_OK;
}

static tf_status plan_fill(const ein_problem *p, const ein_path *path, ein_plan *plan, orders *o,
                           ein_err *err)
{
    const ein_expr *e = &p->expr;
    uint32_t n = e->n_ops;
    for (uint32_t t = 0; t < n; t++) {
        const ein_prep *pr = &p->prep[t];
        memcpy(o->lab[t], pr->labels, pr->n_labels * sizeof *pr->labels);
        o->len[t] = pr->n_labels;
        for (uint32_t i = 0; i < pr->n_labels; i++)
            o->count[pr->labels[i]]++;
    }
    ein_step *steps = ein_plan_steps(plan);
    for (uint32_t k = 0; k + 1 < n; k++) {
        tf_status st = plan_step(p, o, path->steps[k][0], path->steps[k][1], n + k, &steps[k], err);
        if (st)
            return st;
    }
    uint32_t root = n == 1 ? 0 : 2 * n - 2;
    for (uint32_t i = 0; i < e->out_rank; i++) {
        uint32_t at = 0;
        in_list(o->lab[root], o->len[root], e->out[i], &at);
        plan->out_perm[i] = (int8_t)at;
    }
    return TF_OK;
}

tf_status ein_plan_build(const ein_mem *m, const ein_problem *p, const ein_path *path,
                         ein_plan **out, ein_err *err)
{
    const ein_expr *e = &p->expr;
    uint32_t n = e->n_ops, n_steps = n - 1;
    size_t bytes = sizeof(ein_plan) + n * sizeof(ein_prep) + n_steps * sizeof(ein_step);
    ein_plan *plan = ein_calloc(m, 1, bytes);
    orders o;
    o.lab = ein_calloc(m, 2 * (size_t)n, sizeof *o.lab);
    o.len = ein_calloc(m, 2 * (size_t)n, 1);
    o.count = ein_calloc(m, e->n_labels + 1, sizeof *o.count);
    tf_status st = TF_OK;
    if (!plan || !o.lab || !o.len || !o.count) {
        st = ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    } else {
        plan->magic = EIN_PLAN_MAGIC;
        plan->size = (uint32_t)bytes;
        plan->n_ops = n;
        plan->n_steps = n_steps;
        plan->out_rank = e->out_rank;
        plan->flops = path->flops;
        plan->largest = path->largest;
        memcpy(ein_plan_prep(plan), p->prep, n * sizeof *p->prep);
        st = plan_fill(p, path, plan, &o, err);
    }
    ein_free(m, o.lab);
    ein_free(m, o.len);
    ein_free(m, o.count);
    if (st)
        ein_free(m, plan);
    else
        *out = plan;
    return st;
}

/* ---- the description ---- */

/* Characters for the ellipsis labels: letters, then Latin-1 letters, unused by the expression. */
static void ellipsis_codes(const ein_expr *e, uint32_t *ell)
{
    uint32_t k = 0, n_ell = 0;
    for (uint32_t l = 0; l < e->n_labels; l++)
        n_ell += e->code[l] >= EIN_ELLIPSIS;
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    for (uint32_t c = 0; k < n_ell; c++) {
        uint32_t code = c < 52 ? (uint32_t)letters[c] : 0xc0 + (c - 52);
        bool used = false;
        for (uint32_t l = 0; l < e->n_labels && !used; l++)
            used = e->code[l] == code;
        if (!used) /* the leftmost ellipsis axis (the highest k) gets the first letter */
            ell[n_ell - 1 - k++] = code;
    }
}

typedef struct text {
    char *p;
    size_t n, cap;
} text;

static void put(text *t, const char *s, size_t n)
{
    if (t->p && t->n + n < t->cap)
        memcpy(t->p + t->n, s, n);
    t->n += n;
}

static void put_labels(text *t, const ein_expr *e, const uint32_t *ell, const uint32_t *lab,
                       uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        char buf[4];
        put(t, buf, ein_put_label(buf, e->code[lab[i]], ell));
    }
}

/* A label set as a string, in label (code point) order. */
static void put_set(text *t, const ein_expr *e, const uint32_t *ell, const uint64_t *set,
                    uint32_t words)
{
    for (uint32_t l = 0; l < words * 64 && l < e->n_labels; l++)
        if (ein_has(set, l))
            put_labels(t, e, ell, &l, 1);
}

static void put_expression(text *t, const ein_expr *e, const uint32_t *ell)
{
    for (uint32_t i = 0; i < e->n_ops; i++) {
        if (i)
            put(t, ",", 1);
        put_labels(t, e, ell, e->term[i], e->rank[i]);
    }
    put(t, "->", 2);
    put_labels(t, e, ell, e->out, e->out_rank);
}

static double naive_flops(const ein_problem *p)
{
    const ein_expr *e = &p->expr;
    double size = 1;
    bool inner = false;
    for (uint32_t l = 0; l < e->n_labels; l++) {
        size *= p->extent[l];
        inner = inner || !ein_has(p->out, l);
    }
    double factor = e->n_ops > 1 ? e->n_ops - 1 : 1;
    return size * (factor + (inner ? 1 : 0));
}

typedef struct walk {
    uint64_t *sets; /* per SSA id */
    uint32_t *count;
    uint32_t *pos; /* the numpy-style list of ids */
    uint32_t n_pos;
} walk;

/* Step k's numbers and string, tracking sets and positions in w. */
static void describe_step(const ein_problem *p, const uint32_t *ell, walk *w, uint32_t k,
                          const uint32_t *pair, tf_einsum_step *st, text *t)
{
    const ein_net *net = &p->net;
    uint32_t words = net->words, n = net->n, a = pair[0], b = pair[1], c = n + k;
    uint64_t *sa = w->sets + (size_t)a * words, *sb = w->sets + (size_t)b * words;
    uint64_t *sc = w->sets + (size_t)c * words;
    for (uint32_t l = 0; l < net->n_labels; l++) {
        bool in = ein_has(sa, l) || ein_has(sb, l);
        uint32_t others = w->count[l] - ein_has(sa, l) - ein_has(sb, l);
        if (in && (ein_has(net->out, l) || others > 0))
            ein_add(sc, l);
        w->count[l] = others + ein_has(sc, l);
    }
    st->lhs = a;
    st->rhs = b;
    uint32_t keep = 0;
    for (uint32_t i = 0; i < w->n_pos; i++) {
        if (w->pos[i] == a)
            st->lhs_pos = i;
        if (w->pos[i] == b)
            st->rhs_pos = i;
        if (w->pos[i] != a && w->pos[i] != b)
            w->pos[keep++] = w->pos[i];
    }
    w->pos[keep] = c;
    w->n_pos = keep + 1;
    st->flops = ein_pair_cost(net, sa, sb, sc);
    st->size = ein_set_size(net, sc);
    st->scaling = 0;
    for (uint32_t x = 0; x < words; x++)
        st->scaling += (uint32_t)__builtin_popcountll(sa[x] | sb[x]);
    size_t start = t->n;
    put_set(t, &p->expr, ell, sa, words);
    put(t, ",", 1);
    put_set(t, &p->expr, ell, sb, words);
    put(t, "->", 2);
    if (k + 2 == n)
        put_labels(t, &p->expr, ell, p->expr.out, p->expr.out_rank);
    else
        put_set(t, &p->expr, ell, sc, words);
    put(t, "", 1);
    st->subscripts = t->p ? t->p + start : NULL;
}

/* Lays the description out in t (a NULL t->p only measures). */
static void describe_into(const ein_problem *p, const ein_path *path, walk *w, tf_einsum_path *d,
                          tf_einsum_step *steps, text *t)
{
    const ein_net *net = &p->net;
    uint32_t ell[64] = {0};
    ellipsis_codes(&p->expr, ell);
    size_t start = t->n;
    put_expression(t, &p->expr, ell);
    put(t, "", 1);
    d->subscripts = t->p ? t->p + start : NULL;
    memcpy(w->sets, net->sets, (size_t)net->n * net->words * sizeof *w->sets);
    memset(w->count, 0, net->n_labels * sizeof *w->count);
    for (uint32_t i = 0; i < net->n; i++) {
        w->pos[i] = i;
        for (uint32_t l = 0; l < net->n_labels; l++)
            w->count[l] += ein_has(net->sets + (size_t)i * net->words, l);
    }
    w->n_pos = net->n;
    d->scaling = ein_set_count(net->words, net->n == 1 ? net->sets : net->out);
    for (uint32_t k = 0; k + 1 < net->n; k++) {
        describe_step(p, ell, w, k, path->steps[k], &steps[k], t);
        if (steps[k].scaling > d->scaling)
            d->scaling = steps[k].scaling;
    }
}

tf_status ein_describe(const ein_mem *m, const ein_problem *p, const ein_path *path,
                       tf_einsum_path **out, ein_err *err)
{
    const ein_net *net = &p->net;
    uint32_t n = net->n, n_steps = n - 1, ids = 2 * n - 1;
    walk w;
    w.sets = ein_calloc(m, (size_t)ids * net->words, sizeof *w.sets);
    w.count = ein_calloc(m, net->n_labels + 1, sizeof *w.count);
    w.pos = ein_calloc(m, n + 1, sizeof *w.pos);
    tf_einsum_path probe;
    tf_einsum_step *scratch = ein_calloc(m, n, sizeof *scratch);
    tf_status st = TF_OK;
    if (!w.sets || !w.count || !w.pos || !scratch)
        st = ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    text t = {NULL, 0, 0};
    if (!st) { /* measure, then write */
        memset(&probe, 0, sizeof probe);
        describe_into(p, path, &w, &probe, scratch, &t);
        size_t head = sizeof(tf_einsum_path) + n_steps * sizeof(tf_einsum_step);
        char *block = ein_calloc(m, 1, head + t.n + 1);
        if (!block) {
            st = ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
        } else {
            tf_einsum_path *d = (tf_einsum_path *)(void *)block;
            tf_einsum_step *steps = (tf_einsum_step *)(void *)(block + sizeof *d);
            memset(w.sets, 0, (size_t)ids * net->words * sizeof *w.sets);
            t = (text){block + head, 0, t.n + 1};
            describe_into(p, path, &w, d, steps, &t);
            d->struct_size = sizeof *d;
            d->n_operands = n;
            d->n_steps = n_steps;
            d->optimize = path->method;
            d->steps = steps;
            d->flops = path->flops;
            d->log10_flops = path->flops > 0 ? log10(path->flops) : -INFINITY;
            d->naive_flops = naive_flops(p);
            d->largest_intermediate = path->largest;
            d->prep_flops = p->prep_flops;
            *out = d;
        }
    }
    ein_free(m, w.sets);
    ein_free(m, w.count);
    ein_free(m, w.pos);
    ein_free(m, scratch);
    return st;
}
