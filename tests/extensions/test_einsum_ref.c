/*
 * test_einsum_ref.c - the referee of the einsum tests (see the header): a
 * parser of its own, the sum over the whole index space, and the random
 * expression generator.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "test_einsum_ref.h"

#define ELL 0x200000u /* ELL + k: the k-th ellipsis axis from the right */
#define MAX_SYMS 64

size_t ref_numel(uint32_t rank, const int64_t *shape)
{
    size_t n = 1;
    for (uint32_t i = 0; i < rank; i++)
        n *= (size_t)shape[i];
    return n;
}

/* The next symbol of s at *i (a code point, ELL for "...", 0 at the end). */
static uint32_t next_symbol(const char *s, size_t *i)
{
    const unsigned char *u = (const unsigned char *)s;
    while (u[*i] == ' ')
        ++*i;
    unsigned char c = u[*i];
    if (!c || c == ',' || c == '-')
        return 0;
    if (c == '.') {
        *i += 3;
        return ELL;
    }
    size_t n = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
    uint32_t v = n == 1 ? c : (uint32_t)(c & (0x7f >> n));
    for (size_t k = 1; k < n; k++)
        v = (v << 6) | (u[*i + k] & 0x3fu);
    *i += n;
    return v;
}

typedef struct parsed {
    uint32_t term[REF_MAX_OPS][8];
    uint32_t out[8], out_rank;
    uint32_t syms[MAX_SYMS], n_syms;
    int64_t ext[MAX_SYMS];
} parsed;

static uint32_t sym_index(parsed *p, uint32_t code)
{
    for (uint32_t i = 0; i < p->n_syms; i++)
        if (p->syms[i] == code)
            return i;
    p->syms[p->n_syms] = code;
    p->ext[p->n_syms] = 1;
    return p->n_syms++;
}

/* One term into codes (ellipsis expanded for `rank`); returns its end. */
static size_t parse_term(const char *s, size_t i, uint32_t rank, uint32_t *codes, uint32_t *n_ell)
{
    uint32_t raw[16], n = 0, named = 0;
    size_t j = i;
    for (uint32_t c; (c = next_symbol(s, &j)) != 0;) {
        raw[n++] = c;
        named += c != ELL;
    }
    uint32_t k = 0;
    for (uint32_t r = 0; r < n; r++) {
        if (raw[r] != ELL) {
            codes[k++] = raw[r];
            continue;
        }
        *n_ell = rank - named;
        for (uint32_t e = rank - named; e-- > 0;)
            codes[k++] = ELL + e;
    }
    return j;
}

static int parse(const ref_case *c, parsed *p)
{
    memset(p, 0, sizeof *p);
    const char *s = c->subscripts, *arrow = strstr(s, "->");
    size_t i = 0;
    uint32_t max_ell = 0, count[MAX_SYMS] = {0};
    for (uint32_t t = 0; t < c->n; t++) {
        uint32_t ell = 0, codes[8];
        i = parse_term(s, i, c->rank[t], codes, &ell);
        max_ell = ell > max_ell ? ell : max_ell;
        for (uint32_t a = 0; a < c->rank[t]; a++) {
            p->term[t][a] = sym_index(p, codes[a]);
            count[p->term[t][a]]++;
        }
        if (s[i] == ',')
            i++;
    }
    if (arrow) {
        size_t j = (size_t)(arrow - s) + 2;
        for (uint32_t code; (code = next_symbol(s, &j)) != 0;) {
            for (uint32_t e = code == ELL ? max_ell : 1; e-- > 0;)
                p->out[p->out_rank++] = sym_index(p, code == ELL ? ELL + e : code);
        }
        return 0;
    }
    for (uint32_t e = max_ell; e-- > 0;)
        p->out[p->out_rank++] = sym_index(p, ELL + e);
    for (uint32_t code_min = 0;;) { /* the once-used symbols in code-point order */
        uint32_t best = UINT32_MAX, at = 0;
        for (uint32_t q = 0; q < p->n_syms; q++)
            if (count[q] == 1 && p->syms[q] < ELL && p->syms[q] >= code_min && p->syms[q] < best)
                best = p->syms[q], at = q;
        if (best == UINT32_MAX)
            break;
        p->out[p->out_rank++] = at;
        code_min = best + 1;
    }
    return 0;
}

int ref_einsum(const ref_case *c, const double *const *data, double *out, size_t cap,
               uint32_t *out_rank, int64_t *out_shape)
{
    parsed p;
    if (parse(c, &p))
        return -1;
    for (uint32_t t = 0; t < c->n; t++)
        for (uint32_t a = 0; a < c->rank[t]; a++)
            if (c->shape[t][a] != 1)
                p.ext[p.term[t][a]] = c->shape[t][a];
    *out_rank = p.out_rank;
    for (uint32_t i = 0; i < p.out_rank; i++)
        out_shape[i] = p.ext[p.out[i]];
    size_t n_out = ref_numel(p.out_rank, out_shape);
    if (n_out > cap)
        return -1;
    memset(out, 0, n_out * sizeof *out);
    int64_t idx[MAX_SYMS] = {0};
    size_t total = 1;
    for (uint32_t q = 0; q < p.n_syms; q++)
        total *= (size_t)p.ext[q];
    for (size_t it = 0; it < total; it++) {
        double prod = 1;
        for (uint32_t t = 0; t < c->n; t++) {
            size_t at = 0, stride = 1;
            for (uint32_t a = 0; a < c->rank[t]; a++) {
                at += (c->shape[t][a] == 1 ? 0 : (size_t)idx[p.term[t][a]]) * stride;
                stride *= (size_t)c->shape[t][a];
            }
            prod *= data[t][at];
        }
        size_t at = 0, stride = 1;
        for (uint32_t i = 0; i < p.out_rank; i++) {
            at += (size_t)idx[p.out[i]] * stride;
            stride *= (size_t)out_shape[i];
        }
        out[at] += prod;
        for (uint32_t q = 0; q < p.n_syms && ++idx[q] == p.ext[q]; q++)
            idx[q] = 0;
    }
    return 0;
}

/* ---- random expressions ---- */

static unsigned rnd(unsigned *s, unsigned n)
{
    *s = *s * 1103515245u + 12345u;
    return ((*s >> 8) & 0xffffffu) % n;
}

/* Index names: letters and non-ASCII characters of 2, 3 and 4 UTF-8 bytes. */
static const char *const k_names[] = {
    "a", "b", "c", "d", "e", "Z", "\xce\xb1", "\xce\xb2", "\xe4\xb8\xad", "\xf0\x9d\x84\x9e"};
#define N_NAMES (sizeof k_names / sizeof k_names[0])

/* Appends s to the 256-byte buf when it fits (the generator stays far below). */
static void append(char *buf, const char *s)
{
    size_t n = strlen(buf), m = strlen(s);
    if (n + m < 256)
        memcpy(buf + n, s, m + 1);
}

typedef struct gen {
    unsigned first; /* label i is named k_names[(first + i) % N_NAMES] */
    unsigned n_labels, ext[N_NAMES], uses[N_NAMES];
    unsigned n_ell, ell_ext[2];
    unsigned max_ell;
} gen;

/* One operand's term (into c->subscripts) and shape. */
static void random_term(unsigned *seed, gen *g, ref_case *c, uint32_t t)
{
    unsigned named = rnd(seed, 4), ell = g->n_ell && rnd(seed, 2) ? rnd(seed, g->n_ell + 1) : 0;
    bool with_ell = g->n_ell && (ell > 0 || rnd(seed, 3) == 0);
    unsigned lab[4], pos_ell = rnd(seed, named + 1), r = 0;
    for (unsigned i = 0; i < named; i++) {
        lab[i] = rnd(seed, g->n_labels);
        if (i > 0 && rnd(seed, 8) == 0)
            lab[i] = lab[rnd(seed, i)]; /* a repeated index: a diagonal */
        g->uses[lab[i]]++;
    }
    bool stretch[N_NAMES] = {false};
    for (unsigned i = 0; i < named; i++)
        stretch[lab[i]] = g->ext[lab[i]] > 1 && rnd(seed, 6) == 0;
    for (unsigned i = 0; i <= named; i++) {
        if (with_ell && i == pos_ell) {
            append(c->subscripts, "...");
            for (unsigned e = ell; e-- > 0;) /* axes counted from the right */
                c->shape[t][r++] = rnd(seed, 5) == 0 ? 1 : g->ell_ext[e];
            g->max_ell = ell > g->max_ell ? ell : g->max_ell;
        }
        if (i == named)
            break;
        append(c->subscripts, k_names[(g->first + lab[i]) % N_NAMES]);
        if (rnd(seed, 8) == 0)
            append(c->subscripts, " ");
        c->shape[t][r++] = stretch[lab[i]] ? 1 : g->ext[lab[i]];
    }
    c->rank[t] = r;
}

void ref_random_case(unsigned *seed, uint32_t max_ops, ref_case *c)
{
    memset(c, 0, sizeof *c);
    gen g;
    memset(&g, 0, sizeof g);
    c->n = 1 + rnd(seed, max_ops);
    g.n_labels = 2 + rnd(seed, 5);
    g.first = rnd(seed, (unsigned)N_NAMES);
    for (unsigned i = 0; i < g.n_labels; i++)
        g.ext[i] = rnd(seed, 6) == 0 ? 1 : 2 + rnd(seed, 3);
    g.n_ell = rnd(seed, 3) == 0 ? 1 + rnd(seed, 2) : 0;
    g.ell_ext[0] = 1 + rnd(seed, 3);
    g.ell_ext[1] = 1 + rnd(seed, 2);
    char terms[256] = "";
    for (uint32_t t = 0; t < c->n; t++) {
        c->subscripts[0] = '\0';
        random_term(seed, &g, c, t);
        if (t)
            append(terms, ",");
        append(terms, c->subscripts);
    }
    strcpy(c->subscripts, terms);
    if (rnd(seed, 2)) /* implicit output */
        return;
    append(c->subscripts, "->");
    unsigned pos_ell = rnd(seed, 4);
    bool ell_out = g.max_ell > 0 || rnd(seed, 8) == 0;
    unsigned order[N_NAMES], k = 0;
    for (unsigned i = 0; i < g.n_labels; i++)
        if (g.uses[i] && rnd(seed, 2))
            order[k++] = i;
    for (unsigned i = k; i > 1; i--) {
        unsigned j = rnd(seed, i), tmp = order[i - 1];
        order[i - 1] = order[j];
        order[j] = tmp;
    }
    for (unsigned i = 0; i <= k; i++) {
        if (ell_out && i == (pos_ell > k ? k : pos_ell))
            append(c->subscripts, "...");
        if (i < k)
            append(c->subscripts, k_names[(g.first + order[i]) % N_NAMES]);
    }
}
