/*
 * worker.c - a worker process of the kit (isolate.c starts them): the only
 * place, apart from --no-fork, where the engine under test's code runs.
 *
 * A worker loads the plugins and creates its instances itself, saying each
 * step to the parent first (ck_doing), so that a plugin dying in dlopen,
 * init, device_info or create is named with that step. Then it runs jobs
 * read from its pipe: a case of the table, a check of a section, a
 * supports() question or the request for the plugins' description (the
 * probe worker of probe.c asks those two), and writes back what each
 * recorded. Memory damage a job did (hooks.c) is blamed on it. A worker
 * whose setup failed answers every job with that failure.
 */
#define _POSIX_C_SOURCE 200809L /* write, read */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire.h"

/* ---- running a job here ---- */

/* Memory damage the job did (hooks.c): a failure of its cell or line. */
static void blame_damage(ck_ctx *ctx, const job *j)
{
    char why[300];
    if (!ck_heap_check(why, sizeof why))
        return;
    if (j->kind == JOB_CASE) {
        ck_row *row = &ctx->rows[j->row];
        ck_cell *cell = &row->cell[j->col];
        ck_failure(ctx, "%s (%s): %s while the kit ran this case [%s]", row->name,
                   tf_dtype_name((tf_dtype)j->col), why, ck_doing_now());
        if (cell->state < CK_FAIL)
            cell->damaged = 1;
        if (cell->state < CK_FAIL)
            cell->state = CK_FAIL;
    } else {
        ck_line_add(ctx, (ck_section)j->section, CK_FAIL, "%s: %s while: %s", j->what, why,
                    ck_doing_now());
    }
}

void ck_job_exec(ck_ctx *ctx, const job *j)
{
    ck_heap_check(NULL, 0); /* damage of earlier checks is theirs */
    if (j->kind == JOB_CASE) {
        ck_row *row = &ctx->rows[j->row];
        row->cell[j->col] = j->cell;
        if (ctx->isolate == 0 && j->row_name[0]) /* a worker: the row is the parent's */
            snprintf(row->name, sizeof row->name, "%s", j->row_name);
        ck_case_exec(ctx, row, (tf_dtype)j->col, &j->c, j->claimed);
    } else {
        j->fn(ctx, j->index);
    }
    blame_damage(ctx, j);
}

/* ---- loading and describing the plugins ---- */

static void setup_failed(ck_meta *m, ck_setup step, tf_status st)
{
    m->setup = step;
    m->status = st;
    snprintf(m->why, sizeof m->why, "%s", ck_error_text());
}

/* The header's device line, from device_info of the device the instances use. */
static void describe_device(ck_ctx *ctx)
{
    ck_meta *m = &ctx->meta;
    uint32_t d = ctx->options.device_index;
    ck_doing("describing device %u of engine '%s' (device_info)", d, m->name);
    tf_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (tf_plugin_device_info(ctx->plugin, d, &info) == TF_OK)
        snprintf(m->device, sizeof m->device, "device %u: %s%s%s", d, info.name,
                 info.driver[0] ? " / " : "", info.driver);
    else
        snprintf(m->device, sizeof m->device, "device %u: unavailable: %.580s", d,
                 tf_error_message());
}

void ck_meta_open_here(ck_ctx *ctx, int create)
{
    ck_meta *m = &ctx->meta;
    memset(m, 0, sizeof *m);
    ck_doing("loading engine plugin '%s' (dlopen, its entry point and init)", ctx->plugin_arg);
    tf_status st = tf_plugin_load(ctx->plugin_arg, &ctx->plugin);
    if (st) {
        setup_failed(m, CK_SETUP_LOAD, st);
        return;
    }
    const tf_plugin *p = ctx->plugin;
    snprintf(m->name, sizeof m->name, "%s", tf_plugin_name(p));
    snprintf(m->version, sizeof m->version, "%s", tf_plugin_version(p));
    snprintf(m->file, sizeof m->file, "%s", tf_plugin_file(p));
    m->abi_major = tf_plugin_abi_major(p);
    m->abi_minor = tf_plugin_abi_minor(p);
    describe_device(ctx);
    ck_doing("loading the reference engine '%s'", ctx->reference_arg);
    if ((st = tf_plugin_load(ctx->reference_arg, &ctx->ref_plugin))) {
        setup_failed(m, CK_SETUP_REF_LOAD, st);
        return;
    }
    snprintf(m->ref_name, sizeof m->ref_name, "%s", tf_plugin_name(ctx->ref_plugin));
    snprintf(m->ref_file, sizeof m->ref_file, "%s", tf_plugin_file(ctx->ref_plugin));
    if (!create)
        return;
    ck_doing("creating an instance of engine '%s' (create)", m->name);
    if ((st = ck_eut_create(ctx, &ctx->eut))) {
        setup_failed(m, CK_SETUP_CREATE, st);
        return;
    }
    ck_doing("creating an instance of the reference engine '%s'", m->ref_name);
    if ((st = tf_engine_create(ctx->ref_plugin, &ctx->ref_options, &ctx->ref)))
        setup_failed(m, CK_SETUP_REF_CREATE, st);
}

/* ---- the worker's side of the pipes ---- */

static int g_rep_fd = -1; /* a worker's end of the pipe to the parent */

int ck_write_full(int fd, const void *p, size_t n)
{
    const unsigned char *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

int ck_read_full(int fd, void *p, size_t n)
{
    unsigned char *b = p;
    while (n) {
        ssize_t r = read(fd, b, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

static void send_record(uint32_t type, const void *p, size_t n)
{
    uint32_t hdr[2] = {type, (uint32_t)n};
    if (ck_write_full(g_rep_fd, hdr, sizeof hdr) == 0)
        ck_write_full(g_rep_fd, p, n);
}

static void doing_to_parent(const char *text)
{
    send_record(REC_DOING, text, strlen(text) + 1);
}

static void step_to_parent(const char *text)
{
    send_record(REC_STEP, text, strlen(text) + 1);
}

/* What the step that failed was, for jobs that cannot run. */
static void setup_text(const ck_meta *m, char *why, size_t cap)
{
    static const char *const steps[] = {
        "", "loading the engine plugin", "loading the reference engine",
        "creating an instance of the engine", "creating the reference"};
    snprintf(why, cap, "%s in a worker process failed: %s: %s", steps[m->setup],
             tf_status_name(m->status), m->why);
}

/* A job that could not run: its cell is an error, its check a failure. */
static void job_refused(ck_ctx *ctx, const job *j, tf_status st, const char *why)
{
    if (j->kind == JOB_CASE) {
        ck_row *row = &ctx->rows[j->row];
        ck_cell *cell = &row->cell[j->col];
        *cell = j->cell;
        cell->state = CK_ERROR;
        cell->status = st;
        ck_failure(ctx, "%s (%s): %s", row->name, tf_dtype_name((tf_dtype)j->col), why);
    } else {
        ck_line_add(ctx, (ck_section)j->section, CK_FAIL, "%s", why);
    }
}

/* supports() of job j, asked twice: two int32 (-1 when there is no instance). */
static void answer_supports(ck_ctx *ctx, const job *j, wbuf *b)
{
    tf_dtype dt[CK_MAX_OPERANDS];
    for (uint32_t i = 0; i < j->n_dt; i++)
        dt[i] = (tf_dtype)j->dt[i];
    ck_doing_supports(ctx, j->prim, j->op, dt, j->n_dt);
    int32_t a[2] = {-1, -1};
    for (int k = 0; k < 2 && ctx->eut; k++)
        a[k] = tf_engine_supports(ctx->eut, (tf_prim)j->prim, j->op, dt, j->n_dt) != 0;
    ck_wbuf_put(b, a, sizeof a);
}

/* Runs job j (decoded), its result into b. */
static void worker_job(ck_ctx *ctx, const job *j, const char *why, wbuf *b)
{
    if (j->kind == JOB_DESCRIBE) {
        ck_wbuf_put(b, &ctx->meta, sizeof ctx->meta);
        return;
    }
    if (j->kind == JOB_SUPPORTS) {
        answer_supports(ctx, j, b);
        return;
    }
    ck_mark m = ck_wire_mark(ctx);
    if (ctx->meta.setup)
        job_refused(ctx, j, ctx->meta.status, why);
    else
        ck_job_exec(ctx, j);
    ck_wire_result(b, ctx, &m, j);
    ck_wire_forget(ctx, &m);
}

void ck_iso_worker(ck_ctx *ctx, int req_fd, int rep_fd)
{
    ck_guard_remove(); /* die of the engine's signal: the parent reports it */
    ctx->isolate = 0;
    g_rep_fd = rep_fd;
    ck_doing_hook(doing_to_parent, step_to_parent);
    ck_meta_open_here(ctx, 1);
    char why[1400];
    setup_text(&ctx->meta, why, sizeof why);
    for (;;) {
        uint32_t n;
        if (ck_read_full(req_fd, &n, sizeof n) != 0)
            break; /* the parent is done with this worker */
        unsigned char *p = malloc(n ? n : 1);
        if (!p || ck_read_full(req_fd, p, n) != 0)
            break;
        job j;
        int ok = ck_wire_decode(p, n, &j);
        free(p);
        if (!ok)
            break;
        wbuf b = {0};
        worker_job(ctx, &j, why, &b);
        if (b.oom)
            break;
        send_record(REC_DONE, b.p, b.n);
        free(b.p);
    }
    _exit(0); /* the instances go with the process: the lifecycle checks destroy theirs */
}
