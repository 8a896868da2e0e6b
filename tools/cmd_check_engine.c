/*
 * cmd_check_engine.c - `tenferro check-engine PLUGIN`: the conformance kit.
 *
 * Loads an engine plugin and checks it against the CPU reference engine
 * through the public API only: every primitive it claims (tools/check/
 * prims.c), the derivatives of the eager ops on it (grads.c), instance
 * lifecycle and threads (lifecycle.c) and ABI behaviour (abi.c), each case
 * and check in a worker process (isolate.c) so that a crash or hang of the
 * engine is one failure, not the end of the run; the plugin is loaded,
 * instantiated and asked supports() in a worker too (probe.c), never here. Prints a table of op x
 * dtype, then a section per part and the exact failures, and exits 0 when
 * everything the engine claims passed, 1 on any failure (a crash or hang
 * included), 2 when the plugin could not be loaded or the command line is
 * wrong (docs/cli.md).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check/check.h"
#include "cli.h"

#define MAX_EXTRA 16
#define CK_CASE_TIMEOUT 30u /* seconds: generous for a slow device, short for a hang */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tenferro check-engine [options] PLUGIN\n"
            "\n"
            "Checks an engine plugin against the reference engine: every primitive x\n"
            "sub-op x dtype it claims on generated shapes, strides and data; that what it\n"
            "does not claim is refused; finite-difference gradients of eager ops on it;\n"
            "instance lifecycle and threads. PLUGIN is an engine name on the plugin\n"
            "search path (\"vulkan\") or a path to a .so.\n"
            "\n"
            "Every case and check runs in a worker process, as does every other call into\n"
            "the plugin (loading, init, create, supports): a crash, abort or hang of the\n"
            "engine is the failure of the case it was running (CRASH or TIMEOUT in the\n"
            "table, named in the failures), and the run goes on.\n"
            "\n"
            "options:\n"
            "  --quick              fewer shapes per cell and fewer gradient checks\n"
            "  --dtype LIST         only these dtypes (comma-separated: f32,f64,i32,i64,bool)\n"
            "  --option KEY=VALUE   an engine option for every instance (repeatable)\n"
            "  --device N           the device index (default 0)\n"
            "  --threads N          the engine's thread count (default: its own)\n"
            "  --reference NAME     the reference engine (default: cpu)\n"
            "  --skip PART          skip prims, grads, lifecycle or abi (repeatable)\n"
            "  --case-timeout SECS  the most one case or check may take (default %u); one\n"
            "                       that takes longer is killed and fails as TIMEOUT\n"
            "  --timeout SECONDS    the most the whole run may take (default: no limit); the\n"
            "                       checks left then do not run, and the run fails\n"
            "  --no-fork            run everything in this process (for a debugger): a\n"
            "                       crash then ends the run, --case-timeout does not apply\n"
            "  --verbose            also list what passed in the sections\n"
            "  --json               print the results as one JSON object (its fields: cli.md\n"
            "                       of tenferro's documentation, share/doc/tenferro)\n"
            "  -h, --help           this text\n"
            "\n"
            "exit status:\n"
            "  0  everything the engine claims passed\n"
            "  1  a check failed: wrong values, an error on a claimed call, a crash or a\n"
            "     hang of the engine in a check (the report is complete), or --timeout\n"
            "  2  a usage error, or the plugin (or the reference) could not be loaded or\n"
            "     instantiated, including a crash, abort or hang while loading it (dlopen,\n"
            "     init) or in create (the step is named)\n",
            CK_CASE_TIMEOUT);
}

/* ---- result collection ---- */

ck_row *ck_row_add(ck_ctx *ctx, const char *fmt, ...)
{
    ck_iso_group(ctx); /* a row's cases share a worker process, no other row's */
    if (ctx->n_rows >= CK_MAX_ROWS) {
        ctx->oom = 1;
        return NULL;
    }
    ck_row *row = &ctx->rows[ctx->n_rows++];
    memset(row, 0, sizeof *row);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(row->name, sizeof row->name, fmt, ap);
    va_end(ap);
    return row;
}

static char *vformat(const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s)
        vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

int ck_grow(ck_ctx *ctx, void *items, int *cap, int count, size_t size)
{
    if (count < *cap)
        return 1;
    int n = *cap ? 2 * *cap : 32;
    void *p = realloc(*(void **)items, (size_t)n * size);
    if (!p) {
        ctx->oom = 1;
        return 0;
    }
    *(void **)items = p;
    *cap = n;
    return 1;
}

void ck_failure(ck_ctx *ctx, const char *fmt, ...)
{
    if (!ck_grow(ctx, &ctx->failures, &ctx->cap_failures, ctx->n_failures, sizeof(char *)))
        return;
    va_list ap;
    va_start(ap, fmt);
    char *s = vformat(fmt, ap);
    va_end(ap);
    if (!s) {
        ctx->oom = 1;
        return;
    }
    ctx->failures[ctx->n_failures++] = s;
}

void ck_line_add(ck_ctx *ctx, ck_section sec, ck_state state, const char *fmt, ...)
{
    if (!ck_grow(ctx, &ctx->lines, &ctx->cap_lines, ctx->n_lines, sizeof(ck_line)))
        return;
    va_list ap;
    va_start(ap, fmt);
    char *s = vformat(fmt, ap);
    va_end(ap);
    if (!s) {
        ctx->oom = 1;
        return;
    }
    ctx->lines[ctx->n_lines++] = (ck_line){(int)sec, state, s};
}

const char *ck_error_text(void)
{
    static _Thread_local char buf[1024];
    const char *msg = tf_error_message(), *cause = tf_error_cause();
    if (cause[0] && !strstr(msg, cause))
        snprintf(buf, sizeof buf, "%s (cause: %s)", msg, cause);
    else
        snprintf(buf, sizeof buf, "%s", msg[0] ? msg : "(no message)");
    return buf;
}

tf_status ck_eut_create(ck_ctx *ctx, tf_engine **out)
{
    return tf_engine_create(ctx->plugin, &ctx->options, out);
}

/* ---- output ---- */

static void cell_text(const ck_cell *c, char *buf, size_t cap)
{
    switch (c->state) {
    case CK_NA: snprintf(buf, cap, "-"); break;
    case CK_UNSUP: snprintf(buf, cap, "unsup"); break;
    case CK_PASS: snprintf(buf, cap, "pass"); break;
    case CK_FAIL:
        if (c->damaged)
            snprintf(buf, cap, "FAIL damage");
        else if (isinf(c->max_err))
            snprintf(buf, cap, "FAIL wrong");
        else
            snprintf(buf, cap, "FAIL %.1e", c->max_err);
        break;
    case CK_ERROR: {
        const char *n = tf_status_name(c->status);
        snprintf(buf, cap, "ERR %s", strncmp(n, "TF_ERR_", 7) == 0 ? n + 7 : n);
        break;
    }
    case CK_CRASH:
        if (c->fate.timed_out)
            snprintf(buf, cap, "TIMEOUT");
        else if (c->fate.signal)
            snprintf(buf, cap, "CRASH %s", ck_signal_name(c->fate.signal));
        else
            snprintf(buf, cap, "CRASH exit %d", c->fate.exit_status);
        break;
    }
}

static void print_table(const ck_ctx *ctx)
{
    printf("\nprimitives (pass | FAIL <max abs error> | ERR <status> | CRASH <signal> | TIMEOUT | "
           "unsup | - not defined):\n");
    printf("  %-28s", "op");
    for (int d = 0; d < TF_DTYPE_COUNT; d++)
        if ((ctx->dtype_mask >> d) & 1u)
            printf(" %-15s", tf_dtype_name((tf_dtype)d));
    printf("\n");
    for (int r = 0; r < ctx->n_rows; r++) {
        const ck_row *row = &ctx->rows[r];
        printf("  %-28s", row->name);
        for (int d = 0; d < TF_DTYPE_COUNT; d++) {
            if (!((ctx->dtype_mask >> d) & 1u))
                continue;
            char t[32];
            cell_text(&row->cell[d], t, sizeof t);
            printf(" %-15s", t);
        }
        printf("\n");
    }
}

static const char *const k_section_names[CK_SEC_COUNT_] = {"gradients", "lifecycle", "abi"};

static void print_sections(const ck_ctx *ctx)
{
    for (int s = 0; s < CK_SEC_COUNT_; s++) {
        int total = 0, quiet = 0, shown = 0;
        for (int i = 0; i < ctx->n_lines; i++) {
            const ck_line *l = &ctx->lines[i];
            if (l->section != s)
                continue;
            total++;
            /* failures always; what passed or was not run only with --verbose */
            if (l->state < CK_FAIL && !ctx->verbose) {
                quiet += l->state != CK_PASS;
                continue;
            }
            if (!shown++)
                printf("\n%s:\n", k_section_names[s]);
            const char *tag = l->state == CK_PASS    ? "pass "
                              : l->state == CK_UNSUP ? "unsup"
                              : l->state == CK_NA    ? "skip "
                              : l->state == CK_CRASH ? "CRASH"
                                                     : "FAIL ";
            printf("  %s %s\n", tag, l->text);
        }
        if (!total)
            continue;
        int hidden = total - quiet - shown; /* passed, not listed */
        if (!shown)
            printf("\n%s: %d passed", k_section_names[s], hidden);
        else if (hidden || quiet)
            printf("  (%d passed", hidden);
        if (quiet)
            printf(", %d not run: not claimed, or needing primitives the engine does not claim; "
                   "--verbose lists them",
                   quiet);
        if (!shown)
            printf("\n");
        else if (hidden || quiet)
            printf(")\n");
    }
}

/* Counts cells (of the dtypes checked) and section lines by state. */
static void tally(const ck_ctx *ctx, int *table, int *all) /* CK_CRASH + 1 entries each */
{
    for (int r = 0; r < ctx->n_rows; r++)
        for (int d = 0; d < TF_DTYPE_COUNT; d++)
            if ((ctx->dtype_mask >> d) & 1u) {
                table[ctx->rows[r].cell[d].state]++;
                all[ctx->rows[r].cell[d].state]++;
            }
    for (int i = 0; i < ctx->n_lines; i++)
        all[ctx->lines[i].state]++;
}

static const char *const k_state_json[] = {"n/a", "unsup", "pass", "fail", "error", "crash"};

static void json_cell(const ck_cell *c)
{
    printf("{\"state\": \"%s\", \"cases\": %d", k_state_json[c->state], c->cases);
    if (c->state == CK_FAIL && isfinite(c->max_err) && !c->damaged)
        printf(", \"max_abs_error\": %.9g", c->max_err);
    if (c->state == CK_FAIL && c->damaged)
        printf(", \"damage\": true");
    if (c->state == CK_ERROR)
        printf(", \"status\": \"%s\"", tf_status_name(c->status));
    if (c->state == CK_CRASH && c->fate.timed_out)
        printf(", \"timeout\": true");
    else if (c->state == CK_CRASH && c->fate.signal)
        printf(", \"signal\": \"%s\"", ck_signal_name(c->fate.signal));
    else if (c->state == CK_CRASH)
        printf(", \"exit_status\": %d", c->fate.exit_status);
    printf("}");
}

/* The --json form: one object, documented in docs/cli.md. */
static void print_json(const ck_ctx *ctx, const int *all, int bad)
{
    const ck_meta *m = &ctx->meta;
    printf("{\n  \"engine\": {\"name\": ");
    tf_cli_json_string(stdout, m->name);
    printf(", \"version\": ");
    tf_cli_json_string(stdout, m->version);
    printf(", \"file\": ");
    tf_cli_json_string(stdout, m->file);
    printf(", \"abi\": {\"major\": %u, \"minor\": %u}},\n  \"reference\": {\"name\": ",
           m->abi_major, m->abi_minor);
    tf_cli_json_string(stdout, m->ref_name);
    printf(", \"file\": ");
    tf_cli_json_string(stdout, m->ref_file);
    printf("},\n  \"primitives\": [");
    for (int r = 0; r < ctx->n_rows; r++) {
        printf("%s\n    {\"op\": ", r ? "," : "");
        tf_cli_json_string(stdout, ctx->rows[r].name);
        printf(", \"cells\": {");
        int first = 1;
        for (int d = 0; d < TF_DTYPE_COUNT; d++) {
            if (!((ctx->dtype_mask >> d) & 1u))
                continue;
            printf("%s\"%s\": ", first ? "" : ", ", tf_dtype_name((tf_dtype)d));
            json_cell(&ctx->rows[r].cell[d]);
            first = 0;
        }
        printf("}}");
    }
    printf("\n  ],\n");
    for (int sec = 0; sec < CK_SEC_COUNT_; sec++) {
        printf("  \"%s\": [", k_section_names[sec]);
        int first = 1;
        for (int i = 0; i < ctx->n_lines; i++) {
            if (ctx->lines[i].section != sec)
                continue;
            printf("%s\n    {\"state\": \"%s\", \"text\": ", first ? "" : ",",
                   k_state_json[ctx->lines[i].state]);
            tf_cli_json_string(stdout, ctx->lines[i].text);
            printf("}");
            first = 0;
        }
        printf("%s],\n", first ? "" : "\n  ");
    }
    printf("  \"failures\": [");
    for (int i = 0; i < ctx->n_failures; i++) {
        printf("%s\n    ", i ? "," : "");
        tf_cli_json_string(stdout, ctx->failures[i]);
    }
    printf("%s],\n", ctx->n_failures ? "\n  " : "");
    printf("  \"refused\": %d,\n  \"passed\": %d,\n  \"failed\": %d,\n  \"crashed\": %d,\n"
           "  \"unsupported\": %d,\n  \"result\": \"%s\"\n}\n",
           ctx->refused, all[CK_PASS], all[CK_FAIL] + all[CK_ERROR] + all[CK_CRASH], all[CK_CRASH],
           all[CK_UNSUP], bad ? "fail" : "pass");
}

/* ---- options ---- */

typedef struct ck_args {
    const char *plugin, *reference;
    const char *keys[MAX_EXTRA], *values[MAX_EXTRA];
    char *kv[MAX_EXTRA];
    uint32_t n_extra;
    int device, threads, timeout, case_timeout;
    int no_fork;
    int worker_req, worker_rep; /* --worker R,W (isolate.c starts workers so); -1: not one */
    unsigned skip;              /* bit per part: 1 prims, 2 grads, 4 lifecycle, 8 abi */
} ck_args;

static int parse_dtypes(const char *list, unsigned *mask)
{
    *mask = 0;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        int found = 0;
        for (int d = 0; d < TF_DTYPE_COUNT; d++) {
            const char *name = tf_dtype_name((tf_dtype)d);
            if (strlen(name) == n && strncmp(p, name, n) == 0) {
                *mask |= 1u << d;
                found = 1;
            }
        }
        if (!found)
            return -1;
        p += n + (p[n] == ',');
    }
    return *mask ? 0 : -1;
}

static int parse_args(int argc, char **argv, ck_ctx *ctx, ck_args *a)
{
    static const char *const parts[] = {"prims", "grads", "lifecycle", "abi"};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int needs = strcmp(o, "--dtype") == 0 || strcmp(o, "--option") == 0 ||
                    strcmp(o, "--device") == 0 || strcmp(o, "--threads") == 0 ||
                    strcmp(o, "--reference") == 0 || strcmp(o, "--skip") == 0 ||
                    strcmp(o, "--timeout") == 0 || strcmp(o, "--case-timeout") == 0 ||
                    strcmp(o, "--worker") == 0;
        if (needs && !v) {
            fprintf(stderr, "tenferro check-engine: %s needs a value\n", o);
            return -1;
        }
        if (strcmp(o, "--quick") == 0) {
            ctx->quick = 1;
        } else if (strcmp(o, "--json") == 0) {
            ctx->json = 1;
        } else if (strcmp(o, "--verbose") == 0) {
            ctx->verbose = 1;
        } else if (strcmp(o, "--no-fork") == 0) {
            a->no_fork = 1;
        } else if (strcmp(o, "--worker") == 0) { /* internal: not in the usage text */
            if (sscanf(v, "%d,%d", &a->worker_req, &a->worker_rep) != 2 || a->worker_req < 0 ||
                a->worker_rep < 0)
                return -1;
            i++;
        } else if (strcmp(o, "--case-timeout") == 0) {
            if (tf_cli_parse_int(v, 1, 86400, &a->case_timeout)) {
                fprintf(stderr,
                        "tenferro check-engine: --case-timeout wants whole seconds in 1..86400, "
                        "got '%s'\n",
                        v);
                return -1;
            }
            i++;
        } else if (strcmp(o, "--dtype") == 0) {
            if (parse_dtypes(v, &ctx->dtype_mask)) {
                fprintf(stderr,
                        "tenferro check-engine: bad --dtype '%s' (want a list of "
                        "f32,f64,i32,i64,bool)\n",
                        v);
                return -1;
            }
            i++;
        } else if (strcmp(o, "--option") == 0) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v || a->n_extra == MAX_EXTRA) {
                fprintf(stderr,
                        "tenferro check-engine: bad --option '%s' (want KEY=VALUE, at "
                        "most %d)\n",
                        v, MAX_EXTRA);
                return -1;
            }
            char *kv = malloc(strlen(v) + 1);
            if (!kv)
                return -1;
            strcpy(kv, v);
            kv[eq - v] = '\0';
            a->kv[a->n_extra] = kv;
            a->keys[a->n_extra] = kv;
            a->values[a->n_extra++] = kv + (eq - v) + 1;
            i++;
        } else if (strcmp(o, "--device") == 0 || strcmp(o, "--threads") == 0 ||
                   strcmp(o, "--timeout") == 0) {
            int *dst = o[2] == 'd' ? &a->device : o[3] == 'h' ? &a->threads : &a->timeout;
            if (tf_cli_parse_int(v, 0, dst == &a->threads ? TF_CLI_MAX_THREADS : 1L << 20, dst)) {
                fprintf(stderr, "tenferro check-engine: %s wants an integer >= 0, got '%s'\n", o,
                        v);
                return -1;
            }
            i++;
        } else if (strcmp(o, "--reference") == 0) {
            a->reference = v;
            i++;
        } else if (strcmp(o, "--skip") == 0) {
            int k = 0;
            while (k < 4 && strcmp(v, parts[k]) != 0)
                k++;
            if (k == 4) {
                fprintf(stderr,
                        "tenferro check-engine: bad --skip '%s' (want prims, grads, "
                        "lifecycle or abi)\n",
                        v);
                return -1;
            }
            a->skip |= 1u << k;
            i++;
        } else if (o[0] == '-') {
            fprintf(stderr, "tenferro check-engine: unknown option '%s'\n", o);
            return -1;
        } else if (a->plugin) {
            fprintf(stderr, "tenferro check-engine: one PLUGIN only ('%s' and '%s')\n", a->plugin,
                    o);
            return -1;
        } else {
            a->plugin = o;
        }
    }
    if (!a->plugin) {
        fprintf(stderr, "tenferro check-engine: no PLUGIN given\n");
        return -1;
    }
    return 0;
}

/* The engine, its device and the reference, as the worker that loaded them described them. */
static void print_header(const ck_ctx *ctx)
{
    const ck_meta *m = &ctx->meta;
    printf("engine '%s' %s, ABI %u.%u, from %s\n", m->name, m->version, m->abi_major, m->abi_minor,
           m->file);
    printf("%s\n", m->device);
    printf("reference: '%s' from %s\n", m->ref_name, m->ref_file);
    fflush(stdout);
}

static void ctx_free(ck_ctx *ctx)
{
    for (int i = 0; i < ctx->n_failures; i++)
        free(ctx->failures[i]);
    free(ctx->failures);
    for (int i = 0; i < ctx->n_lines; i++)
        free(ctx->lines[i].text);
    free(ctx->lines);
    tf_engine_destroy(ctx->eut);
    tf_engine_destroy(ctx->ref);
}

/* The closing line: what passed, failed, crashed, and what "unsupported" counts. */
static void print_summary(const ck_ctx *ctx, const int *table, const int *all, int bad)
{
    int failed = all[CK_FAIL] + all[CK_ERROR] + all[CK_CRASH];
    printf("\n%s: engine '%s': %d passed, %d failed", bad ? "FAIL" : "PASS", ctx->meta.name,
           all[CK_PASS], failed);
    if (all[CK_CRASH])
        printf(" (%d of them crashed or hung)", all[CK_CRASH]);
    printf(", %d unsupported", all[CK_UNSUP]);
    int lines = all[CK_UNSUP] - table[CK_UNSUP];
    if (all[CK_UNSUP])
        printf(" (%d table cells it does not claim, each executed once and refused as it must "
               "be: %d%s; %d other checks not run, needing what it does not claim)",
               table[CK_UNSUP], ctx->refused, ctx->wrongly_refused ? ", the rest not" : "", lines);
    printf("\n");
}

static void report(const ck_ctx *ctx, const ck_args *a, int bad, const int *table, const int *all)
{
    if (ctx->json) {
        print_json(ctx, all, bad);
        return;
    }
    if (!(a->skip & 1u))
        print_table(ctx);
    print_sections(ctx);
    if (ctx->n_failures) {
        printf("\nfailures (%d):\n", ctx->n_failures);
        for (int i = 0; i < ctx->n_failures; i++)
            printf("  %s\n", ctx->failures[i]);
    }
    if (ctx->oom)
        printf("\nthe kit ran out of memory; results are incomplete\n");
    if (!(a->skip & 1u) && table[CK_PASS] + table[CK_FAIL] + table[CK_ERROR] + table[CK_CRASH] == 0)
        printf("\nnote: the engine claims no primitive for the dtypes checked\n");
    print_summary(ctx, table, all, bad);
}

/* Runs the parts not skipped, prints the report; 0 or 1. */
static int run_checks(ck_ctx *ctx, const ck_args *a)
{
    if (!ctx->json)
        print_header(ctx);
    if (!(a->skip & 1u))
        ck_run_prims(ctx);
    if (!(a->skip & 2u))
        ck_run_grads(ctx);
    if (!(a->skip & 4u))
        ck_run_lifecycle(ctx);
    if (!(a->skip & 8u))
        ck_run_abi(ctx);
    ck_iso_finish(ctx);
    int table[CK_CRASH + 1] = {0}, all[CK_CRASH + 1] = {0};
    tally(ctx, table, all);
    int bad = all[CK_FAIL] + all[CK_ERROR] + all[CK_CRASH] + ctx->n_failures + ctx->oom;
    report(ctx, a, bad, table, all);
    return bad ? 1 : 0;
}

static double monotonic_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int tf_cli_check_engine(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        }
    ck_hooks_install(); /* before anything of the library holds memory */
    static ck_ctx ctx;  /* the table is large; one check per process */
    memset(&ctx, 0, sizeof ctx);
    ctx.dtype_mask = (1u << TF_DTYPE_COUNT) - 1;
    ck_args a = {.reference = "cpu",
                 .case_timeout = (int)CK_CASE_TIMEOUT,
                 .worker_req = -1,
                 .worker_rep = -1};
    int rc = parse_args(argc, argv, &ctx, &a);
    if (rc) {
        fprintf(stderr, "\n");
        usage(stderr);
        rc = 2;
    }
    ctx.plugin_arg = a.plugin;
    ctx.reference_arg = a.reference;
    ctx.options = (tf_engine_options){
        .struct_size = sizeof ctx.options,
        .device_index = (uint32_t)a.device,
        .threads = a.threads,
        .n_extra = a.n_extra,
        .extra_keys = a.keys,
        .extra_values = a.values,
    };
    /* one thread: a worker creates a reference of its own for every row */
    ctx.ref_options = (tf_engine_options){.struct_size = sizeof ctx.ref_options, .threads = 1};
    ctx.isolate = !a.no_fork;
    ctx.case_timeout = (unsigned)a.case_timeout;
    ctx.argc = argc;
    ctx.argv = argv;
    if (!rc && a.worker_req >= 0)
        ck_iso_worker(&ctx, a.worker_req, a.worker_rep); /* does not return */
    if (!rc) {
        /* without workers the whole run is one process: the alarm ends it */
        ck_guard_install(ctx.isolate ? 0u : (unsigned)a.timeout);
        if (ctx.isolate && a.timeout)
            ctx.deadline = monotonic_now() + a.timeout;
        ck_doing("loading '%s'", a.plugin);
        rc = ck_probe_open(&ctx);
    }
    if (!rc)
        rc = run_checks(&ctx, &a);
    ck_iso_finish(&ctx);
    ctx_free(&ctx);
    for (uint32_t i = 0; i < a.n_extra; i++)
        free(a.kv[i]);
    return rc;
}
