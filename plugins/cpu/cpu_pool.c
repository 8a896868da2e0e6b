/*
 * cpu_pool.c - the worker threads of a threaded CPU engine.
 *
 * A pool holds N-1 workers; the thread that calls into the engine is the
 * N-th and takes part in every job. A job is a number of tasks handed out
 * through an atomic counter; it wakes only as many workers as it has tasks
 * beyond the caller's first. When the caller finds no task left it closes
 * the job: a woken worker that had not yet entered it (the scheduler may take
 * tens of microseconds to run it) then skips it, and the caller waits only
 * for the workers inside, until they leave. So a job's context can live on
 * the caller's stack, the next job cannot be mixed up with a late worker of
 * the previous one, and a small job whose workers wake late costs what the
 * caller alone takes, never the workers' wake-up on top.
 *
 * Failures: a failing task records its cpu_err under the lock, and the error
 * kept is the one of the lowest task number, i.e. the one a serial walk would
 * have met first. Tasks numbered above a known failure are skipped. The
 * caller (never a worker) reports the error to the host.
 *
 * Only engines with threads > 1 create a pool; a serial engine creates no
 * thread at all. destroy joins every worker.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "cpu_internal.h"

/* One worker thread: its own condition variable, so that a job wakes only the workers it needs. */
typedef struct cpu_worker {
    cpu_pool *pool;
    pthread_t thread;
    pthread_cond_t wake;
    uint64_t job; /* the generation of the last job handed to this worker */
} cpu_worker;

struct cpu_pool {
    const tf_host_api *host;
    int nworkers;
    int started; /* workers actually running */
    cpu_worker *workers;
    pthread_mutex_t mu;
    pthread_cond_t idle; /* the last worker inside a closed job left it */
    uint64_t generation; /* bumped per job */
    int stopping;
    int closed;  /* the caller found no task left: late workers skip the job */
    int inside;  /* workers that entered the current job and have not left it */

    /* The current job; written under mu before the workers are woken. */
    cpu_task_fn fn;
    const void *ctx;
    int64_t ntasks;
    _Atomic int64_t next;
    _Atomic int64_t first_failed; /* lowest failed task, ntasks if none */
    cpu_err err;                  /* the error of first_failed (under mu) */
};

static void pool_record_failure(cpu_pool *p, int64_t task, const cpu_err *err)
{
    pthread_mutex_lock(&p->mu);
    if (task < atomic_load(&p->first_failed)) {
        atomic_store(&p->first_failed, task);
        p->err = *err;
    }
    pthread_mutex_unlock(&p->mu);
}

/* Takes tasks of the current job until none is left. */
static void pool_work(cpu_pool *p)
{
    for (;;) {
        int64_t task = atomic_fetch_add(&p->next, 1);
        if (task >= p->ntasks) {
            return;
        }
        if (task > atomic_load(&p->first_failed)) {
            continue; /* an earlier task failed: the result is discarded anyway */
        }
        cpu_err err;
        err.status = TF_OK;
        err.msg[0] = '\0';
        if (p->fn(p->ctx, task, &err) != 0) {
            pool_record_failure(p, task, &err);
        }
    }
}

static void *pool_worker(void *arg)
{
    cpu_worker *w = arg;
    cpu_pool *p = w->pool;
    uint64_t seen = 0;

    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stopping && w->job == seen) {
            pthread_cond_wait(&w->wake, &p->mu);
        }
        if (p->stopping) {
            break;
        }
        seen = w->job;
        if (seen != p->generation || p->closed) {
            continue; /* woken too late: the caller closed the job without us */
        }
        p->inside++;
        pthread_mutex_unlock(&p->mu);
        pool_work(p);
        pthread_mutex_lock(&p->mu);
        if (--p->inside == 0 && p->closed) {
            pthread_cond_signal(&p->idle);
        }
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Stops and joins the workers that were started, then frees everything. */
static void pool_free(cpu_pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    for (int i = 0; i < p->started; i++) {
        pthread_cond_signal(&p->workers[i].wake);
    }
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++) {
        pthread_join(p->workers[i].thread, NULL);
        pthread_cond_destroy(&p->workers[i].wake);
    }
    pthread_cond_destroy(&p->idle);
    pthread_mutex_destroy(&p->mu);
    p->host->free(p->host->ctx, p->workers);
    p->host->free(p->host->ctx, p);
}

/* Allocates the pool and its synchronisation; no thread yet. */
static cpu_pool *pool_alloc(const tf_host_api *host, int nworkers)
{
    cpu_pool *p = host->alloc(host->ctx, sizeof(*p), 0);
    if (p == NULL) {
        return NULL;
    }
    memset(p, 0, sizeof(*p));
    p->host = host;
    p->nworkers = nworkers;
    p->workers = host->alloc(host->ctx, sizeof(cpu_worker) * (size_t)nworkers, 0);
    if (p->workers == NULL || pthread_mutex_init(&p->mu, NULL) != 0) {
        host->free(host->ctx, p->workers);
        host->free(host->ctx, p);
        return NULL;
    }
    if (pthread_cond_init(&p->idle, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        host->free(host->ctx, p->workers);
        host->free(host->ctx, p);
        return NULL;
    }
    return p;
}

/* Starts worker i; 0 on success, else the pthread error. */
static int pool_start(cpu_pool *p, int i)
{
    cpu_worker *w = &p->workers[i];
    w->pool = p;
    w->job = 0;
    int rc = pthread_cond_init(&w->wake, NULL);
    if (rc != 0) {
        return rc;
    }
    rc = pthread_create(&w->thread, NULL, pool_worker, w);
    if (rc != 0) {
        pthread_cond_destroy(&w->wake);
        return rc;
    }
    p->started = i + 1;
    return 0;
}

tf_status tf__cpu_pool_create(const tf_host_api *host, int nworkers, cpu_pool **out, cpu_err *err)
{
    cpu_pool *p = pool_alloc(host, nworkers);
    if (p == NULL) {
        tf__cpu_fail(err, TF_ERR_OUT_OF_MEMORY,
                     "cpu: create: cannot allocate the thread pool of %d workers", nworkers);
        return TF_ERR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < nworkers; i++) {
        int rc = pool_start(p, i);
        if (rc != 0) {
            pool_free(p);
            tf__cpu_fail(err, TF_ERR_BACKEND,
                         "cpu: create: cannot start worker thread %d of %d: %s", i + 1, nworkers,
                         strerror(rc));
            return TF_ERR_BACKEND;
        }
    }
    *out = p;
    return TF_OK;
}

void tf__cpu_pool_destroy(cpu_pool *pool)
{
    if (pool != NULL) {
        pool_free(pool);
    }
}

int tf__cpu_pool_run(cpu_pool *p, int64_t ntasks, cpu_task_fn fn, const void *ctx, cpu_err *err)
{
    /* The calling thread takes tasks too: wake at most ntasks - 1 workers. */
    int wake = ntasks - 1 < p->nworkers ? (int)(ntasks - 1) : p->nworkers;
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->ntasks = ntasks;
    atomic_store(&p->next, 0);
    atomic_store(&p->first_failed, ntasks);
    p->generation++;
    p->closed = 0;
    p->inside = 0;
    for (int i = 0; i < wake; i++) {
        p->workers[i].job = p->generation;
        pthread_cond_signal(&p->workers[i].wake);
    }
    pthread_mutex_unlock(&p->mu);

    pool_work(p);

    pthread_mutex_lock(&p->mu);
    p->closed = 1;
    while (p->inside > 0) {
        pthread_cond_wait(&p->idle, &p->mu);
    }
    int failed = atomic_load(&p->first_failed) < ntasks;
    if (failed) {
        *err = p->err;
    }
    pthread_mutex_unlock(&p->mu);
    return failed;
}

/* ---- parallel_for: a range split into contiguous pieces, one task each ---- */

typedef struct pfor_job {
    cpu_range_fn fn;
    const void *ctx;
    int64_t total;
    int64_t pieces;
} pfor_job;

static int pfor_task(const void *ctx, int64_t task, cpu_err *err)
{
    const pfor_job *job = ctx;
    int64_t q = job->total / job->pieces;
    int64_t r = job->total % job->pieces;
    int64_t begin = task * q + (task < r ? task : r);
    int64_t end = begin + q + (task < r ? 1 : 0);
    return job->fn(job->ctx, begin, end, err);
}

int tf__cpu_parallel_for(const cpu_engine *e, int64_t total, int64_t grain, cpu_range_fn fn,
                         const void *ctx, cpu_err *err)
{
    if (grain < 1) {
        grain = 1;
    }
    int64_t pieces = total / grain;
    if (pieces > e->threads) {
        pieces = e->threads;
    }
    if (e->pool == NULL || pieces < 2) {
        return total > 0 ? fn(ctx, 0, total, err) : 0;
    }
    pfor_job job = {fn, ctx, total, pieces};
    return tf__cpu_pool_run(e->pool, pieces, pfor_task, &job, err);
}
