/*
 * vk_fixture.c - see vk_fixture.h.
 */
#define _POSIX_C_SOURCE 200809L

#include <float.h>
#include <math.h>
#include <stdio.h>

#include "vk_fixture.h"

tf_engine *vk_engine;
tf_engine *vk_cpu;

int vk_group_setup(void **state)
{
    (void)state;
    /* Before the plugin's first load: its instance enables the layer at init. */
    setenv("TENFERRO_VULKAN_VALIDATION", "1", 1);
    tf_test_log_start(TF_LOG_INFO);
    if (tf_engine_open("vulkan", 0, &vk_engine) != TF_OK) {
        print_error("tf_engine_open(\"vulkan\") -> %s: %s (cause: %s)\n",
                    tf_status_name(tf_error_status()), tf_error_message(), tf_error_cause());
        return -1;
    }
    /* The plugin says at init whether the layer is on (once per process: the first group). */
    if (tf_test_log_count(TF_LOG_WARN, "is not installed") > 0) {
        tf_test_log_dump();
        print_error("the Khronos validation layer is required by these tests "
                    "(install vulkan-validationlayers)\n");
        return -1;
    }
    tf_test_log_start(TF_LOG_WARN); /* from here on, only warnings and errors are kept */
    if (tf_engine_open("cpu", 1, &vk_cpu) != TF_OK) {
        print_error("tf_engine_open(\"cpu\") -> %s\n", tf_error_message());
        return -1;
    }
    return 0;
}

tf_engine *vk_fresh_begin(const char *key, const char *value)
{
    tf_engine *saved = vk_engine, *fresh = NULL;
    TF_ASSERT_OK(tfr_engine_create("vulkan", 0, key, value, &fresh));
    vk_engine = fresh;
    tf_test_log_start(TF_LOG_DEBUG);
    return saved;
}

void vk_fresh_end(tf_engine *saved)
{
    vk_assert_validation_clean();
    tf_test_log_start(TF_LOG_WARN);
    tf_engine_destroy(vk_engine);
    vk_engine = saved;
}

void vk_assert_pipeline_used(const char *module)
{
    char line[64];
    snprintf(line, sizeof line, "vulkan: pipeline %s spec", module);
    if (tf_test_log_count(TF_LOG_DEBUG, line) == 0) {
        tf_test_log_dump();
        fail_msg("the kernel %s was never used", module);
    }
}

int vk_group_teardown(void **state)
{
    (void)state;
    tf_engine_destroy(vk_engine);
    tf_engine_destroy(vk_cpu);
    vk_engine = vk_cpu = NULL;
    size_t n = tf_test_log_count(TF_LOG_ERROR, "vulkan: validation");
    if (n > 0) {
        tf_test_log_dump();
        print_error("%zu validation message(s)\n", n);
    }
    tf_test_log_stop();
    return n > 0 ? -1 : 0;
}

void vk_assert_validation_clean(void)
{
    size_t n = tf_test_log_count(TF_LOG_ERROR, "vulkan: validation");
    if (n > 0) {
        tf_test_log_dump();
        fail_msg("%zu Vulkan validation message(s)", n);
    }
}

static tf_scalar draw(tfr_rng *rng, tf_dtype dtype, vk_gen gen)
{
    double v = tfr_rng_real(rng, gen.lo, gen.hi);
    switch (dtype) {
    case TF_F32:
    case TF_F64: return tfr_f(v);
    case TF_BOOL: return tfr_i(tfr_rng_int(rng, 0, 1));
    case TF_C64:
    case TF_C128: return tfr_c(v, tfr_rng_real(rng, gen.lo, gen.hi));
    default: return tfr_i((int64_t)llround(v));
    }
}

/* The root's shape for the layout; *dims etc. describe the view. */
void vk_pair_make(vk_pair *p, tfr_rng *rng, tf_dtype dtype, size_t rank, const int64_t *shape,
                  vk_layout layout, vk_gen gen)
{
    int64_t root_shape[TF_MAX_RANK];
    int perm[TF_MAX_RANK], dims[TF_MAX_RANK], axes[TF_MAX_RANK];
    int64_t start[TF_MAX_RANK], limit[TF_MAX_RANK], step[TF_MAX_RANK];
    if (rank == 0)
        layout = VK_DENSE;
    tfr_rng_perm(rng, rank, perm);
    for (size_t k = 0; k < rank; k++) {
        root_shape[k] = shape[k];
        dims[k] = (int)k;
        axes[k] = (int)k;
        start[k] = 1;
        step[k] = 2;
        limit[k] = 2 * shape[k] + 1;
    }
    switch (layout) {
    case VK_TRANSPOSED:
        /* view = transpose(root, perm): view.shape[i] = root.shape[perm[i]] */
        for (size_t i = 0; i < rank; i++) {
            root_shape[perm[i]] = shape[i];
        }
        break;
    case VK_BROADCAST:
        for (size_t k = 0; k < rank; k++) {
            if (tfr_rng_chance(rng, 50))
                root_shape[k] = 1;
        }
        break;
    case VK_STEPPED:
        for (size_t k = 0; k < rank; k++)
            root_shape[k] = 2 * shape[k] + 1;
        break;
    default: break;
    }
    size_t n = tfr_numel(rank, root_shape);
    tf_scalar *vals = tfr_vals_alloc(n);
    for (size_t i = 0; i < n; i++)
        vals[i] = draw(rng, dtype, gen);
    tf_tensor *roots[2];
    roots[0] = tfr_host(dtype, rank, root_shape, vals);
    free(vals);
    TF_ASSERT_OK(tf_engine_upload(vk_engine, roots[0], &roots[1]));
    tf_tensor *views[2];
    for (int s = 0; s < 2; s++) {
        switch (layout) {
        case VK_DENSE:
            views[s] = roots[s];
            tf_tensor_retain(roots[s]);
            break;
        case VK_TRANSPOSED: TF_ASSERT_OK(tf_tensor_transpose(roots[s], perm, &views[s])); break;
        case VK_REVERSED: TF_ASSERT_OK(tf_tensor_reverse(roots[s], rank, axes, &views[s])); break;
        case VK_BROADCAST:
            TF_ASSERT_OK(tf_tensor_broadcast_in_dim(roots[s], rank, shape, dims, &views[s]));
            break;
        default: TF_ASSERT_OK(tf_tensor_slice(roots[s], start, limit, step, &views[s])); break;
        }
        tf_tensor_release(roots[s]);
    }
    p->cpu = views[0];
    p->vk = views[1];
}

void vk_pair_free(vk_pair *p)
{
    tf_tensor_release(p->cpu);
    tf_tensor_release(p->vk);
    p->cpu = p->vk = NULL;
}

void vk_pair_output(vk_pair *p, tf_dtype dtype, size_t rank, const int64_t *shape)
{
    TF_ASSERT_OK(tf_tensor_empty(vk_cpu, dtype, rank, shape, &p->cpu));
    TF_ASSERT_OK(tf_tensor_empty(vk_engine, dtype, rank, shape, &p->vk));
}

/* numel doubles; for a complex dtype 2 numel, the parts of each element in turn */
static double *to_doubles(const tf_tensor *host)
{
    tf_scalar *vals = tfr_read(host);
    size_t n = tf_tensor_numel(host);
    tf_dtype dt = tf_tensor_dtype(host);
    int cx = tf_dtype_is_complex(dt);
    double *d = calloc(n ? (cx ? 2 * n : n) : 1, sizeof *d);
    for (size_t i = 0; i < n; i++) {
        if (cx) {
            d[2 * i] = vals[i].f;
            d[2 * i + 1] = tfr_im(vals[i]);
        } else {
            d[i] = tfr_as_double(dt, vals[i]);
        }
    }
    free(vals);
    return d;
}

double *vk_read(tf_engine *engine, const tf_tensor *t)
{
    if (tf_tensor_is_host_accessible(t))
        return to_doubles(t);
    tf_tensor *host = NULL;
    TF_ASSERT_OK(tf_engine_download(engine, t, &host));
    double *d = to_doubles(host);
    tf_tensor_release(host);
    return d;
}

void vk_compare(const char *what, const tf_tensor *cpu_t, const tf_tensor *vk_t, double rtol,
                double atol)
{
    size_t n = tf_tensor_numel(cpu_t);
    assert_int_equal(n, tf_tensor_numel(vk_t));
    assert_int_equal(tf_tensor_dtype(cpu_t), tf_tensor_dtype(vk_t));
    double *want = vk_read(vk_cpu, cpu_t), *got = vk_read(vk_engine, vk_t);
    /* complex: both parts, against the tolerance of the element's modulus */
    int cx = tf_dtype_is_complex(tf_tensor_dtype(cpu_t));
    for (size_t i = 0; i < (cx ? 2 * n : n); i++) {
        double w = want[i], g = got[i];
        double mag = cx ? hypot(want[i & ~(size_t)1], want[i | 1]) : fabs(w);
        if (isinf(mag) || isnan(mag))
            mag = fabs(w);
        int ok = (isnan(w) && isnan(g)) || w == g || fabs(g - w) <= atol + rtol * mag;
        if (!ok) {
            free(want);
            free(got);
            if (cx)
                fail_msg("%s: element %zu (%s part): vulkan %.9g, cpu %.9g", what, i / 2,
                         i % 2 ? "imaginary" : "real", g, w);
            fail_msg("%s: element %zu: vulkan %.9g, cpu %.9g", what, i, g, w);
        }
    }
    free(want);
    free(got);
    vk_assert_validation_clean();
}

size_t vk_small_args(tf_dtype dtype, double *x)
{
    static const double mags[] = {1e-30, 1e-10, 4.7e-10, 3e-8, 6e-8, 1e-7, 1.3e-7, 2.5e-7,
                                  1e-6,  1e-5,  1e-4,    1e-3, 1e-2, 0.1,  0.3,    0.35,
                                  0.5,   0.9,   1.0,     2.5,  10.0, 30.0, 80.0};
    size_t n = 0;
    x[n++] = 0.0;
    x[n++] = -0.0;
    double tiny = dtype == TF_F32 ? FLT_MIN : DBL_MIN;
    double smallest[] = {tiny, 1.5 * tiny, 1e-300, 1e-17, 3e-16};
    for (size_t i = 0; i < sizeof smallest / sizeof smallest[0]; i++) {
        if (dtype == TF_F32 && i >= 2)
            break; /* not f32 values, or not tiny in f32 */
        x[n++] = smallest[i];
        x[n++] = -smallest[i];
    }
    for (size_t i = 0; i < sizeof mags / sizeof mags[0]; i++) {
        double v = dtype == TF_F32 ? (double)(float)mags[i] : mags[i];
        x[n++] = v;
        if (v < 1.0) /* log1p needs x > -1 */
            x[n++] = -v;
    }
    return n;
}

tf_tensor *vk_upload_values(tf_dtype dtype, size_t n, const double *x)
{
    tf_scalar *vals = tfr_vals_alloc(n);
    for (size_t i = 0; i < n; i++)
        vals[i] = tfr_f(x[i]);
    int64_t shape[1] = {(int64_t)n};
    tf_tensor *host = tfr_host(dtype, 1, shape, vals), *t = NULL;
    free(vals);
    TF_ASSERT_OK(tf_engine_upload(vk_engine, host, &t));
    tf_tensor_release(host);
    return t;
}

/* The unit in the last place of dtype at magnitude |w| (the subnormals' one below). */
static double ulp_at(tf_dtype dtype, long double w)
{
    int mant = dtype == TF_F32 ? 24 : 53, emin = dtype == TF_F32 ? -126 : -1022;
    int e = w == 0 ? emin : ilogbl(w);
    return ldexp(1.0, (e < emin ? emin : e) - (mant - 1));
}

void vk_assert_ulps(const char *what, tf_dtype dtype, const tf_tensor *t, const double *x, size_t n,
                    long double (*f)(long double), double max_ulps)
{
    assert_int_equal(n, tf_tensor_numel(t));
    double *got = vk_read(vk_engine, t);
    for (size_t i = 0; i < n; i++) {
        long double want = f(x[i]);
        double err = (double)fabsl((long double)got[i] - want) / ulp_at(dtype, want);
        double g = got[i];
        int ok = want == 0 ? g == 0 && !signbit(g) == !signbit(want) : err <= max_ulps;
        if (!ok) {
            free(got);
            fail_msg("%s %s(%.9g): vulkan %.17g, want %.17Lg (%.3g ulp > %g)", tf_dtype_name(dtype),
                     what, x[i], g, want, err, max_ulps);
        }
    }
    free(got);
    vk_assert_validation_clean();
}

void vk_run_compare(const char *what, tf_prim prim, const void *params, size_t n_in, vk_pair *in,
                    vk_pair *out, double rtol, double atol)
{
    tf_tensor *ci[4], *vi[4];
    for (size_t i = 0; i < n_in; i++) {
        ci[i] = in[i].cpu;
        vi[i] = in[i].vk;
    }
    tf_status st = tf_engine_execute(vk_cpu, prim, params, n_in, ci, 1, &out->cpu);
    if (st != TF_OK)
        fail_msg("%s: cpu -> %s: %s (%s)", what, tf_status_name(st), tf_error_message(),
                 tf_error_cause());
    st = tf_engine_execute(vk_engine, prim, params, n_in, vi, 1, &out->vk);
    if (st != TF_OK)
        fail_msg("%s: vulkan -> %s: %s (%s)", what, tf_status_name(st), tf_error_message(),
                 tf_error_cause());
    vk_compare(what, out->cpu, out->vk, rtol, atol);
}
