/*
 * lifecycle.c - instance lifecycle, threads and ABI behaviour of the engine
 * under test.
 *
 * Every check verifies results, not just that nothing crashed: a "probe"
 * (the simplest primitive the engine claims: fill, copy or add, else only an
 * upload/download round trip) computes values the kit knows in advance, on
 * each instance, after the other instances worked, from two threads at once.
 * The threads follow engine_abi.h: instances are created and used
 * concurrently from different threads (plugin-level functions and distinct
 * instances may run concurrently), and tensors of an instance are released
 * from another thread while the instance executes (buffer_free is
 * thread-safe).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ---- the probe ---- */

typedef enum probe_kind {
    PROBE_NONE,
    PROBE_FILL,
    PROBE_COPY,
    PROBE_ADD
} probe_kind;

typedef struct probe {
    probe_kind kind;
    tf_dtype dtype;
} probe;

static probe pick_probe(ck_ctx *ctx)
{
    static const tf_dtype order[] = {TF_F32, TF_I32, TF_F64, TF_I64};
    for (int i = 0; i < 4; i++) {
        tf_dtype d[3] = {order[i], order[i], order[i]};
        if (ck_claims(ctx, NULL, order[i], TF_PRIM_BINARY, TF_BINARY_ADD, d, 3) > 0)
            return (probe){PROBE_ADD, order[i]};
        if (ck_claims(ctx, NULL, order[i], TF_PRIM_COPY, 0, d, 2) > 0)
            return (probe){PROBE_COPY, order[i]};
        if (ck_claims(ctx, NULL, order[i], TF_PRIM_FILL, 0, d, 1) > 0)
            return (probe){PROBE_FILL, order[i]};
    }
    return (probe){PROBE_NONE, TF_F32};
}

static const char *probe_name(probe p)
{
    static const char *const names[] = {"upload/download round trip", "fill", "copy", "add"};
    return names[p.kind];
}

#define PROBE_N 1000

/* Element i of the probe's input for `seed`: small integers, exact in every dtype. */
static int64_t probe_value(unsigned seed, int64_t i)
{
    return (int64_t)((seed * 2654435761u + (unsigned)i * 40503u) % 2001u) - 1000;
}

static void put(tf_dtype dt, void *p, int64_t i, int64_t v)
{
    switch (dt) {
    case TF_F32: ((float *)p)[i] = (float)v; break;
    case TF_F64: ((double *)p)[i] = (double)v; break;
    case TF_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    default: ((int64_t *)p)[i] = v; break;
    }
}

static int64_t get(tf_dtype dt, const void *p, int64_t i)
{
    switch (dt) {
    case TF_F32: return (int64_t)((const float *)p)[i];
    case TF_F64: return (int64_t)((const double *)p)[i];
    case TF_I32: return ((const int32_t *)p)[i];
    default: return ((const int64_t *)p)[i];
    }
}

/* A tensor of the engine holding the probe input for seed. */
static tf_status probe_input(tf_engine *e, probe p, unsigned seed, tf_tensor **out)
{
    int64_t n = PROBE_N;
    int64_t buf[PROBE_N];
    for (int64_t i = 0; i < n; i++)
        put(p.dtype, buf, i, probe_value(seed, i));
    tf_tensor *h = NULL;
    tf_status st = tf_tensor_from_host(p.dtype, 1, &n, buf, PROBE_N, &h);
    if (!st)
        st = tf_engine_upload(e, h, out);
    tf_tensor_release(h);
    return st;
}

/* Checks that t (of engine e) holds what the probe computes for seed; message in msg. */
static int probe_verify(tf_engine *e, probe p, unsigned seed, const tf_tensor *t, char *msg,
                        size_t cap)
{
    tf_tensor *h = NULL;
    int64_t buf[PROBE_N];
    tf_status st = tf_engine_download(e, t, &h);
    if (!st)
        st = tf_tensor_copy_to_host(h, p.dtype, buf, PROBE_N);
    tf_tensor_release(h);
    if (st) {
        snprintf(msg, cap, "download failed: %s: %s", tf_status_name(st), ck_error_text());
        return 0;
    }
    for (int64_t i = 0; i < PROBE_N; i++) {
        int64_t x = probe_value(seed, i);
        int64_t want = p.kind == PROBE_FILL  ? (int64_t)seed % 1000
                       : p.kind == PROBE_ADD ? 2 * x
                                             : x;
        int64_t got = get(p.dtype, buf, i);
        if (got != want) {
            snprintf(msg, cap, "%s %s: element %lld is %lld, expected %lld", probe_name(p),
                     tf_dtype_name(p.dtype), (long long)i, (long long)got, (long long)want);
            return 0;
        }
    }
    return 1;
}

/* Runs the probe for seed on e; *out (when non-NULL) keeps the result tensor. */
static int probe_run(tf_engine *e, probe p, unsigned seed, tf_tensor **keep, char *msg, size_t cap)
{
    tf_tensor *x = NULL, *y = NULL;
    int64_t n = PROBE_N;
    tf_status st = TF_OK;
    if (p.kind != PROBE_FILL)
        st = probe_input(e, p, seed, &x);
    if (!st && p.kind != PROBE_NONE)
        st = tf_tensor_empty(e, p.dtype, 1, &n, &y);
    if (!st && p.kind == PROBE_FILL) {
        tf_fill_params fp = {sizeof fp, 0, {(double)(seed % 1000), (int64_t)(seed % 1000)}, 0};
        st = tf_engine_execute(e, TF_PRIM_FILL, &fp, 0, NULL, 1, &y);
    } else if (!st && p.kind == PROBE_COPY) {
        st = tf_engine_execute(e, TF_PRIM_COPY, NULL, 1, &x, 1, &y);
    } else if (!st && p.kind == PROBE_ADD) {
        tf_binary_params bp = {sizeof bp, TF_BINARY_ADD};
        tf_tensor *in[2] = {x, x};
        st = tf_engine_execute(e, TF_PRIM_BINARY, &bp, 2, in, 1, &y);
    }
    int ok;
    if (st) {
        snprintf(msg, cap, "%s %s failed: %s: %s", probe_name(p), tf_dtype_name(p.dtype),
                 tf_status_name(st), ck_error_text());
        ok = 0;
    } else {
        ok = probe_verify(e, p, seed, y ? y : x, msg, cap);
    }
    if (keep && ok) {
        *keep = y ? y : x;
        tf_tensor_retain(*keep);
    }
    tf_tensor_release(x);
    tf_tensor_release(y);
    return ok;
}

/* ---- lifecycle ---- */

static void repeated(ck_ctx *ctx, probe p)
{
    int n = ctx->quick ? 5 : 20;
    long long held = 0; /* host bytes held after the first cycle: later ones must not add */
    for (int i = 0; i < n; i++) {
        tf_engine *e = NULL;
        char msg[512] = "";
        tf_status st = ck_eut_create(ctx, &e);
        if (st) {
            ck_line_add(ctx, CK_SEC_LIFECYCLE, CK_FAIL, "create #%d of %d failed: %s: %s", i + 1, n,
                        tf_status_name(st), ck_error_text());
            return;
        }
        int ok = probe_run(e, p, 100u + (unsigned)i, NULL, msg, sizeof msg);
        tf_engine_destroy(e);
        if (i == 0)
            held = ck_live_bytes();
        if (!ok) {
            ck_line_add(ctx, CK_SEC_LIFECYCLE, CK_FAIL, "instance #%d of %d: %s", i + 1, n, msg);
            return;
        }
    }
    long long grew = ck_live_bytes() - held;
    if (grew > 0)
        ck_line_add(ctx, CK_SEC_LIFECYCLE, CK_FAIL,
                    "host memory held grew by %lld bytes over %d "
                    "create/use/destroy cycles after the first: an instance does not give back "
                    "all it allocates through host->alloc",
                    grew, n - 1);
    else
        ck_line_add(ctx, CK_SEC_LIFECYCLE, CK_PASS,
                    "%d instances created, used (%s) and "
                    "destroyed in turn, no host memory kept",
                    n, probe_name(p));
}

#define N_LIVE 3

static void several(ck_ctx *ctx, probe p)
{
    tf_engine *e[N_LIVE] = {0};
    tf_tensor *kept[N_LIVE] = {0};
    char msg[512] = "";
    int ok = 1;
    for (int i = 0; i < N_LIVE && ok; i++) {
        tf_status st = ck_eut_create(ctx, &e[i]);
        if (st) {
            snprintf(msg, sizeof msg, "create of instance %d failed: %s: %s", i + 1,
                     tf_status_name(st), ck_error_text());
            ok = 0;
        }
    }
    /* each instance computes, then the others do; the first results must survive */
    for (int i = 0; i < N_LIVE && ok; i++)
        ok = probe_run(e[i], p, 200u + (unsigned)i, &kept[i], msg, sizeof msg);
    for (int round = 0; round < 3 && ok; round++)
        for (int i = 0; i < N_LIVE && ok; i++)
            ok = probe_run(e[i], p, 300u + (unsigned)(round * N_LIVE + i), NULL, msg, sizeof msg);
    for (int i = 0; i < N_LIVE && ok; i++)
        if (!probe_verify(e[i], p, 200u + (unsigned)i, kept[i], msg, sizeof msg)) {
            size_t u = strlen(msg);
            snprintf(msg + u, sizeof msg - u, " (instance %d's result, after the others ran)",
                     i + 1);
            ok = 0;
        }
    /* destroying one instance must leave the others intact */
    if (ok) {
        tf_tensor_release(kept[1]);
        kept[1] = NULL;
        tf_engine_destroy(e[1]);
        e[1] = NULL;
        for (int i = 0; i < N_LIVE && ok; i += 2)
            ok = probe_verify(e[i], p, 200u + (unsigned)i, kept[i], msg, sizeof msg) &&
                 probe_run(e[i], p, 400u + (unsigned)i, NULL, msg, sizeof msg);
        if (!ok) {
            size_t u = strlen(msg);
            snprintf(msg + u, sizeof msg - u, " (after instance 2 was destroyed)");
        }
    }
    for (int i = 0; i < N_LIVE; i++) {
        tf_tensor_release(kept[i]);
        tf_engine_destroy(e[i]);
    }
    if (ok)
        ck_line_add(ctx, CK_SEC_LIFECYCLE, CK_PASS,
                    "%d instances alive at once keep independent "
                    "buffers; destroying one leaves the others working",
                    N_LIVE);
    else
        ck_line_add(ctx, CK_SEC_LIFECYCLE, CK_FAIL, "%d instances alive at once: %s", N_LIVE, msg);
}

/* ---- threads ---- */

typedef struct worker {
    ck_ctx *ctx;
    probe p;
    unsigned seed;
    int reps;
    tf_engine *engine; /* NULL: create one's own */
    tf_tensor **to_release;
    int n_release;
    int ok;
    char msg[512];
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    tf_engine *e = w->engine;
    w->ok = 1;
    if (w->to_release) { /* the releasing thread: buffer_free concurrent with execute */
        for (int i = 0; i < w->n_release; i++) {
            tf_tensor_release(w->to_release[i]);
            w->to_release[i] = NULL;
        }
        return NULL;
    }
    if (!e) {
        tf_status st = ck_eut_create(w->ctx, &e);
        if (st) {
            snprintf(w->msg, sizeof w->msg, "create failed: %s: %s", tf_status_name(st),
                     ck_error_text());
            w->ok = 0;
            return NULL;
        }
    }
    for (int i = 0; i < w->reps && w->ok; i++)
        w->ok = probe_run(e, w->p, w->seed + (unsigned)i, NULL, w->msg, sizeof w->msg);
    if (!w->engine)
        tf_engine_destroy(e);
    return NULL;
}

static void two_threads(ck_ctx *ctx, probe p)
{
    int reps = ctx->quick ? 10 : 40;
    worker w[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i] = (worker){.ctx = ctx, .p = p, .seed = 1000u * (unsigned)(i + 1), .reps = reps};
    }
    int started = 0;
    for (int i = 0; i < 2; i++)
        started += pthread_create(&t[i], NULL, work, &w[i]) == 0;
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    if (started < 2)
        ck_line_add(ctx, CK_SEC_LIFECYCLE, CK_NA, "could not start two threads");
    else if (w[0].ok && w[1].ok)
        ck_line_add(ctx, CK_SEC_LIFECYCLE, CK_PASS,
                    "two threads, one instance each, %d %s "
                    "each, results checked",
                    reps, probe_name(p));
    else
        ck_line_add(ctx, CK_SEC_LIFECYCLE, CK_FAIL, "two threads with an instance each: %s",
                    w[0].ok ? w[1].msg : w[0].msg);
}

/* One thread executes on an instance while another releases that instance's tensors. */
static void release_elsewhere(ck_ctx *ctx, probe p)
{
    enum {
        N = 200
    };
    tf_tensor **ts = calloc(N, sizeof *ts);
    tf_engine *e = NULL;
    tf_status st = ts ? ck_eut_create(ctx, &e) : TF_ERR_OUT_OF_MEMORY;
    int64_t n = 64;
    for (int i = 0; i < N && !st; i++)
        st = tf_tensor_empty(e, p.dtype == TF_BOOL ? TF_F32 : p.dtype, 1, &n, &ts[i]);
    if (st) {
        ck_line_add(ctx, CK_SEC_LIFECYCLE, CK_FAIL, "setting up the release thread: %s: %s",
                    tf_status_name(st), ck_error_text());
    } else {
        worker a = {.ctx = ctx, .p = p, .seed = 5000, .reps = ctx->quick ? 10 : 40, .engine = e};
        worker b = {.ctx = ctx, .to_release = ts, .n_release = N};
        pthread_t ta, tb;
        int sa = pthread_create(&ta, NULL, work, &a) == 0;
        int sb = pthread_create(&tb, NULL, work, &b) == 0;
        if (sa)
            pthread_join(ta, NULL);
        if (sb)
            pthread_join(tb, NULL);
        else
            work(&b);
        if (!sa)
            ck_line_add(ctx, CK_SEC_LIFECYCLE, CK_NA, "could not start a thread");
        else if (a.ok)
            ck_line_add(ctx, CK_SEC_LIFECYCLE, CK_PASS,
                        "tensors of an instance released from "
                        "another thread while it executes (%s)",
                        probe_name(p));
        else
            ck_line_add(ctx, CK_SEC_LIFECYCLE, CK_FAIL,
                        "execution while another thread released "
                        "tensors of the instance: %s",
                        a.msg);
    }
    for (int i = 0; ts && i < N; i++)
        tf_tensor_release(ts[i]);
    free(ts);
    tf_engine_destroy(e);
}

/* Check i of the section (a job of isolate.c), on the probe the engine claims. */
void ck_lifecycle_one(ck_ctx *ctx, int i)
{
    probe p = pick_probe(ctx);
    switch (i) {
    case 0: repeated(ctx, p); break;
    case 1: several(ctx, p); break;
    case 2: two_threads(ctx, p); break;
    default: release_elsewhere(ctx, p); break;
    }
}

void ck_run_lifecycle(ck_ctx *ctx)
{
    probe p = pick_probe(ctx);
    char what[4][120];
    snprintf(what[0], sizeof what[0],
             "lifecycle: instances created, used (%s) and destroyed in "
             "turn",
             probe_name(p));
    snprintf(what[1], sizeof what[1], "lifecycle: %d instances alive at once", N_LIVE);
    snprintf(what[2], sizeof what[2], "lifecycle: two threads with an instance each");
    snprintf(what[3], sizeof what[3],
             "lifecycle: tensors released from another thread during "
             "execution");
    ck_iso_group(ctx);
    for (int i = 0; i < 4; i++)
        ck_iso_check(ctx, CK_SEC_LIFECYCLE, ck_lifecycle_one, i, what[i]);
}
