/*
 * probe.c - the probe worker: a worker process (worker.c) that the kit's
 * own process asks for what it needs of the engine under test to generate
 * the cases, so that no code of that plugin ever runs in the kit's own
 * process (with isolation; --no-fork asks its own instance).
 *
 * First the plugins' description (ck_probe_open): the probe loads both
 * plugins and creates an instance of each, naming every step as it starts
 * it; a refusal there is the loader's message (exit status 2), a crash,
 * abort or hang is named with its signal and the step it happened in (also
 * 2: nothing can be checked). Then every supports() question (ck_claims):
 * answers are remembered, so each is asked once; a supports() that crashes,
 * aborts or hangs costs the probe process and makes the cell that asked
 * CRASH or TIMEOUT, naming the question; the next question starts a fresh
 * probe, and the run goes on, unless supports() hung CK_PROBE_MAX_HUNG
 * times: then every question would cost --case-timeout, and the run stops
 * there as at --timeout.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "wire.h"

/* A supports() question and what became of it. */
typedef struct claim {
    uint32_t prim, op, n;
    uint32_t dt[CK_MAX_OPERANDS];
    int answer;   /* 1, 0, or -1: no answer */
    int differs;  /* -1 because it answered twice differently */
    int reported; /* its failure was recorded (a question asked again without a cell is not) */
    ck_fate fate;
    char *doing; /* -1 otherwise: what the probe was doing when it died (malloc'd) */
} claim;

/* supports() questions that may go unanswered (hang) before the run stops. */
#define CK_PROBE_MAX_HUNG 3

struct ck_probe {
    ck_proc w;
    claim *claims;
    int n, cap;
    int hung; /* questions that timed out */
};

static struct ck_probe *probe_of(ck_ctx *ctx)
{
    if (!ctx->probe && !(ctx->probe = calloc(1, sizeof *ctx->probe)))
        ctx->oom = 1;
    return ctx->probe;
}

void ck_probe_close(ck_ctx *ctx)
{
    struct ck_probe *pr = ctx->probe;
    if (!pr)
        return;
    ck_proc_stop(&pr->w);
    for (int i = 0; i < pr->n; i++)
        free(pr->claims[i].doing);
    free(pr->claims);
    free(pr);
    ctx->probe = NULL;
}

/* The setup step that failed, said as the loader said it; 2. */
static int setup_refused(const ck_ctx *ctx)
{
    static const char *const what[] = {"", "load engine plugin", "load the reference engine",
                                       "create an instance of engine",
                                       "create the reference engine"};
    const ck_meta *m = &ctx->meta;
    int ref = m->setup == CK_SETUP_REF_LOAD || m->setup == CK_SETUP_REF_CREATE;
    fprintf(stderr, "tenferro check-engine: cannot %s '%s': %s: %s\n", what[m->setup],
            ref ? ctx->reference_arg : ctx->plugin_arg, tf_status_name(m->status), m->why);
    return 2;
}

/* Every string of m terminated, whatever arrived. */
static void meta_terminate(ck_meta *m)
{
    m->name[sizeof m->name - 1] = m->version[sizeof m->version - 1] = '\0';
    m->file[sizeof m->file - 1] = m->device[sizeof m->device - 1] = '\0';
    m->ref_name[sizeof m->ref_name - 1] = m->ref_file[sizeof m->ref_file - 1] = '\0';
    m->why[sizeof m->why - 1] = '\0';
    if (m->setup < CK_SETUP_OK || m->setup > CK_SETUP_REF_CREATE)
        m->setup = CK_SETUP_LOAD;
}

int ck_probe_open(ck_ctx *ctx)
{
    if (!ctx->isolate) {
        ck_meta_open_here(ctx, 1);
        return ctx->meta.setup ? setup_refused(ctx) : 0;
    }
    struct ck_probe *pr = probe_of(ctx);
    wbuf req = {0};
    ck_wire_describe(&req);
    if (!pr || req.oom) {
        free(req.p);
        fprintf(stderr, "tenferro check-engine: out of memory\n");
        return 2;
    }
    char doing[768] = "starting a worker process";
    ck_outcome o = ck_proc_run(ctx, &pr->w, &req, doing, sizeof doing, NULL);
    free(req.p);
    if (!o.done) {
        char fate[128];
        ck_fate_text(ctx, &o.fate, fate, sizeof fate);
        fprintf(stderr,
                "tenferro check-engine: cannot load or instantiate engine plugin '%s': the plugin "
                "%s while: %s "
                "(in a worker process; the kit itself never loads it)\n",
                ctx->plugin_arg, fate, doing);
        return 2;
    }
    int ok = o.n_result == sizeof ctx->meta;
    if (ok)
        memcpy(&ctx->meta, o.result, sizeof ctx->meta);
    free(o.result);
    if (!ok) {
        fprintf(stderr, "tenferro check-engine: the kit could not read what its worker process "
                        "sent about the plugins\n");
        return 2;
    }
    meta_terminate(&ctx->meta);
    return ctx->meta.setup ? setup_refused(ctx) : 0;
}

/* The remembered question, or NULL. */
static claim *find(struct ck_probe *pr, const claim *q)
{
    for (int i = 0; i < pr->n; i++) {
        claim *c = &pr->claims[i];
        if (c->prim == q->prim && c->op == q->op && c->n == q->n &&
            memcmp(c->dt, q->dt, q->n * sizeof *q->dt) == 0)
            return c;
    }
    return NULL;
}

/* Asks the probe worker question q; its answer (or why none) into q. */
static void ask(ck_ctx *ctx, struct ck_probe *pr, claim *q, const tf_dtype *dt)
{
    wbuf req = {0};
    ck_wire_supports(&req, q->prim, q->op, dt, q->n);
    char doing[768] = "starting a worker process";
    ck_outcome o =
        req.oom ? (ck_outcome){0} : ck_proc_run(ctx, &pr->w, &req, doing, sizeof doing, NULL);
    free(req.p);
    int32_t a[2] = {-1, -1};
    if (o.done && o.n_result == sizeof a)
        memcpy(a, o.result, sizeof a);
    free(o.result);
    if (!o.done && !req.oom) { /* it died: the next question starts a fresh probe */
        pr->hung += o.fate.timed_out;
        q->answer = -1;
        q->fate = o.fate;
        q->doing = malloc(strlen(doing) + 1);
        if (q->doing)
            strcpy(q->doing, doing);
    } else if (a[0] < 0 || a[1] < 0) { /* out of memory here, or no instance there */
        ctx->oom = 1;
        q->answer = 0;
    } else {
        q->answer = a[0] == a[1] ? a[0] : -1;
        q->differs = a[0] != a[1];
    }
}

/* Why question c has no answer, as the failure of cell (row, col) or of the run. */
static void no_answer(ck_ctx *ctx, ck_row *row, tf_dtype col, const claim *c)
{
    char fate[128], where[80] = "";
    if (row)
        snprintf(where, sizeof where, "%s (%s): ", row->name, tf_dtype_name(col));
    ck_cell *cell = row ? &row->cell[col] : NULL;
    if (c->differs) {
        ck_failure(ctx, "%ssupports() gave different answers to the same question", where);
        if (cell && cell->state < CK_FAIL)
            cell->state = CK_FAIL;
        return;
    }
    ck_fate_text(ctx, &c->fate, fate, sizeof fate);
    ck_failure(ctx, "%sthe engine %s while: %s", where, fate,
               c->doing ? c->doing : "asking supports()");
    if (cell) {
        cell->state = CK_CRASH;
        cell->fate = c->fate;
        cell->cases++;
    }
}

void ck_doing_supports(const ck_ctx *ctx, uint32_t prim, uint32_t op, const tf_dtype *dt, size_t n)
{
    const char *name = tf_prim_op_name((tf_prim)prim, op);
    char sig[128] = "";
    for (size_t i = 0, u = 0; i < n && u < sizeof sig; i++)
        u += (size_t)snprintf(sig + u, sizeof sig - u, "%s%s", i ? ", " : "", tf_dtype_name(dt[i]));
    ck_doing("asking supports() of engine '%s' about %s%s%s (%s)", ctx->meta.name,
             tf_prim_name((tf_prim)prim), name[0] ? "/" : "", name, sig);
}

/* supports() in this process, on ctx->eut (a worker's, or --no-fork's). */
static int claims_here(ck_ctx *ctx, ck_row *row, tf_dtype col, const claim *q, const tf_dtype *dt)
{
    tf_prim prim = (tf_prim)q->prim;
    ck_doing_supports(ctx, q->prim, q->op, dt, q->n);
    int a = tf_engine_supports(ctx->eut, prim, q->op, dt, q->n) != 0;
    if (a == (tf_engine_supports(ctx->eut, prim, q->op, dt, q->n) != 0))
        return a;
    claim differs = {.differs = 1};
    no_answer(ctx, row, col, &differs);
    return -1;
}

int ck_claims(ck_ctx *ctx, ck_row *row, tf_dtype col, tf_prim prim, uint32_t op, const tf_dtype *dt,
              size_t n)
{
    claim q = {.prim = (uint32_t)prim, .op = op, .n = (uint32_t)n};
    if (n > CK_MAX_OPERANDS)
        return 0;
    for (size_t i = 0; i < n; i++)
        q.dt[i] = (uint32_t)dt[i];
    if (!ctx->isolate)
        return claims_here(ctx, row, col, &q, dt);
    struct ck_probe *pr = probe_of(ctx);
    if (!pr || ctx->stopped)
        return ctx->stopped ? -1 : 0; /* stopped: said once, when it stopped */
    claim *c = find(pr, &q);
    if (!c && pr->hung >= CK_PROBE_MAX_HUNG) {
        ctx->stopped = 1;
        ck_failure(ctx,
                   "supports() gave no answer within %u s (--case-timeout) %d times: the run "
                   "stops, the checks from %s (%s) on did not run",
                   ctx->case_timeout, pr->hung, row ? row->name : "here", tf_dtype_name(col));
        return -1;
    }
    if (!c) {
        if (!ck_grow(ctx, &pr->claims, &pr->cap, pr->n, sizeof(claim)))
            return 0;
        ask(ctx, pr, &q, dt);
        c = &pr->claims[pr->n++];
        *c = q;
    }
    if (c->answer < 0 && (row || !c->reported))
        no_answer(ctx, row, col, c);
    c->reported |= c->answer < 0;
    return c->answer;
}
