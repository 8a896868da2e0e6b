/*
 * wire.c - the kit's jobs and their results as bytes (wire.h).
 */
#include <stdlib.h>
#include <string.h>

#include "wire.h"

/* ---- byte buffers ---- */

static void put(wbuf *b, const void *v, size_t n)
{
    if (b->oom || n == 0)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, v, n);
    b->n += n;
}

void ck_wbuf_put(wbuf *b, const void *v, size_t n)
{
    put(b, v, n);
}

static void put_i32(wbuf *b, int32_t v)
{
    put(b, &v, sizeof v);
}

static void put_str(wbuf *b, const char *s)
{
    uint32_t n = (uint32_t)strlen(s) + 1;
    put(b, &n, sizeof n);
    put(b, s, n);
}

typedef struct rbuf {
    const unsigned char *p;
    size_t n, at;
    int bad;
} rbuf;

static void get(rbuf *r, void *v, size_t n)
{
    if (r->bad || r->n - r->at < n) {
        r->bad = 1;
        memset(v, 0, n);
        return;
    }
    memcpy(v, r->p + r->at, n);
    r->at += n;
}

static int32_t get_i32(rbuf *r)
{
    int32_t v;
    get(r, &v, sizeof v);
    return v;
}

/* A string of the buffer (borrowed from it); "" when malformed. */
static const char *get_str(rbuf *r)
{
    uint32_t n;
    get(r, &n, sizeof n);
    if (r->bad || n == 0 || r->n - r->at < n || r->p[r->at + n - 1] != '\0') {
        r->bad = 1;
        return "";
    }
    const char *s = (const char *)r->p + r->at;
    r->at += n;
    return s;
}

/* ---- jobs ---- */

/* The checks a job may name, by index: a worker is another process of the same program. */
static const ck_check_fn k_checks[] = {ck_grads_one, ck_lifecycle_one, ck_abi_descriptor_one,
                                       ck_abi_data_error_one};
#define N_CHECKS ((int)(sizeof k_checks / sizeof k_checks[0]))

/* The entries of a FUSED program's params.outputs: several outputs' (ABI 1.3), and with a
   reduced output (1.6) the elementwise ones', even one. */
static uint32_t listed_outputs(const tf_fused_params *f)
{
    return TF_FUSED_PARAMS_REDUCE(f) || f->n_outputs > 1 ? f->n_outputs : 0;
}

void ck_wire_case(wbuf *b, int row, int col, int claimed, const ck_row *r, const ck_case *c)
{
    const ck_cell *cell = &r->cell[col];
    put_i32(b, JOB_CASE);
    put_str(b, r->name);
    put_i32(b, row);
    put_i32(b, col);
    put_i32(b, claimed);
    put(b, cell, sizeof *cell);
    put(b, c, sizeof *c);
    uint32_t size = c->params ? *(const uint32_t *)c->params : 0; /* every params struct
                                                                      starts with its size */
    put(b, &size, sizeof size);
    put(b, c->params, size);
    if (c->prim == TF_PRIM_FUSED && c->params) {
        const tf_fused_params *f = c->params;
        put(b, f->steps, f->n_steps * sizeof *f->steps);
        put(b, f->outputs, listed_outputs(f) * sizeof *f->outputs);
        if (TF_ABI_HAS_FIELD(f, tf_fused_params, imm) && f->n_imm)
            put(b, f->imm, f->n_imm * sizeof *f->imm);
    }
}

void ck_wire_check(wbuf *b, int section, ck_check_fn fn, int index, const char *what)
{
    put_i32(b, JOB_CHECK);
    put_i32(b, section);
    put_i32(b, index);
    int k = 0;
    while (k < N_CHECKS && k_checks[k] != fn)
        k++;
    put_i32(b, k); /* N_CHECKS, not one of them: the worker refuses the job */
    put_str(b, what);
}

void ck_wire_supports(wbuf *b, uint32_t prim, uint32_t op, const tf_dtype *dt, size_t n)
{
    put_i32(b, JOB_SUPPORTS);
    put(b, &prim, sizeof prim);
    put(b, &op, sizeof op);
    uint32_t n32 = (uint32_t)n;
    put(b, &n32, sizeof n32);
    for (size_t i = 0; i < n; i++) {
        uint32_t d = (uint32_t)dt[i];
        put(b, &d, sizeof d);
    }
}

void ck_wire_describe(wbuf *b)
{
    put_i32(b, JOB_DESCRIBE);
}

int ck_wire_decode(const unsigned char *p, size_t n, job *j)
{
    rbuf r = {p, n, 0, 0};
    memset(j, 0, sizeof *j);
    j->kind = get_i32(&r);
    if (j->kind == JOB_DESCRIBE)
        return !r.bad;
    if (j->kind == JOB_SUPPORTS) {
        get(&r, &j->prim, sizeof j->prim);
        get(&r, &j->op, sizeof j->op);
        get(&r, &j->n_dt, sizeof j->n_dt);
        if (r.bad || j->n_dt > CK_MAX_OPERANDS)
            return 0;
        get(&r, j->dt, j->n_dt * sizeof *j->dt);
        return !r.bad;
    }
    if (j->kind == JOB_CHECK) {
        j->section = get_i32(&r);
        j->index = get_i32(&r);
        int k = get_i32(&r);
        j->fn = k >= 0 && k < N_CHECKS ? k_checks[k] : NULL;
        snprintf(j->what, sizeof j->what, "%s", get_str(&r));
        return !r.bad && j->fn;
    }
    if (j->kind != JOB_CASE)
        return 0;
    snprintf(j->row_name, sizeof j->row_name, "%s", get_str(&r));
    j->row = get_i32(&r);
    j->col = get_i32(&r);
    j->claimed = get_i32(&r);
    get(&r, &j->cell, sizeof j->cell);
    get(&r, &j->c, sizeof j->c);
    uint32_t size;
    get(&r, &size, sizeof size);
    if (r.bad || size > sizeof j->params || j->row < 0 || j->row >= CK_MAX_ROWS || j->col < 0 ||
        j->col >= TF_DTYPE_COUNT)
        return 0;
    get(&r, j->params.bytes, size);
    j->c.params = size ? j->params.bytes : NULL;
    if (j->c.prim == TF_PRIM_FUSED && size) {
        tf_fused_params *f = (tf_fused_params *)(void *)j->params.bytes;
        uint32_t n_imm = TF_ABI_HAS_FIELD(f, tf_fused_params, imm) ? f->n_imm : 0;
        if (f->n_steps > TF_FUSED_MAX_STEPS || f->n_outputs > CK_MAX_OUT ||
            n_imm > TF_FUSED_MAX_IMMEDIATES ||
            (TF_FUSED_PARAMS_REDUCE(f) && f->reduce_step >= f->n_steps))
            return 0;
        get(&r, j->steps, f->n_steps * sizeof *j->steps);
        f->steps = j->steps;
        get(&r, j->outputs, listed_outputs(f) * sizeof *j->outputs);
        f->outputs = listed_outputs(f) ? j->outputs : NULL;
        if (n_imm)
            get(&r, j->imm, n_imm * sizeof *j->imm);
        if (TF_ABI_HAS_FIELD(f, tf_fused_params, imm))
            f->imm = n_imm ? j->imm : NULL;
    }
    return !r.bad && j->c.n_in <= CK_MAX_IN && j->c.n_out <= CK_MAX_OUT;
}

/* ---- results ---- */

ck_mark ck_wire_mark(const ck_ctx *ctx)
{
    char first[8];
    return (ck_mark){ctx->n_failures,      ctx->n_lines, ctx->refused,
                     ctx->wrongly_refused, ctx->oom,     ck_logged_errors(first, sizeof first)};
}

void ck_wire_result(wbuf *b, const ck_ctx *ctx, const ck_mark *m, const job *j)
{
    char first[512];
    int logged = ck_logged_errors(first, sizeof first);
    put_i32(b, j->kind == JOB_CASE);
    if (j->kind == JOB_CASE)
        put(b, &ctx->rows[j->row].cell[j->col], sizeof(ck_cell));
    put_i32(b, ctx->refused - m->refused);
    put_i32(b, ctx->wrongly_refused - m->wrongly);
    put_i32(b, ctx->oom && !m->oom);
    put_i32(b, logged - m->logged);
    put_str(b, m->logged ? "" : first);
    put_i32(b, ctx->n_failures - m->failures);
    for (int i = m->failures; i < ctx->n_failures; i++)
        put_str(b, ctx->failures[i]);
    put_i32(b, ctx->n_lines - m->lines);
    for (int i = m->lines; i < ctx->n_lines; i++) {
        put_i32(b, ctx->lines[i].section);
        put_i32(b, ctx->lines[i].state);
        put_str(b, ctx->lines[i].text);
    }
}

void ck_wire_forget(ck_ctx *ctx, const ck_mark *m)
{
    for (int i = m->failures; i < ctx->n_failures; i++)
        free(ctx->failures[i]);
    for (int i = m->lines; i < ctx->n_lines; i++)
        free(ctx->lines[i].text);
    ctx->n_failures = m->failures;
    ctx->n_lines = m->lines;
}

int ck_wire_apply(ck_ctx *ctx, const unsigned char *p, size_t n, int kind, int row, int col)
{
    rbuf r = {p, n, 0, 0};
    if (get_i32(&r)) {
        ck_cell cell;
        get(&r, &cell, sizeof cell);
        if (!r.bad && kind == JOB_CASE)
            ctx->rows[row].cell[col] = cell;
    }
    ctx->refused += get_i32(&r);
    ctx->wrongly_refused += get_i32(&r);
    ctx->oom |= get_i32(&r);
    int logged = get_i32(&r);
    ck_logged_add(logged, get_str(&r));
    int count = get_i32(&r);
    for (int i = 0; i < count && !r.bad; i++)
        ck_failure(ctx, "%s", get_str(&r));
    count = get_i32(&r);
    for (int i = 0; i < count && !r.bad; i++) {
        int sec = get_i32(&r), state = get_i32(&r);
        const char *text = get_str(&r);
        if (!r.bad && sec >= 0 && sec < CK_SEC_COUNT_ && state >= CK_NA && state <= CK_CRASH)
            ck_line_add(ctx, (ck_section)sec, (ck_state)state, "%s", text);
    }
    return !r.bad;
}
