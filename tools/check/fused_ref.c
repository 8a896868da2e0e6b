/*
 * fused_ref.c - a FUSED call as the reference engine runs it for the kit:
 * its steps as separate UNARY and BINARY calls, and a reduced output (ABI
 * 1.6) as a REDUCE call over every axis of its register, which is what
 * engine_abi.h defines the fused result to be.
 *
 * The magnitudes the registers reach come back with the result: an error of
 * one step carries into the next ones, and into every term of a reduction, so
 * the kit's tolerance grows with them (prims.c, judge).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prims.h"

/* Raises *mag to the largest finite magnitude among t's elements. */
static tf_status raise_magnitude(tf_engine *e, const tf_tensor *t, double *mag)
{
    tf_tensor *h = NULL;
    size_t n = (size_t)tf_tensor_numel(t);
    double *v = malloc((n ? n : 1) * sizeof *v);
    tf_status st = v ? tf_engine_download(e, t, &h) : TF_ERR_OUT_OF_MEMORY;
    tf_dtype dt = tf_tensor_dtype(t);
    if (!st)
        st = tf_tensor_copy_to_host(h, dt, v, n); /* f32 fills the first half */
    for (size_t k = 0; !st && k < n; k++) {
        double x = dt == TF_F32 ? ((const float *)(void *)v)[k] : v[k];
        if (isfinite(x) && fabs(x) > *mag)
            *mag = fabs(x);
    }
    tf_tensor_release(h);
    free(v);
    return st;
}

/* ABI 1.6: REDUCE of the op over every axis of reg into the one element of dst, seen with
   reg's rank (dst may have any rank: every extent is 1). */
static tf_status reduce_into(tf_engine *e, uint32_t op, tf_tensor *reg, tf_tensor *dst)
{
    size_t rank = tf_tensor_rank(reg);
    int64_t ones[TF_MAX_RANK];
    for (size_t k = 0; k < rank; k++)
        ones[k] = 1;
    tf_reduce_params rp = {sizeof rp, op, rank ? (~0ull >> (64 - rank)) : 0};
    tf_tensor *unit = NULL;
    tf_status st = tf_tensor_reshape(dst, rank, ones, &unit);
    if (!st)
        st = tf_engine_execute(e, TF_PRIM_REDUCE, &rp, 1, &reg, 1, &unit);
    tf_tensor_release(unit);
    return st;
}

/* ABI 1.5: each immediate as the FILL of the program's dtype with its value gives it. */
static tf_status fill_immediates(tf_engine *e, const ck_case *c, tf_tensor **imm)
{
    const tf_fused_params *p = c->params;
    uint32_t n_imm = TF_ABI_HAS_FIELD(p, tf_fused_params, imm) ? p->n_imm : 0;
    tf_status st = TF_OK;
    for (uint32_t j = 0; j < n_imm && j < TF_FUSED_MAX_IMMEDIATES && !st; j++) {
        tf_fill_params fp = {.struct_size = sizeof fp, .value = {p->imm[j], 0}};
        st = tf_tensor_empty(e, c->out.dtype, c->out.rank, c->out.shape, &imm[j]);
        if (!st)
            st = tf_engine_execute(e, TF_PRIM_FILL, &fp, 0, NULL, 1, &imm[j]);
    }
    return st;
}

tf_status ck_fused_ref(tf_engine *e, const ck_case *c, tf_tensor *const *in, tf_tensor *const *out,
                       double *mag)
{
    const tf_fused_params *p = c->params;
    tf_tensor *reg[CK_MAX_IN + TF_FUSED_MAX_STEPS] = {0};
    tf_tensor *own[TF_FUSED_MAX_STEPS] = {0};      /* the temporaries, to release */
    tf_tensor *imm[TF_FUSED_MAX_IMMEDIATES] = {0}; /* ABI 1.5: FILLs of the immediates */
    uint32_t red = TF_FUSED_PARAMS_REDUCE(p);
    /* the elementwise outputs, and whether params.outputs names them (with a reduced
       output whenever there is one, else only for several) */
    size_t n = c->n_in, m = red ? p->n_outputs : ck_n_outs(c), next = 0;
    int listed = red ? m > 0 : m > 1;
    memcpy(reg, in, n * sizeof *reg);
    *mag = 0;
    tf_status st = fill_immediates(e, c, imm);
    for (uint32_t k = 0; k < p->n_steps && !st; k++) {
        const tf_fused_step *s = &p->steps[k];
        int last = k + 1 == p->n_steps;
        int is_out = listed ? next < m && p->outputs[next] == k : !red && last;
        tf_tensor *dst = is_out ? out[listed ? next++ : 0] : NULL;
        if (!dst && (st = tf_tensor_empty(e, c->out.dtype, c->out.rank, c->out.shape, &dst)))
            break;
        if (!is_out)
            own[k] = dst;
        reg[n + k] = dst;
        tf_unary_params up = {sizeof up, s->op};
        tf_binary_params bp = {sizeof bp, s->op};
        tf_tensor *ab[2] = {s->a & TF_FUSED_IMM ? imm[s->a & ~TF_FUSED_IMM] : reg[s->a],
                            s->b & TF_FUSED_IMM ? imm[s->b & ~TF_FUSED_IMM] : reg[s->b]};
        st = s->kind == TF_FUSED_UNARY ? tf_engine_execute(e, TF_PRIM_UNARY, &up, 1, ab, 1, &dst)
                                       : tf_engine_execute(e, TF_PRIM_BINARY, &bp, 2, ab, 1, &dst);
        /* a reduction sums every element's error: the reduced register's magnitude counts */
        if (!st && (!last || (red && k == p->reduce_step)))
            st = raise_magnitude(e, dst, mag);
    }
    if (!st && red)
        st = reduce_into(e, red - 1, reg[n + p->reduce_step], out[m]);
    for (uint32_t k = 0; k < p->n_steps; k++)
        tf_tensor_release(own[k]);
    for (uint32_t j = 0; j < TF_FUSED_MAX_IMMEDIATES; j++)
        tf_tensor_release(imm[j]);
    return st;
}
