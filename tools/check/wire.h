/*
 * wire.h - what the kit's parent process and its workers (isolate.c) send
 * each other through pipes: a job (a case of the table with its params, or
 * a check of a section by function and index) and, back, what the job
 * recorded (the cell, failure and section lines, counters). Both sides are
 * the same program (a worker is the tenferro command run again), so structs
 * travel as bytes; pointers (a case's params, a FUSED program's steps and
 * outputs) are written out and fixed up, and a check's function travels as
 * its index in a table.
 */
#ifndef TF_CHECK_WIRE_H
#define TF_CHECK_WIRE_H

#include <stdint.h>

#include "prims.h"

/* A growing byte buffer; oom once an allocation failed (it then stays as it was). */
typedef struct wbuf {
    unsigned char *p;
    size_t n, cap;
    int oom;
} wbuf;

enum {
    JOB_CASE = 1,
    JOB_CHECK = 2
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
    int section, index;
    ck_check_fn fn;
    char what[200]; /* JOB_CHECK: its name */
} job;

/* The request for case c of cell (row, col) of table row r, given the cell as it stands. */
void ck_wire_case(wbuf *b, int row, int col, int claimed, const ck_row *r, const ck_case *c);
/* The request for check fn(ctx, index) of section `section`, named `what`. */
void ck_wire_check(wbuf *b, int section, ck_check_fn fn, int index, const char *what);
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

#endif /* TF_CHECK_WIRE_H */
