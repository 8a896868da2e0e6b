/*
 * cmd_demo.c - `tenferro demo`: trains a small multilayer perceptron to
 * separate two interleaved spirals, on the engine the user picks.
 *
 * Everything runs through the public API, as an application would: the data
 * is uploaded through a session, the model is a few session ops, the loss is
 * differentiated with backward(), and Adam (optim.h) updates the parameters.
 * --save FILE writes a checkpoint (safetensors: parameters, Adam's state,
 * the epoch) when training ends; --resume FILE continues from one, to the
 * same bits as a run that never stopped.
 *
 * Under mpirun each rank trains on its shard of the points (every size-th
 * one) with averaged gradients (dp.h), which is the same training as one
 * process on all points; rank 0 alone prints and saves.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, isatty, fileno */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tenferro/checkpoint.h>
#include <tenferro/dp.h>
#include <tenferro/ops.h>
#include <tenferro/optim.h>
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
    const char *save, *resume; /* --save FILE, --resume FILE */
} demo_options;

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

/* The parameters' names in checkpoints, and their shapes ({n, 0}: a vector). */
static const char *const k_names[N_PARAMS] = {"w1", "b1", "w2", "b2", "w3", "b3"};
static const int64_t k_shapes[N_PARAMS][2] = {{2, HIDDEN}, {HIDDEN, 0}, {HIDDEN, HIDDEN},
                                              {HIDDEN, 0}, {HIDDEN, 1}, {1, 0}};

/* Parameter i's first value: Glorot-style weights, zero biases, from a fixed seed. */
static tf_status init_param(tf_session *s, int i, uint64_t *rng, tf_eager **out)
{
    size_t rank = k_shapes[i][1] ? 2 : 1;
    size_t n = (size_t)k_shapes[i][0] * (size_t)(rank == 2 ? k_shapes[i][1] : 1);
    double *w = calloc(n, sizeof *w);
    if (!w)
        return TF_ERR_OUT_OF_MEMORY;
    double scale = rank == 2 ? sqrt(3.0 / (double)k_shapes[i][0]) : 0.0;
    for (size_t k = 0; k < n; k++)
        w[k] = scale * (2 * uniform(rng) - 1);
    tf_eager *c = NULL;
    tf_status st = upload(s, rank, k_shapes[i], w, n, &c);
    free(w);
    if (!st)
        st = tf_runtime_variable_from(tf_session_runtime(s), tf_eager_value(c), out);
    tf_eager_release(c);
    return st;
}

/* The model: its parameters in an Adam optimizer (tf_optim_param(opt, i) is parameter i). */
static tf_status init_model(tf_session *s, double lr, tf_optim **out)
{
    uint64_t rng = 0xC0FFEEull;
    tf_eager *p[N_PARAMS] = {NULL};
    tf_status st = TF_OK;
    for (int i = 0; i < N_PARAMS && !st; i++)
        st = init_param(s, i, &rng, &p[i]);
    tf_optim *opt = NULL;
    if (!st)
        st = tf_optim_create(tf_session_runtime(s), TF_OPTIM_ADAM, &opt);
    tf_optim_options o;
    tf_optim_options_default(TF_OPTIM_ADAM, &o);
    o.lr = lr;
    if (!st)
        st = tf_optim_add_group(opt, &o, p, N_PARAMS);
    for (int i = 0; i < N_PARAMS; i++)
        tf_eager_release(p[i]);
    if (st)
        tf_optim_destroy(opt);
    else
        *out = opt;
    return st;
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
static tf_status forward(tf_session *s, const tf_optim *m, tf_eager *x, tf_eager **logits)
{
    tf_eager *h1 = NULL, *h2 = NULL;
    tf_status st = dense(s, x, tf_optim_param(m, 0), tf_optim_param(m, 1), 0, &h1);
    if (!st)
        st = dense(s, h1, tf_optim_param(m, 2), tf_optim_param(m, 3), 0, &h2);
    if (!st)
        st = dense(s, h2, tf_optim_param(m, 4), tf_optim_param(m, 5), 1, logits);
    tf_eager_release(h1);
    tf_eager_release(h2);
    return st;
}

/*
 * This rank's part of the logistic loss softplus(-y z) = max(-y z, 0) +
 * log1p(exp(-|y z|)) (stable for large margins), summed over its points and
 * weighted by `weight` (ranks / all points: the mean over ranks of the parts
 * is the mean over all points, and so is the mean of their gradients); and
 * how many of its points the model gets right.
 */
static tf_status loss_and_correct(tf_session *s, tf_eager *z, tf_eager *y, double weight,
                                  tf_eager **loss, double *correct)
{
    tf_eager *t[9] = {NULL}, *zero = NULL, *w = NULL;
    tf_status st = tf_session_scalar(s, TF_F64, 0.0, &zero);
    if (!st)
        st = tf_session_scalar(s, TF_F64, weight, &w);
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
        st = tf_session_reduce_sum(s, t[7], NULL, 0, &t[8]);
    if (!st)
        st = tf_session_mul(s, t[8], w, loss);
    tf_eager *right = NULL, *as_f64 = NULL, *count = NULL;
    if (!st)
        st = tf_session_compare(s, t[0], zero, TF_COMPARE_GT, &right);
    if (!st)
        st = tf_session_cast(s, right, TF_F64, &as_f64);
    if (!st)
        st = tf_session_reduce_sum(s, as_f64, NULL, 0, &count);
    if (!st)
        st = read_scalar(s, count, correct);
    tf_eager *all[] = {right, as_f64, count, zero, w};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
    for (int i = 0; i < 9; i++)
        tf_eager_release(t[i]);
    return st;
}

/* A training run: the engine, the model, this rank's shard of the points. */
typedef struct demo {
    tf_engine *engine;
    tf_runtime *rt;
    tf_session *s;
    tf_optim *opt;
    tf_dp *dp; /* NULL: one process */
    int rank, size;
    tf_eager *x, *y; /* this rank's points and labels */
    int first_epoch; /* 1, or the epoch after a resumed checkpoint's */
    int reported;    /* the failure was already explained on stderr */
} demo;

/* Rank r's shard: the points k with k % size == r (both classes in every shard). */
static tf_status shard(demo *d)
{
    static double x[2 * N_POINTS], y[N_POINTS];
    double *xs = malloc(2 * N_POINTS * sizeof *xs), *ys = malloc(N_POINTS * sizeof *ys);
    if (!xs || !ys) {
        free(xs);
        free(ys);
        return TF_ERR_OUT_OF_MEMORY;
    }
    make_spirals(x, y);
    int64_t n = 0;
    for (int k = d->rank; k < N_POINTS; k += d->size)
        n++;
    for (int64_t j = 0; j < n; j++) {
        int k = d->rank + (int)j * d->size;
        xs[j] = x[k];
        xs[n + j] = x[N_POINTS + k];
        ys[j] = y[k];
    }
    tf_status st = upload(d->s, 2, (int64_t[]){n, 2}, xs, (size_t)(2 * n), &d->x);
    if (!st)
        st = upload(d->s, 2, (int64_t[]){n, 1}, ys, (size_t)n, &d->y);
    free(xs);
    free(ys);
    return st;
}

/* One epoch: loss, backward, the (data-parallel) step; the loss and accuracy of all points. */
static tf_status epoch(demo *d, double *loss_out, double *acc)
{
    tf_eager *z = NULL, *loss = NULL;
    double correct = 0, lv = 0;
    tf_status st = forward(d->s, d->opt, d->x, &z);
    if (!st)
        st = loss_and_correct(d->s, z, d->y, (double)d->size / N_POINTS, &loss, &correct);
    if (!st)
        st = tf_runtime_clear_grads(d->rt);
    if (!st)
        st = tf_eager_backward(loss, d->engine);
    if (!st)
        st = read_scalar(d->s, loss, &lv);
    if (!st)
        st = d->dp ? tf_dp_step(d->dp, d->opt) : tf_optim_step(d->opt, d->engine);
    if (!st && d->dp)
        st = tf_dp_all_reduce_scalar(d->dp, lv, 1, &lv);
    if (!st && d->dp)
        st = tf_dp_all_reduce_scalar(d->dp, correct, 0, &correct);
    *loss_out = lv;
    *acc = correct / N_POINTS;
    tf_eager_release(loss);
    tf_eager_release(z);
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

static tf_status train(demo *d, const demo_options *o, double *final_acc)
{
    int tty = d->rank == 0 && isatty(fileno(stdout));
    tf_status st = TF_OK;
    for (int e = d->first_epoch; e <= o->epochs && !st; e++) {
        double lv = 0, acc = 0;
        st = epoch(d, &lv, &acc);
        if (!st && d->rank == 0)
            progress(tty, e, o->epochs, lv, acc);
        *final_acc = acc;
    }
    if (tty)
        printf("\n");
    return st;
}

/* ---- checkpoints ---- */

/* --resume: the parameters, Adam's state and the epoch of a checkpoint. */
static tf_status resume(demo *d, const char *path, int epochs)
{
    tf_checkpoint *ck = NULL;
    tf_status st = tf_checkpoint_load(path, d->engine, &ck);
    if (!st)
        st = tf_checkpoint_restore_optim(ck, d->opt, k_names, N_PARAMS);
    const char *e = st ? NULL : tf_checkpoint_meta(ck, "epoch");
    int done = 0;
    if (!st && (!e || tf_cli_parse_int(e, 0, INT32_MAX, &done) != 0)) {
        fprintf(stderr, "tenferro demo: %s has no \"epoch\" metadata of a demo\n", path);
        st = TF_ERR_VALIDATION;
        d->reported = 1;
    } else if (!st && done >= epochs) {
        fprintf(stderr, "tenferro demo: %s has %d epochs done; ask for more with --epochs\n",
                path, done);
        st = TF_ERR_VALIDATION;
        d->reported = 1;
    }
    tf_checkpoint_destroy(ck);
    d->first_epoch = done + 1;
    return st;
}

/* --save: rank 0 writes the parameters, Adam's state and the epoch (every rank has them). */
static tf_status save(const demo *d, const char *path, int epochs)
{
    if (d->rank != 0)
        return TF_OK;
    char text[32];
    snprintf(text, sizeof text, "%d", epochs);
    tf_checkpoint *ck = NULL;
    tf_status st = tf_checkpoint_create(&ck);
    if (!st)
        st = tf_checkpoint_add_optim(ck, d->opt, k_names, N_PARAMS);
    if (!st)
        st = tf_checkpoint_set_meta(ck, "epoch", text);
    if (!st)
        st = tf_checkpoint_set_meta(ck, "model", "tenferro demo: 2-48-48-1 perceptron, spirals");
    if (!st)
        st = tf_checkpoint_save(ck, path);
    tf_checkpoint_destroy(ck);
    return st;
}

/* ---- options and the run ---- */

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
    if (strcmp(a, "--epochs") == 0) { /* the whole word a number, as --threads */
        if (tf_cli_parse_int(v, 1, 1000000, &o->epochs) == 0)
            return 1;
        fprintf(stderr, "tenferro demo: --epochs wants an integer in 1..1000000, got '%s'\n", v);
        return 0;
    }
    if (strcmp(a, "--save") == 0 || strcmp(a, "--resume") == 0) {
        *(a[2] == 's' ? &o->save : &o->resume) = v;
        return 1;
    }
    return 0;
}

static int parse(int argc, char **argv, demo_options *o)
{
    for (int i = 1; i < argc; i += 2) {
        if (!parse_option(argv[i], i + 1 < argc ? argv[i + 1] : NULL, o)) {
            fprintf(stderr, "usage: tenferro demo [--engine NAME] [--threads N] [--epochs N] "
                            "[--save FILE] [--resume FILE]\n");
            return 2;
        }
    }
    return 0;
}

/* Whether this process was started by an MPI launcher (mpirun, srun...). */
static int under_mpi(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

/* Everything before the first epoch: engine, runtime, ranks, shard, model, resume. */
static tf_status setup(demo *d, const demo_options *o)
{
    tf_status st = tf_cli_open_engine(o->engine, o->threads, &d->engine);
    if (!st)
        st = tf_runtime_create(&d->rt);
    if (!st)
        st = tf_session_begin(d->rt, d->engine, &d->s);
    if (!st && under_mpi() && !(st = tf_dp_create(d->rt, d->engine, &d->dp))) {
        d->rank = tf_dp_rank(d->dp);
        d->size = tf_dp_size(d->dp);
    }
    if (!st)
        st = shard(d);
    if (!st)
        st = init_model(d->s, o->lr, &d->opt);
    if (!st && o->resume)
        st = resume(d, o->resume, o->epochs);
    if (!st && d->dp) /* every rank starts from rank 0's parameters */
        st = tf_dp_broadcast_params(d->dp, d->opt);
    return st;
}

static void teardown(demo *d)
{
    tf_eager_release(d->x);
    tf_eager_release(d->y);
    tf_optim_destroy(d->opt);
    tf_dp_destroy(d->dp);
    tf_session_end(d->s);
    tf_runtime_release(d->rt);
    tf_engine_destroy(d->engine);
}

static void report_failure(const demo *d)
{
    const char *msg = tf_train_error_message(), *cause = tf_error_cause();
    if (d->reported)
        return;
    if (d->size > 1)
        fprintf(stderr, "rank %d: ", d->rank);
    if (msg[0])
        fprintf(stderr, "tenferro demo: %s\n", msg);
    else
        fprintf(stderr, "tenferro demo: %s%s%s\n", tf_error_message(), cause[0] ? ": " : "",
                cause);
}

int tf_cli_demo(int argc, char **argv)
{
    demo_options o = {NULL, 0, 300, 0.02, NULL, NULL}; /* engine NULL: the configured one */
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    demo d = {NULL, NULL, NULL, NULL, NULL, 0, 1, NULL, NULL, 1, 0};
    double t0 = now(), acc = 0;
    tf_train_error_clear();
    tf_status st = setup(&d, &o);
    if (!st && d.rank == 0)
        printf("training a %d-%d-%d-1 perceptron on %d points of two spirals, engine '%s'%s\n",
               2, HIDDEN, HIDDEN, N_POINTS, tf_engine_name(d.engine),
               d.size > 1 ? ", data parallel" : "");
    if (!st && d.rank == 0 && d.size > 1)
        printf("%d ranks, %d points each\n", d.size, N_POINTS / d.size);
    if (!st && d.rank == 0 && o.resume)
        printf("resumed from %s after epoch %d\n", o.resume, d.first_epoch - 1);
    if (!st)
        st = train(&d, &o, &acc);
    if (!st && o.save)
        st = save(&d, o.save, o.epochs);
    if (st)
        report_failure(&d);
    else if (d.rank == 0)
        printf("final accuracy %.1f%% after %d epochs in %.2f s\n", 100 * acc, o.epochs,
               now() - t0);
    teardown(&d);
    return st ? 1 : acc >= 0.95 ? 0 : 1;
}
