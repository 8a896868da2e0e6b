/*
 * wire.h - what the kit's parent process and its workers (isolate.c,
 * worker.c, probe.c) send each other through pipes: a job (a case of the
 * table with its params, a check of a section by function and index, a
 * supports() question, or the request for the plugins' description) and,
 * back, what the job recorded (the cell, failure and section lines,
 * counters; the answer; the description). Both sides are
 * the same program (a worker is the tenferro command run again), so structs
 * travel as bytes; pointers (a case's params, a FUSED program's steps and
 * outputs) are written out and fixed up, and a check's function travels as
 * its index in a table.
 */
#ifndef TF_CHECK_WIRE_H
#define TF_CHECK_WIRE_H

#include <stdint.h>
#include <sys/types.h>

#include "prims.h"

/* A growing byte buffer; oom once an allocation failed (it then stays as it was). */
typedef struct wbuf {
    unsigned char *p;
    size_t n, cap;
    int oom;
} wbuf;

/* Appends n bytes of v to b. */
void ck_wbuf_put(wbuf *b, const void *v, size_t n);

enum {
    JOB_CASE = 1,
    JOB_CHECK = 2,
    JOB_SUPPORTS = 3, /* answered with two int32: supports() asked twice */
    JOB_DESCRIBE = 4  /* answered with the worker's ck_meta */
};

/* What a worker writes to the parent: a record of a type, its length, its bytes. */
enum {
    REC_DOING = 1, /* a ck_doing text */
    REC_DONE = 2,  /* the result of the job */
    REC_STEP = 3   /* a ck_step text */
};

/* A decoded job, with a case's params in storage of its own. */
typedef struct job {
    int kind;
    char row_name[CK_NAME_LEN]; /* JOB_CASE: its row's */
    int row, col, claimed;
    ck_cell cell;
    ck_case c;
    union {
        unsigned char bytes[1024];
        uint64_t align;
    } params;
    tf_fused_step steps[TF_FUSED_MAX_STEPS];
    uint32_t outputs[CK_MAX_OUT];
    double imm[TF_FUSED_MAX_IMMEDIATES]; /* ABI 1.5 */
    int section, index;
    ck_check_fn fn;
    char what[200];          /* JOB_CHECK: its name */
    uint32_t prim, op, n_dt; /* JOB_SUPPORTS: the question */
    uint32_t dt[CK_MAX_OPERANDS];
} job;

/* The request for case c of cell (row, col) of table row r, given the cell as it stands. */
void ck_wire_case(wbuf *b, int row, int col, int claimed, const ck_row *r, const ck_case *c);
/* The request for check fn(ctx, index) of section `section`, named `what`. */
void ck_wire_check(wbuf *b, int section, ck_check_fn fn, int index, const char *what);
/* The request for supports(prim, op, dt[0..n)) (n <= CK_MAX_OPERANDS). */
void ck_wire_supports(wbuf *b, uint32_t prim, uint32_t op, const tf_dtype *dt, size_t n);
/* The request for the plugins' description (JOB_DESCRIBE). */
void ck_wire_describe(wbuf *b);
/* A request back into *j; 0 when malformed. */
int ck_wire_decode(const unsigned char *p, size_t n, job *j);

/* What a job added to the context: everything past these. */
typedef struct ck_mark {
    int failures, lines, refused, wrongly, oom, logged;
} ck_mark;

ck_mark ck_wire_mark(const ck_ctx *ctx);
/* The result of job j: what ctx gained since m. */
void ck_wire_result(wbuf *b, const ck_ctx *ctx, const ck_mark *m, const job *j);
/* Forgets what ctx gained since m (it was sent). */
void ck_wire_forget(ck_ctx *ctx, const ck_mark *m);
/* Adds a result to ctx, its cell to (row, col) for a case (kind JOB_CASE); 0 when it was
   malformed (what was read is kept). */
int ck_wire_apply(ck_ctx *ctx, const unsigned char *p, size_t n, int kind, int row, int col);

/* ---- worker.c: running a job in this process ---- */

/* Runs job j here (a worker's, or the kit's own process with --no-fork): a case or a
   check, then any memory damage it did blamed on it. */
void ck_job_exec(ck_ctx *ctx, const job *j);
/* Reads or writes exactly n bytes (EINTR retried): 0, or -1 at end of file or an error. */
int ck_read_full(int fd, void *p, size_t n);
int ck_write_full(int fd, const void *p, size_t n);

/* ---- isolate.c: a worker process as the parent sees it ---- */

typedef struct ck_proc {
    pid_t pid; /* 0: not running */
    int req_fd, rep_fd;
} ck_proc;

/* How a job on a worker went. */
typedef struct ck_outcome {
    int done; /* it finished: its record was read */
    ck_fate fate;
    unsigned char *result; /* done: the record (malloc'd) */
    size_t n_result;
} ck_outcome;

/* The most bytes of a ck_step text. */
#define CK_STEP_LEN 96

/* Runs one job on worker p (started first when not running), waiting at most
   ctx->case_timeout for it; `doing` (cap bytes) follows the worker's ck_doing texts and
   `step` (CK_STEP_LEN bytes, or NULL) its ck_step texts. A worker that died or hung is
   reaped (p->pid 0 again). */
ck_outcome ck_proc_run(ck_ctx *ctx, ck_proc *p, const wbuf *req, char *doing, size_t cap,
                       char *step);
/* Ends worker p (it holds nothing the parent needs). */
void ck_proc_stop(ck_proc *p);

/* ---- probe.c ---- */

/* Ends the probe worker and frees what probe.c holds. */
void ck_probe_close(ck_ctx *ctx);
/* ck_doing("asking supports() of engine '<name>' about <prim>/<op> (<dtypes>)"). */
void ck_doing_supports(const ck_ctx *ctx, uint32_t prim, uint32_t op, const tf_dtype *dt, size_t n);

#endif /* TF_CHECK_WIRE_H */
