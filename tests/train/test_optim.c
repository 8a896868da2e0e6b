/*
 * test_optim.c - the optimizers of optim.h against PyTorch's definitions.
 *
 * Each optimizer trains one parameter of shape [3, 4] on
 * loss = sum(w p^2 / 2 + sin p) for several steps; after every step its
 * value and state are compared with a reference written here in plain C,
 * operation for operation as torch.optim computes them (SGD, Adam, AdamW),
 * fed the same gradients. A few first steps are also checked against values
 * worked out by hand. The fused update (the default) is checked against the
 * same update with deferral off, bit for bit, and the number of engine calls
 * it makes per parameter is pinned. Then parameter groups, parameters
 * without gradients, state, and every refusal with nothing changed.
 */
#include <math.h>

#include "train_test.h"

#define N 12
static const int64_t k_shape[2] = {3, 4};

static void initial(double *p)
{
    for (int i = 0; i < N; i++)
        p[i] = 0.8 * sin(1.3 * i + 0.2) + 0.1 * i;
}

/* Accumulates d/dp sum(w p^2 / 2 + sin p) into p's slot. */
static void backward(tf_runtime *rt, tf_eager *p, tf_eager *w)
{
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_session_begin(rt, g_cpu, &s));
    tf_eager *pp = NULL, *wpp = NULL, *half = NULL, *q = NULL, *sn = NULL, *sum = NULL,
             *loss = NULL;
    TF_ASSERT_OK(tf_session_mul(s, p, p, &pp));
    TF_ASSERT_OK(tf_session_mul(s, w, pp, &wpp));
    TF_ASSERT_OK(tf_session_scalar(s, TF_F64, 0.5, &half));
    TF_ASSERT_OK(tf_session_mul(s, wpp, half, &q));
    TF_ASSERT_OK(tf_session_sin(s, p, &sn));
    TF_ASSERT_OK(tf_session_add(s, q, sn, &sum));
    TF_ASSERT_OK(tf_session_reduce_sum(s, sum, NULL, 0, &loss));
    tf_session_end(s);
    TF_ASSERT_OK(tf_eager_backward(loss, g_cpu));
    tf_eager *all[] = {pp, wpp, half, q, sn, sum, loss};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
}

static tf_eager *weights(tf_runtime *rt)
{
    double w[N];
    for (int i = 0; i < N; i++)
        w[i] = 0.5 + 0.25 * (i % 5);
    return tft_f64(rt, 0, 2, k_shape, w, N);
}

/* ---- references: torch.optim, operation for operation ---- */

typedef struct ref {
    double p[N], s0[N], s1[N]; /* value, momentum buffer or exp_avg, exp_avg_sq */
    uint64_t t;
} ref;

/* torch.optim.SGD (_single_tensor_sgd). */
static void ref_sgd(const tf_optim_options *o, ref *r, const double *grad)
{
    for (int i = 0; i < N; i++) {
        double d = grad[i];
        if (o->weight_decay != 0)
            d = d + o->weight_decay * r->p[i];
        if (o->momentum != 0) {
            r->s0[i] = r->t == 0 ? d : r->s0[i] * o->momentum + (1 - o->dampening) * d;
            d = o->nesterov ? d + o->momentum * r->s0[i] : r->s0[i];
        }
        r->p[i] = r->p[i] + -o->lr * d;
    }
    r->t++;
}

/* torch.optim.Adam / AdamW (_single_tensor_adam). */
static void ref_adam(int adamw, const tf_optim_options *o, ref *r, const double *grad)
{
    r->t++;
    double bc1 = 1 - pow(o->beta1, (double)r->t), bc2 = 1 - pow(o->beta2, (double)r->t);
    double step_size = o->lr / bc1, bc2_sqrt = sqrt(bc2);
    for (int i = 0; i < N; i++) {
        double g = grad[i];
        if (adamw)
            r->p[i] = r->p[i] * (1 - o->lr * o->weight_decay);
        else if (o->weight_decay != 0)
            g = g + o->weight_decay * r->p[i];
        r->s0[i] = r->s0[i] + (1 - o->beta1) * (g - r->s0[i]);     /* lerp_ */
        r->s1[i] = r->s1[i] * o->beta2 + (1 - o->beta2) * g * g;   /* mul_().addcmul_() */
        double denom = sqrt(r->s1[i]) / bc2_sqrt + o->eps;
        r->p[i] = r->p[i] + -step_size * (r->s0[i] / denom);       /* addcdiv_ */
    }
}

static void ref_step(tf_optim_kind kind, const tf_optim_options *o, ref *r, const double *g)
{
    if (kind == TF_OPTIM_SGD)
        ref_sgd(o, r, g);
    else
        ref_adam(kind == TF_OPTIM_ADAMW, o, r, g);
}

static void expect_state(tf_optim *opt, const char *name, const double *want, double tol)
{
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_optim_state(opt, 0, name, &t));
    assert_non_null(t);
    double got[N];
    trt_read(t, got, N);
    tf_tensor_release(t);
    trt_expect_close(name, got, want, N, tol);
}

/* Trains `steps` steps and compares with the reference after each; pins the
   engine calls of the first step and of the later ones. */
static void check_against_torch(tf_optim_kind kind, const tf_optim_options *o, int steps,
                                uint64_t calls_first, uint64_t calls_later)
{
    tf_runtime *rt = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    ref r;
    memset(&r, 0, sizeof r);
    initial(r.p);
    tf_eager *p = trt_param(rt, 2, k_shape, r.p, N), *w = weights(rt);
    tf_optim *opt = NULL;
    TF_ASSERT_OK(tf_optim_create(rt, kind, &opt));
    TF_ASSERT_OK(tf_optim_add_group(opt, o, &p, 1));
    tf_eager_release(p);
    for (int k = 1; k <= steps; k++) {
        double g[N], got[N];
        backward(rt, tf_optim_param(opt, 0), w);
        trt_grad(tf_optim_param(opt, 0), g, N);
        ref_step(kind, o, &r, g);
        TF_ASSERT_OK(tf_optim_step(opt, g_cpu));
        trt_read(tf_eager_value(tf_optim_param(opt, 0)), got, N);
        trt_expect_close("p", got, r.p, N, 1e-14);
        if (kind != TF_OPTIM_SGD) {
            expect_state(opt, "exp_avg", r.s0, 1e-14);
            expect_state(opt, "exp_avg_sq", r.s1, 1e-14);
        } else if (o->momentum != 0) {
            expect_state(opt, "momentum_buffer", r.s0, 1e-14);
        }
        assert_int_equal(tf_optim_param_steps(opt, 0), k);
        assert_int_equal(tf_optim_step_count(opt), k);
        tf_defer_stats stats;
        tf_optim_last_stats(opt, &stats);
        assert_int_equal(stats.engine_calls, k == 1 ? calls_first : calls_later);
    }
    tf_optim_destroy(opt);
    tf_eager_release(w);
    tf_runtime_release(rt);
}

static tf_optim_options options(tf_optim_kind kind, double lr)
{
    tf_optim_options o;
    tf_optim_options_default(kind, &o);
    o.lr = lr;
    return o;
}

static void test_defaults_are_pytorchs(void **state)
{
    (void)state;
    tf_optim_options o;
    tf_optim_options_default(TF_OPTIM_SGD, &o);
    assert_true(o.lr == 1e-3 && o.momentum == 0 && o.dampening == 0 && o.weight_decay == 0 &&
                !o.nesterov);
    tf_optim_options_default(TF_OPTIM_ADAM, &o);
    assert_true(o.lr == 1e-3 && o.beta1 == 0.9 && o.beta2 == 0.999 && o.eps == 1e-8 &&
                o.weight_decay == 0);
    tf_optim_options_default(TF_OPTIM_ADAMW, &o);
    assert_true(o.lr == 1e-3 && o.weight_decay == 1e-2 && o.beta2 == 0.999);
    assert_int_equal(o.struct_size, sizeof o);
    const char *const *names;
    assert_int_equal(tf_optim_state_names(TF_OPTIM_ADAMW, &names), 2);
    assert_string_equal(names[1], "exp_avg_sq");
    assert_int_equal(tf_optim_state_names(TF_OPTIM_SGD, &names), 1);
    assert_string_equal(names[0], "momentum_buffer");
}

static void test_sgd_matches_torch(void **state)
{
    (void)state;
    tf_optim_options o = options(TF_OPTIM_SGD, 0.1);
    /* every variant one FUSED call per parameter: the constants are immediates (ABI 1.5) */
    check_against_torch(TF_OPTIM_SGD, &o, 5, 1, 1);
    o.weight_decay = 0.05;
    check_against_torch(TF_OPTIM_SGD, &o, 5, 1, 1);
    o.weight_decay = 0;
    o.momentum = 0.9;
    check_against_torch(TF_OPTIM_SGD, &o, 6, 1, 1);
    o.nesterov = 1;
    check_against_torch(TF_OPTIM_SGD, &o, 6, 1, 1);
    o.weight_decay = 0.05; /* momentum, Nesterov and weight decay: 3 inputs, 3 immediates */
    check_against_torch(TF_OPTIM_SGD, &o, 6, 1, 1);
    o.nesterov = 0;
    check_against_torch(TF_OPTIM_SGD, &o, 6, 1, 1);
    o.nesterov = 0;
    o.dampening = 0.3;
    check_against_torch(TF_OPTIM_SGD, &o, 6, 1, 1);
}

static void test_adam_matches_torch(void **state)
{
    (void)state;
    tf_optim_options o = options(TF_OPTIM_ADAM, 0.05);
    check_against_torch(TF_OPTIM_ADAM, &o, 8, 1, 1);
    o.weight_decay = 0.1; /* L2: 14 steps over 4 inputs and 6 immediates, still one call */
    check_against_torch(TF_OPTIM_ADAM, &o, 8, 1, 1);
    o.beta1 = 0.5;
    o.beta2 = 0.75;
    o.eps = 1e-3;
    check_against_torch(TF_OPTIM_ADAM, &o, 8, 1, 1);
}

static void test_adamw_matches_torch(void **state)
{
    (void)state;
    tf_optim_options o = options(TF_OPTIM_ADAMW, 0.05);
    check_against_torch(TF_OPTIM_ADAMW, &o, 8, 1, 1);
    o.weight_decay = 0; /* AdamW without decay is Adam */
    check_against_torch(TF_OPTIM_ADAMW, &o, 8, 1, 1);
}

/* First steps worked out by hand. */
static void test_first_steps_by_hand(void **state)
{
    (void)state;
    tf_runtime *rt = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    const int64_t two = 2;
    const double p0[2] = {1.0, -2.0}, g[2] = {0.5, -4.0};
    tf_tensor *gt = tft_host(TF_F64, 1, &two, g, 2);
    tf_tensor *grads[1] = {gt};
    double got[2];

    /* Adam, step 1: m = 0.1 g, v = 0.001 g^2, update lr g / (|g| + eps). */
    tf_optim_options o = options(TF_OPTIM_ADAM, 0.1);
    tf_eager *p = trt_param(rt, 1, &two, p0, 2);
    tf_optim *opt = NULL;
    TF_ASSERT_OK(tf_optim_create(rt, TF_OPTIM_ADAM, &opt));
    TF_ASSERT_OK(tf_optim_add_group(opt, &o, &p, 1));
    TF_ASSERT_OK(tf_optim_step_with_grads(opt, g_cpu, grads, 1));
    trt_read(tf_eager_value(tf_optim_param(opt, 0)), got, 2);
    const double adam1[2] = {1.0 - 0.1 * 0.5 / (0.5 + 1e-8), -2.0 + 0.1 * 4.0 / (4.0 + 1e-8)};
    trt_expect_close("adam step 1", got, adam1, 2, 1e-15);
    tf_optim_destroy(opt);
    tf_eager_release(p);

    /* SGD with momentum 0.5, two steps of the same g: b1 = g, b2 = 1.5 g. */
    o = options(TF_OPTIM_SGD, 0.1);
    o.momentum = 0.5;
    p = trt_param(rt, 1, &two, p0, 2);
    TF_ASSERT_OK(tf_optim_create(rt, TF_OPTIM_SGD, &opt));
    TF_ASSERT_OK(tf_optim_add_group(opt, &o, &p, 1));
    TF_ASSERT_OK(tf_optim_step_with_grads(opt, g_cpu, grads, 1));
    TF_ASSERT_OK(tf_optim_step_with_grads(opt, g_cpu, grads, 1));
    trt_read(tf_eager_value(tf_optim_param(opt, 0)), got, 2);
    const double sgd2[2] = {1.0 - 0.1 * 0.5 - 0.1 * 0.75, -2.0 + 0.1 * 4.0 + 0.1 * 6.0};
    trt_expect_close("sgd momentum step 2", got, sgd2, 2, 1e-15);
    tf_optim_destroy(opt);
    tf_eager_release(p);
    tf_tensor_release(gt);
    tf_runtime_release(rt);
}

/*
 * The fused update against the same update with deferral off: the same bits.
 * Three parameters, two of them of one shape (whose ops would join one batch
 * if the step did not close it after each update) and one of another; the
 * fused step makes exactly one engine call per parameter.
 */
#define N_PARAMS 3
static void fused_equals_plain(tf_optim_kind kind, const tf_optim_options *o)
{
    tf_runtime *rt = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    const int64_t flat = N;
    const int64_t *shapes[N_PARAMS] = {k_shape, k_shape, &flat};
    const size_t ranks[N_PARAMS] = {2, 2, 1};
    double p0[N], g[N];
    initial(p0);
    tf_optim *opt[2];
    for (int j = 0; j < 2; j++) {
        tf_eager *p[N_PARAMS];
        for (int q = 0; q < N_PARAMS; q++)
            p[q] = trt_param(rt, ranks[q], shapes[q], p0, N);
        TF_ASSERT_OK(tf_optim_create(rt, kind, &opt[j]));
        TF_ASSERT_OK(tf_optim_add_group(opt[j], o, p, N_PARAMS));
        TF_ASSERT_OK(tf_optim_set_defer(opt[j], j ? TF_DEFER_OFF : TF_DEFER_ALWAYS));
        for (int q = 0; q < N_PARAMS; q++)
            tf_eager_release(p[q]);
    }
    for (int k = 0; k < 4; k++) {
        tf_tensor *dev[N_PARAMS];
        for (int q = 0; q < N_PARAMS; q++) {
            for (int i = 0; i < N; i++)
                g[i] = cos(0.9 * i + k + 0.5 * q) - 0.3;
            tf_tensor *host = tft_host(TF_F64, ranks[q], shapes[q], g, N);
            TF_ASSERT_OK(tf_engine_upload(g_cpu, host, &dev[q]));
            tf_tensor_release(host);
        }
        for (int j = 0; j < 2; j++)
            TF_ASSERT_OK(tf_optim_step_with_grads(opt[j], g_cpu, dev, N_PARAMS));
        for (int q = 0; q < N_PARAMS; q++)
            tf_tensor_release(dev[q]);
        tf_defer_stats fused, plain;
        tf_optim_last_stats(opt[0], &fused);
        tf_optim_last_stats(opt[1], &plain);
        assert_int_equal(fused.engine_calls, N_PARAMS);
        assert_true(fused.ops_deferred > fused.engine_calls);
        assert_int_equal(plain.ops_deferred, 0);
        for (int q = 0; q < N_PARAMS; q++) {
            double a[N], b[N];
            trt_read(tf_eager_value(tf_optim_param(opt[0], q)), a, N);
            trt_read(tf_eager_value(tf_optim_param(opt[1], q)), b, N);
            trt_expect_bits("fused p", a, b, N);
            const char *const *names;
            size_t n = tf_optim_state_names(kind, &names);
            for (size_t s = 0; s < n && (kind != TF_OPTIM_SGD || o->momentum != 0); s++) {
                tf_tensor *ta = NULL, *tb = NULL;
                TF_ASSERT_OK(tf_optim_state(opt[0], q, names[s], &ta));
                TF_ASSERT_OK(tf_optim_state(opt[1], q, names[s], &tb));
                trt_read(ta, a, N);
                trt_read(tb, b, N);
                trt_expect_bits(names[s], a, b, N);
                tf_tensor_release(ta);
                tf_tensor_release(tb);
            }
        }
    }
    tf_optim_destroy(opt[0]);
    tf_optim_destroy(opt[1]);
    tf_runtime_release(rt);
}

static void test_fused_equals_plain(void **state)
{
    (void)state;
    tf_optim_options o = options(TF_OPTIM_SGD, 0.1);
    o.momentum = 0.9;
    o.nesterov = 1;
    fused_equals_plain(TF_OPTIM_SGD, &o);
    o.weight_decay = 0.05;
    o.nesterov = 0;
    o.dampening = 0.3;
    fused_equals_plain(TF_OPTIM_SGD, &o);
    o = options(TF_OPTIM_ADAM, 0.01);
    fused_equals_plain(TF_OPTIM_ADAM, &o);
    o.weight_decay = 0.1;
    fused_equals_plain(TF_OPTIM_ADAM, &o);
    o = options(TF_OPTIM_ADAMW, 0.01);
    fused_equals_plain(TF_OPTIM_ADAMW, &o);
    o.weight_decay = 0;
    fused_equals_plain(TF_OPTIM_ADAMW, &o);
}

/* Two groups with their own learning rates; lr 0 and a parameter without a
   gradient are left alone. */
static void test_groups_and_missing_grads(void **state)
{
    (void)state;
    tf_runtime *rt = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    const int64_t two = 2;
    const double v[2] = {1.0, 2.0}, g[2] = {1.0, -1.0};
    tf_eager *a = trt_param(rt, 1, &two, v, 2), *b = trt_param(rt, 1, &two, v, 2);
    tf_eager *c = trt_param(rt, 1, &two, v, 2);
    tf_optim *opt = NULL;
    TF_ASSERT_OK(tf_optim_create(rt, TF_OPTIM_SGD, &opt));
    tf_optim_options o1 = options(TF_OPTIM_SGD, 0.5), o2 = options(TF_OPTIM_SGD, 0.25);
    TF_ASSERT_OK(tf_optim_add_group(opt, &o1, &a, 1));
    tf_eager *bc[2] = {b, c};
    TF_ASSERT_OK(tf_optim_add_group(opt, &o2, bc, 2));
    assert_int_equal(tf_optim_group_count(opt), 2);
    assert_int_equal(tf_optim_param_count(opt), 3);
    assert_int_equal(tf_optim_param_group(opt, 2), 1);
    assert_int_equal(tf_optim_param_group(opt, 3), SIZE_MAX);
    tf_tensor *gt = tft_host(TF_F64, 1, &two, g, 2);
    tf_tensor *grads[3] = {gt, gt, NULL};
    TF_ASSERT_OK(tf_optim_step_with_grads(opt, g_cpu, grads, 3));
    double got[2];
    trt_read(tf_eager_value(tf_optim_param(opt, 0)), got, 2);
    trt_expect_close("group 0", got, (const double[]){0.5, 2.5}, 2, 0);
    trt_read(tf_eager_value(tf_optim_param(opt, 1)), got, 2);
    trt_expect_close("group 1", got, (const double[]){0.75, 2.25}, 2, 0);
    assert_ptr_equal(tf_optim_param(opt, 2), c); /* no gradient: untouched */
    assert_int_equal(tf_optim_param_steps(opt, 2), 0);
    TF_ASSERT_OK(tf_optim_set_lr(opt, 1, 0.0));
    tf_optim_options got_o;
    TF_ASSERT_OK(tf_optim_group_options(opt, 1, &got_o));
    assert_true(got_o.lr == 0.0);
    TF_ASSERT_OK(tf_optim_step_with_grads(opt, g_cpu, grads, 3));
    trt_read(tf_eager_value(tf_optim_param(opt, 1)), got, 2);
    trt_expect_close("lr 0", got, (const double[]){0.75, 2.25}, 2, 0);
    /* tf_optim_step reads the grad slots: the new variables' are empty */
    TF_ASSERT_OK(tf_optim_step(opt, g_cpu));
    assert_int_equal(tf_optim_param_steps(opt, 0), 2);
    tf_optim_destroy(opt);
    tf_tensor_release(gt);
    tf_eager_release(a);
    tf_eager_release(b);
    tf_eager_release(c);
    tf_runtime_release(rt);
}

/* ---- refusals: the error kind, and nothing changed ---- */

static void test_add_group_refusals(void **state)
{
    (void)state;
    tf_runtime *rt = NULL, *other = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    TF_ASSERT_OK(tf_runtime_create(&other));
    const int64_t two = 2;
    const double v[2] = {1, 2};
    const int32_t iv[2] = {1, 2};
    tf_eager *p = trt_param(rt, 1, &two, v, 2), *foreign = trt_param(other, 1, &two, v, 2);
    tf_eager *konst = tft_f64(rt, 0, 1, &two, v, 2);
    tf_eager *ints = tft_constant(rt, TF_I32, 1, &two, iv, 2);
    tf_optim *opt = NULL;
    trt_expect_fail(tf_optim_create(NULL, TF_OPTIM_SGD, &opt), TF_ERR_VALIDATION, "rt");
    trt_expect_fail(tf_optim_create(rt, (tf_optim_kind)7, &opt), TF_ERR_VALIDATION, "kind");
    TF_ASSERT_OK(tf_optim_create(rt, TF_OPTIM_SGD, &opt));
    tf_optim_options good = options(TF_OPTIM_SGD, 0.1), o;
    o = good; o.lr = -1;
    trt_expect_fail(tf_optim_add_group(opt, &o, &p, 1), TF_ERR_VALIDATION, "options");
    o = good; o.lr = NAN;
    trt_expect_fail(tf_optim_add_group(opt, &o, &p, 1), TF_ERR_VALIDATION, "options");
    o = good; o.momentum = -0.1;
    trt_expect_fail(tf_optim_add_group(opt, &o, &p, 1), TF_ERR_VALIDATION, "options");
    o = good; o.dampening = 1.5;
    trt_expect_fail(tf_optim_add_group(opt, &o, &p, 1), TF_ERR_VALIDATION, "options");
    o = good; o.nesterov = 1; /* without momentum */
    trt_expect_fail(tf_optim_add_group(opt, &o, &p, 1), TF_ERR_VALIDATION, "options");
    o = good; o.weight_decay = -1;
    trt_expect_fail(tf_optim_add_group(opt, &o, &p, 1), TF_ERR_VALIDATION, "options");
    o = good; o.struct_size = 4;
    trt_expect_fail(tf_optim_add_group(opt, &o, &p, 1), TF_ERR_VALIDATION, "options");
    trt_expect_fail(tf_optim_add_group(opt, &good, NULL, 1), TF_ERR_VALIDATION, "params");
    trt_expect_fail(tf_optim_add_group(opt, &good, &p, 0), TF_ERR_VALIDATION, "params");
    trt_expect_fail(tf_optim_add_group(opt, &good, &foreign, 1), TF_ERR_CONTEXT_MISMATCH,
                    "params");
    trt_expect_fail(tf_optim_add_group(opt, &good, &konst, 1), TF_ERR_VALIDATION, "params");
    trt_expect_fail(tf_optim_add_group(opt, &good, &ints, 1), TF_ERR_DTYPE_MISMATCH, "params");
    tf_eager *twice[2] = {p, p};
    trt_expect_fail(tf_optim_add_group(opt, &good, twice, 2), TF_ERR_VALIDATION, "params");
    assert_int_equal(tf_optim_group_count(opt), 0);
    assert_int_equal(tf_optim_param_count(opt), 0);
    TF_ASSERT_OK(tf_optim_add_group(opt, &good, &p, 1));
    trt_expect_fail(tf_optim_add_group(opt, &good, &p, 1), TF_ERR_VALIDATION, "params");
    assert_int_equal(tf_optim_param_count(opt), 1);

    tf_optim *adam = NULL;
    TF_ASSERT_OK(tf_optim_create(rt, TF_OPTIM_ADAM, &adam));
    tf_optim_options a = options(TF_OPTIM_ADAM, 0.1);
    a.beta1 = 1.0;
    trt_expect_fail(tf_optim_add_group(adam, &a, &p, 1), TF_ERR_VALIDATION, "options");
    a = options(TF_OPTIM_ADAM, 0.1);
    a.eps = -1;
    trt_expect_fail(tf_optim_add_group(adam, &a, &p, 1), TF_ERR_VALIDATION, "options");

    trt_expect_fail(tf_optim_set_lr(opt, 1, 0.1), TF_ERR_VALIDATION, "group");
    trt_expect_fail(tf_optim_set_lr(opt, 0, -0.1), TF_ERR_VALIDATION, "lr");
    trt_expect_fail(tf_optim_set_lr(opt, 0, INFINITY), TF_ERR_VALIDATION, "lr");
    tf_optim_options got;
    TF_ASSERT_OK(tf_optim_group_options(opt, 0, &got));
    assert_true(got.lr == 0.1);
    trt_expect_fail(tf_optim_group_options(opt, 1, &got), TF_ERR_VALIDATION, "group");
    trt_expect_fail(tf_optim_set_defer(opt, (tf_defer_mode)9), TF_ERR_VALIDATION, "mode");
    tf_optim_destroy(adam);
    tf_optim_destroy(opt);
    tf_eager *all[] = {p, foreign, konst, ints};
    for (size_t i = 0; i < 4; i++)
        tf_eager_release(all[i]);
    tf_runtime_release(rt);
    tf_runtime_release(other);
}

/* An Adam optimizer with one step taken, for the refusals below. */
typedef struct fixture {
    tf_runtime *rt;
    tf_optim *opt;
    tf_tensor *g;
    tf_eager *before;
    tf_tensor *m, *v;
} fixture;

static fixture fixture_make(void)
{
    fixture f;
    memset(&f, 0, sizeof f);
    TF_ASSERT_OK(tf_runtime_create(&f.rt));
    double p0[N], g[N];
    initial(p0);
    for (int i = 0; i < N; i++)
        g[i] = 0.1 * i - 0.5;
    tf_eager *p = trt_param(f.rt, 2, k_shape, p0, N);
    TF_ASSERT_OK(tf_optim_create(f.rt, TF_OPTIM_ADAM, &f.opt));
    tf_optim_options o = options(TF_OPTIM_ADAM, 0.1);
    TF_ASSERT_OK(tf_optim_add_group(f.opt, &o, &p, 1));
    tf_eager_release(p);
    f.g = tft_host(TF_F64, 2, k_shape, g, N);
    TF_ASSERT_OK(tf_optim_step_with_grads(f.opt, g_cpu, &f.g, 1));
    f.before = tf_optim_param(f.opt, 0);
    TF_ASSERT_OK(tf_optim_state(f.opt, 0, "exp_avg", &f.m));
    TF_ASSERT_OK(tf_optim_state(f.opt, 0, "exp_avg_sq", &f.v));
    return f;
}

/* Nothing changed since fixture_make. */
static void fixture_unchanged(fixture *f)
{
    assert_ptr_equal(tf_optim_param(f->opt, 0), f->before);
    assert_int_equal(tf_optim_param_steps(f->opt, 0), 1);
    assert_int_equal(tf_optim_step_count(f->opt), 1);
    tf_tensor *m = NULL, *v = NULL;
    TF_ASSERT_OK(tf_optim_state(f->opt, 0, "exp_avg", &m));
    TF_ASSERT_OK(tf_optim_state(f->opt, 0, "exp_avg_sq", &v));
    assert_ptr_equal(m, f->m);
    assert_ptr_equal(v, f->v);
    tf_tensor_release(m);
    tf_tensor_release(v);
}

static void fixture_free(fixture *f)
{
    tf_tensor_release(f->m);
    tf_tensor_release(f->v);
    tf_tensor_release(f->g);
    tf_optim_destroy(f->opt);
    tf_runtime_release(f->rt);
}

static void test_step_refusals(void **state)
{
    (void)state;
    fixture f = fixture_make();
    const int64_t other_shape[2] = {4, 3}, twelve = N;
    float fv[N] = {0};
    double dv[N] = {0};
    tf_tensor *wrong_dtype = tft_host(TF_F32, 2, k_shape, fv, N);
    tf_tensor *wrong_shape = tft_host(TF_F64, 2, other_shape, dv, N);
    tf_tensor *flat = tft_host(TF_F64, 1, &twelve, dv, N);
    trt_expect_fail(tf_optim_step(f.opt, NULL), TF_ERR_VALIDATION, "engine");
    trt_expect_fail(tf_optim_step_with_grads(f.opt, g_cpu, &f.g, 2), TF_ERR_VALIDATION, "grads");
    trt_expect_fail(tf_optim_step_with_grads(f.opt, g_cpu, &wrong_dtype, 1),
                    TF_ERR_DTYPE_MISMATCH, "grads");
    trt_expect_fail(tf_optim_step_with_grads(f.opt, g_cpu, &wrong_shape, 1),
                    TF_ERR_SHAPE_MISMATCH, "grads");
    trt_expect_fail(tf_optim_step_with_grads(f.opt, g_cpu, &flat, 1), TF_ERR_SHAPE_MISMATCH,
                    "grads");
    fixture_unchanged(&f);

    trt_expect_fail(tf_optim_set_param(f.opt, 1, f.g), TF_ERR_VALIDATION, "index");
    trt_expect_fail(tf_optim_set_param(f.opt, 0, NULL), TF_ERR_VALIDATION, "value");
    trt_expect_fail(tf_optim_set_param(f.opt, 0, wrong_shape), TF_ERR_SHAPE_MISMATCH, "value");
    trt_expect_fail(tf_optim_set_param(f.opt, 0, wrong_dtype), TF_ERR_DTYPE_MISMATCH, "value");
    tf_tensor *out = NULL;
    trt_expect_fail(tf_optim_state(f.opt, 0, "momentum_buffer", &out), TF_ERR_VALIDATION,
                    "name");
    trt_expect_fail(tf_optim_state(f.opt, 3, "exp_avg", &out), TF_ERR_VALIDATION, "index");
    assert_null(out);

    tf_tensor *st2[2] = {f.g, NULL};
    trt_expect_fail(tf_optim_set_state(f.opt, 0, 3, st2, 2), TF_ERR_VALIDATION, "state");
    trt_expect_fail(tf_optim_set_state(f.opt, 0, 3, st2, 1), TF_ERR_VALIDATION, "state");
    st2[1] = wrong_shape;
    trt_expect_fail(tf_optim_set_state(f.opt, 0, 3, st2, 2), TF_ERR_SHAPE_MISMATCH, "state");
    st2[1] = f.g;
    trt_expect_fail(tf_optim_set_state(f.opt, 0, 0, st2, 2), TF_ERR_VALIDATION, "state");
    tf_tensor *none[2] = {NULL, NULL};
    trt_expect_fail(tf_optim_set_state(f.opt, 0, 5, none, 2), TF_ERR_VALIDATION, "state");
    fixture_unchanged(&f);

    /* the accepted forms */
    TF_ASSERT_OK(tf_optim_set_state(f.opt, 0, 7, st2, 2));
    assert_int_equal(tf_optim_param_steps(f.opt, 0), 7);
    TF_ASSERT_OK(tf_optim_set_state(f.opt, 0, 0, none, 2));
    TF_ASSERT_OK(tf_optim_state(f.opt, 0, "exp_avg", &out));
    assert_null(out);
    TF_ASSERT_OK(tf_optim_set_param(f.opt, 0, f.g));
    assert_ptr_not_equal(tf_optim_param(f.opt, 0), f.before);
    assert_true(tf_tensor_shares_storage(tf_eager_value(tf_optim_param(f.opt, 0)), f.g));
    tf_tensor_release(wrong_dtype);
    tf_tensor_release(wrong_shape);
    tf_tensor_release(flat);
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_are_pytorchs),
        cmocka_unit_test(test_sgd_matches_torch),
        cmocka_unit_test(test_adam_matches_torch),
        cmocka_unit_test(test_adamw_matches_torch),
        cmocka_unit_test(test_first_steps_by_hand),
        cmocka_unit_test(test_fused_equals_plain),
        cmocka_unit_test(test_groups_and_missing_grads),
        cmocka_unit_test(test_add_group_refusals),
        cmocka_unit_test(test_step_refusals),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
