/*
 * test_vulkan_complex_ad.c - complex eager ops and their derivatives, end to
 * end on the Vulkan engine, against the CPU engine: a real loss of a c128 (and
 * c64) variable through matmul (DOT_GENERAL, whose cotangents conjugate an
 * operand: TF_DOT_CONJ_*), tanh, conj, exp, sqrt, log, div, pow, abs, real,
 * imag and angle; its gradient (reverse mode, PyTorch's convention), its
 * derivative along a complex tangent (forward mode) and the gradient of
 * |grad|^2 (second order). Validation layer on. c128 at 1e-11 (the engines'
 * transcendental functions differ by a few ulps, and the derivatives add them
 * up), c64 at 2e-4.
 */
#include <tenferro/ops.h>

#include "vk_fixture.h"

/* A host complex tensor of `dtype` with parts uniform in [re_lo, re_hi] + i [-1, 1]. */
static tf_tensor *host_complex(tfr_rng *rng, tf_dtype dtype, size_t rank, const int64_t *shape,
                               double re_lo, double re_hi)
{
    size_t n = tfr_numel(rank, shape);
    tf_scalar *vals = tfr_vals_alloc(n);
    for (size_t i = 0; i < n; i++)
        vals[i] = tfr_c(tfr_rng_real(rng, re_lo, re_hi), tfr_rng_real(rng, -1.0, 1.0));
    tf_tensor *t = tfr_host(dtype, rank, shape, vals);
    free(vals);
    return t;
}

/* reduce_sum over both axes of a [4, 3] (or [4, 5]) tensor. */
static tf_eager *sum_all(tf_session *s, tf_eager *x, tf_eager **keep, size_t *n_keep)
{
    int axes[2] = {0, 1};
    tf_eager *out = NULL;
    TF_ASSERT_OK(tf_session_reduce_sum(s, x, axes, 2, &out));
    keep[(*n_keep)++] = out;
    return out;
}

#define KEEP(call, var) \
    do {                \
        TF_ASSERT_OK(call); \
        keep[n_keep++] = var; \
    } while (0)

/*
 * loss(z) = sum re(tanh(zw) conj(zw)) + sum |exp(z) z + sqrt(z)| + sum im(log(z) / exp(z))
 *         + sum angle(z^z); out[0] = grad, out[1] = jvp along t, out[2] = grad of |grad|^2,
 * each downloaded.
 */
static void derivatives_on(tf_engine *engine, const tf_tensor *zh, const tf_tensor *wh,
                           const tf_tensor *th, tf_tensor **out)
{
    tf_runtime *rt = NULL;
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    TF_ASSERT_OK(tf_session_begin(rt, engine, &s));
    tf_tensor *zt = NULL;
    TF_ASSERT_OK(tf_engine_upload(engine, zh, &zt));
    tf_eager *keep[64], *z = NULL, *w = NULL, *t = NULL, *e[24];
    size_t n_keep = 0;
    KEEP(tf_runtime_variable_from(rt, zt, &z), z);
    KEEP(tf_session_constant_from_host(s, wh, &w), w);
    KEEP(tf_session_constant_from_host(s, th, &t), t);
    KEEP(tf_session_matmul(s, z, w, &e[0]), e[0]);
    KEEP(tf_session_tanh(s, e[0], &e[1]), e[1]);
    KEEP(tf_session_conj(s, e[0], &e[2]), e[2]);
    KEEP(tf_session_mul(s, e[1], e[2], &e[3]), e[3]);
    KEEP(tf_session_real(s, e[3], &e[4]), e[4]);
    KEEP(tf_session_exp(s, z, &e[5]), e[5]);
    KEEP(tf_session_mul(s, e[5], z, &e[6]), e[6]);
    KEEP(tf_session_sqrt(s, z, &e[7]), e[7]);
    KEEP(tf_session_add(s, e[6], e[7], &e[8]), e[8]);
    KEEP(tf_session_abs(s, e[8], &e[9]), e[9]);
    KEEP(tf_session_log(s, z, &e[10]), e[10]);
    KEEP(tf_session_div(s, e[10], e[5], &e[11]), e[11]);
    KEEP(tf_session_imag(s, e[11], &e[12]), e[12]);
    KEEP(tf_session_pow(s, z, z, &e[13]), e[13]);
    KEEP(tf_session_angle(s, e[13], &e[14]), e[14]);
    tf_eager *terms[4] = {sum_all(s, e[4], keep, &n_keep), sum_all(s, e[9], keep, &n_keep),
                          sum_all(s, e[12], keep, &n_keep), sum_all(s, e[14], keep, &n_keep)};
    KEEP(tf_session_add(s, terms[0], terms[1], &e[15]), e[15]);
    KEEP(tf_session_add(s, e[15], terms[2], &e[16]), e[16]);
    KEEP(tf_session_add(s, e[16], terms[3], &e[17]), e[17]);
    tf_eager *g = NULL, *jv = NULL, *h = NULL;
    KEEP(tf_runtime_grad(rt, engine, e[17], z, &g), g);
    KEEP(tf_runtime_jvp(rt, engine, e[17], z, t, &jv), jv);
    /* second order: the gradient of sum |g|^2 = sum re(g conj(g)) */
    KEEP(tf_session_conj(s, g, &e[18]), e[18]);
    KEEP(tf_session_mul(s, g, e[18], &e[19]), e[19]);
    KEEP(tf_session_real(s, e[19], &e[20]), e[20]);
    tf_eager *g2 = sum_all(s, e[20], keep, &n_keep);
    KEEP(tf_runtime_grad(rt, engine, g2, z, &h), h);
    tf_eager *results[3] = {g, jv, h};
    for (int i = 0; i < 3; i++)
        TF_ASSERT_OK(tf_engine_download(engine, tf_eager_value(results[i]), &out[i]));
    for (size_t i = 0; i < n_keep; i++)
        tf_eager_release(keep[i]);
    tf_tensor_release(zt);
    tf_session_end(s);
    tf_runtime_release(rt);
}

static void check_dtype(tf_dtype dt, double rtol, double atol)
{
    tfr_rng rng;
    tfr_rng_seed(&rng, 131);
    int64_t zs[2] = {4, 3}, ws[2] = {3, 5};
    tf_tensor *zh = host_complex(&rng, dt, 2, zs, 0.5, 2.0);
    tf_tensor *wh = host_complex(&rng, dt, 2, ws, -1.0, 1.0);
    tf_tensor *th = host_complex(&rng, dt, 2, zs, -1.0, 1.0);
    tf_tensor *cpu[3], *vk[3];
    derivatives_on(vk_cpu, zh, wh, th, cpu);
    /* a fresh engine, whose log shows that the complex kernels ran */
    tf_engine *saved = vk_fresh_begin(NULL, NULL);
    derivatives_on(vk_engine, zh, wh, th, vk);
    const char *sfx = dt == TF_C64 ? "c64" : "c128";
    static const char *mods[3] = {"unary", "binary", "gemm_m"};
    for (int i = 0; i < 3; i++) {
        char mod[32];
        snprintf(mod, sizeof mod, "%s_%s", mods[i], sfx);
        vk_assert_pipeline_used(mod);
    }
    static const char *what[3] = {"grad", "jvp", "grad of |grad|^2"};
    for (int i = 0; i < 3; i++) {
        char msg[64];
        snprintf(msg, sizeof msg, "%s %s", tf_dtype_name(dt), what[i]);
        assert_int_equal(tf_tensor_dtype(cpu[i]), i == 1 ? (dt == TF_C64 ? TF_F32 : TF_F64) : dt);
        vk_compare(msg, cpu[i], vk[i], rtol, atol);
        tf_tensor_release(cpu[i]);
        tf_tensor_release(vk[i]);
    }
    vk_fresh_end(saved);
    tf_tensor_release(zh);
    tf_tensor_release(wh);
    tf_tensor_release(th);
}

static void test_c128(void **state)
{
    (void)state;
    tf_dtype d[2] = {TF_C128, TF_C128};
    if (!tf_engine_supports(vk_engine, TF_PRIM_UNARY, TF_UNARY_EXP, d, 2))
        skip();
    check_dtype(TF_C128, 1e-11, 1e-12);
}

static void test_c64(void **state)
{
    (void)state;
    check_dtype(TF_C64, 2e-4, 2e-5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_c128),
        cmocka_unit_test(test_c64),
    };
    return cmocka_run_group_tests_name("vulkan complex AD", tests, vk_group_setup,
                                       vk_group_teardown);
}
