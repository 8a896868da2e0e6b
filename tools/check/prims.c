/*
 * prims.c - runs one primitive call (a ck_case) on the engine under test and
 * on the reference engine and compares them.
 *
 * Both engines get the same bytes: every operand is generated once on the
 * host as a flat "base" memory, uploaded to each engine, and viewed with the
 * case's shape, strides and offset. Outputs too start from the same random
 * base, and the whole base is compared afterwards, so an engine that writes
 * outside its output view is caught as well as one that computes wrong values
 * (every output of a call of several, each in its own memory);
 * the inputs' memory is read back from the engine under test and must be as
 * uploaded. Every base is uploaded with guard elements after it, in the same
 * buffer, read back through the engine's own download after the call: an
 * engine writing past the end of an operand's memory is caught there, on a
 * device too, where the guard bytes of host->alloc (hooks.c) cannot see.
 * A combination the engine does not claim is executed once per cell
 * and must be refused with TF_ERR_UNSUPPORTED, its output memory untouched.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prims.h"

/* The memory behind one operand: strides, offset and how many elements. */
typedef struct ck_mem {
    int64_t strides[TF_MAX_RANK];
    int64_t offset;
    int64_t n; /* elements of the base memory (>= 1) */
} ck_mem;

/* Elements of guard after every operand's base, in the same buffer, and their bytes. */
#define CK_GUARD_ELEMS 16
#define CK_GUARD_BYTE 0xA5

static int64_t numel(const ck_arg *a)
{
    int64_t n = 1;
    for (size_t i = 0; i < a->rank; i++)
        n *= a->shape[i];
    return n;
}

static void mem_of(const ck_arg *a, ck_mem *m)
{
    size_t r = a->rank;
    int lay = a->layout;
    int64_t run = lay == CK_L_GAP ? 2 : 1;
    m->offset = 0;
    for (size_t k = 0; k < r; k++) {
        size_t ax = lay == CK_L_TRANS ? r - 1 - k : k; /* row-major walks axes backwards */
        int bcast = lay == CK_L_BCAST && (ax == 0 || ax == r - 1) && a->shape[ax] > 1;
        m->strides[ax] = bcast ? 0 : run;
        if (!bcast)
            run *= a->shape[ax] > 0 ? a->shape[ax] : 1;
    }
    if (numel(a) == 0) { /* nothing addressable: any strides do, one element of memory */
        m->n = 1;
        return;
    }
    if (lay == CK_L_OFFSET || lay == CK_L_GAP)
        m->offset = 3;
    if (lay == CK_L_REV) {
        m->offset = 1;
        for (size_t ax = 0; ax < r; ax++) {
            m->offset += (a->shape[ax] - 1) * m->strides[ax];
            m->strides[ax] = -m->strides[ax];
        }
    }
    int64_t hi = m->offset;
    for (size_t ax = 0; ax < r; ax++)
        if (m->strides[ax] > 0)
            hi += (a->shape[ax] - 1) * m->strides[ax];
    m->n = hi + 2; /* one spare element after the view */
}

double ck_rand(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15u;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return (double)((x * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

static int64_t rand_int(uint64_t *s, int64_t lo, int64_t hi) /* inclusive */
{
    return lo + (int64_t)(ck_rand(s) * (double)(hi - lo + 1));
}

static double gen_float(const ck_arg *a, uint64_t *s)
{
    double u = ck_rand(s);
    switch (a->domain) {
    case CK_D_POS: return 0.1 + 2.9 * u;
    case CK_D_UNIT: return -0.9 + 1.8 * u;
    case CK_D_NONZERO: return (u < 0.5 ? -1 : 1) * (0.5 + 3 * fabs(u - 0.5));
    case CK_D_NEAR1: return 0.6 + 0.8 * u;
    case CK_D_FEW: return u < 0.1 ? NAN : (double)rand_int(s, -2, 2) / 2;
    case CK_D_NAN: return u < 0.1 ? NAN : -2 + 4 * ck_rand(s);
    case CK_D_ZEROS: return u < 0.25 ? (u < 0.125 ? -0.0 : 0.0) : -2 + 4 * ck_rand(s);
    case CK_D_TINY:
    case CK_D_TINY_UNIT:
        if (u < 0.35) /* |x| = 10^-k for k in [3, 12], either sign */
            return (u < 0.175 ? -1 : 1) * pow(10.0, -3 - 9 * ck_rand(s));
        if (a->domain == CK_D_TINY_UNIT)
            return -0.9 + 1.8 * ck_rand(s);
        return u < 0.45 ? NAN : -2 + 4 * ck_rand(s);
    case CK_D_NANZ: return u < 0.1 ? NAN : u < 0.25 ? 0.0 : u < 0.4 ? -0.0 : -2 + 4 * ck_rand(s);
    case CK_D_EXACT:
        return a->lim == 1 ? (u < 0.2 ? -0.0 : (double)rand_int(s, 0, 1))
                           : (double)rand_int(s, -100, 100);
    case CK_D_CONVERT: {
        static const double special[] = {NAN,  INFINITY, -INFINITY, -0.0, 1e10, -1e10,
                                         3e38, 4e9,      -3e9,      2.5,  -2.5, 0.5};
        if (u < 0.3)
            return special[rand_int(s, 0, 11)];
        return -300 + 600 * ck_rand(s);
    }
    default: return -2 + 4 * u;
    }
}

static int64_t gen_int(const ck_arg *a, uint64_t *s)
{
    int64_t big = a->dtype == TF_I32 ? INT32_MAX : INT64_MAX;
    double u = ck_rand(s);
    switch (a->domain) {
    case CK_D_POS: return rand_int(s, 1, 50);
    case CK_D_NONZERO: {
        int64_t v = rand_int(s, 1, 50);
        return u < 0.5 ? -v : v;
    }
    case CK_D_SMALL: return rand_int(s, -9, 9);
    case CK_D_FEW: return rand_int(s, -2, 2);
    case CK_D_NEAR1: return rand_int(s, -2, 2);
    case CK_D_INDEX: return rand_int(s, 0, a->lim - 1);
    case CK_D_STARTS: return rand_int(s, -2, a->lim + 2);
    case CK_D_EXACT: return a->lim == 1 ? rand_int(s, 0, 1) : rand_int(s, -100, 100);
    case CK_D_CONVERT:
    case CK_D_ANY:
    default:
        /* mostly small, sometimes at the type's edges, where wrapping shows */
        if (u < 0.08)
            return u < 0.04 ? -big - 1 : big;
        if (a->domain == CK_D_CONVERT && u < 0.3)
            return rand_int(s, -((int64_t)1 << 40), (int64_t)1 << 40);
        return rand_int(s, -50, 50);
    }
}

int ck_wants_dtype(const ck_ctx *ctx, tf_dtype d)
{
    if (tf_dtype_is_complex(d) && ctx->meta.abi_major == 1 && ctx->meta.abi_minor < 4)
        return 0; /* engine_abi.h: the host never asks an older engine about complex */
    return (ctx->dtype_mask >> d) & 1u;
}

/* A part of a complex element of domain CK_D_CX_EDGE: with even odds one of the
   values engine_abi.h states results for (log(-1 +- 0i) = +-i pi, sqrt(-1 +- 0i) = +-i,
   log(0), angle(-1 +- 0i) = +-pi, abs and sign with an infinite part), else as CK_D_NAN. */
static void gen_cx_edge(uint64_t *s, double *re, double *im)
{
    static const double edge[][2] = {{0.0, 0.0},       {-0.0, 0.0},      {0.0, -0.0},
                                      {-0.0, -0.0},    {-1.0, 0.0},      {-1.0, -0.0},
                                      {-2.5, 0.0},     {-2.5, -0.0},     {INFINITY, 2.0},
                                      {-INFINITY, 1.0}, {1.5, INFINITY}, {INFINITY, NAN},
                                      {NAN, 0.0},      {1.0, 0.0},       {0.0, 1.0}};
    if (ck_rand(s) < 0.5) {
        const double *v = edge[rand_int(s, 0, (int64_t)(sizeof edge / sizeof edge[0]) - 1)];
        *re = v[0];
        *im = v[1];
        return;
    }
    ck_arg nan = {.domain = CK_D_NAN};
    *re = gen_float(&nan, s);
    *im = gen_float(&nan, s);
}

/* The base memory of operand a: m->n elements of a's dtype. */
static void *gen_base(const ck_arg *a, const ck_mem *m, uint64_t *s)
{
    size_t es = tf_dtype_size(a->dtype);
    unsigned char *p = malloc((size_t)m->n * es);
    if (!p)
        return NULL;
    for (int64_t i = 0; i < m->n; i++) {
        void *e = p + (size_t)i * es;
        switch (a->dtype) {
        case TF_F32: *(float *)e = (float)gen_float(a, s); break;
        case TF_F64: *(double *)e = gen_float(a, s); break;
        case TF_I32: *(int32_t *)e = (int32_t)gen_int(a, s); break;
        case TF_I64: *(int64_t *)e = gen_int(a, s); break;
        case TF_BOOL: *(uint8_t *)e = ck_rand(s) < 0.5; break;
        case TF_C64: /* each part drawn as a float of the domain */
        case TF_C128: {
            double re, im;
            if (a->domain == CK_D_CX_EDGE) {
                gen_cx_edge(s, &re, &im);
            } else {
                re = gen_float(a, s);
                im = gen_float(a, s);
            }
            if (a->dtype == TF_C64) {
                ((float *)e)[0] = (float)re;
                ((float *)e)[1] = (float)im;
            } else {
                ((double *)e)[0] = re;
                ((double *)e)[1] = im;
            }
            break;
        }
        }
    }
    return p;
}

/* One engine's operands for a case. */
typedef struct ck_side {
    tf_tensor *base[CK_MAX_OPERANDS], *view[CK_MAX_OPERANDS]; /* inputs, then the outputs */
} ck_side;

static void side_free(ck_side *sd)
{
    for (int i = 0; i < CK_MAX_OPERANDS; i++) {
        tf_tensor_release(sd->view[i]);
        tf_tensor_release(sd->base[i]);
    }
    memset(sd, 0, sizeof *sd);
}

static tf_status side_operand(tf_engine *e, const ck_arg *a, const ck_mem *m, const void *bytes,
                              tf_tensor **base, tf_tensor **view)
{
    tf_tensor *h = NULL;
    size_t es = tf_dtype_size(a->dtype);
    int64_t total = m->n + CK_GUARD_ELEMS; /* the base, then its guard */
    unsigned char *guarded = malloc((size_t)total * es);
    if (!guarded)
        return TF_ERR_OUT_OF_MEMORY;
    memcpy(guarded, bytes, (size_t)m->n * es);
    memset(guarded + (size_t)m->n * es, CK_GUARD_BYTE, CK_GUARD_ELEMS * es);
    tf_status st = tf_tensor_from_host(a->dtype, 1, &total, guarded, (size_t)total, &h);
    free(guarded);
    if (!st)
        st = tf_engine_upload(e, h, base);
    tf_tensor_release(h);
    if (!st)
        st = tf_tensor_view(*base, a->rank, a->shape, m->strides, m->offset, view);
    return st;
}

/* The whole base memory of an operand (n elements), downloaded into *out (malloc'd);
 *past gets the first of its guard elements that changed, -1 if none. */
static tf_status fetch_base(tf_engine *e, const tf_tensor *base, tf_dtype dt, int64_t n, void **out,
                            int64_t *past)
{
    tf_tensor *h = NULL;
    size_t es = tf_dtype_size(dt);
    tf_status st = tf_engine_download(e, base, &h);
    *past = -1;
    if (!st) {
        *out = malloc((size_t)(n + CK_GUARD_ELEMS) * es);
        if (!*out)
            st = TF_ERR_OUT_OF_MEMORY;
        else if ((st = tf_tensor_copy_to_host(h, dt, *out, (size_t)(n + CK_GUARD_ELEMS)))) {
            free(*out);
            *out = NULL;
        }
    }
    const unsigned char *guard = st ? NULL : (const unsigned char *)*out + (size_t)n * es;
    for (size_t k = 0; guard && k < CK_GUARD_ELEMS * es && *past < 0; k++)
        if (guard[k] != CK_GUARD_BYTE)
            *past = (int64_t)(k / es);
    tf_tensor_release(h);
    return st;
}

/* Where an engine wrote into an input: which input and which memory element (-1: none);
   past the end of an operand's memory: which operand (inputs, then outputs) and which
   element after the end (-1: none). */
typedef struct ck_clobber {
    int input;
    int64_t element;
    int past_operand;
    int64_t past_element;
} ck_clobber;

/* Operand `operand`'s guard changed at element `past` (-1: it did not): the first such. */
static void note_past(ck_clobber *clobber, int operand, int64_t past)
{
    if (clobber && past >= 0 && clobber->past_operand < 0) {
        clobber->past_operand = operand;
        clobber->past_element = past;
    }
}

/*
 * Builds, executes and downloads each output's base into out_bytes[j]. With
 * `always` the output bases are downloaded even when execute failed (to see
 * whether a refused call touched them); the execute status is returned then.
 * With `clobber`, the inputs' memory is downloaded too and compared with
 * what was uploaded: inputs are read-only to an engine. With `fused_mag`
 * (the reference) a FUSED call runs as its steps (ck_fused_ref).
 */
/* The inputs' memory read back and compared with what was uploaded: the first changed
   element, and the first guard element changed, into *clobber. */
static tf_status check_inputs(tf_engine *e, const ck_case *c, const ck_mem *mem, void *const *bytes,
                              const ck_side *sd, ck_clobber *clobber)
{
    tf_status st = TF_OK;
    for (size_t i = 0; !st && i < c->n_in && clobber->input < 0; i++) {
        void *now = NULL;
        size_t es = tf_dtype_size(c->in[i].dtype);
        int64_t past;
        st = fetch_base(e, sd->base[i], c->in[i].dtype, mem[i].n, &now, &past);
        note_past(clobber, (int)i, past);
        for (int64_t k = 0; !st && k < mem[i].n; k++)
            if (memcmp((char *)now + k * (int64_t)es, (const char *)bytes[i] + k * (int64_t)es,
                       es) != 0) {
                clobber->input = (int)i;
                clobber->element = k;
                break;
            }
        free(now);
    }
    return st;
}

static tf_status side_run(tf_engine *e, const ck_case *c, const ck_mem *mem, void *const *bytes,
                          void **out_bytes, int always, ck_clobber *clobber, double *fused_mag)
{
    ck_side sd = {0};
    tf_status st = TF_OK, exec = TF_OK;
    size_t n = c->n_in, m = ck_n_outs(c);
    const char *who = fused_mag ? "the reference's " : ""; /* the steps named if one dies */
    ck_step("%sbuffer_alloc and upload of the operands", who);
    for (size_t i = 0; i < n + m && !st; i++)
        st = side_operand(e, ck_arg_of(c, i), &mem[i], bytes[i], &sd.base[i], &sd.view[i]);
    ck_step("%sexecute", who);
    if (!st && fused_mag && c->prim == TF_PRIM_FUSED)
        st = ck_fused_ref(e, c, sd.view, &sd.view[n], fused_mag);
    else if (!st)
        st = tf_engine_execute(e, c->prim, c->params, n, sd.view, m, &sd.view[n]);
    ck_step("%ssynchronize", who);
    if (!st)
        st = tf_engine_synchronize(e);
    if (st && always && sd.base[n + m - 1]) {
        exec = st;
        st = TF_OK;
    }
    if (clobber)
        clobber->input = clobber->past_operand = -1;
    ck_step("%sdownload of the operands", who);
    for (size_t j = 0; j < m && !st; j++) {
        int64_t past;
        st = fetch_base(e, sd.base[n + j], c->out.dtype, mem[n + j].n, &out_bytes[j], &past);
        note_past(clobber, (int)(n + j), past);
    }
    if (clobber && !st)
        st = check_inputs(e, c, mem, bytes, &sd, clobber);
    ck_step("%sbuffer_free of the operands", who);
    side_free(&sd);
    return exec ? exec : st;
}

/* ---- describing a case for failure messages ---- */

static size_t put_list(char *buf, size_t cap, const int64_t *v, size_t n)
{
    size_t u = (size_t)snprintf(buf, cap, "[");
    for (size_t i = 0; i < n && u < cap; i++)
        u += (size_t)snprintf(buf + u, cap - u, "%s%" PRId64, i ? "," : "", v[i]);
    if (u < cap)
        u += (size_t)snprintf(buf + u, cap - u, "]");
    return u < cap ? u : cap;
}

/* A FUSED program as "r2 = mul(r0, r1); r3 = exp(r2)", after "outputs r2, r3: " when it
   has several, or a reduced one ("outputs r2, sum(r3): "). */
static size_t put_program(char *buf, size_t cap, const ck_case *c)
{
    const tf_fused_params *p = c->params;
    size_t u = 0, listed = c->reduced ? c->n_out - 1 : c->n_out > 1 ? c->n_out : 0;
    for (size_t j = 0; j < listed && u < cap; j++)
        u += (size_t)snprintf(buf + u, cap - u, "%sr%zu", j ? ", " : "outputs ",
                              c->n_in + p->outputs[j]);
    if (c->reduced && u < cap) /* ABI 1.6: the reduced output last */
        u += (size_t)snprintf(buf + u, cap - u, "%s%s(r%zu)", listed ? ", " : "outputs ",
                              tf_prim_op_name(TF_PRIM_REDUCE, p->reduce - 1),
                              c->n_in + p->reduce_step);
    if ((listed || c->reduced) && u < cap)
        u += (size_t)snprintf(buf + u, cap - u, ": ");
    for (uint32_t k = 0; k < p->n_steps && u < cap; k++) {
        const tf_fused_step *s = &p->steps[k];
        int bin = s->kind == TF_FUSED_BINARY;
        const char *op = tf_prim_op_name(bin ? TF_PRIM_BINARY : TF_PRIM_UNARY, s->op);
        u += (size_t)snprintf(buf + u, cap - u, "%sr%zu = %s(r%u", k ? "; " : "", c->n_in + k, op,
                              s->a);
        if (u < cap)
            u += (size_t)(bin ? snprintf(buf + u, cap - u, ", r%u)", s->b)
                              : snprintf(buf + u, cap - u, ")"));
    }
    return u < cap ? u : cap;
}

static void describe(const ck_case *c, const ck_mem *mem, char *buf, size_t cap)
{
    size_t u = 0;
    if (c->prim == TF_PRIM_FUSED) {
        u = put_program(buf, cap, c);
        if (u < cap)
            u += (size_t)snprintf(buf + u, cap - u, "; ");
    }
    for (size_t i = 0; i < c->n_in + ck_n_outs(c) && u < cap; i++) {
        const ck_arg *a = ck_arg_of(c, i);
        if (i < c->n_in)
            u += (size_t)snprintf(buf + u, cap - u, "%sin%zu ", i ? "; " : "", i);
        else if (c->n_out > 1)
            u += (size_t)snprintf(buf + u, cap - u, "; out%zu ", i - c->n_in);
        else
            u += (size_t)snprintf(buf + u, cap - u, "%sout ", c->n_in ? "; " : "");
        if (u >= cap)
            break;
        u += (size_t)snprintf(buf + u, cap - u, "%s", tf_dtype_name(a->dtype));
        if (u < cap)
            u += put_list(buf + u, cap - u, a->shape, a->rank);
        if (u < cap)
            u += (size_t)snprintf(buf + u, cap - u, " strides ");
        if (u < cap)
            u += put_list(buf + u, cap - u, mem[i].strides, a->rank);
        if (u < cap)
            u += (size_t)snprintf(buf + u, cap - u, " offset %" PRId64, mem[i].offset);
    }
}

/* The view index of base element k ("" with `outside` set if the view does not address it). */
static void locate(const ck_arg *a, const ck_mem *m, int64_t k, const char *kind, char *buf,
                   size_t cap)
{
    int64_t idx[TF_MAX_RANK] = {0}, n = numel(a);
    for (int64_t e = 0; e < n; e++) {
        int64_t addr = m->offset, rem = e;
        for (size_t ax = 0; ax < a->rank; ax++) {
            idx[ax] = rem % a->shape[ax];
            rem /= a->shape[ax];
            addr += idx[ax] * m->strides[ax];
        }
        if (addr == k) {
            size_t u = (size_t)snprintf(buf, cap, "element ");
            put_list(buf + u, cap - u, idx, a->rank);
            return;
        }
    }
    snprintf(buf, cap, "memory element %" PRId64 " outside the %s view (must stay unchanged)", k,
             kind);
}

/* ---- comparing ---- */

/* Element k of a float operand, or part k (2 per element) of a complex one. */
static double get_f(tf_dtype dt, const void *p, int64_t k)
{
    return dt == TF_F32 || dt == TF_C64 ? ((const float *)p)[k] : ((const double *)p)[k];
}

static int64_t get_i(tf_dtype dt, const void *p, int64_t k)
{
    switch (dt) {
    case TF_I32: return ((const int32_t *)p)[k];
    case TF_I64: return ((const int64_t *)p)[k];
    default: return ((const uint8_t *)p)[k];
    }
}

typedef struct ck_diff {
    int64_t worst;  /* base element with the largest error, -1 if all agree */
    double ratio;   /* its error over the allowed error (> 1 fails) */
    double max_abs; /* largest absolute error among floats */
} ck_diff;

/*
 * Complex element k: each part must be the reference's (both NaN, or equal with the
 * reference's sign of zero where c->zero_sign), or within the tolerance relative to
 * the reference's modulus; an infinite or NaN part that differs fails outright.
 * Returns the error over the allowed error (0 when equal).
 */
static double compare_complex(const ck_case *c, tf_dtype dt, const void *got, const void *want,
                              int64_t k, double *max_abs)
{
    double g[2], w[2], r = 0;
    for (int i = 0; i < 2; i++) {
        g[i] = get_f(dt, got, 2 * k + i);
        w[i] = get_f(dt, want, 2 * k + i);
    }
    double scale = c->atol + c->rtol * hypot(w[0], w[1]);
    for (int i = 0; i < 2; i++) {
        if ((isnan(g[i]) && isnan(w[i])) ||
            (g[i] == w[i] && (!c->zero_sign || signbit(g[i]) == signbit(w[i]))))
            continue;
        double err = fabs(g[i] - w[i]);
        if (!isfinite(err) || g[i] == w[i] || !isfinite(scale))
            return INFINITY; /* NaN or infinity on one side only, or zeros of different signs */
        if (err > *max_abs)
            *max_abs = err;
        r = fmax(r, err / scale);
    }
    return r;
}

static void compare(const ck_case *c, int64_t n, const void *got, const void *want, ck_diff *d)
{
    tf_dtype dt = c->out.dtype;
    d->worst = -1;
    d->ratio = 0;
    d->max_abs = 0;
    for (int64_t k = 0; k < n; k++) {
        double r;
        if (tf_dtype_is_complex(dt)) {
            r = compare_complex(c, dt, got, want, k, &d->max_abs);
            if (r == 0)
                continue;
        } else if (tf_dtype_is_float(dt)) {
            double g = get_f(dt, got, k), w = get_f(dt, want, k);
            if ((isnan(g) && isnan(w)) || (g == w && (!c->zero_sign || signbit(g) == signbit(w))))
                continue;
            double err = fabs(g - w);
            if (isnan(err) || g == w) { /* one NaN, infinities or zeros of different signs */
                r = INFINITY;
            } else {
                r = err / (c->atol + c->rtol * fabs(w));
                if (err > d->max_abs)
                    d->max_abs = err;
            }
        } else {
            if (get_i(dt, got, k) == get_i(dt, want, k))
                continue;
            r = INFINITY;
        }
        if (d->worst < 0 || r > d->ratio) {
            d->worst = k;
            d->ratio = r;
        }
    }
}

static void fmt_value(tf_dtype dt, const void *p, int64_t k, char *buf, size_t cap)
{
    if (tf_dtype_is_complex(dt))
        snprintf(buf, cap, "%.9g%+.9gi", get_f(dt, p, 2 * k), get_f(dt, p, 2 * k + 1));
    else if (tf_dtype_is_float(dt))
        snprintf(buf, cap, "%.9g", get_f(dt, p, k));
    else
        snprintf(buf, cap, "%" PRId64, get_i(dt, p, k));
}

/* ---- the runner ---- */

static int signature(const ck_case *c, tf_dtype *dt)
{
    int n = 0;
    for (size_t i = 0; i < c->n_in; i++)
        dt[n++] = c->in[i].dtype;
    for (size_t j = 0; j < ck_n_outs(c); j++)
        dt[n++] = c->out.dtype;
    return n;
}

static void merge(ck_cell *cell, ck_state s)
{
    if (s > cell->state)
        cell->state = s; /* NA < UNSUP < PASS < FAIL < ERROR */
    if (s == CK_UNSUP && cell->state == CK_NA)
        cell->state = CK_UNSUP;
}

/* An unclaimed combination must be refused with TF_ERR_UNSUPPORTED, memory untouched. */
static void check_refusal(ck_ctx *ctx, const ck_row *row, const ck_case *c, const ck_mem *mem,
                          void *const *bytes)
{
    void *after[CK_MAX_OUT] = {0};
    char what[1200];
    describe(c, mem, what, sizeof what);
    ck_doing("executing unclaimed %s (%s) [%s]", row->name, tf_dtype_name(c->out.dtype), what);
    tf_error_clear();
    tf_status st = side_run(ctx->eut, c, mem, bytes, after, 1, NULL, NULL);
    int touched = 0;
    for (size_t j = 0; j < ck_n_outs(c); j++) {
        int64_t nb = mem[c->n_in + j].n * (int64_t)tf_dtype_size(c->out.dtype);
        touched |= after[j] && memcmp(after[j], bytes[c->n_in + j], (size_t)nb) != 0;
    }
    if (st == TF_ERR_UNSUPPORTED && !touched) {
        ctx->refused++;
    } else if (st == TF_ERR_UNSUPPORTED) {
        ctx->wrongly_refused++;
        ck_failure(ctx,
                   "%s (%s): refused with TF_ERR_UNSUPPORTED but the output memory changed "
                   "[%s]",
                   row->name, tf_dtype_name(c->out.dtype), what);
    } else {
        ctx->wrongly_refused++;
        ck_failure(ctx,
                   "%s (%s): the engine does not claim it, yet executing it gave %s "
                   "instead of TF_ERR_UNSUPPORTED%s%s [%s]",
                   row->name, tf_dtype_name(c->out.dtype), tf_status_name(st), st ? ": " : "",
                   st ? ck_error_text() : "", what);
    }
    for (size_t j = 0; j < CK_MAX_OUT; j++)
        free(after[j]);
}

void ck_case_tol(ck_case *c, tf_dtype dt, int kind, int64_t n)
{
    if (kind == CK_TOL_EXACT) {
        c->rtol = c->atol = 0;
        return;
    }
    int single = dt == TF_F32 || dt == TF_C64; /* a complex value's parts */
    double eps = single ? 1.1920929e-7 : 2.220446049250313e-16;
    if (kind == CK_TOL_RELATIVE) { /* 64 ulp of the result, down to the smallest normal */
        c->rtol = 64 * eps;
        c->atol = 64 * (single ? 1.17549435e-38 : 2.2250738585072014e-308);
        return;
    }
    double k = kind ? 64 : 4; /* transcendental functions may lose a few more bits */
    if (n < 1)
        n = 1;
    c->rtol = k * eps * (double)n;
    c->atol = k * eps * 4 * (double)n; /* sums of values of magnitude ~4 may cancel */
}

/* Output j as a failure names it: " in outputs[j]" among several, " in the reduced output
   (sum)" for a FUSED call's reduced one (ABI 1.6), "" for the only one. */
static void output_name(const ck_case *c, size_t j, char *buf, size_t cap)
{
    buf[0] = 0;
    if (c->reduced && j + 1 == ck_n_outs(c))
        snprintf(buf, cap, " in the reduced output (%s)",
                 tf_prim_op_name(TF_PRIM_REDUCE, ((const tf_fused_params *)c->params)->reduce - 1));
    else if (c->n_out > 1)
        snprintf(buf, cap, " in outputs[%zu]", j);
}

/* A claimed case that ran on both engines: every output compared with the reference's,
   the first wrong one reported (named by output_name). */
static void judge(ck_ctx *ctx, ck_row *row, tf_dtype col, const ck_case *c, const ck_mem *mem,
                  void *const *got, void *const *want, double mag, const char *what)
{
    ck_cell *cell = &row->cell[col];
    ck_case tol = *c; /* FUSED: a step's error grows with what the next ones do */
    double scale = mag > 1 ? mag : 1;
    tol.rtol *= scale;
    tol.atol *= scale;
    cell->cases++;
    for (size_t j = 0; j < ck_n_outs(c); j++) {
        ck_diff d;
        const ck_mem *m = &mem[c->n_in + j];
        if (c->reduced && j + 1 == ck_n_outs(c)) { /* every element's error in one value */
            tol.rtol = c->red_rtol * scale;
            tol.atol = c->red_atol * scale;
        }
        compare(&tol, m->n, got[j], want[j], &d);
        if (d.max_abs > cell->max_err)
            cell->max_err = d.max_abs;
        if (d.worst < 0 || d.ratio <= 1)
            continue;
        char where[160], g[64], w[64], which[48]; /* room for any size_t */
        output_name(c, j, which, sizeof which);
        locate(ck_arg_of(c, c->n_in + j), m, d.worst, "output", where, sizeof where);
        fmt_value(c->out.dtype, got[j], d.worst, g, sizeof g);
        fmt_value(c->out.dtype, want[j], d.worst, w, sizeof w);
        int zeros = tf_dtype_is_float(c->out.dtype) && get_f(c->out.dtype, got[j], d.worst) == 0 &&
                    get_f(c->out.dtype, want[j], d.worst) == 0;
        if (zeros)
            ck_failure(ctx,
                       "%s (%s): wrong result%s at %s: got %s, expected %s (the sign of a zero; "
                       "engine_abi.h says which zero the op gives) [%s]",
                       row->name, tf_dtype_name(col), which, where, g, w, what);
        else if (tf_dtype_is_float(c->out.dtype))
            ck_failure(ctx,
                       "%s (%s): wrong result%s at %s: got %s, expected %s (error %.3g, "
                       "allowed %.3g + %.3g*|expected|) [%s]",
                       row->name, tf_dtype_name(col), which, where, g, w, fabs(atof(g) - atof(w)),
                       tol.atol, tol.rtol, what);
        else if (tf_dtype_is_complex(c->out.dtype))
            ck_failure(ctx,
                       "%s (%s): wrong result%s at %s: got %s, expected %s (a part's error "
                       "is %.3g times the allowed %.3g + %.3g*|expected|; inf: a NaN, an "
                       "infinity or a zero's sign differs) [%s]",
                       row->name, tf_dtype_name(col), which, where, g, w, d.ratio, tol.atol,
                       tol.rtol, what);
        else
            ck_failure(ctx, "%s (%s): wrong result%s at %s: got %s, expected %s [%s]", row->name,
                       tf_dtype_name(col), which, where, g, w, what);
        merge(cell, CK_FAIL);
        if (cell->max_err == 0)
            cell->max_err = INFINITY; /* integers: any difference */
        return;
    }
    merge(cell, CK_PASS);
}

void ck_case_run(ck_ctx *ctx, ck_row *row, tf_dtype col, const ck_case *c)
{
    ck_cell *cell = &row->cell[col];
    if (cell->state >= CK_FAIL || ctx->oom || ctx->stopped)
        return; /* one detailed failure per cell is enough */
    tf_dtype dt[CK_MAX_OPERANDS];
    int nd = signature(c, dt);
    int claimed = ck_claims(ctx, row, col, c->prim, c->op, dt, (size_t)nd);
    if (claimed < 0)
        return; /* no answer: the cell says why */
    if (!claimed && (cell->state != CK_NA || cell->refusal_checked))
        return; /* refusal already checked for this cell */
    ck_iso_case(ctx, row, col, c, claimed);
}

/* The engine wrote past the end of an operand's memory, into the kit's guard elements. */
static void past_end(ck_ctx *ctx, ck_row *row, tf_dtype col, const ck_case *c, const ck_mem *mem,
                     const ck_clobber *clobber, const char *what)
{
    int k = clobber->past_operand;
    const ck_arg *a = ck_arg_of(c, (size_t)k);
    char name[32];
    if (k < (int)c->n_in)
        snprintf(name, sizeof name, "input %d", k);
    else if (c->n_out > 1)
        snprintf(name, sizeof name, "output %d", k - (int)c->n_in);
    else
        snprintf(name, sizeof name, "the output");
    ck_failure(ctx,
               "%s (%s): the engine wrote past the end of the memory of %s (%" PRId64
               " elements of %s): the kit's guard element %" PRId64
               " after it, in the same buffer, changed (read back through download) [%s]",
               row->name, tf_dtype_name(col), name, mem[k].n, tf_dtype_name(a->dtype),
               clobber->past_element, what);
    ck_cell *cell = &row->cell[col];
    merge(cell, CK_FAIL);
    cell->damaged = 1;
}

void ck_case_exec(ck_ctx *ctx, ck_row *row, tf_dtype col, const ck_case *c, int claimed)
{
    ck_cell *cell = &row->cell[col];
    ck_mem mem[CK_MAX_OPERANDS];
    void *bytes[CK_MAX_OPERANDS] = {0};
    uint64_t seed = 0x5eed0000u + (uint64_t)c->prim * 7919u + c->op * 131u + (uint64_t)col;
    seed += (uint64_t)cell->cases * 104729u;
    int ok = 1;
    for (size_t i = 0; i < c->n_in + ck_n_outs(c); i++) {
        const ck_arg *a = ck_arg_of(c, i);
        mem_of(a, &mem[i]);
        bytes[i] = gen_base(a, &mem[i], &seed);
        ok = ok && bytes[i];
    }
    if (!ok) {
        ctx->oom = 1;
    } else if (!claimed) {
        merge(cell, CK_UNSUP);
        check_refusal(ctx, row, c, mem, bytes);
        cell->refusal_checked = 1;
    } else {
        void *got[CK_MAX_OUT] = {0}, *want[CK_MAX_OUT] = {0};
        char what[1200];
        double mag = 0;
        ck_clobber clobber = {-1, 0, -1, 0};
        tf_error_clear();
        describe(c, mem, what, sizeof what);
        ck_doing("%s (%s) [%s]", row->name, tf_dtype_name(col), what);
        tf_status st = side_run(ctx->ref, c, mem, bytes, want, 0, NULL, &mag);
        if (st) {
            ck_failure(ctx, "%s (%s): the reference engine failed: %s: %s [%s]", row->name,
                       tf_dtype_name(col), tf_status_name(st), ck_error_text(), what);
            cell->status = st;
            merge(cell, CK_ERROR);
        } else if ((st = side_run(ctx->eut, c, mem, bytes, got, 0, &clobber, NULL)) != TF_OK) {
            ck_failure(ctx, "%s (%s): the engine returned %s: %s [%s]", row->name,
                       tf_dtype_name(col), tf_status_name(st), ck_error_text(), what);
            cell->status = st;
            merge(cell, CK_ERROR);
        } else if (clobber.past_operand >= 0) {
            past_end(ctx, row, col, c, mem, &clobber, what);
        } else if (clobber.input >= 0) {
            char where[160];
            locate(&c->in[clobber.input], &mem[clobber.input], clobber.element, "input", where,
                   sizeof where);
            ck_failure(ctx, "%s (%s): the engine wrote into input %d (read-only) at %s [%s]",
                       row->name, tf_dtype_name(col), clobber.input, where, what);
            merge(cell, CK_FAIL);
            cell->max_err = INFINITY;
        } else {
            judge(ctx, row, col, c, mem, got, want, mag, what);
        }
        for (size_t j = 0; j < CK_MAX_OUT; j++) {
            free(got[j]);
            free(want[j]);
        }
    }
    for (size_t i = 0; i < c->n_in + ck_n_outs(c); i++)
        free(bytes[i]);
}

void ck_run_prims(ck_ctx *ctx)
{
    ck_cases_elementwise(ctx);
    ck_cases_fused(ctx);
    ck_cases_structural(ctx);
}
