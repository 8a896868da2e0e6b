/*
 * einsum_problem.c - an expression bound to shapes: each label's extent,
 * what each operand needs before the contraction path (diagonals of its
 * repeated indices, one reduce_sum over the indices only it has and the
 * size-1 axes it broadcasts), and the network of label sets the path
 * search works on. Also the small helpers every file uses (memory, errors).
 *
 * Broadcasting follows NumPy: an index's extents must agree across the
 * operands except that 1 stretches (an operand with extent 1 does not
 * depend on the index, so the axis is summed away - a sum over one element
 * - and the operand leaves the index to the others). Within one operand a
 * repeated index needs equal extents.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "einsum_internal.h"

/* ---- memory and errors ---- */

static void *libc_alloc(void *ctx, size_t n)
{
    (void)ctx;
    return calloc(1, n ? n : 1);
}

static void libc_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static const ein_mem k_libc = {libc_alloc, libc_free, NULL};

const ein_mem *ein_mem_libc(void)
{
    return &k_libc;
}

static void *host_alloc(void *ctx, size_t n)
{
    const tf_host_api *h = ctx;
    void *p = h->alloc(h->ctx, n ? n : 1, 0);
    if (p)
        memset(p, 0, n);
    return p;
}

static void host_free(void *ctx, void *p)
{
    const tf_host_api *h = ctx;
    h->free(h->ctx, p);
}

ein_mem ein_mem_host(const tf_host_api *host)
{
    ein_mem m = {host_alloc, host_free, (void *)(uintptr_t)host};
    return m;
}

void *ein_calloc(const ein_mem *m, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    return m->alloc(m->ctx, count * size);
}

void ein_free(const ein_mem *m, void *p)
{
    if (p)
        m->free(m->ctx, p);
}

tf_status ein_fail(ein_err *e, tf_status status, uint32_t arg, int64_t position, int64_t operand,
                   const char *fmt, ...)
{
    e->status = status;
    e->arg = arg;
    e->position = position;
    e->operand = operand;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return status;
}

/* ---- extents ---- */

static void label_text(const ein_expr *e, uint32_t l, char *buf)
{
    if (e->code[l] >= EIN_ELLIPSIS) {
        snprintf(buf, 48, "'...' axis %u from the right", e->code[l] - EIN_ELLIPSIS);
        return;
    }
    static const uint32_t none[1] = {0};
    buf[0] = '\'';
    size_t n = 1 + ein_put_label(buf + 1, e->code[l], none);
    buf[n] = '\'';
    buf[n + 1] = '\0';
}

static tf_status bind_extents(const ein_expr *e, const int64_t *const *shapes, double *extent,
                              int64_t *first_op, ein_err *err)
{
    for (uint32_t l = 0; l < e->n_labels; l++)
        first_op[l] = -1, extent[l] = 1;
    for (uint32_t t = 0; t < e->n_ops; t++)
        for (uint32_t a = 0; a < e->rank[t]; a++) {
            uint32_t l = e->term[t][a];
            int64_t x = shapes[t][a];
            char name[64];
            label_text(e, l, name);
            for (uint32_t b = 0; b < a; b++)
                if (e->term[t][b] == l && shapes[t][b] != x)
                    return ein_fail(err, TF_ERR_SHAPE_MISMATCH, EIN_ARG_OPERANDS, e->term_pos[t][a],
                                    t,
                                    "index %s is repeated in operand %u with extents %lld and "
                                    "%lld (subscripts byte %lld); a diagonal needs equal extents",
                                    name, t, (long long)shapes[t][b], (long long)x,
                                    (long long)e->term_pos[t][a]);
            if (x == 1)
                continue;
            if (first_op[l] >= 0 && (double)x != extent[l])
                return ein_fail(err, TF_ERR_SHAPE_MISMATCH, EIN_ARG_OPERANDS, e->term_pos[t][a], t,
                                "index %s has extent %.0f in operand %lld and %lld in operand %u "
                                "(subscripts byte %lld); extents must agree or be 1",
                                name, extent[l], (long long)first_op[l], (long long)x, t,
                                (long long)e->term_pos[t][a]);
            first_op[l] = t;
            extent[l] = (double)x;
        }
    return TF_OK;
}

/* ---- what each operand needs ---- */

static bool in_output(const ein_expr *e, uint32_t l)
{
    for (uint32_t i = 0; i < e->out_rank; i++)
        if (e->out[i] == l)
            return true;
    return false;
}

/* Takes diagonals until no label repeats; pr->labels is left in axis order. */
static void plan_diagonals(ein_prep *pr, const uint32_t *term, uint32_t rank)
{
    uint32_t n = rank;
    memcpy(pr->labels, term, rank * sizeof *term);
    for (bool again = true; again;) {
        again = false;
        for (uint32_t a = 0; a < n && !again; a++)
            for (uint32_t b = a + 1; b < n && !again; b++) {
                if (pr->labels[a] != pr->labels[b])
                    continue;
                int8_t *perm = pr->diag_perm[pr->n_diag];
                uint32_t next[8], k = 0;
                for (uint32_t i = 0; i < n; i++)
                    if (i != a && i != b) {
                        perm[k] = (int8_t)i;
                        next[k++] = pr->labels[i];
                    }
                perm[k] = (int8_t)a;
                perm[k + 1] = (int8_t)b;
                next[k] = pr->labels[a];
                pr->diag_rank[pr->n_diag++] = (uint8_t)n;
                memcpy(pr->labels, next, (k + 1) * sizeof *next);
                n = k + 1;
                again = true;
            }
    }
    pr->n_labels = (uint8_t)n;
}

/* Operands holding each label after the diagonals, not counting the ones that
   broadcast it (extent 1 where the label's extent is not). */
static void count_holders(const ein_problem *p, const int64_t *const *shapes, uint32_t *holders)
{
    const ein_expr *e = &p->expr;
    for (uint32_t t = 0; t < e->n_ops; t++) {
        const ein_prep *pr = &p->prep[t];
        for (uint32_t i = 0; i < pr->n_labels; i++) {
            uint32_t l = pr->labels[i];
            uint32_t a = 0;
            while (e->term[t][a] != l)
                a++;
            if (!(shapes[t][a] == 1 && p->extent[l] != 1))
                holders[l]++;
        }
    }
}

/* The labels operand t sums before the path, and what is left. */
static void plan_sums(ein_problem *p, uint32_t t, const int64_t *const *shapes,
                      const uint32_t *holders)
{
    const ein_expr *e = &p->expr;
    ein_prep *pr = &p->prep[t];
    uint32_t keep[8], k = 0;
    double numel = 1;
    for (uint32_t i = 0; i < pr->n_labels; i++) {
        uint32_t l = pr->labels[i];
        uint32_t a = 0;
        while (e->term[t][a] != l)
            a++;
        bool stretched = shapes[t][a] == 1 && p->extent[l] != 1;
        numel *= (double)shapes[t][a];
        if (stretched || (holders[l] == 1 && !in_output(e, l)))
            pr->sum_axes[pr->n_sum++] = (int8_t)i;
        else
            keep[k++] = l;
    }
    if (pr->n_sum)
        p->prep_flops += numel;
    memcpy(pr->labels, keep, k * sizeof *keep);
    pr->n_labels = (uint8_t)k;
}

static tf_status layout(const ein_mem *m, ein_problem *p, ein_err *err)
{
    const ein_expr *e = &p->expr;
    uint32_t words = (e->n_labels + 63) / 64;
    if (words == 0)
        words = 1;
    size_t bytes = e->n_labels * (sizeof(double) + sizeof(int64_t) + sizeof(uint32_t)) +
                   e->n_ops * sizeof(ein_prep) + (e->n_ops + 1) * words * sizeof(uint64_t);
    char *b = ein_calloc(m, 1, bytes + 16);
    if (!b)
        return ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    p->block = b;
    p->extent = (double *)(void *)b;
    p->sets = (uint64_t *)(void *)(p->extent + 2 * e->n_labels); /* room for first_op */
    p->out = p->sets + e->n_ops * words;
    p->prep = (ein_prep *)(void *)(p->out + words);
    p->net.words = words;
    return TF_OK;
}

static void build_net(ein_problem *p)
{
    const ein_expr *e = &p->expr;
    uint32_t w = p->net.words;
    for (uint32_t t = 0; t < e->n_ops; t++)
        for (uint32_t i = 0; i < p->prep[t].n_labels; i++)
            ein_add(p->sets + t * w, p->prep[t].labels[i]);
    for (uint32_t i = 0; i < e->out_rank; i++)
        ein_add(p->out, e->out[i]);
    p->net.n = e->n_ops;
    p->net.n_labels = e->n_labels;
    p->net.extent = p->extent;
    p->net.sets = p->sets;
    p->net.out = p->out;
}

tf_status ein_problem_init(const ein_mem *m, const char *subscripts, uint32_t n,
                           const uint32_t *ranks, const int64_t *const *shapes, ein_problem *p,
                           ein_err *err)
{
    memset(p, 0, sizeof *p);
    tf_status st = ein_parse(m, subscripts, n, ranks, &p->expr, err);
    if (st)
        return st;
    if ((st = layout(m, p, err))) {
        ein_expr_free(m, &p->expr);
        return st;
    }
    const ein_expr *e = &p->expr;
    int64_t *first_op = (int64_t *)(void *)(p->extent + e->n_labels);
    if ((st = bind_extents(e, shapes, p->extent, first_op, err))) {
        ein_problem_free(m, p);
        return st;
    }
    uint32_t *holders = ein_calloc(m, e->n_labels + 1, sizeof *holders);
    if (!holders) {
        ein_problem_free(m, p);
        return ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    }
    for (uint32_t t = 0; t < n; t++) {
        p->prep[t].rank = (uint8_t)e->rank[t];
        plan_diagonals(&p->prep[t], e->term[t], e->rank[t]);
    }
    count_holders(p, shapes, holders);
    for (uint32_t t = 0; t < n; t++)
        plan_sums(p, t, shapes, holders);
    ein_free(m, holders);
    build_net(p);
    return TF_OK;
}

void ein_problem_free(const ein_mem *m, ein_problem *p)
{
    ein_free(m, p->block);
    p->block = NULL;
    ein_expr_free(m, &p->expr);
}
