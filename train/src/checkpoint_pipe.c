/*
 * checkpoint_pipe.c - a checkpoint's file I/O on a second thread, so that
 * the reordering between column-major memory and row-major file bytes
 * (checkpoint_layout.c) overlaps the system calls that move them.
 *
 * The pipe is a ring of CK_PIPE_SLOTS chunk buffers, each a job at an
 * explicit file offset (pwrite, pread: the file position plays no part).
 * Saving, the caller takes the next free buffer, reorders a chunk into it
 * and submits it; the thread writes the submitted chunks in order. Loading,
 * the caller requests chunks ahead, the thread reads them in order, and the
 * caller waits for the oldest and reorders it. One mutex and one condition
 * variable guard the ring; the thread only ever touches a job between its
 * submission and its completion, the caller only outside that window.
 *
 * The first failure stops the thread (later jobs complete unrun) and is
 * kept, as an errno value, or CK_PIPE_EOF for a read that met the end of
 * the file; every later call of the caller sees it.
 *
 * Without a thread (ck_pipe_open with threaded = 0, or pthread_create
 * failing) each job runs inside the call that submits it: the same results,
 * one core.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint_internal.h"

enum { JOB_FREE, JOB_QUEUED, JOB_DONE };

int ck_io_at(int fd, int writing, void *data, size_t n, uint64_t at)
{
    char *p = data;
    while (n) {
        ssize_t k = writing ? pwrite(fd, p, n, (off_t)at) : pread(fd, p, n, (off_t)at);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return errno ? errno : EIO;
        if (k == 0)
            return writing ? EIO : CK_PIPE_EOF;
        p += k;
        n -= (size_t)k;
        at += (uint64_t)k;
    }
    return 0;
}

/* Runs job j (the lock is not held). */
static void run_job(ck_pipe *p, ck_pipe_job *j)
{
    int e = ck_io_at(p->fd, p->writing, j->buf, j->n, j->at);
    pthread_mutex_lock(&p->mu);
    if (e && !p->err)
        p->err = e;
    j->state = JOB_DONE;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void *worker(void *arg)
{
    ck_pipe *p = arg;
    unsigned next = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        ck_pipe_job *j = &p->job[next % p->slots];
        while (j->state != JOB_QUEUED && !p->closing)
            pthread_cond_wait(&p->cv, &p->mu);
        if (j->state != JOB_QUEUED)
            break; /* closing, and nothing left queued */
        if (p->err) { /* after a failure the rest completes unrun */
            j->state = JOB_DONE;
            pthread_cond_broadcast(&p->cv);
        } else {
            pthread_mutex_unlock(&p->mu);
            run_job(p, j);
            pthread_mutex_lock(&p->mu);
        }
        next++;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int ck_pipe_open(ck_pipe *p, int fd, int writing, size_t chunk_bytes, int threaded)
{
    memset(p, 0, sizeof *p);
    p->fd = fd;
    p->writing = writing;
    p->cap = chunk_bytes;
    p->slots = threaded ? CK_PIPE_SLOTS : 1;
    for (unsigned i = 0; i < p->slots; i++) {
        if (!(p->job[i].buf = tt_alloc(chunk_bytes))) {
            for (unsigned k = 0; k < i; k++)
                tt_free(p->job[k].buf);
            return -1;
        }
    }
    if (pthread_mutex_init(&p->mu, NULL) != 0)
        goto no_sync;
    if (pthread_cond_init(&p->cv, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        goto no_sync;
    }
    if (threaded) {
        /* the thread takes no signals: the application's handlers run on its own threads */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        p->threaded = pthread_create(&p->thread, NULL, worker, p) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (!p->threaded) /* one buffer is enough without the thread */
            for (; p->slots > 1; p->slots--)
                tt_free(p->job[p->slots - 1].buf);
    }
    return 0;
no_sync:
    for (unsigned k = 0; k < p->slots; k++)
        tt_free(p->job[k].buf);
    return -1;
}

/* Waits until job j is no longer queued (the lock is held). */
static void wait_done(ck_pipe *p, ck_pipe_job *j)
{
    while (j->state == JOB_QUEUED)
        pthread_cond_wait(&p->cv, &p->mu);
}

/* Takes the slot of the next job, once the job it held is over; NULL after a failure. */
static ck_pipe_job *next_slot(ck_pipe *p)
{
    ck_pipe_job *j = &p->job[p->head % p->slots];
    pthread_mutex_lock(&p->mu);
    wait_done(p, j);
    int failed = p->err != 0;
    pthread_mutex_unlock(&p->mu);
    return failed ? NULL : j;
}

/* Queues job j of n bytes at `at`, or runs it here without a thread. */
static void submit(ck_pipe *p, ck_pipe_job *j, size_t n, uint64_t at)
{
    j->n = n;
    j->at = at;
    p->head++;
    if (!p->threaded) {
        j->state = JOB_QUEUED;
        run_job(p, j);
        return;
    }
    pthread_mutex_lock(&p->mu);
    j->state = JOB_QUEUED;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void *ck_pipe_buffer(ck_pipe *p)
{
    ck_pipe_job *j = next_slot(p);
    return j ? j->buf : NULL;
}

void ck_pipe_submit(ck_pipe *p, size_t n, uint64_t at)
{
    submit(p, &p->job[p->head % p->slots], n, at);
}

int ck_pipe_request(ck_pipe *p, size_t n, uint64_t at)
{
    ck_pipe_job *j;
    if (p->head - p->tail >= p->slots || !(j = next_slot(p)))
        return -1;
    submit(p, j, n, at);
    return 0;
}

const void *ck_pipe_wait(ck_pipe *p)
{
    if (p->tail == p->head)
        return NULL;
    ck_pipe_job *j = &p->job[p->tail++ % p->slots];
    pthread_mutex_lock(&p->mu);
    wait_done(p, j);
    int failed = p->err != 0;
    pthread_mutex_unlock(&p->mu);
    return failed ? NULL : j->buf;
}

int ck_pipe_error(ck_pipe *p)
{
    pthread_mutex_lock(&p->mu);
    int e = p->err;
    pthread_mutex_unlock(&p->mu);
    return e;
}

int ck_pipe_close(ck_pipe *p)
{
    pthread_mutex_lock(&p->mu);
    for (unsigned i = 0; i < p->slots; i++)
        wait_done(p, &p->job[i]);
    p->closing = 1;
    pthread_cond_broadcast(&p->cv);
    int e = p->err;
    pthread_mutex_unlock(&p->mu);
    if (p->threaded)
        pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    for (unsigned i = 0; i < p->slots; i++)
        tt_free(p->job[i].buf);
    return e;
}
