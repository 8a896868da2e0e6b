/*
 * einsum_parse.c - subscripts of NumPy's einsum into labels.
 *
 * Grammar: terms separated by ',' (one per operand), optionally "->" and the
 * output term; spaces are ignored between indices. An index is an ASCII
 * letter or any non-ASCII Unicode character in UTF-8 (as opt_einsum's
 * symbols); "..." once per term stands for the axes its operand has beyond
 * the term's indices, broadcast against the other operands' from the right.
 * Without "->" the output is the ellipsis axes followed by the indices that
 * appear exactly once, in code-point order (NumPy's alphabetical order for
 * letters: 'A' < 'Z' < 'a' < 'z'). With "->" and no "..." in the output, an
 * operand's ellipsis must cover no axes (as NumPy's default einsum says).
 *
 * Labels are numbered in code-point order, the ellipsis axes after every
 * character, so sorting ids sorts characters. Every refusal is
 * TF_ERR_VALIDATION about "subscripts" (or "operands" for their count) with
 * the byte offset it concerns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "einsum_internal.h"

typedef struct tok {
    uint32_t code; /* EIN_ELLIPSIS marks a "..." */
    int64_t pos;
} tok;

typedef struct scan {
    const char *s;
    size_t len;
    tok *toks;
    size_t n_toks;
    size_t *term_start; /* n_terms + 1 entries into toks */
    uint32_t n_terms;
    int64_t *term_end;         /* byte offset where each term ends */
    size_t out_start, out_end; /* tokens of the output (when explicit) */
    int64_t arrow;             /* byte offset of "->", -1 if implicit */
    ein_err *err;
} scan;

static tf_status bad(scan *sc, int64_t pos, const char *fmt, const char *what)
{
    char shown[160];
    size_t n = sc->len < 120 ? sc->len : 120;
    memcpy(shown, sc->s, n);
    strcpy(shown + n, sc->len > n ? "..." : "");
    char why[200];
    snprintf(why, sizeof why, fmt, what);
    return ein_fail(sc->err, TF_ERR_VALIDATION, EIN_ARG_SUBSCRIPTS, pos, -1,
                    "subscripts \"%s\": at byte %lld, %s", shown, (long long)pos, why);
}

/* Decodes one UTF-8 character at s[i] (first byte >= 0x80); 0 when malformed. */
static size_t utf8(const unsigned char *s, size_t len, size_t i, uint32_t *cp)
{
    unsigned char c = s[i];
    size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
    if (n == 0 || i + n > len)
        return 0;
    uint32_t v = c & (0x7fu >> n);
    for (size_t k = 1; k < n; k++) {
        if ((s[i + k] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i + k] & 0x3fu);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < least[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0; /* overlong, out of range, or a surrogate */
    *cp = v;
    return n;
}

static bool letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* One token at s[*i] of a term; spaces skipped. Returns false at a term's end. */
static tf_status next_tok(scan *sc, size_t *i, bool *got)
{
    const unsigned char *s = (const unsigned char *)sc->s;
    *got = false;
    while (*i < sc->len && s[*i] == ' ')
        ++*i;
    if (*i >= sc->len || s[*i] == ',' || s[*i] == '-')
        return TF_OK;
    tok *t = &sc->toks[sc->n_toks];
    t->pos = (int64_t)*i;
    if (s[*i] == '.') {
        if (*i + 2 >= sc->len || s[*i + 1] != '.' || s[*i + 2] != '.' ||
            (*i + 3 < sc->len && s[*i + 3] == '.'))
            return bad(sc, t->pos, "%s", "a '.' that is not part of an ellipsis '...'");
        t->code = EIN_ELLIPSIS;
        *i += 3;
    } else if (letter((char)s[*i])) {
        t->code = s[(*i)++];
    } else if (s[*i] >= 0x80) {
        size_t n = utf8(s, sc->len, *i, &t->code);
        if (!n)
            return bad(sc, t->pos, "%s", "invalid UTF-8");
        *i += n;
    } else if (s[*i] == '>') {
        return bad(sc, t->pos, "%s", "'>' without the '-' of \"->\"");
    } else {
        char what[8];
        snprintf(what, sizeof what, "%c", s[*i] >= 0x20 && s[*i] < 0x7f ? s[*i] : '?');
        return bad(sc, t->pos, "'%s' is not an index (ASCII letters and non-ASCII characters are)",
                   what);
    }
    sc->n_toks++;
    *got = true;
    return TF_OK;
}

/* The tokens of one term from s[*i] up to ',', "->" or the end. */
static tf_status scan_term(scan *sc, size_t *i, bool output)
{
    bool got = true, ellipsis = false;
    while (got) {
        tf_status st = next_tok(sc, i, &got);
        if (st)
            return st;
        if (got && sc->toks[sc->n_toks - 1].code == EIN_ELLIPSIS) {
            if (ellipsis)
                return bad(sc, sc->toks[sc->n_toks - 1].pos, "%s", "a second '...' in one term");
            ellipsis = true;
        }
    }
    if (output && *i < sc->len && sc->s[*i] == ',')
        return bad(sc, (int64_t)*i, "%s", "a ',' in the output");
    return TF_OK;
}

static tf_status scan_all(scan *sc)
{
    size_t i = 0;
    sc->arrow = -1;
    for (;;) {
        sc->term_start[sc->n_terms] = sc->n_toks;
        tf_status st = scan_term(sc, &i, false);
        if (st)
            return st;
        sc->term_end[sc->n_terms++] = (int64_t)i;
        if (i < sc->len && sc->s[i] == ',') {
            i++;
            continue;
        }
        break;
    }
    sc->term_start[sc->n_terms] = sc->n_toks;
    if (i >= sc->len)
        return TF_OK;
    /* here s[i] == '-' */
    if (i + 1 >= sc->len || sc->s[i + 1] != '>')
        return bad(sc, (int64_t)i, "%s", "a '-' that does not start \"->\"");
    sc->arrow = (int64_t)i;
    i += 2;
    sc->out_start = sc->n_toks;
    tf_status st = scan_term(sc, &i, true);
    sc->out_end = sc->n_toks;
    if (!st && i < sc->len)
        st = bad(sc, (int64_t)i, "%s",
                 sc->s[i] == '-' ? "a second \"->\"" : "an unexpected character");
    return st;
}

/* ---- labels ---- */

static int cmp_code(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static uint32_t label_of(const ein_expr *e, uint32_t code)
{
    uint32_t lo = 0, hi = e->n_labels;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (e->code[mid] < code)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Checks each term against its operand's rank; *n_ell gets the most ellipsis axes. */
static tf_status check_ranks(scan *sc, uint32_t n, const uint32_t *ranks, uint32_t *n_ell)
{
    *n_ell = 0;
    for (uint32_t t = 0; t < n; t++) {
        size_t a = sc->term_start[t], b = sc->term_start[t + 1];
        uint32_t nl = 0;
        bool ell = false;
        for (size_t k = a; k < b; k++) {
            if (sc->toks[k].code == EIN_ELLIPSIS) {
                ell = true;
                continue;
            }
            if (++nl > ranks[t]) {
                char what[96];
                snprintf(what, sizeof what,
                         "operand %u has rank %u, and its term names more indices", t, ranks[t]);
                return bad(sc, sc->toks[k].pos, "%s", what);
            }
        }
        if (!ell && nl < ranks[t]) {
            char what[120];
            snprintf(what, sizeof what,
                     "operand %u has rank %u, and its term names only %u indices and no '...'", t,
                     ranks[t], nl);
            return bad(sc, sc->term_end[t], "%s", what);
        }
        if (ell && ranks[t] - nl > *n_ell)
            *n_ell = ranks[t] - nl;
    }
    return TF_OK;
}

/* The distinct codes of every input token, sorted, then the ellipsis labels. */
static tf_status collect_codes(const ein_mem *m, scan *sc, size_t n_in, uint32_t n_ell,
                               uint32_t **codes, uint32_t *n_codes)
{
    uint32_t *c = ein_calloc(m, n_in + n_ell + 1, sizeof *c);
    if (!c)
        return ein_fail(sc->err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    uint32_t k = 0;
    for (size_t i = 0; i < n_in; i++)
        if (sc->toks[i].code != EIN_ELLIPSIS)
            c[k++] = sc->toks[i].code;
    qsort(c, k, sizeof *c, cmp_code);
    uint32_t u = 0;
    for (uint32_t i = 0; i < k; i++)
        if (u == 0 || c[u - 1] != c[i])
            c[u++] = c[i];
    for (uint32_t j = 0; j < n_ell; j++)
        c[u++] = EIN_ELLIPSIS + j;
    *codes = c;
    *n_codes = u;
    return TF_OK;
}

/* Lays out the operands' axes: the labels of a term, "..." expanded. */
static void fill_terms(const scan *sc, ein_expr *e)
{
    for (uint32_t t = 0; t < e->n_ops; t++) {
        size_t a = sc->term_start[t], b = sc->term_start[t + 1];
        uint32_t named = 0, ax = 0;
        for (size_t k = a; k < b; k++)
            named += sc->toks[k].code != EIN_ELLIPSIS;
        for (size_t k = a; k < b; k++) {
            if (sc->toks[k].code != EIN_ELLIPSIS) {
                e->term_pos[t][ax] = sc->toks[k].pos;
                e->term[t][ax++] = label_of(e, sc->toks[k].code);
                continue;
            }
            for (uint32_t j = e->rank[t] - named; j-- > 0;) {
                e->term_pos[t][ax] = sc->toks[k].pos;
                e->term[t][ax++] = label_of(e, EIN_ELLIPSIS + j);
            }
        }
    }
}

/* How many times each label appears in the inputs. */
static uint32_t *label_counts(const ein_mem *m, const ein_expr *e)
{
    uint32_t *cnt = ein_calloc(m, e->n_labels + 1, sizeof *cnt);
    for (uint32_t t = 0; cnt && t < e->n_ops; t++)
        for (uint32_t a = 0; a < e->rank[t]; a++)
            cnt[e->term[t][a]]++;
    return cnt;
}

static tf_status implicit_output(const ein_mem *m, ein_expr *e, uint32_t n_ell, ein_err *err)
{
    uint32_t *cnt = label_counts(m, e);
    if (!cnt)
        return ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    uint32_t r = 0;
    for (uint32_t j = n_ell; j-- > 0;)
        e->out[r++] = label_of(e, EIN_ELLIPSIS + j);
    for (uint32_t l = 0; l < e->n_labels && e->code[l] < EIN_ELLIPSIS; l++)
        if (cnt[l] == 1) {
            if (r < TF_MAX_RANK)
                e->out[r] = l;
            r++;
        }
    ein_free(m, cnt);
    e->out_rank = r;
    for (uint32_t i = 0; i < r && i < TF_MAX_RANK; i++)
        e->out_pos[i] = (int64_t)e->length;
    return TF_OK;
}

static tf_status explicit_output(scan *sc, ein_expr *e, uint32_t n_ell)
{
    uint32_t r = 0;
    bool ell = false;
    for (size_t k = sc->out_start; k < sc->out_end; k++) {
        const tok *t = &sc->toks[k];
        uint32_t want = t->code == EIN_ELLIPSIS ? n_ell : 1;
        for (uint32_t j = 0; j < want; j++) {
            uint32_t code = t->code == EIN_ELLIPSIS ? EIN_ELLIPSIS + (n_ell - 1 - j) : t->code;
            uint32_t l = label_of(e, code);
            if (t->code != EIN_ELLIPSIS && (l >= e->n_labels || e->code[l] != code))
                return bad(sc, t->pos, "%s", "an output index that no operand has");
            for (uint32_t q = 0; q < r && q < TF_MAX_RANK; q++)
                if (e->out[q] == l)
                    return bad(sc, t->pos, "%s", "an index that appears twice in the output");
            if (r < TF_MAX_RANK) {
                e->out[r] = l;
                e->out_pos[r] = t->pos;
            }
            r++;
        }
        ell = ell || t->code == EIN_ELLIPSIS;
    }
    if (!ell && n_ell > 0)
        return bad(sc, (int64_t)e->out_start, "%s",
                   "the operands' '...' covers axes but the output has no '...'");
    e->out_rank = r;
    return TF_OK;
}

/* ---- the expression ---- */

static tf_status layout(const ein_mem *m, ein_expr *e, const uint32_t *ranks, uint32_t *codes,
                        ein_err *err)
{
    size_t total = 0;
    for (uint32_t t = 0; t < e->n_ops; t++)
        total += ranks[t];
    size_t bytes = e->n_labels * sizeof(uint32_t) +
                   e->n_ops * (sizeof(uint32_t) + 2 * sizeof(void *)) +
                   total * (sizeof(uint32_t) + sizeof(int64_t)) +
                   TF_MAX_RANK * (sizeof(uint32_t) + sizeof(int64_t)) + 64;
    char *b = ein_calloc(m, 1, bytes);
    if (!b)
        return ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    e->block = b;
    /* pointers and 8-byte fields first, then the 4-byte ones: everything aligned */
    e->term = (uint32_t **)(void *)b;
    e->term_pos = (int64_t **)(void *)(b + e->n_ops * sizeof(void *));
    int64_t *pos = (int64_t *)(void *)(b + 2 * e->n_ops * sizeof(void *));
    e->out_pos = pos + total;
    uint32_t *u = (uint32_t *)(void *)(e->out_pos + TF_MAX_RANK);
    e->code = u;
    memcpy(e->code, codes, e->n_labels * sizeof *codes);
    e->rank = e->code + e->n_labels;
    e->out = e->rank + e->n_ops;
    uint32_t *lab = e->out + TF_MAX_RANK;
    for (uint32_t t = 0; t < e->n_ops; t++) {
        e->rank[t] = ranks[t];
        e->term[t] = lab;
        e->term_pos[t] = pos;
        lab += ranks[t];
        pos += ranks[t];
    }
    return TF_OK;
}

static tf_status parse_scanned(const ein_mem *m, scan *sc, uint32_t n, const uint32_t *ranks,
                               ein_expr *e)
{
    if (sc->n_terms != n) {
        char what[96];
        snprintf(what, sizeof what, "%u terms for %u operands (one term per operand)", sc->n_terms,
                 n);
        int64_t pos =
            sc->n_terms > n ? (int64_t)sc->term_end[n - 1] : sc->term_end[sc->n_terms - 1];
        tf_status st = bad(sc, pos, "%s", what);
        sc->err->arg = sc->n_terms > n ? EIN_ARG_SUBSCRIPTS : EIN_ARG_OPERANDS;
        return st;
    }
    uint32_t n_ell;
    tf_status st = check_ranks(sc, n, ranks, &n_ell);
    uint32_t *codes = NULL;
    if (!st)
        st = collect_codes(m, sc, sc->term_start[n], n_ell, &codes, &e->n_labels);
    if (!st)
        st = layout(m, e, ranks, codes, sc->err);
    ein_free(m, codes);
    if (st)
        return st;
    fill_terms(sc, e);
    e->implicit = sc->arrow < 0;
    e->out_start = e->implicit ? (int64_t)sc->len : sc->arrow + 2;
    st = e->implicit ? implicit_output(m, e, n_ell, sc->err) : explicit_output(sc, e, n_ell);
    if (!st && e->out_rank > TF_MAX_RANK) {
        char what[96];
        snprintf(what, sizeof what, "an output of rank %u (tensors have at most %d axes)",
                 e->out_rank, TF_MAX_RANK);
        st = bad(sc, e->out_start, "%s", what);
    }
    return st;
}

tf_status ein_parse(const ein_mem *m, const char *subscripts, uint32_t n, const uint32_t *ranks,
                    ein_expr *e, ein_err *err)
{
    memset(e, 0, sizeof *e);
    size_t len = strlen(subscripts);
    e->text = subscripts;
    e->length = len;
    e->n_ops = n;
    if (n == 0)
        return ein_fail(err, TF_ERR_VALIDATION, EIN_ARG_OPERANDS, -1, -1,
                        "einsum needs at least one operand");
    scan sc = {subscripts, len, NULL, 0, NULL, 0, NULL, 0, 0, -1, err};
    sc.toks = ein_calloc(m, len + 1, sizeof *sc.toks);
    sc.term_start = ein_calloc(m, len + 3, sizeof *sc.term_start);
    sc.term_end = ein_calloc(m, len + 2, sizeof *sc.term_end);
    tf_status st =
        sc.toks && sc.term_start && sc.term_end
            ? scan_all(&sc)
            : ein_fail(err, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    if (!st)
        st = parse_scanned(m, &sc, n, ranks, e);
    ein_free(m, sc.toks);
    ein_free(m, sc.term_start);
    ein_free(m, sc.term_end);
    if (st)
        ein_expr_free(m, e);
    return st;
}

void ein_expr_free(const ein_mem *m, ein_expr *e)
{
    ein_free(m, e->block);
    e->block = NULL;
}

size_t ein_put_label(char *buf, uint32_t code, const uint32_t *ell_codes)
{
    if (code >= EIN_ELLIPSIS)
        code = ell_codes[code - EIN_ELLIPSIS];
    if (code < 0x80) {
        buf[0] = (char)code;
        return 1;
    }
    size_t n = code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    static const unsigned char lead[5] = {0, 0, 0xc0, 0xe0, 0xf0};
    for (size_t k = n - 1; k > 0; k--) {
        buf[k] = (char)(0x80 | (code & 0x3f));
        code >>= 6;
    }
    buf[0] = (char)(lead[n] | code);
    return n;
}
