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
 * Waiting. A worker handed a job (run, or found closed) then spins for the
 * pool's spin time (engine option spin_us) watching for its next job, and only
 * then sleeps on its condition variable; the caller waiting for the workers
 * inside a closed job spins for the same time before it sleeps. A training
 * step is tens of jobs microseconds apart, and on a virtual machine a sleeping
 * thread's wake-up alone can take longer than one of them; a spinning worker
 * starts at once and costs the caller no system call (it signals only
 * sleepers). The spin only polls: the job itself is still read under the
 * mutex, so the order of everything written before a job is the mutex's.
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
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cpu_internal.h"

/* One worker thread: its own condition variable, so that a job wakes only the workers it needs. */
typedef struct cpu_worker {
    cpu_pool *pool;
    pthread_t thread;
    pthread_cond_t wake;
    _Atomic uint64_t job; /* the generation of the last job handed to it (stored under mu) */
    int sleeping;         /* waiting on wake (under mu): only then does a job signal it */
    uint64_t seen;        /* the last job it looked at (its own thread's) */
} cpu_worker;

struct cpu_pool {
    const tf_host_api *host;
    int nworkers;
    int started; /* workers actually running */
    cpu_worker *workers;
    pthread_mutex_t mu;
    pthread_cond_t idle; /* the last worker inside a closed job left it */
    uint64_t generation; /* bumped per job */
    int64_t spin_ns;     /* how long a waiting thread spins before it sleeps */
    _Atomic int stopping;
    int closed;         /* the caller found no task left: late workers skip the job */
    _Atomic int inside; /* workers that entered the current job and have not left it (under mu) */

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

/* One polling step's pause: lets the core's other hardware thread (and the hypervisor) in. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int64_t monotonic_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/*
 * Polls done(arg) for up to the pool's spin time; whether it came true. Every 64
 * polls (about a microsecond) it yields the core, so that on a busy machine a
 * runnable thread (the caller's own, say) is not kept waiting by the spin; on a
 * quiet one the yield returns at once.
 */
static int pool_spin(const cpu_pool *p, int (*done)(const void *), const void *arg)
{
    if (p->spin_ns <= 0) {
        return 0;
    }
    int64_t t0 = monotonic_ns();
    for (unsigned i = 1;; i++) {
        if (done(arg)) {
            return 1;
        }
        cpu_relax();
        if ((i & 63) == 0) {
            sched_yield();
            if (monotonic_ns() - t0 >= p->spin_ns) {
                return done(arg);
            }
        }
    }
}

/* A worker's wait is over: a job for it, or the pool stopping. */
static int worker_called(const void *arg)
{
    const cpu_worker *w = arg;
    return atomic_load_explicit(&w->job, memory_order_relaxed) != w->seen ||
           atomic_load_explicit(&w->pool->stopping, memory_order_relaxed);
}

static void *pool_worker(void *arg)
{
    cpu_worker *w = arg;
    cpu_pool *p = w->pool;

    int handed = 0; /* a new worker sleeps at once; one handed a job spins before it sleeps */
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (handed && !p->stopping && w->job == w->seen) {
            pthread_mutex_unlock(&p->mu);
            pool_spin(p, worker_called, w);
            pthread_mutex_lock(&p->mu);
        }
        while (!p->stopping && w->job == w->seen) {
            w->sleeping = 1;
            pthread_cond_wait(&w->wake, &p->mu);
            w->sleeping = 0;
        }
        if (p->stopping) {
            break;
        }
        w->seen = w->job;
        handed = 1;
        if (w->seen != p->generation || p->closed) {
            continue; /* too late: the caller closed the job without us */
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
    w->seen = 0;
    w->sleeping = 0;
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

tf_status tf__cpu_pool_create(const tf_host_api *host, int nworkers, int64_t spin_ns,
                              cpu_pool **out, cpu_err *err)
{
    cpu_pool *p = pool_alloc(host, nworkers);
    if (p == NULL) {
        tf__cpu_fail(err, TF_ERR_OUT_OF_MEMORY,
                     "cpu: create: cannot allocate the thread pool of %d workers", nworkers);
        return TF_ERR_OUT_OF_MEMORY;
    }
    p->spin_ns = spin_ns;
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

/* The caller's wait is over: every worker that entered the closed job has left it. */
static int none_inside(const void *arg)
{
    const cpu_pool *p = arg;
    return atomic_load_explicit(&p->inside, memory_order_relaxed) == 0;
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
        cpu_worker *w = &p->workers[i];
        atomic_store_explicit(&w->job, p->generation, memory_order_relaxed);
        if (w->sleeping) {
            pthread_cond_signal(&w->wake);
        }
    }
    pthread_mutex_unlock(&p->mu);

    pool_work(p);

    pthread_mutex_lock(&p->mu);
    p->closed = 1;
    if (p->inside > 0) {
        pthread_mutex_unlock(&p->mu);
        pool_spin(p, none_inside, p);
        pthread_mutex_lock(&p->mu);
    }
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
