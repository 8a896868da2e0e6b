/*
 * tf_gradcheck.c - finite-difference checks of VJPs and JVPs (see the header).
 * A c128 tensor counts as the real vector of its interleaved parts (re, im),
 * so that one real computation checks PyTorch's convention: the VJP with
 * cotangent w is the gradient of Re sum(conj(w) y), i.e. the dot of the
 * interleaved w and y, differenced along every real and imaginary part.
 */
#include <math.h>

#include "tf_gradcheck.h"
#include "tf_test.h"

static double urand(unsigned *state)
{
    /* xorshift32: deterministic and good enough for test data */
    unsigned x = *state ? *state : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return (x >> 8) / 16777216.0;
}

static size_t numel(size_t rank, const int64_t *shape)
{
    size_t n = 1;
    for (size_t i = 0; i < rank; i++)
        n *= (size_t)shape[i];
    return n;
}

/* Doubles per element of a checked tensor: 2 for c128 (re, im), else 1. */
static size_t parts(tf_dtype dt)
{
    return dt == TF_C128 ? 2 : 1;
}

/* The host dtype values travel in: c128 for a complex tensor, else f64. */
static tf_dtype host_dt(const tf_tensor *t)
{
    return tf_dtype_is_complex(tf_tensor_dtype(t)) ? TF_C128 : TF_F64;
}

tf_tensor *gc_random_dt(tf_dtype dt, size_t rank, const int64_t *shape, double lo, double hi,
                        unsigned *state)
{
    assert_true(dt == TF_F64 || dt == TF_C128);
    size_t n = numel(rank, shape), nr = n * parts(dt);
    double *d = malloc((nr ? nr : 1) * sizeof *d);
    assert_non_null(d);
    for (size_t i = 0; i < nr; i++)
        d[i] = lo + (hi - lo) * urand(state);
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(dt, rank, shape, d, n, &t));
    free(d);
    return t;
}

tf_tensor *gc_random(size_t rank, const int64_t *shape, double lo, double hi, unsigned *state)
{
    return gc_random_dt(TF_F64, rank, shape, lo, hi, state);
}

tf_tensor *gc_random_view(const gc_spec *sp, double lo, double hi, unsigned *state)
{
    size_t r = sp->rank;
    int64_t base[4];
    for (size_t i = 0; i < r; i++)
        base[i] = sp->shape[i];
    if (sp->view == GC_TRANSPOSED) {
        assert_true(r >= 2);
        base[r - 2] = sp->shape[r - 1];
        base[r - 1] = sp->shape[r - 2];
    } else if (sp->view == GC_SLICED) {
        base[0] = 2 * sp->shape[0];
    }
    tf_tensor *b = gc_random(r, base, lo, hi, state), *t = NULL;
    int axes[4] = {0, 1, 2, 3};
    switch (sp->view) {
    case GC_PLAIN: return b;
    case GC_TRANSPOSED:
        axes[r - 2] = (int)r - 1;
        axes[r - 1] = (int)r - 2;
        TF_ASSERT_OK(tf_tensor_transpose(b, axes, &t));
        break;
    case GC_REVERSED: TF_ASSERT_OK(tf_tensor_reverse(b, r, axes, &t)); break;
    case GC_SLICED: {
        int64_t start[4] = {1, 0, 0, 0}, stride[4] = {2, 1, 1, 1};
        TF_ASSERT_OK(tf_tensor_slice(b, start, base, stride, &t));
        break;
    }
    }
    tf_tensor_release(b);
    assert_false(tf_tensor_numel(t) > 1 && tf_tensor_is_contiguous(t));
    return t;
}

tf_status gc_second_order(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    const gc_order2 *o = user;
    tf_runtime *rt = tf_session_runtime(s);
    tf_scope scope;
    TF_ASSERT_OK(tf_scope_begin_capture_trace(rt, &scope));
    tf_eager *y = NULL, *sy = NULL, *loss = NULL;
    TF_ASSERT_OK(o->inner(s, xs, n, o->user, &y));
    TF_ASSERT_OK(tf_session_sin(s, y, &sy));
    if (tf_dtype_is_complex(tf_tensor_dtype(tf_eager_value(sy)))) { /* a real loss: Re */
        tf_eager *re = NULL;
        TF_ASSERT_OK(tf_session_real(s, sy, &re));
        tf_eager_release(sy);
        sy = re;
    }
    TF_ASSERT_OK(tf_session_reduce_sum(s, sy, NULL, 0, &loss));
    tf_status st = tf_runtime_grad(rt, tf_session_engine(s), loss, xs[0], out);
    tf_scope_end(&scope);
    tf_eager_release(y);
    tf_eager_release(sy);
    tf_eager_release(loss);
    return st;
}

/* The values of t as doubles (re, im interleaved for a complex t). */
static double *host_copy(const tf_tensor *t)
{
    size_t n = tf_tensor_numel(t), nr = n * parts(host_dt(t));
    double *d = malloc((nr ? nr : 1) * sizeof *d);
    assert_non_null(d);
    TF_ASSERT_OK(tf_tensor_copy_to_host(t, host_dt(t), d, n));
    return d;
}

/* Doubles of t's values (host_copy's count). */
static size_t reals(const tf_tensor *t)
{
    return tf_tensor_numel(t) * parts(host_dt(t));
}

typedef struct gc_case {
    tf_engine *engine;
    gc_fn fn;
    void *user;
    tf_tensor *const *inputs;
    size_t n;
} gc_case;

/* fn at host values `vals` (one dense array per input); returns the output values. */
static double *eval_at(const gc_case *c, double *const *vals, size_t *out_n)
{
    tf_runtime *rt;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    tf_eager **xs = calloc(c->n ? c->n : 1, sizeof *xs);
    assert_non_null(xs);
    for (size_t i = 0; i < c->n; i++) {
        const tf_tensor *in = c->inputs[i];
        tf_tensor *t;
        TF_ASSERT_OK(tf_tensor_from_host(host_dt(in), tf_tensor_rank(in), tf_tensor_shape(in),
                                         vals[i], tf_tensor_numel(in), &t));
        TF_ASSERT_OK(tf_runtime_constant_from(rt, t, &xs[i]));
        tf_tensor_release(t);
    }
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(rt, c->engine, &s));
    tf_eager *y;
    TF_ASSERT_OK(c->fn(s, xs, c->n, c->user, &y));
    tf_session_end(s);
    *out_n = reals(tf_eager_value(y));
    double *r = host_copy(tf_eager_value(y));
    tf_eager_release(y);
    for (size_t i = 0; i < c->n; i++)
        tf_eager_release(xs[i]);
    free(xs);
    tf_runtime_release(rt);
    return r;
}

static double max_abs(const double *a, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(a[i]));
    return m;
}

static void compare(const char *what, const char *mode, size_t input, const double *got,
                    const double *ref, size_t n, double tol)
{
    double scale = fmax(max_abs(ref, n), 1.0);
    for (size_t k = 0; k < n; k++) {
        double err = fabs(got[k] - ref[k]) / scale;
        if (!(err <= tol))
            fail_msg("%s: %s of input %zu, element %zu: got %.17g, finite differences %.17g "
                     "(error %.3g > %.3g)",
                     what, mode, input, k, got[k], ref[k], err, tol);
    }
}

/* The AD side: VJPs with cotangent w and JVPs with tangents v, per input. */
static void ad_side(const gc_case *c, tf_tensor *w, tf_tensor *const *v, const gc_options *o,
                    double **vjp, double **jvp, size_t *out_n)
{
    tf_runtime *rt;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    tf_eager **xs = calloc(c->n ? c->n : 1, sizeof *xs);
    assert_non_null(xs);
    for (size_t i = 0; i < c->n; i++)
        TF_ASSERT_OK(tf_runtime_variable_from(rt, c->inputs[i], &xs[i]));
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(rt, c->engine, &s));
    tf_eager *y;
    TF_ASSERT_OK(c->fn(s, xs, c->n, c->user, &y));
    tf_session_end(s);
    *out_n = reals(tf_eager_value(y));
    tf_eager *we;
    TF_ASSERT_OK(tf_runtime_constant_from(rt, w, &we));
    for (size_t i = 0; i < c->n; i++) {
        size_t ni = reals(c->inputs[i]);
        tf_eager *r = NULL;
        if (!o->skip_reverse) {
            TF_ASSERT_OK(tf_runtime_vjp_optional(rt, c->engine, y, xs[i], we, &r));
            vjp[i] = r ? host_copy(tf_eager_value(r)) : calloc(ni ? ni : 1, sizeof(double));
            tf_eager_release(r);
        }
        if (!o->skip_forward) {
            tf_eager *ve;
            TF_ASSERT_OK(tf_runtime_constant_from(rt, v[i], &ve));
            r = NULL;
            TF_ASSERT_OK(tf_runtime_jvp_optional(rt, c->engine, y, xs[i], ve, &r));
            jvp[i] = r ? host_copy(tf_eager_value(r)) : calloc(*out_n ? *out_n : 1, sizeof(double));
            tf_eager_release(r);
            tf_eager_release(ve);
        }
    }
    tf_eager_release(we);
    tf_eager_release(y);
    for (size_t i = 0; i < c->n; i++)
        tf_eager_release(xs[i]);
    free(xs);
    tf_runtime_release(rt);
}

/* Central differences along every element of input i: <w, J e_k> and J v. */
static void fd_side(const gc_case *c, size_t i, double *const *vals, const double *w,
                    const double *v, double h, double *rev, double *fwd, size_t out_n)
{
    size_t ni = reals(c->inputs[i]);
    for (size_t j = 0; j < out_n; j++)
        fwd[j] = 0;
    for (size_t k = 0; k < ni; k++) {
        double x0 = vals[i][k], hk = h * fmax(1.0, fabs(x0));
        size_t np, nm;
        vals[i][k] = x0 + hk;
        double *yp = eval_at(c, vals, &np);
        vals[i][k] = x0 - hk;
        double *ym = eval_at(c, vals, &nm);
        vals[i][k] = x0;
        assert_int_equal(np, out_n);
        double dot = 0;
        for (size_t j = 0; j < out_n; j++) {
            double d = (yp[j] - ym[j]) / (2 * hk);
            dot += w[j] * d;
            fwd[j] += d * v[k];
        }
        rev[k] = dot;
        free(yp);
        free(ym);
    }
}

void gc_check(const char *what, tf_engine *engine, gc_fn fn, void *user, tf_tensor *const *inputs,
              size_t n, const gc_options *options)
{
    gc_options o = {1e-6, 1e-6, 1, 0, 0};
    if (options) {
        o = *options;
        if (o.tol <= 0)
            o.tol = 1e-6;
        if (o.step <= 0)
            o.step = 1e-6;
    }
    gc_case c = {engine, fn, user, inputs, n};
    double **vals = calloc(n ? n : 1, sizeof *vals);
    assert_non_null(vals);
    for (size_t i = 0; i < n; i++)
        vals[i] = host_copy(inputs[i]);
    size_t out_n;
    double *y0 = eval_at(&c, vals, &out_n);
    free(y0);

    unsigned st = o.seed ? o.seed : 1;
    tf_tensor *w = NULL;
    {
        /* the cotangent has the output's shape: evaluate once more for it */
        tf_runtime *rt;
        TF_ASSERT_OK(tf_runtime_create(&rt));
        tf_eager **xs = calloc(n ? n : 1, sizeof *xs);
        for (size_t i = 0; i < n; i++)
            TF_ASSERT_OK(tf_runtime_constant_from(rt, inputs[i], &xs[i]));
        tf_session *s;
        TF_ASSERT_OK(tf_session_begin(rt, engine, &s));
        tf_eager *y;
        TF_ASSERT_OK(fn(s, xs, n, user, &y));
        tf_session_end(s);
        const tf_tensor *yv = tf_eager_value(y);
        w = gc_random_dt(host_dt(yv), tf_tensor_rank(yv), tf_tensor_shape(yv), -1, 1, &st);
        tf_eager_release(y);
        for (size_t i = 0; i < n; i++)
            tf_eager_release(xs[i]);
        free(xs);
        tf_runtime_release(rt);
    }
    tf_tensor **v = calloc(n ? n : 1, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = gc_random_dt(host_dt(inputs[i]), tf_tensor_rank(inputs[i]),
                            tf_tensor_shape(inputs[i]), -1, 1, &st);

    double **vjp = calloc(n ? n : 1, sizeof *vjp), **jvp = calloc(n ? n : 1, sizeof *jvp);
    size_t ad_n;
    ad_side(&c, w, v, &o, vjp, jvp, &ad_n);
    assert_int_equal(ad_n, out_n);

    double *wd = host_copy(w);
    for (size_t i = 0; i < n; i++) {
        size_t ni = reals(inputs[i]);
        double *vd = host_copy(v[i]);
        double *rev = calloc(ni ? ni : 1, sizeof *rev), *fwd = calloc(out_n ? out_n : 1, sizeof *fwd);
        fd_side(&c, i, vals, wd, vd, o.step, rev, fwd, out_n);
        if (!o.skip_reverse)
            compare(what, "reverse mode (VJP)", i, vjp[i], rev, ni, o.tol);
        if (!o.skip_forward)
            compare(what, "forward mode (JVP)", i, jvp[i], fwd, out_n, o.tol);
        free(rev);
        free(fwd);
        free(vd);
        free(vjp[i]);
        free(jvp[i]);
        tf_tensor_release(v[i]);
    }
    /* every input's values are needed by the differences of every other input */
    for (size_t i = 0; i < n; i++)
        free(vals[i]);
    free(wd);
    free(vjp);
    free(jvp);
    free(v);
    free(vals);
    tf_tensor_release(w);
}
