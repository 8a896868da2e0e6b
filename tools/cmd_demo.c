/*
 * cmd_demo.c - `tenferro demo`: trains a small multilayer perceptron to
 * separate two interleaved spirals, on the engine the user picks.
 *
 * Everything runs through the public API, as an application would: the data
 * is uploaded through a session, the model is a few session ops, the loss is
 * differentiated with backward(), and the Adam update runs as session ops
 * under a no-grad scope.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, isatty, fileno */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tenferro/ops.h>
#include <tenferro/tenferro.h>

#include "cli.h"

#define N_PER_CLASS 256
#define N_POINTS (2 * N_PER_CLASS)
#define HIDDEN 48

static const double k_pi = 3.14159265358979323846;
#define N_PARAMS 6

typedef struct demo_options {
    const char *engine;
    int threads;
    int epochs;
    double lr;
} demo_options;

typedef struct model {
    tf_eager *p[N_PARAMS]; /* W1 [2,H], b1 [H], W2 [H,H], b2 [H], W3 [H,1], b3 [1] */
    tf_eager *m[N_PARAMS], *v[N_PARAMS]; /* Adam moments (constants) */
} model;

/* A deterministic generator (xorshift64*), so every run sees the same data. */
static double uniform(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return (double)((x * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

/* Two interleaved spirals: X [N,2] (column-major), labels +1 / -1 as [N,1]. */
static void make_spirals(double *x, double *y)
{
    uint64_t rng = 0x5eed5eed5eedull;
    for (int c = 0; c < 2; c++) {
        for (int i = 0; i < N_PER_CLASS; i++) {
            int k = c * N_PER_CLASS + i;
            double r = 0.1 + 0.9 * i / (double)N_PER_CLASS;
            double t = 3.5 * k_pi * i / (double)N_PER_CLASS + c * k_pi;
            x[k] = r * cos(t) + 0.02 * (uniform(&rng) - 0.5);
            x[N_POINTS + k] = r * sin(t) + 0.02 * (uniform(&rng) - 0.5);
            y[k] = c ? -1.0 : 1.0;
        }
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Uploads host data as a constant of the session's engine. */
static tf_status upload(tf_session *s, size_t rank, const int64_t *shape, const double *data,
                        size_t n, tf_eager **out)
{
    tf_tensor *t;
    tf_status st = tf_tensor_from_host(TF_F64, rank, shape, data, n, &t);
    if (st)
        return st;
    st = tf_session_constant_from_host(s, t, out);
    tf_tensor_release(t);
    return st;
}

/* Reads one f64 value of x, downloading it first when it is in device memory. */
static tf_status read_scalar(tf_session *s, const tf_eager *x, double *out)
{
    tf_tensor *v = tf_eager_value(x), *host = NULL;
    if (!tf_tensor_is_host_accessible(v)) {
        tf_status st = tf_engine_download(tf_session_engine(s), v, &host);
        if (st)
            return st;
        v = host;
    }
    tf_status st = tf_tensor_copy_to_host(v, TF_F64, out, 1);
    tf_tensor_release(host);
    return st;
}

/* Replaces *slot by `next` (one reference taken over). */
static void replace(tf_eager **slot, tf_eager *next)
{
    tf_eager_release(*slot);
    *slot = next;
}

static tf_status init_model(tf_session *s, model *m)
{
    static const int64_t shapes[N_PARAMS][2] = {{2, HIDDEN}, {HIDDEN, 0}, {HIDDEN, HIDDEN},
                                                {HIDDEN, 0}, {HIDDEN, 1}, {1, 0}};
    uint64_t rng = 0xC0FFEEull;
    tf_status st = TF_OK;
    for (int i = 0; i < N_PARAMS && !st; i++) {
        size_t rank = shapes[i][1] ? 2 : 1;
        size_t n = (size_t)shapes[i][0] * (size_t)(rank == 2 ? shapes[i][1] : 1);
        double *w = calloc(n, sizeof *w);
        if (!w)
            return TF_ERR_OUT_OF_MEMORY;
        double scale = rank == 2 ? sqrt(3.0 / (double)shapes[i][0]) : 0.0; /* Glorot-style */
        for (size_t k = 0; k < n; k++)
            w[k] = scale * (2 * uniform(&rng) - 1);
        tf_eager *c = NULL;
        st = upload(s, rank, shapes[i], w, n, &c);
        free(w);
        if (!st)
            st = tf_runtime_variable_from(tf_session_runtime(s), tf_eager_value(c), &m->p[i]);
        if (!st)
            st = tf_session_full(s, TF_F64, rank, shapes[i], 0.0, &m->m[i]);
        if (!st)
            st = tf_session_full(s, TF_F64, rank, shapes[i], 0.0, &m->v[i]);
        tf_eager_release(c);
    }
    return st;
}

static void free_model(model *m)
{
    for (int i = 0; i < N_PARAMS; i++) {
        tf_eager_release(m->p[i]);
        tf_eager_release(m->m[i]);
        tf_eager_release(m->v[i]);
    }
}

/* One dense layer: act(x . w + b), act = tanh unless `linear`. */
static tf_status dense(tf_session *s, tf_eager *x, tf_eager *w, tf_eager *b, int linear,
                       tf_eager **out)
{
    tf_eager *xw = NULL, *z = NULL;
    tf_status st = tf_session_matmul(s, x, w, &xw);
    if (!st)
        st = tf_session_add(s, xw, b, &z);
    tf_eager_release(xw);
    if (st || linear) {
        if (!st)
            *out = z;
        return st;
    }
    st = tf_session_tanh(s, z, out);
    tf_eager_release(z);
    return st;
}

/* The logits [N,1] of the model. */
static tf_status forward(tf_session *s, const model *m, tf_eager *x, tf_eager **logits)
{
    tf_eager *h1 = NULL, *h2 = NULL;
    tf_status st = dense(s, x, m->p[0], m->p[1], 0, &h1);
    if (!st)
        st = dense(s, h1, m->p[2], m->p[3], 0, &h2);
    if (!st)
        st = dense(s, h2, m->p[4], m->p[5], 1, logits);
    tf_eager_release(h1);
    tf_eager_release(h2);
    return st;
}

/*
 * The mean logistic loss softplus(-y z) = max(-y z, 0) + log1p(exp(-|y z|))
 * (stable for large margins), and the accuracy as a fraction.
 */
static tf_status loss_and_accuracy(tf_session *s, tf_eager *z, tf_eager *y, tf_eager **loss,
                                   double *accuracy)
{
    tf_eager *t[8] = {NULL};
    tf_eager *zero = NULL;
    tf_status st = tf_session_scalar(s, TF_F64, 0.0, &zero);
    if (!st)
        st = tf_session_mul(s, y, z, &t[0]); /* margin */
    if (!st)
        st = tf_session_neg(s, t[0], &t[1]);
    if (!st)
        st = tf_session_maximum(s, t[1], zero, &t[2]);
    if (!st)
        st = tf_session_abs(s, t[0], &t[3]);
    if (!st)
        st = tf_session_neg(s, t[3], &t[4]);
    if (!st)
        st = tf_session_exp(s, t[4], &t[5]);
    if (!st)
        st = tf_session_log1p(s, t[5], &t[6]);
    if (!st)
        st = tf_session_add(s, t[2], t[6], &t[7]);
    if (!st)
        st = tf_session_reduce_mean(s, t[7], NULL, 0, loss);
    /* accuracy: the fraction of positive margins */
    tf_eager *right = NULL, *fraction = NULL;
    if (!st)
        st = tf_session_compare(s, t[0], zero, TF_COMPARE_GT, &right);
    tf_eager *as_f64 = NULL;
    if (!st)
        st = tf_session_cast(s, right, TF_F64, &as_f64);
    if (!st)
        st = tf_session_reduce_mean(s, as_f64, NULL, 0, &fraction);
    if (!st)
        st = read_scalar(s, fraction, accuracy);
    tf_eager_release(right);
    tf_eager_release(as_f64);
    tf_eager_release(fraction);
    tf_eager_release(zero);
    for (int i = 0; i < 8; i++)
        tf_eager_release(t[i]);
    return st;
}

/* Adam on parameter i with gradient g (session ops; the caller holds no-grad). */
static tf_status adam_step(tf_session *s, model *m, int i, tf_eager *g, int step, double lr)
{
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    double c1 = 1 - pow(b1, step), c2 = 1 - pow(b2, step);
    tf_eager *k[6] = {NULL}, *t[8] = {NULL};
    double consts[6] = {b1, 1 - b1, b2, 1 - b2, eps, lr * sqrt(c2) / c1};
    tf_status st = TF_OK;
    for (int j = 0; j < 6 && !st; j++)
        st = tf_session_scalar(s, TF_F64, consts[j], &k[j]);
    if (!st) st = tf_session_mul(s, k[0], m->m[i], &t[0]);
    if (!st) st = tf_session_mul(s, k[1], g, &t[1]);
    if (!st) st = tf_session_add(s, t[0], t[1], &t[2]);     /* m */
    if (!st) st = tf_session_mul(s, g, g, &t[3]);
    if (!st) st = tf_session_mul(s, k[3], t[3], &t[4]);
    if (!st) st = tf_session_mul(s, k[2], m->v[i], &t[5]);
    if (!st) st = tf_session_add(s, t[4], t[5], &t[6]);     /* v */
    tf_eager *root = NULL, *den = NULL, *ratio = NULL, *delta = NULL, *next = NULL;
    if (!st) st = tf_session_sqrt(s, t[6], &root);
    if (!st) st = tf_session_add(s, root, k[4], &den);
    if (!st) st = tf_session_div(s, t[2], den, &ratio);
    if (!st) st = tf_session_mul(s, k[5], ratio, &delta);
    if (!st) st = tf_session_sub(s, m->p[i], delta, &next);
    if (!st) {
        tf_eager *var = NULL;
        st = tf_runtime_variable_from(tf_session_runtime(s), tf_eager_value(next), &var);
        if (!st) {
            replace(&m->p[i], var);
            tf_eager_retain(t[2]);
            replace(&m->m[i], t[2]);
            tf_eager_retain(t[6]);
            replace(&m->v[i], t[6]);
        }
    }
    tf_eager *all[] = {root, den, ratio, delta, next};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        tf_eager_release(all[j]);
    for (int j = 0; j < 6; j++)
        tf_eager_release(k[j]);
    for (int j = 0; j < 8; j++)
        tf_eager_release(t[j]);
    return st;
}

static tf_status update(tf_session *s, model *m, int step, double lr)
{
    tf_runtime *rt = tf_session_runtime(s);
    tf_scope guard;
    tf_status st = tf_runtime_no_grad(rt, &guard);
    for (int i = 0; i < N_PARAMS && !st; i++) {
        tf_tensor *g = NULL;
        tf_eager *ge = NULL;
        st = tf_eager_grad(m->p[i], &g);
        if (!st && g)
            st = tf_runtime_constant_from(rt, g, &ge);
        if (!st && ge)
            st = adam_step(s, m, i, ge, step, lr);
        tf_eager_release(ge);
        tf_tensor_release(g);
    }
    tf_scope_end(&guard);
    return st;
}

static void progress(int tty, int epoch, int epochs, double loss, double acc)
{
    if (tty) {
        int width = 30, done = (int)((double)width * epoch / epochs);
        printf("\r[%.*s%*s] epoch %4d/%d  loss %.4f  accuracy %5.1f%%", done,
               "##############################", width - done, "", epoch, epochs, loss,
               100 * acc);
        fflush(stdout);
    } else if (epoch % 50 == 0 || epoch == epochs) {
        printf("epoch %d/%d loss %.4f accuracy %.1f%%\n", epoch, epochs, loss, 100 * acc);
    }
}

static tf_status train(tf_session *s, const demo_options *o, double *final_acc)
{
    static double x[2 * N_POINTS], y[N_POINTS];
    make_spirals(x, y);
    tf_eager *xe = NULL, *ye = NULL;
    model m = {{NULL}, {NULL}, {NULL}};
    tf_status st = upload(s, 2, (int64_t[]){N_POINTS, 2}, x, 2 * N_POINTS, &xe);
    if (!st)
        st = upload(s, 2, (int64_t[]){N_POINTS, 1}, y, N_POINTS, &ye);
    if (!st)
        st = init_model(s, &m);
    int tty = isatty(fileno(stdout));
    for (int epoch = 1; epoch <= o->epochs && !st; epoch++) {
        tf_eager *z = NULL, *loss = NULL;
        double acc = 0, lv = 0;
        st = forward(s, &m, xe, &z);
        if (!st)
            st = loss_and_accuracy(s, z, ye, &loss, &acc);
        if (!st)
            st = tf_runtime_clear_grads(tf_session_runtime(s));
        if (!st)
            st = tf_eager_backward(loss, tf_session_engine(s));
        if (!st)
            st = read_scalar(s, loss, &lv);
        if (!st)
            st = update(s, &m, epoch, o->lr);
        if (!st)
            progress(tty, epoch, o->epochs, lv, acc);
        *final_acc = acc;
        tf_eager_release(loss);
        tf_eager_release(z);
    }
    if (tty)
        printf("\n");
    free_model(&m);
    tf_eager_release(xe);
    tf_eager_release(ye);
    return st;
}

/* One option and its value; 0 when it is not one demo knows with a valid value. */
static int parse_option(const char *a, const char *v, demo_options *o)
{
    if (!v)
        return 0;
    if (strcmp(a, "--engine") == 0) {
        o->engine = v;
        return 1;
    }
    if (strcmp(a, "--threads") == 0) { /* as bench's: 0..1024, the whole word a number */
        if (tf_cli_parse_int(v, 0, TF_CLI_MAX_THREADS, &o->threads) == 0)
            return 1;
        fprintf(stderr, "tenferro demo: --threads wants an integer in 0..%d, got '%s'\n",
                TF_CLI_MAX_THREADS, v);
        return 0;
    }
    if (strcmp(a, "--epochs") == 0 && atoi(v) > 0) {
        o->epochs = atoi(v);
        return 1;
    }
    return 0;
}

static int parse(int argc, char **argv, demo_options *o)
{
    for (int i = 1; i < argc; i += 2) {
        if (!parse_option(argv[i], i + 1 < argc ? argv[i + 1] : NULL, o)) {
            fprintf(stderr, "usage: tenferro demo [--engine NAME] [--threads N] [--epochs N]\n");
            return 2;
        }
    }
    return 0;
}

int tf_cli_demo(int argc, char **argv)
{
    demo_options o = {NULL, 0, 300, 0.02}; /* engine NULL: the configured one */
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    tf_engine *engine = NULL;
    tf_runtime *rt = NULL;
    tf_session *s = NULL;
    double t0 = now(), acc = 0;
    tf_status st = tf_cli_open_engine(o.engine, o.threads, &engine);
    if (!st)
        st = tf_runtime_create(&rt);
    if (!st)
        st = tf_session_begin(rt, engine, &s);
    if (!st) {
        printf("training a %d-%d-%d-1 perceptron on %d points of two spirals, engine '%s'\n", 2,
               HIDDEN, HIDDEN, N_POINTS, tf_engine_name(engine));
        st = train(s, &o, &acc);
    }
    tf_session_end(s);
    tf_runtime_release(rt);
    tf_engine_destroy(engine);
    if (st) {
        const char *cause = tf_error_cause();
        fprintf(stderr, "tenferro demo: %s%s%s\n", tf_error_message(), cause[0] ? ": " : "",
                cause);
        return 1;
    }
    printf("final accuracy %.1f%% after %d epochs in %.2f s\n", 100 * acc, o.epochs, now() - t0);
    return acc >= 0.95 ? 0 : 1;
}
