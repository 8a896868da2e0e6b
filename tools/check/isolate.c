/*
 * isolate.c - the kit's worker processes, as its own process (the parent)
 * runs them: every case of the table and every check of the other sections
 * runs in one, so that an engine that crashes, aborts or hangs costs one
 * failed cell or line, named, and the run goes on.
 *
 * The parent generates the cases; what the engine claims it learns from the
 * probe worker (probe.c), so no call into the engine under test is made in
 * the parent. Each case it has to run becomes a job, sent to a worker (the
 * same command started again, spawn; worker.c is its side): the worker
 * loads the plugins, creates its own instances of the engine and of the
 * reference, runs jobs one after another and sends back, per job, what it
 * recorded (the cell, failure lines, section lines, counters) and, as it
 * goes, what it is doing (ck_doing). A group (a table row, a section) gets a
 * fresh worker. When a worker dies or gives no answer within the per-check
 * timeout, the parent kills it and blames the job it was running; a crash is
 * first rerun alone in a fresh worker, so that damage done by earlier jobs
 * of the same process (heap corruption) is blamed on them, not on the one
 * that met it: when the job passes alone, the earlier jobs of its worker
 * are narrowed down (delta debugging, each trial in a fresh worker) to a
 * smallest set of them after which it dies again, and each of that set
 * fails. The guarded allocator (hooks.c) catches most such damage at the
 * job that did it. With --no-fork (ctx->isolate 0) jobs run in the parent
 * itself.
 */
#define _POSIX_C_SOURCE 200809L /* fork, kill, poll, clock_gettime */

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wire.h"

/* Where a job's outcome goes, and what it was doing when it last said. */
typedef struct target {
    int kind;
    int row, col;           /* JOB_CASE */
    int section;            /* JOB_CHECK */
    char what[200];         /* JOB_CHECK: the check's name */
    char doing[768];        /* the job's last ck_doing text */
    char step[CK_STEP_LEN]; /* and the step of it that ran last ("" for none) */
} target;

typedef struct history_item {
    wbuf req;
    target t;
} history_item;

struct ck_iso {
    ck_proc w;             /* the current worker of the group */
    history_item *history; /* the jobs the current worker finished, for blaming */
    int n_history, cap_history;
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static struct ck_iso *iso_of(ck_ctx *ctx)
{
    if (!ctx->iso) {
        ctx->iso = calloc(1, sizeof *ctx->iso);
        if (!ctx->iso)
            ctx->oom = 1;
    }
    return ctx->iso;
}

static void history_clear(struct ck_iso *iso)
{
    for (int i = 0; i < iso->n_history; i++)
        free(iso->history[i].req.p);
    iso->n_history = 0;
}

static void history_push(ck_ctx *ctx, struct ck_iso *iso, const wbuf *req, const target *t)
{
    if (!ck_grow(ctx, &iso->history, &iso->cap_history, iso->n_history, sizeof(history_item)))
        return;
    history_item *h = &iso->history[iso->n_history];
    h->req = (wbuf){malloc(req->n), req->n, req->n, 0};
    if (!h->req.p) {
        ctx->oom = 1;
        return;
    }
    memcpy(h->req.p, req->p, req->n);
    h->t = *t;
    iso->n_history++;
}

void ck_proc_stop(ck_proc *p)
{
    if (!p->pid)
        return;
    close(p->req_fd);
    close(p->rep_fd);
    kill(p->pid, SIGKILL);
    while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    p->pid = 0;
}

/*
 * A worker is this program run again (fork, then exec of /proc/self/exe) as
 * `tenferro check-engine --worker R,W ARGS...`: it loads the plugins itself,
 * so it inherits no thread, lock or device state of the parent (and the
 * parent never loads the engine under test at all).
 */
static int spawn(ck_ctx *ctx, ck_proc *w)
{
    char self[4096], fds[32];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return -1;
    self[len] = '\0';
    int req[2], rep[2];
    if (pipe(req) != 0)
        return -1;
    if (pipe(rep) != 0) {
        close(req[0]);
        close(req[1]);
        return -1;
    }
    snprintf(fds, sizeof fds, "%d,%d", req[0], rep[1]);
    char **argv = calloc((size_t)ctx->argc + 4, sizeof *argv);
    if (!argv) {
        close(req[0]), close(req[1]), close(rep[0]), close(rep[1]);
        return -1;
    }
    argv[0] = self;
    argv[1] = "check-engine";
    argv[2] = "--worker";
    argv[3] = fds;
    for (int i = 1; i < ctx->argc; i++) /* ctx->argv[0] is "check-engine" */
        argv[3 + i] = ctx->argv[i];
    fflush(NULL); /* nothing buffered may be written twice */
    pid_t pid = fork();
    if (pid == 0) { /* only async-signal-safe calls until exec */
        close(req[1]);
        close(rep[0]);
        dup2(STDERR_FILENO, STDOUT_FILENO); /* what an engine prints never mixes into the report */
        execv(self, argv);
        _exit(127);
    }
    free(argv);
    close(req[0]);
    close(rep[1]);
    if (pid < 0) {
        close(req[1]);
        close(rep[0]);
        return -1;
    }
    w->pid = pid;
    w->req_fd = req[1];
    w->rep_fd = rep[0];
    return 0;
}

/* Reads n bytes before `deadline`: 0, or -1 at end of file or an error, -2 past the deadline. */
static int read_until(int fd, void *p, size_t n, double deadline)
{
    unsigned char *b = p;
    while (n) {
        double left = deadline - now_s();
        if (left <= 0)
            return -2;
        struct pollfd pf = {fd, POLLIN, 0};
        int r = poll(&pf, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            continue; /* the deadline decides */
        ssize_t got = r < 0 ? -1 : read(fd, b, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        b += got;
        n -= (size_t)got;
    }
    return 0;
}

/* Adds a finished job's record to the context (malformed: a failure). */
static void apply(ck_ctx *ctx, const ck_outcome *o, const target *t)
{
    if (!ck_wire_apply(ctx, o->result, o->n_result, t->kind, t->row, t->col))
        ck_failure(ctx, "the kit could not read what a worker process sent about: %s", t->doing);
}

/* Waits for the worker that died or hung, and says how it ended. */
static void reap(ck_proc *w, int timed_out, ck_fate *f)
{
    memset(f, 0, sizeof *f);
    f->timed_out = timed_out;
    if (timed_out)
        kill(w->pid, SIGKILL);
    int status = 0;
    while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!timed_out && WIFSIGNALED(status))
        f->signal = WTERMSIG(status);
    else if (!timed_out && WIFEXITED(status))
        f->exit_status = WEXITSTATUS(status);
    close(w->req_fd);
    close(w->rep_fd);
    w->pid = 0;
}

ck_outcome ck_proc_run(ck_ctx *ctx, ck_proc *w, const wbuf *req, char *doing, size_t cap,
                       char *step)
{
    ck_outcome o = {0};
    signal(SIGPIPE, SIG_IGN); /* a dead worker's pipe is an error, not a signal */
    if (!w->pid && spawn(ctx, w) != 0) {
        o.fate.exit_status = -1; /* no process: said as such */
        return o;
    }
    uint32_t n = (uint32_t)req->n;
    double deadline = now_s() + ctx->case_timeout;
    /* A worker that died before reading the job (in its setup) still said what it was
       doing: its records are read up to the end of the pipe all the same. */
    int sent = ck_write_full(w->req_fd, &n, sizeof n) == 0 &&
               ck_write_full(w->req_fd, req->p, req->n) == 0;
    for (;;) {
        uint32_t hdr[2];
        int got = read_until(w->rep_fd, hdr, sizeof hdr, deadline);
        unsigned char *p = got ? NULL : malloc(hdr[1] ? hdr[1] : 1);
        if (!got && !p)
            got = -1;
        if (!got)
            got = read_until(w->rep_fd, p, hdr[1], deadline);
        if (got) {
            free(p);
            reap(w, got == -2, &o.fate);
            return o;
        }
        if (hdr[0] == REC_DOING || hdr[0] == REC_STEP || !sent) {
            if (hdr[0] == REC_DOING)
                snprintf(doing, cap, "%.*s", (int)hdr[1], (const char *)p);
            if (hdr[0] == REC_DOING && step)
                step[0] = '\0';
            if (hdr[0] == REC_STEP && step)
                snprintf(step, CK_STEP_LEN, "%.*s", (int)hdr[1], (const char *)p);
            free(p);
            continue;
        }
        o.done = 1;
        o.result = p;
        o.n_result = hdr[1];
        return o;
    }
}

/* Runs one job on the group's worker; t->doing follows it. */
static ck_outcome run_on_worker(ck_ctx *ctx, struct ck_iso *iso, const wbuf *req, target *t)
{
    return ck_proc_run(ctx, &iso->w, req, t->doing, sizeof t->doing, t->step);
}

const char *ck_signal_name(int sig)
{
    static char other[32];
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    default: snprintf(other, sizeof other, "signal %d", sig); return other;
    }
}

void ck_fate_text(const ck_ctx *ctx, const ck_fate *f, char *buf, size_t cap)
{
    if (f->timed_out)
        snprintf(buf, cap, "gave no answer within %u s (--case-timeout)", ctx->case_timeout);
    else if (f->signal == SIGABRT)
        snprintf(buf, cap, "aborted (SIGABRT)");
    else if (f->signal)
        snprintf(buf, cap, "crashed (%s)", ck_signal_name(f->signal));
    else if (f->exit_status < 0)
        snprintf(buf, cap, "could not be checked: no worker process could start");
    else
        snprintf(buf, cap, "ended the process (exit status %d)", f->exit_status);
}

/* The job of t died that way: its cell (or line) says so, with the step it died in. */
static void record_death(ck_ctx *ctx, const target *t, const ck_fate *f)
{
    char fate[128], step[CK_STEP_LEN + 4] = "";
    ck_fate_text(ctx, f, fate, sizeof fate);
    if (t->step[0])
        snprintf(step, sizeof step, " (%s)", t->step);
    if (t->kind == JOB_CASE) {
        ck_row *row = &ctx->rows[t->row];
        ck_cell *cell = &row->cell[t->col];
        cell->state = CK_CRASH;
        cell->fate = *f;
        cell->cases++;
        ck_failure(ctx, "%s (%s): the engine %s while: %s%s", row->name,
                   tf_dtype_name((tf_dtype)t->col), fate, t->doing, step);
    } else {
        ck_line_add(ctx, (ck_section)t->section, CK_CRASH, "%s: the engine %s while: %s%s", t->what,
                    fate, t->doing, step);
    }
}

/* Job c (`culprit`) left the process so that a later one, which passes alone, died. */
static void record_culprit(ck_ctx *ctx, const target *c, const target *later, const ck_fate *f)
{
    char fate[128];
    ck_fate_text(ctx, f, fate, sizeof fate);
    if (c->kind == JOB_CASE) {
        ck_row *row = &ctx->rows[c->row];
        ck_cell *cell = &row->cell[c->col];
        if (cell->state < CK_FAIL)
            cell->damaged = 1;
        if (cell->state < CK_FAIL)
            cell->state = CK_FAIL;
        ck_failure(ctx,
                   "%s (%s): after this case the engine %s in a later one that passes on its own "
                   "(%s): this case damaged the process [%s]",
                   row->name, tf_dtype_name((tf_dtype)c->col), fate, later->doing, c->doing);
    } else {
        ck_line_add(ctx, (ck_section)c->section, CK_FAIL,
                    "%s: after this check the engine %s in a later one that passes on its own "
                    "(%s): this check damaged the process",
                    c->what, fate, later->doing);
    }
}

/* The most fresh workers one culprit search starts (each trial is one). */
#define CK_MAX_TRIALS 64

/* A culprit search: the job that died after earlier ones, and the trials so far. */
typedef struct search {
    ck_ctx *ctx;
    struct ck_iso *iso;
    const wbuf *req;
    const target *t;
    ck_fate fate; /* how the job died in the last trial that brought the death back */
    int trials;
    int cut; /* it stopped before the set was 1-minimal */
} search;

/* Whether the search must stop: its trials ran out, or the whole run's --timeout passed. */
static int search_over(const search *s)
{
    return s->trials >= CK_MAX_TRIALS || (s->ctx->deadline > 0 && now_s() > s->ctx->deadline);
}

/* Runs the earlier jobs set[0..n) (history indices, in order), then the job, in a fresh
   worker: 1 when the job died there (an earlier one dying does not count). */
static int reproduces(search *s, const int *set, int n)
{
    s->trials++;
    ck_outcome o = {.done = 1};
    for (int i = 0; i < n && o.done; i++) {
        history_item *h = &s->iso->history[set[i]];
        target ht = h->t;
        o = run_on_worker(s->ctx, s->iso, &h->req, &ht);
        free(o.result);
    }
    int died = 0;
    if (o.done) {
        target scratch = *s->t;
        o = run_on_worker(s->ctx, s->iso, s->req, &scratch);
        free(o.result);
        died = !o.done && o.fate.exit_status >= 0; /* -1: no worker could start */
        if (died)
            s->fate = o.fate;
    }
    ck_proc_stop(&s->iso->w);
    return died;
}

/* Part c of set[0..n) cut in `parts` (with `complement`: all but it), in order, into out;
   its length. */
static int take(const int *set, int n, int parts, int c, int complement, int *out)
{
    int lo = (int)((long)n * c / parts), hi = (int)((long)n * (c + 1) / parts), m = 0;
    for (int i = 0; i < n; i++)
        if ((i >= lo && i < hi) != complement)
            out[m++] = set[i];
    return m;
}

/* Tries each part of set[0..*n) alone, then (more than two parts) each complement; the
   first that brings the death back replaces the set. 1 when one did, *parts adjusted; 0
   when none did; -1 when the search had to stop before trying them all. */
static int reduce_once(search *s, int *set, int *n, int *parts, int *trial)
{
    for (int complement = 0; complement < 2; complement++) {
        if (complement && *parts == 2)
            break; /* the complements of two halves are the halves */
        for (int c = 0; c < *parts; c++) {
            int m = take(set, *n, *parts, c, complement, trial);
            if (search_over(s))
                return -1;
            if (m == 0 || m == *n || !reproduces(s, trial, m))
                continue;
            memcpy(set, trial, (size_t)m * sizeof *set);
            *n = m;
            *parts = complement && *parts > 3 ? *parts - 1 : 2;
            return 1;
        }
    }
    return 0;
}

/*
 * Narrows set[0..*n) (the job dies after it) to a smallest set after which it still
 * dies: delta debugging, every trial in a fresh worker. The result cannot lose any one
 * item (1-minimal) unless the search stopped first (search_over). 0 when out of memory.
 */
static int minimize(search *s, int *set, int *n)
{
    int *trial = malloc((size_t)*n * sizeof *trial), parts = 2;
    if (!trial)
        return 0;
    while (*n >= 2) {
        int r = reduce_once(s, set, n, &parts, trial);
        if (r > 0)
            continue;
        if (r < 0) {
            s->cut = 1;
            break;
        }
        if (parts >= *n)
            break; /* no part and no complement of single items brings it back */
        parts = 2 * parts < *n ? 2 * parts : *n;
    }
    free(trial);
    return 1;
}

/* The jobs set[0..n) (n >= 2) together left the process so that a later one, which
   passes alone, died: each of them fails, naming the others. */
static void record_culprits(ck_ctx *ctx, const int *set, int n, const target *later,
                            const search *s)
{
    char fate[128];
    ck_fate_text(ctx, &s->fate, fate, sizeof fate);
    const char *cut = s->cut ? " (the search stopped early, its trials or --timeout "
                               "run out: perhaps not all of them are needed)"
                             : "; none of them can be left out";
    for (int i = 0; i < n; i++) {
        const target *c = &ctx->iso->history[set[i]].t;
        char others[2048] = "";
        for (int k = 0, u = 0; k < n && u < (int)sizeof others; k++)
            if (k != i)
                u += snprintf(others + u, sizeof others - (size_t)u, "%s%s", u ? "; " : "",
                              ctx->iso->history[set[k]].t.doing);
        if (c->kind == JOB_CASE) {
            ck_row *row = &ctx->rows[c->row];
            ck_cell *cell = &row->cell[c->col];
            if (cell->state < CK_FAIL) {
                cell->damaged = 1;
                cell->state = CK_FAIL;
            }
            ck_failure(ctx,
                       "%s (%s): after this case and %d more in the same process (%s), the "
                       "engine %s in a later one that passes on its own (%s): together they "
                       "damaged the process%s [%s]",
                       row->name, tf_dtype_name((tf_dtype)c->col), n - 1, others, fate,
                       later->doing, cut, c->doing);
        } else {
            ck_line_add(ctx, (ck_section)c->section, CK_FAIL,
                        "%s: after this check and %d more in the same process (%s), the engine "
                        "%s in a later one that passes on its own (%s): together they damaged "
                        "the process%s",
                        c->what, n - 1, others, fate, later->doing, cut);
        }
    }
}

/*
 * The job of t died in a worker that had run earlier jobs. Rerun alone, it
 * dies again (its own fault) or passes: then the smallest set of earlier
 * jobs after which it dies again is to blame, and the lone run's result is
 * the job's.
 */
static void blame(ck_ctx *ctx, struct ck_iso *iso, const wbuf *req, target *t, const ck_fate *f)
{
    ck_outcome alone = run_on_worker(ctx, iso, req, t);
    if (!alone.done) {
        record_death(ctx, t, &alone.fate);
        return;
    }
    apply(ctx, &alone, t);
    free(alone.result);
    ck_proc_stop(&iso->w);
    search s = {ctx, iso, req, t, *f, 0, 0};
    int n = iso->n_history, *set = malloc((size_t)n * sizeof *set);
    for (int i = 0; set && i < n; i++)
        set[i] = i;
    if (!set || !reproduces(&s, set, n) || !minimize(&s, set, &n)) {
        char fate[128];
        ck_fate_text(ctx, f, fate, sizeof fate);
        ck_failure(ctx,
                   "the engine %s while: %s, after earlier checks in the same process; alone it "
                   "passes, and %s",
                   fate, t->doing,
                   set ? "the same earlier checks in a fresh process do not bring the crash back"
                       : "the kit ran out of memory searching for the culprit");
    } else if (n == 1) {
        record_culprit(ctx, &iso->history[set[0]].t, t, &s.fate);
    } else {
        record_culprits(ctx, set, n, t, &s);
    }
    free(set);
}

/* Runs a job in a worker (or here, with --no-fork) and records its outcome. */
static void dispatch(ck_ctx *ctx, const job *here, const wbuf *req, target *t)
{
    if (ctx->stopped)
        return;
    if (ctx->deadline > 0 && now_s() > ctx->deadline) {
        ctx->stopped = 1;
        ck_failure(ctx,
                   "--timeout: the time for the whole run is up; the checks from %s on did "
                   "not run",
                   t->doing);
        return;
    }
    struct ck_iso *iso = ctx->isolate ? iso_of(ctx) : NULL;
    if (!iso || req->oom) {
        ck_job_exec(ctx, here);
        return;
    }
    ck_outcome o = run_on_worker(ctx, iso, req, t);
    if (o.done) {
        apply(ctx, &o, t);
        free(o.result);
        history_push(ctx, iso, req, t);
        return;
    }
    if (o.fate.signal || (!o.fate.timed_out && o.fate.exit_status > 0))
        if (iso->n_history > 0) {
            blame(ctx, iso, req, t, &o.fate);
            ck_proc_stop(&iso->w);
            history_clear(iso);
            return;
        }
    record_death(ctx, t, &o.fate);
    history_clear(iso);
}

void ck_iso_case(ck_ctx *ctx, ck_row *row, tf_dtype col, const ck_case *c, int claimed)
{
    job here = {.kind = JOB_CASE,
                .row = (int)(row - ctx->rows),
                .col = (int)col,
                .claimed = claimed,
                .cell = row->cell[col],
                .c = *c};
    target t = {.kind = JOB_CASE, .row = here.row, .col = here.col};
    snprintf(t.doing, sizeof t.doing, "%s (%s)", row->name, tf_dtype_name(col));
    wbuf req = {0};
    if (ctx->isolate)
        ck_wire_case(&req, here.row, here.col, claimed, row, c);
    dispatch(ctx, &here, &req, &t);
    free(req.p);
}

void ck_iso_check(ck_ctx *ctx, ck_section sec, ck_check_fn fn, int index, const char *what)
{
    job here = {.kind = JOB_CHECK, .section = (int)sec, .index = index, .fn = fn};
    target t = {.kind = JOB_CHECK, .section = (int)sec};
    snprintf(here.what, sizeof here.what, "%s", what);
    snprintf(t.what, sizeof t.what, "%s", what);
    snprintf(t.doing, sizeof t.doing, "%s", what);
    ck_doing("%s", what);
    wbuf req = {0};
    if (ctx->isolate)
        ck_wire_check(&req, (int)sec, fn, index, what);
    dispatch(ctx, &here, &req, &t);
    free(req.p);
}

void ck_iso_group(ck_ctx *ctx)
{
    if (ctx->iso) {
        ck_proc_stop(&ctx->iso->w);
        history_clear(ctx->iso);
    }
}

void ck_iso_finish(ck_ctx *ctx)
{
    ck_probe_close(ctx);
    if (!ctx->iso)
        return;
    ck_iso_group(ctx);
    free(ctx->iso->history);
    free(ctx->iso);
    ctx->iso = NULL;
}
