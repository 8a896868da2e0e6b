/*
 * einsum_format.c - a path description as text (the numbers
 * numpy.einsum_path prints, one line per pairwise step) or as one JSON
 * object, for the planner interface and `tenferro einsum-path`.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "einsum_internal.h"

typedef struct buf {
    const ein_mem *m;
    char *p;
    size_t n, cap;
    bool failed;
} buf;

static void add(buf *b, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void add(buf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0 || b->n + (size_t)need + 1 > b->cap) {
        size_t cap = 2 * (b->cap + (need > 0 ? (size_t)need : 0)) + 256;
        char *p = ein_calloc(b->m, cap, 1);
        if (!p || need < 0) {
            ein_free(b->m, p);
            b->failed = true;
            return;
        }
        if (b->n)
            memcpy(p, b->p, b->n);
        ein_free(b->m, b->p);
        b->p = p;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)need;
}

static const char *method_name(uint32_t m)
{
    static const char *const names[] = {"auto", "optimal", "dp", "greedy", "search"};
    return m < 5 ? names[m] : "?";
}

/* numpy's path lists each step's two positions in ascending order. */
static uint32_t lo_pos(const tf_einsum_step *s)
{
    return s->lhs_pos < s->rhs_pos ? s->lhs_pos : s->rhs_pos;
}

static uint32_t hi_pos(const tf_einsum_step *s)
{
    return s->lhs_pos < s->rhs_pos ? s->rhs_pos : s->lhs_pos;
}

static void as_text(buf *b, const tf_einsum_path *d)
{
    add(b, "  Complete contraction:  %s\n", d->subscripts);
    add(b, "              Optimize:  %s\n", method_name(d->optimize));
    add(b, "     Optimized scaling:  %u\n", d->scaling);
    add(b, "      Naive FLOP count:  %.3e\n", d->naive_flops);
    add(b, "  Optimized FLOP count:  %.3e\n", d->flops);
    add(b, "   log10 of FLOP count:  %.4f\n", d->log10_flops);
    add(b, "   Theoretical speedup:  %.3f\n", d->flops > 0 ? d->naive_flops / d->flops : 1.0);
    add(b, "  Largest intermediate:  %.3e elements\n", d->largest_intermediate);
    if (d->prep_flops > 0)
        add(b, "    Diagonals and sums:  %.3e elements read before the path\n", d->prep_flops);
    add(b, "  Path:  [");
    for (uint32_t k = 0; k < d->n_steps; k++)
        add(b, "%s(%u, %u)", k ? ", " : "", lo_pos(&d->steps[k]), hi_pos(&d->steps[k]));
    add(b, "]\n");
    add(b, "--------------------------------------------------------------------------\n");
    add(b, "  step  scaling       flops        size  contraction\n");
    add(b, "--------------------------------------------------------------------------\n");
    for (uint32_t k = 0; k < d->n_steps; k++) {
        const tf_einsum_step *s = &d->steps[k];
        add(b, "%6u  %7u  %10.3e  %10.3e  %s\n", k, s->scaling, s->flops, s->size, s->subscripts);
    }
}

/* A JSON string; labels are letters or non-ASCII (passed as UTF-8). */
static void json_str(buf *b, const char *s)
{
    add(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            add(b, "\\%c", c);
        else if (c < 0x20)
            add(b, "\\u%04x", c);
        else
            add(b, "%c", c);
    }
    add(b, "\"");
}

static void as_json(buf *b, const tf_einsum_path *d)
{
    add(b, "{\"subscripts\": ");
    json_str(b, d->subscripts);
    add(b, ", \"optimize\": \"%s\", \"path\": [", method_name(d->optimize));
    for (uint32_t k = 0; k < d->n_steps; k++)
        add(b, "%s[%u, %u]", k ? ", " : "", lo_pos(&d->steps[k]), hi_pos(&d->steps[k]));
    add(b, "], \"steps\": [");
    for (uint32_t k = 0; k < d->n_steps; k++) {
        const tf_einsum_step *s = &d->steps[k];
        add(b, "%s{\"lhs\": %u, \"rhs\": %u, \"subscripts\": ", k ? ", " : "", s->lhs, s->rhs);
        json_str(b, s->subscripts);
        add(b, ", \"flops\": %.17g, \"size\": %.17g, \"scaling\": %u}", s->flops, s->size,
            s->scaling);
    }
    add(b, "], \"flops\": %.17g, \"log10_flops\": %.17g, \"naive_flops\": %.17g, ", d->flops,
        isfinite(d->log10_flops) ? d->log10_flops : 0.0, d->naive_flops);
    add(b, "\"largest_intermediate\": %.17g, \"scaling\": %u, \"prep_flops\": %.17g}\n",
        d->largest_intermediate, d->scaling, d->prep_flops);
}

tf_status ein_format(const ein_mem *m, const tf_einsum_path *path, int json, char **text)
{
    buf b = {m, NULL, 0, 0, false};
    if (json)
        as_json(&b, path);
    else
        as_text(&b, path);
    if (b.failed || !b.p) {
        ein_free(m, b.p);
        return TF_ERR_OUT_OF_MEMORY;
    }
    *text = b.p;
    return TF_OK;
}
