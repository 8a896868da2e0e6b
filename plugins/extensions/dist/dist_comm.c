/*
 * dist_comm.c - the process's MPI connection and the collectives of
 * tenferro.dist, each finished within a time limit.
 *
 * State. MPI is one per process, so this is the module's only state (the
 * extension ABI asks modules for none; a communication library cannot do
 * without): made once, on the first op of the module any runtime calls, and
 * never torn down before the process ends. If MPI is not yet initialised the
 * module initialises it (MPI_THREAD_SERIALIZED) and finalises it at exit;
 * otherwise it uses the application's MPI as it is. Either way it talks on a
 * duplicate of MPI_COMM_WORLD whose errors are returned (MPI_ERRORS_RETURN),
 * not fatal.
 *
 * No hang. Every collective is nonblocking and waited for by polling
 * MPI_Test against a deadline (TENFERRO_DIST_TIMEOUT seconds, default 300):
 * a rank that died or stopped makes the others fail with the typed error
 * `timeout` instead of blocking forever, an MPI error becomes
 * `comm_failure`. Before its data, each collective compares a signature
 * (which collective, dtype, element count, root or reduction) across the
 * ranks with a small MPI_MAX reduction, so that ranks calling different
 * collectives, or one with different shapes, fail with `mismatch` instead of
 * corrupting memory. After a timeout or an MPI error the connection is
 * broken: the collective left pending can never be completed, so every
 * later one fails at once with `broken`, and MPI is not finalised at exit
 * (that would wait for the dead). The process is expected to stop.
 *
 * Collectives are issued under one lock, so that two sessions of one
 * process cannot interleave theirs; every rank must issue the same
 * collectives in the same order (as data-parallel programs do).
 *
 * On Open MPI the module asks libnbc for its ring algorithm for nonblocking
 * all-reduces (through the MPI tools interface, docs/performance.md says
 * why), unless OMPI_MCA_coll_libnbc_iallreduce_algorithm is set.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */

#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist_internal.h"

#define DEFAULT_TIMEOUT 300.0

typedef struct world {
    pthread_once_t once;
    pthread_mutex_t lock; /* one collective at a time */
    int ok, rank, size;
    int ours; /* the module initialised MPI, so it finalises it */
    int yield; /* MPI says the ranks share cores (mpi_yield_when_idle): yield at once */
    double timeout;
    MPI_Comm comm;
    atomic_int broken;
    char why[384]; /* why the connection could not be made */
} world;

static world g_world = {PTHREAD_ONCE_INIT, PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0.0,
                        MPI_COMM_NULL, 0, ""};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void mpi_text(int code, char *out, size_t cap)
{
    char text[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(code, text, &n) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", code);
    snprintf(out, cap, "%s", text);
}

typedef enum wait_result { WAIT_DONE, WAIT_TIMEOUT, WAIT_ERROR } wait_result;

/*
 * Polls *rq until it completes or `timeout` seconds pass. Spins first, for
 * 2 ms (a collective on shared memory or a fast network completes in
 * microseconds to milliseconds, and yielding the core on a busy machine can
 * cost a whole time slice); then yields the core between polls; after 100 ms
 * (a stalled or dead peer) sleeps between them. When MPI says the ranks
 * share cores (mpi_yield_when_idle, set by mpirun --oversubscribe) it yields
 * from the start, so that a waiting rank does not hold the core the rank it
 * waits for needs. On WAIT_ERROR, `why` holds MPI's message.
 */
static wait_result wait_bounded(MPI_Request *rq, double timeout, char *why, size_t cap)
{
    double t0 = now(), spin = g_world.yield ? 0.0 : 0.002;
    for (unsigned long it = 0;; it++) {
        int done = 0, rc = MPI_Test(rq, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            mpi_text(rc, why, cap);
            return WAIT_ERROR;
        }
        if (done)
            return WAIT_DONE;
        if (it % 64 != 63)
            continue;
        double waited = now() - t0;
        if (waited > timeout)
            return WAIT_TIMEOUT;
        if (waited < spin) {
            continue;
        } else if (waited < 0.1) {
            sched_yield();
        } else {
            struct timespec nap = {0, 100000};
            nanosleep(&nap, NULL);
        }
    }
}

/* ---- the connection ---- */

static void finish(void)
{
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized || atomic_load(&g_world.broken))
        return; /* broken: a collective is pending with a dead peer, finalising would wait */
    if (g_world.comm != MPI_COMM_NULL)
        MPI_Comm_free(&g_world.comm);
    MPI_Finalize();
}

/* Reads (or, with write != NULL, writes) an int or bool control variable; 0 if absent. */
static int cvar(const char *name, const int *write)
{
    int index, count, value = 0; /* a bool fills one byte of it */
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(index, NULL, &h, &count) != MPI_SUCCESS)
        return 0;
    if (write)
        MPI_T_cvar_write(h, write);
    else
        MPI_T_cvar_read(h, &value);
    MPI_T_cvar_handle_free(&h);
    return value;
}

/*
 * Through the MPI tools interface (Open MPI's variable names; absent
 * elsewhere): whether ranks share cores, and libnbc's ring all-reduce unless
 * the user chose an algorithm (see the file comment).
 */
static void tune(world *w)
{
    int provided, ring = 1;
    if (MPI_T_init_thread(MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return;
    w->yield = cvar("mpi_yield_when_idle", NULL) != 0;
    if (!getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm"))
        cvar("coll_libnbc_iallreduce_algorithm", &ring);
    MPI_T_finalize();
}

static int read_timeout(double *out)
{
    const char *t = getenv("TENFERRO_DIST_TIMEOUT");
    *out = DEFAULT_TIMEOUT;
    if (!t || !*t)
        return 1;
    char *end = NULL;
    double v = strtod(t, &end);
    if (*end || !(v > 0) || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}

static void init_once(void)
{
    world *w = &g_world;
    if (!read_timeout(&w->timeout)) {
        snprintf(w->why, sizeof w->why,
                 "TENFERRO_DIST_TIMEOUT must be a number of seconds > 0 (got '%.40s')",
                 getenv("TENFERRO_DIST_TIMEOUT"));
        return;
    }
    int inited = 0, finalized = 0, provided = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (finalized) {
        snprintf(w->why, sizeof w->why, "MPI was already finalised");
        return;
    }
    if (!inited) {
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
            snprintf(w->why, sizeof w->why, "MPI_Init_thread failed");
            return;
        }
        w->ours = 1;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        atexit(finish);
    }
    tune(w);
    MPI_Request rq;
    int rc = MPI_Comm_idup(MPI_COMM_WORLD, &w->comm, &rq);
    char text[256] = "";
    wait_result r = rc == MPI_SUCCESS ? wait_bounded(&rq, w->timeout, text, sizeof text) : WAIT_ERROR;
    if (r != WAIT_DONE) {
        if (rc != MPI_SUCCESS)
            mpi_text(rc, text, sizeof text);
        atomic_store(&w->broken, 1);
        snprintf(w->why, sizeof w->why, "making the communicator failed: %s",
                 r == WAIT_TIMEOUT ? "another rank did not join in time" : text);
        return;
    }
    MPI_Comm_set_errhandler(w->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(w->comm, &w->rank);
    MPI_Comm_size(w->comm, &w->size);
    w->ok = 1;
}

tf_status dist_world(const tf_host_api *host, int *rank, int *size)
{
    pthread_once(&g_world.once, init_once);
    if (!g_world.ok) {
        char msg[512];
        snprintf(msg, sizeof msg, "tenferro.dist: MPI is unavailable: %s", g_world.why);
        host->report_error(host->ctx, TF_ERR_BACKEND, msg);
        return TF_ERR_BACKEND;
    }
    *rank = g_world.rank;
    *size = g_world.size;
    return TF_OK;
}

/* ---- typed failures ---- */

static tf_status fail(const tf_ext_kernel_ctx *ctx, const char *kind, const char *detail)
{
    char msg[768];
    snprintf(msg, sizeof msg, "%s (rank %d of %d): %s", ctx->op_name, g_world.rank,
             g_world.size, detail);
    if (TF_ABI_HAS_FIELD(ctx, tf_ext_kernel_ctx, report_kind) && ctx->report_kind)
        return ctx->report_kind(ctx, kind, -1, msg);
    ctx->host->report_error(ctx->host->ctx, TF_ERR_BACKEND, msg); /* an ABI 1.0 host */
    return TF_ERR_BACKEND;
}

/* Waits for rq; a timeout or an error breaks the connection. */
static tf_status finish_request(const tf_ext_kernel_ctx *ctx, MPI_Request *rq, const char *what)
{
    char text[256] = "", detail[512];
    double t0 = now();
    wait_result r = wait_bounded(rq, g_world.timeout, text, sizeof text);
    if (r == WAIT_DONE)
        return TF_OK;
    atomic_store(&g_world.broken, 1);
    if (r == WAIT_TIMEOUT) {
        snprintf(detail, sizeof detail,
                 "%s did not complete within %.3g s (TENFERRO_DIST_TIMEOUT): another rank has "
                 "failed, stopped or is not calling the same collective",
                 what, now() - t0);
        return fail(ctx, "timeout", detail);
    }
    snprintf(detail, sizeof detail, "%s failed: %s", what, text);
    return fail(ctx, "comm_failure", detail);
}

static tf_status posted(const tf_ext_kernel_ctx *ctx, int rc, MPI_Request *rq, const char *what)
{
    if (rc == MPI_SUCCESS)
        return finish_request(ctx, rq, what);
    char text[256], detail[512];
    mpi_text(rc, text, sizeof text);
    atomic_store(&g_world.broken, 1);
    snprintf(detail, sizeof detail, "starting %s failed: %s", what, text);
    return fail(ctx, "comm_failure", detail);
}

/* ---- collectives ---- */

static MPI_Datatype mpi_type(uint32_t dtype)
{
    switch (dtype) {
    case TF_F32: return MPI_FLOAT;
    case TF_F64: return MPI_DOUBLE;
    case TF_I32: return MPI_INT32_T;
    default: return MPI_INT64_T;
    }
}

/* Every rank must be issuing the same collective: compares the signatures. */
static tf_status agree(const tf_ext_kernel_ctx *ctx, dist_kind kind, uint32_t dtype, int64_t arg,
                       int64_t count)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const int64_t words[4] = {kind, dtype, arg, count};
    for (int i = 0; i < 4; i++)
        h = (h ^ (uint64_t)words[i]) * 0x100000001b3ull;
    int64_t mine[2], all[2];
    mine[0] = (int64_t)(h >> 2); /* below 2^62: its negation cannot overflow */
    mine[1] = -mine[0];
    MPI_Request rq;
    int rc = MPI_Iallreduce(mine, all, 2, MPI_INT64_T, MPI_MAX, g_world.comm, &rq);
    tf_status st = posted(ctx, rc, &rq, "the signature exchange before the collective");
    if (st || (all[0] == mine[0] && all[1] == mine[1]))
        return st;
    return fail(ctx, "mismatch",
                "the ranks are not all calling this collective with the same dtype, element "
                "count and root or reduction");
}

static int post(dist_kind kind, MPI_Datatype t, int64_t arg, const void *send, void *recv,
                int count, MPI_Request *rq)
{
    MPI_Comm c = g_world.comm;
    switch (kind) {
    case DIST_ALL_REDUCE: return MPI_Iallreduce(send, recv, count, t, MPI_SUM, c, rq);
    case DIST_BROADCAST: return MPI_Ibcast(recv, count, t, (int)arg, c, rq);
    case DIST_REDUCE:
        return MPI_Ireduce(send, g_world.rank == arg ? recv : NULL, count, t, MPI_SUM, (int)arg,
                           c, rq);
    case DIST_ALL_GATHER: return MPI_Iallgather(send, count, t, recv, count, t, c, rq);
    case DIST_REDUCE_SCATTER:
        return MPI_Ireduce_scatter_block(send, recv, count / g_world.size, t, MPI_SUM, c, rq);
    }
    return MPI_ERR_OP;
}

tf_status dist_collective(const tf_ext_kernel_ctx *ctx, dist_kind kind, uint32_t dtype,
                          int64_t arg, const void *send, void *recv, int64_t count)
{
    int rank = 0, size = 0;
    tf_status st = dist_world(ctx->host, &rank, &size);
    if (st)
        return fail(ctx, "unavailable", g_world.why);
    size_t esize = tf_dtype_size((tf_dtype)dtype);
    pthread_mutex_lock(&g_world.lock);
    if (atomic_load(&g_world.broken))
        st = fail(ctx, "broken",
                  "an earlier collective of this process failed; it can no longer communicate");
    if (!st)
        st = agree(ctx, kind, dtype, arg, count);
    if (!st && kind == DIST_BROADCAST && rank == arg && count)
        memcpy(recv, send, (size_t)count * esize);
    MPI_Request rq;
    if (!st)
        st = posted(ctx, post(kind, mpi_type(dtype), arg, send, recv, (int)count, &rq), &rq,
                    "the collective");
    pthread_mutex_unlock(&g_world.lock);
    if (!st && kind == DIST_REDUCE && rank != arg && count)
        memset(recv, 0, (size_t)count * esize);
    return st;
}
