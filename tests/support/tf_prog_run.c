/*
 * tf_prog_run.c - running a program through the public C API (tf_prog.h):
 * leaves uploaded to the run's engine and laid out as they say, ops issued
 * one by one through a session, the loss, values read back, and the
 * derivatives by every path the library offers (backward into the grad
 * slots, grad, vjp, jvp, Hessian-vector products both ways).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tf_prog_internal.h"

/* ---- failures ---- */

/*
 * Records the first failure: what was called and the library's last error,
 * or, where the driver itself refused (r->msg already says why: an attribute
 * it cannot read, an op it does not know), that message alone.
 */
static bool failed(tfp_run *r, const char *what, tf_status st)
{
    if (r->status)
        return false;
    r->status = st;
    char detail[sizeof r->msg];
    memcpy(detail, r->msg, sizeof detail);
    if (detail[0]) {
        snprintf(r->msg, sizeof r->msg, "%s -> %s: %.900s", what, tf_status_name(st), detail);
        return false;
    }
    const char *arg = tf_error_argument(), *cause = tf_error_cause();
    snprintf(r->msg, sizeof r->msg, "%s -> %s: %s%s%s%s%s%s", what, tf_status_name(st),
             tf_error_message(), arg && *arg ? " (argument " : "", arg && *arg ? arg : "",
             arg && *arg ? ")" : "", cause && *cause ? "; cause: " : "",
             cause && *cause ? cause : "");
    return false;
}

/* A derivative or a read after the forward pass fails on its own: each
   begins with the last failure forgotten (the forward's stays sticky). */
static void fresh(tfp_run *r)
{
    if (r->loss) {
        r->status = TF_OK;
        r->msg[0] = '\0';
    }
}

static bool oom(tfp_run *r)
{
    return failed(r, "the driver's allocation", TF_ERR_OUT_OF_MEMORY);
}

/* Takes e over, to be released at the end of the run. */
static tf_eager *keep(tfp_run *r, tf_eager *e)
{
    if (!e)
        return NULL;
    if (r->n_kept == r->cap_kept) {
        size_t cap = r->cap_kept ? 2 * r->cap_kept : 32;
        tf_eager **k = realloc(r->kept, cap * sizeof *k);
        if (!k) {
            tf_eager_release(e);
            oom(r);
            return NULL;
        }
        r->kept = k;
        r->cap_kept = cap;
    }
    r->kept[r->n_kept++] = e;
    return e;
}

/* ---- leaves ---- */

/* The index in the base buffer of the logical element at idx (see tfp_layout). */
static size_t base_index(const tfp_data *d, tfp_layout layout, const int64_t *idx)
{
    int64_t shape[TF_MAX_RANK], at[TF_MAX_RANK];
    uint32_t rank = d->rank;
    memcpy(shape, d->shape, rank * sizeof shape[0]);
    memcpy(at, idx, rank * sizeof at[0]);
    if (layout == TFP_TRANSPOSED) {
        int64_t t = shape[rank - 2];
        shape[rank - 2] = shape[rank - 1];
        shape[rank - 1] = t;
        t = at[rank - 2];
        at[rank - 2] = at[rank - 1];
        at[rank - 1] = t;
    } else if (layout == TFP_REVERSED) {
        for (uint32_t i = 0; i < rank; i++)
            at[i] = shape[i] - 1 - at[i];
    } else if (layout == TFP_STRIDED) {
        shape[0] *= 2;
        at[0] *= 2;
    }
    size_t k = 0;
    for (uint32_t i = rank; i-- > 0;)
        k = k * (size_t)shape[i] + (size_t)at[i];
    return k;
}

static tfp_layout usable_layout(const tfp_data *d, tfp_layout layout)
{
    if (tfp_data_numel(d) == 0 || (layout == TFP_TRANSPOSED && d->rank < 2) ||
        (layout != TFP_DENSE && d->rank < 1))
        return TFP_DENSE;
    return layout;
}

/* The library's dtype of program data in a replay at float_dtype (f64 or
   f32): c128 data becomes the complex dtype of that precision (c128 or c64). */
static tf_dtype lib_dtype(const tfp_data *d, tf_dtype float_dtype)
{
    if (d->dtype == TFP_C128)
        return float_dtype == TF_F32 ? TF_C64 : TF_C128;
    return d->dtype == TFP_I64 ? TF_I64 : d->dtype == TFP_BOOL ? TF_BOOL : float_dtype;
}

/* The base buffer of d laid out as `layout` (padding elements NaN). A
   complex element is two parts (real, then imaginary), each at the part's
   precision. */
static void *base_buffer(const tfp_data *d, tf_dtype dt, tfp_layout layout, size_t *n_base)
{
    size_t n = tfp_data_numel(d), nb = layout == TFP_STRIDED ? 2 * n : n;
    size_t size = tf_dtype_size(dt), parts = tf_dtype_is_complex(dt) ? 2 : 1;
    bool single = dt == TF_F32 || dt == TF_C64, is_int = dt == TF_I64 || dt == TF_BOOL;
    unsigned char *buf = malloc((nb ? nb : 1) * size);
    if (!buf)
        return NULL;
    for (size_t k = 0; layout == TFP_STRIDED && !is_int && k < nb * parts; k++) {
        if (single)
            ((float *)buf)[k] = NAN;
        else
            ((double *)buf)[k] = NAN;
    }
    if (layout == TFP_STRIDED && is_int)
        memset(buf, 0, nb * size);
    int64_t idx[TF_MAX_RANK] = {0};
    for (size_t e = 0; e < n; e++) {
        size_t k = base_index(d, layout, idx);
        for (size_t part = 0; part < parts; part++) {
            double v = d->data[parts * e + part];
            size_t at = parts * k + part;
            if (single)
                ((float *)buf)[at] = (float)v;
            else if (!is_int)
                ((double *)buf)[at] = v;
            else if (dt == TF_I64)
                ((int64_t *)buf)[at] = (int64_t)v;
            else
                buf[at] = v != 0.0;
        }
        for (uint32_t i = 0; i < d->rank && ++idx[i] == d->shape[i]; i++)
            idx[i] = 0;
    }
    *n_base = nb;
    return buf;
}

/* The view of base that shows d's logical elements. */
static tf_status make_view(const tfp_data *d, tfp_layout layout, tf_tensor *base, tf_tensor **out)
{
    uint32_t rank = d->rank;
    if (layout == TFP_TRANSPOSED) {
        int perm[TF_MAX_RANK];
        for (uint32_t i = 0; i < rank; i++)
            perm[i] = (int)i;
        perm[rank - 2] = (int)rank - 1;
        perm[rank - 1] = (int)rank - 2;
        return tf_tensor_transpose(base, perm, out);
    }
    if (layout == TFP_REVERSED) {
        int axes[TF_MAX_RANK];
        for (uint32_t i = 0; i < rank; i++)
            axes[i] = (int)i;
        return tf_tensor_reverse(base, rank, axes, out);
    }
    int64_t start[TF_MAX_RANK] = {0}, limit[TF_MAX_RANK], stride[TF_MAX_RANK];
    for (uint32_t i = 0; i < rank; i++) {
        limit[i] = i == 0 ? 2 * d->shape[0] : d->shape[i];
        stride[i] = i == 0 ? 2 : 1;
    }
    return tf_tensor_slice(base, start, limit, stride, out);
}

/* d in the run engine's memory, laid out as `layout`. */
static tf_status engine_tensor(tfp_run *r, const tfp_data *d, tfp_layout layout, tf_tensor **out)
{
    layout = usable_layout(d, layout);
    tf_dtype dt = lib_dtype(d, r->cfg.dtype);
    int64_t shape[TF_MAX_RANK];
    memcpy(shape, d->shape, d->rank * sizeof shape[0]);
    if (layout == TFP_TRANSPOSED) {
        shape[d->rank - 2] = d->shape[d->rank - 1];
        shape[d->rank - 1] = d->shape[d->rank - 2];
    } else if (layout == TFP_STRIDED) {
        shape[0] *= 2;
    }
    size_t nb;
    void *buf = base_buffer(d, dt, layout, &nb);
    if (!buf)
        return TF_ERR_OUT_OF_MEMORY;
    tf_tensor *host = NULL, *dev = NULL;
    tf_status st = tf_tensor_from_host(dt, d->rank, shape, buf, nb, &host);
    free(buf);
    if (!st)
        st = tf_engine_upload(r->cfg.engine, host, &dev);
    tf_tensor_release(host);
    if (!st && layout != TFP_DENSE) {
        st = make_view(d, layout, dev, out);
        tf_tensor_release(dev);
    } else if (!st) {
        *out = dev;
    }
    return st;
}

tf_status tfp__constant(tfp_run *r, const tfp_data *d, tfp_layout layout, tf_eager **out)
{
    tf_tensor *t = NULL;
    tf_status st = engine_tensor(r, d, layout, &t);
    if (!st)
        st = tf_runtime_constant_from(r->rt, t, out);
    tf_tensor_release(t);
    return st;
}

/* Whether d is f64 data of at least one element, every element equal (bits). */
static bool uniform(const tfp_data *d)
{
    if (d->dtype != TFP_F64 || d->count == 0)
        return false;
    for (size_t k = 1; k < d->count; k++)
        if (memcmp(&d->data[k], &d->data[0], sizeof d->data[0]) != 0)
            return false;
    return true;
}

static bool make_leaves(tfp_run *r)
{
    const tfp_program *p = r->p;
    for (uint32_t i = 0; i < p->n_inputs + p->n_consts; i++) {
        const tfp_leaf *l = i < p->n_inputs ? &p->inputs[i] : &p->consts[i - p->n_inputs];
        char name[16], what[64];
        snprintf(what, sizeof what, "making leaf %s", tfp_value_name(p, i, name, sizeof name));
        if (i >= p->n_inputs && uniform(&l->value)) {
            /* a constant of one value: FILLed (tf_session_full), a FUSED immediate where
               a batch reads it (ABI 1.5) */
            tf_status st = tf_session_full(r->s, lib_dtype(&l->value, r->cfg.dtype),
                                           l->value.rank, l->value.shape, l->value.data[0],
                                           &r->vals[i]);
            if (st)
                return failed(r, what, st);
            continue;
        }
        tf_tensor *t = NULL;
        tf_status st = engine_tensor(r, &l->value, l->layout, &t);
        if (!st)
            st = i < p->n_inputs ? tf_runtime_variable_from(r->rt, t, &r->vals[i])
                                 : tf_runtime_constant_from(r->rt, t, &r->vals[i]);
        tf_tensor_release(t);
        if (st)
            return failed(r, what, st);
    }
    return true;
}

/* ---- the run ---- */

static bool uses_linalg(const tfp_program *p)
{
    for (uint32_t k = 0; k < p->n_ops; k++) {
        bool la = false;
        if (tfp_op_known(p->ops[k].name, &la) && la)
            return true;
    }
    return false;
}

bool tfp_run_begin(tfp_run *r, const tfp_program *p, const tfp_config *cfg)
{
    memset(r, 0, sizeof *r);
    r->p = p;
    r->cfg = *cfg;
    r->cap_vals = tfp_n_values(p) + 1;
    r->vals = calloc(r->cap_vals, sizeof *r->vals);
    if (!r->vals)
        return oom(r);
    tf_status st = tf_runtime_create(&r->rt);
    tf_epoch e;
    if (!st && cfg->linalg) /* also for ops added later (the generator's) */
        st = tf_runtime_install_extension_module(r->rt, cfg->linalg, &e);
    if (!st && !cfg->linalg && uses_linalg(p)) {
        snprintf(r->msg, sizeof r->msg, "the program uses tenferro.linalg, which is not loaded");
        st = TF_ERR_UNSUPPORTED;
    }
    if (!st)
        st = tf_session_begin(r->rt, cfg->engine, &r->s);
    if (!st && cfg->defer >= 0)
        st = tf_session_set_defer(r->s, (tf_defer_mode)cfg->defer);
    if (st)
        return failed(r, "creating the runtime and session", st);
    return make_leaves(r);
}

bool tfp_run_op(tfp_run *r)
{
    const tfp_program *p = r->p;
    if (r->status || r->n_done == p->n_ops)
        return false;
    const tfp_op *op = &p->ops[r->n_done];
    tf_eager *a[TFP_MAX_ARGS];
    for (uint32_t i = 0; i < op->n_args; i++)
        if (op->args[i] >= tfp_op_value(p, r->n_done) || !(a[i] = r->vals[op->args[i]]))
            return failed(r, "an op argument that is not defined before it", TF_ERR_VALIDATION);
    uint32_t id = tfp_op_value(p, r->n_done);
    if (id >= r->cap_vals) { /* the program grew since the run began (the generator) */
        uint32_t cap = 2 * id + 2;
        tf_eager **v = realloc(r->vals, cap * sizeof *v);
        if (!v)
            return oom(r);
        memset(v + r->cap_vals, 0, (cap - r->cap_vals) * sizeof *v);
        r->vals = v;
        r->cap_vals = cap;
    }
    r->msg[0] = '\0';
    tf_status st = tfp__dispatch(r, op, a, &r->vals[id]);
    if (st) {
        char name[16], what[80];
        snprintf(what, sizeof what, "ops[%u] (%s = %s)", r->n_done,
                 tfp_value_name(p, id, name, sizeof name), op->name);
        return failed(r, what, st);
    }
    r->n_done++;
    return true;
}

static bool is_complex(const tf_eager *e)
{
    return tf_dtype_is_complex(tf_tensor_dtype(tf_eager_value(e)));
}

/* sum(Re(a * b)) (OPS.md 7.5: no conjugation; sum(a * b) for real values). */
static tf_status sum_re_product(tfp_run *r, tf_eager *a, tf_eager *b, tf_eager **out)
{
    tf_eager *prod = NULL, *re = NULL;
    tf_status st = tf_session_mul(r->s, a, b, &prod);
    if (!st && keep(r, prod) && is_complex(prod)) {
        st = tf_session_real(r->s, prod, &re);
        prod = keep(r, re);
    }
    if (!st && !prod)
        st = TF_ERR_OUT_OF_MEMORY;
    return st ? st : tf_session_reduce_sum(r->s, prod, NULL, 0, out);
}

bool tfp_run_forward(tfp_run *r)
{
    while (r->n_done < r->p->n_ops)
        if (!tfp_run_op(r))
            return false;
    if (r->status)
        return false;
    tf_eager *w = NULL, *loss = NULL;
    r->output = r->vals[r->p->output];
    tf_status st = tfp__constant(r, &r->p->weights, TFP_DENSE, &w);
    if (!st && keep(r, w))
        st = sum_re_product(r, r->output, w, &loss);
    if (st)
        return failed(r, "loss = reduce_sum(real(output * W))", st);
    r->loss = keep(r, loss);
    return r->loss != NULL;
}

void tfp_run_end(tfp_run *r)
{
    for (uint32_t i = 0; r->vals && i < r->cap_vals; i++)
        tf_eager_release(r->vals[i]);
    for (size_t i = 0; i < r->n_kept; i++)
        tf_eager_release(r->kept[i]);
    free(r->vals);
    free(r->kept);
    tf_session_end(r->s);
    tf_runtime_release(r->rt);
    r->vals = NULL;
    r->kept = NULL;
    r->n_kept = r->cap_kept = 0;
    r->s = NULL;
    r->rt = NULL;
}

/* ---- reading values ---- */

bool tfp_read(tfp_run *r, const tf_eager *e, tfp_data *out)
{
    const tf_tensor *t = tf_eager_value(e);
    tf_tensor *host = NULL;
    tf_status st = TF_OK;
    if (!tf_tensor_is_host_accessible(t)) {
        st = tf_engine_download(tf_tensor_engine(t), t, &host);
        t = host;
    }
    memset(out, 0, sizeof *out);
    size_t n = st ? 0 : tf_tensor_numel(t);
    tf_dtype dt = st ? TF_F64 : tf_tensor_dtype(t);
    size_t parts = tf_dtype_is_complex(dt) ? 2 : 1, count = parts * n;
    void *raw = malloc((n ? n : 1) * 16);
    out->data = malloc((count ? count : 1) * sizeof *out->data);
    if (!st && (!raw || !out->data))
        st = TF_ERR_OUT_OF_MEMORY;
    if (!st)
        st = tf_tensor_copy_to_host(t, dt, raw, n);
    for (size_t i = 0; !st && i < count; i++) /* a complex element: two parts */
        out->data[i] = dt == TF_F64 || dt == TF_C128  ? ((double *)raw)[i]
                       : dt == TF_F32 || dt == TF_C64 ? (double)((float *)raw)[i]
                       : dt == TF_I64                 ? (double)((int64_t *)raw)[i]
                       : dt == TF_I32                 ? (double)((int32_t *)raw)[i]
                                                      : (double)(((unsigned char *)raw)[i] != 0);
    if (!st) {
        out->dtype = parts == 2       ? TFP_C128
                     : dt == TF_BOOL ? TFP_BOOL
                     : dt == TF_I64 || dt == TF_I32 ? TFP_I64
                                                    : TFP_F64;
        out->rank = (uint32_t)tf_tensor_rank(t);
        memcpy(out->shape, tf_tensor_shape(t), out->rank * sizeof out->shape[0]);
        out->count = count;
    }
    free(raw);
    tf_tensor_release(host);
    if (st) {
        tfp_data_free(out);
        return failed(r, "reading a value", st);
    }
    return true;
}

bool tfp_read_value(tfp_run *r, uint32_t id, tfp_data *out)
{
    if (id >= tfp_n_values(r->p) || !r->vals[id])
        return failed(r, "reading a value not computed", TF_ERR_VALIDATION);
    return tfp_read(r, r->vals[id], out);
}

/* Zeros of like's shape (a derivative that is identically zero). */
static bool zeros(tfp_run *r, const tfp_data *like, tfp_data *out)
{
    *out = *like;
    out->dtype = like->dtype == TFP_C128 ? TFP_C128 : TFP_F64;
    out->count = tfp_data_numel(like) * (like->dtype == TFP_C128 ? 2 : 1);
    out->data = calloc(out->count ? out->count : 1, sizeof *out->data);
    return out->data ? true : oom(r);
}

/* e (NULL: zero) as data shaped like `like`. */
static bool read_or_zero(tfp_run *r, const tf_eager *e, const tfp_data *like, tfp_data *out)
{
    return e ? tfp_read(r, e, out) : zeros(r, like, out);
}

/* ---- derivatives ---- */

static bool grad_of(tfp_run *r, tfp_grad_path path, uint32_t i, tf_eager **g)
{
    tf_eager *x = r->vals[i];
    tf_status st;
    const char *what;
    if (path == TFP_VJP) {
        /* the output's cotangent of loss = sum(Re(output * W)) is conj(W) (OPS.md 7.6) */
        what = "tf_runtime_vjp_optional(output, x, conj(W))";
        tf_eager *w = NULL, *cw = NULL;
        st = tfp__constant(r, &r->p->weights, TFP_DENSE, &w);
        if (!st && keep(r, w) && is_complex(w)) {
            st = tf_session_conj(r->s, w, &cw);
            w = keep(r, cw);
        }
        if (!st && w)
            st = tf_runtime_vjp_optional(r->rt, r->cfg.engine, r->output, x, w, g);
    } else if (path == TFP_VJP_ONE) {
        what = "tf_runtime_vjp_optional(loss, x, 1)";
        tf_eager *one = NULL;
        st = tf_session_scalar(r->s, tf_tensor_dtype(tf_eager_value(r->loss)), 1.0, &one);
        if (!st && keep(r, one))
            st = tf_runtime_vjp_optional(r->rt, r->cfg.engine, r->loss, x, one, g);
    } else if (path == TFP_GRAD_NO_GRAD) {
        what = "tf_runtime_grad_optional(loss, x) under no-grad";
        tf_scope scope;
        st = tf_scope_begin_no_grad(r->rt, &scope);
        if (!st) {
            st = tf_runtime_grad_optional(r->rt, r->cfg.engine, r->loss, x, g);
            tf_scope_end(&scope);
        }
    } else {
        what = "tf_runtime_grad_optional(loss, x)";
        st = tf_runtime_grad_optional(r->rt, r->cfg.engine, r->loss, x, g);
    }
    if (st)
        return failed(r, what, st);
    keep(r, *g);
    return true;
}

bool tfp_grads(tfp_run *r, tfp_grad_path path, tfp_data *out)
{
    fresh(r);
    const tfp_program *p = r->p;
    for (uint32_t i = 0; i < p->n_inputs; i++)
        memset(&out[i], 0, sizeof out[i]);
    if (path == TFP_BACKWARD) {
        tf_status st = tf_runtime_clear_grads(r->rt);
        if (!st)
            st = tf_eager_backward(r->loss, r->cfg.engine);
        if (st)
            return failed(r, "tf_eager_backward(loss)", st);
    }
    for (uint32_t i = 0; i < p->n_inputs; i++) {
        bool ok;
        if (path == TFP_BACKWARD) {
            tf_tensor *g = NULL;
            tf_status st = tf_eager_grad(r->vals[i], &g);
            tf_eager *ge = NULL;
            if (!st && g)
                st = tf_eager_from_tensor(g, r->rt, &ge);
            tf_tensor_release(g);
            if (st)
                return failed(r, "reading a grad slot", st);
            ok = read_or_zero(r, keep(r, ge), &p->inputs[i].value, &out[i]);
        } else {
            tf_eager *g = NULL;
            ok = grad_of(r, path, i, &g) && read_or_zero(r, g, &p->inputs[i].value, &out[i]);
        }
        if (!ok)
            return false;
    }
    return true;
}

/* *acc += term (kept). */
static bool add_into(tfp_run *r, tf_eager **acc, tf_eager *term, const char *what)
{
    if (!*acc) {
        *acc = term;
        return true;
    }
    tf_eager *sum = NULL;
    tf_status st = tf_session_add(r->s, *acc, term, &sum);
    if (st)
        return failed(r, what, st);
    *acc = keep(r, sum);
    return *acc != NULL;
}

bool tfp_jvp(tfp_run *r, tfp_data *out)
{
    fresh(r);
    const tfp_program *p = r->p;
    tf_eager *acc = NULL;
    for (uint32_t i = 0; i < p->n_inputs; i++) {
        if (!p->inputs[i].tangent.count)
            continue;
        tf_eager *t = NULL, *j = NULL;
        tf_status st = tfp__constant(r, &p->inputs[i].tangent, TFP_DENSE, &t);
        if (!st && keep(r, t))
            st = tf_runtime_jvp_optional(r->rt, r->cfg.engine, r->output, r->vals[i], t, &j);
        if (st)
            return failed(r, "tf_runtime_jvp_optional(output, x, t)", st);
        if (j && !add_into(r, &acc, keep(r, j), "summing the JVPs"))
            return false;
    }
    tfp_data like;
    if (!tfp_read(r, r->output, &like))
        return false;
    bool ok = read_or_zero(r, acc, &like, out);
    tfp_data_free(&like);
    return ok;
}

bool tfp_hvp(tfp_run *r, bool forward, tfp_data *out)
{
    fresh(r);
    const tfp_program *p = r->p;
    tf_eager *x = r->vals[p->hvp_input], *v = NULL, *g = NULL, *h = NULL;
    tf_status st = tfp__constant(r, &p->hvp_v, TFP_DENSE, &v);
    if (!st && keep(r, v))
        st = tf_runtime_grad(r->rt, r->cfg.engine, r->loss, x, &g);
    if (st)
        return failed(r, "tf_runtime_grad(loss, x0) for the HVP", st);
    keep(r, g);
    if (forward) {
        st = tf_runtime_jvp_optional(r->rt, r->cfg.engine, g, x, v, &h);
    } else {
        /* <g, v> = sum(Re(conj(g) v)) (OPS.md 7.6), differentiated again */
        tf_eager *cg = NULL, *dot = NULL;
        if (is_complex(g)) {
            st = tf_session_conj(r->s, g, &cg);
            g = keep(r, cg);
        }
        if (!st && g)
            st = sum_re_product(r, g, v, &dot);
        if (!st && keep(r, dot))
            st = tf_runtime_grad_optional(r->rt, r->cfg.engine, dot, x, &h);
    }
    if (st)
        return failed(r, forward ? "the HVP, forward over reverse" : "the HVP, reverse over reverse",
                      st);
    return read_or_zero(r, keep(r, h), &p->inputs[p->hvp_input].value, out);
}
