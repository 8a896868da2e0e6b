/*
 * abi.c - ABI behaviour of the engine under test beyond correct values:
 * the descriptor and devices, supports() answers for what the engine cannot
 * know, refusal of unclaimed work (counted while the table ran), and the
 * data-dependent errors engine_abi.h makes the engine's job (out-of-range
 * indices, integer division by zero, checked conversions), each followed by
 * a check that the instance still computes correctly.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../cli.h"
#include "prims.h"

/* The most devices described one by one: a plugin may claim any count. */
#define CK_MAX_DEVICES 64u

static void descriptor(ck_ctx *ctx)
{
    const tf_plugin *p = ctx->plugin;
    uint32_t n = tf_plugin_device_count(p), checked = n < CK_MAX_DEVICES ? n : CK_MAX_DEVICES;
    if (!tf_plugin_version(p)[0])
        ck_line_add(ctx, CK_SEC_ABI, CK_FAIL, "the descriptor's version string is empty");
    for (uint32_t i = 0; i < checked; i++) {
        tf_device_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        tf_status st = tf_plugin_device_info(p, i, &info);
        if (st)
            ck_line_add(ctx, CK_SEC_ABI, CK_FAIL, "device_info(%u) of %u devices failed: %s: %s", i,
                        n, tf_status_name(st), ck_error_text());
        else if (!info.name[0]) /* an unterminated one fails above (tf_plugin_device_info) */
            ck_line_add(ctx, CK_SEC_ABI, CK_FAIL, "device %u's name is empty", i);
    }
    if (checked < n)
        ck_line_add(ctx, CK_SEC_ABI, CK_PASS,
                    "descriptor and the first %u of %u device(s) described (the rest not asked)",
                    checked, n);
    else
        ck_line_add(ctx, CK_SEC_ABI, CK_PASS, "descriptor and %u device(s) described", n);
}

/*
 * An engine built for a newer minor than this host's may know primitives,
 * sub-ops and dtypes this host does not, and claim them; the host must then
 * refuse to run them (it cannot say what they mean), without calling the
 * engine.
 */
static void newer_minor(ck_ctx *ctx, uint32_t minor)
{
    int64_t n = 4;
    tf_tensor *out = NULL;
    tf_status st = tf_tensor_empty(ctx->eut, TF_F32, 1, &n, &out);
    if (st) {
        ck_line_add(ctx, CK_SEC_ABI, CK_FAIL, "setting up an f32[4] tensor failed: %s: %s",
                    tf_status_name(st), ck_error_text());
        return;
    }
    tf_error_clear();
    st = tf_engine_execute(ctx->eut, (tf_prim)TF_PRIM_COUNT_, NULL, 0, NULL, 1, &out);
    tf_tensor_release(out);
    if (st == TF_OK)
        ck_line_add(ctx, CK_SEC_ABI, CK_FAIL,
                    "the engine states ABI %d.%u, newer than this host's %d.%d, and the host "
                    "ran primitive %d, which it does not know",
                    TF_ENGINE_ABI_MAJOR, minor, TF_ENGINE_ABI_MAJOR, TF_ENGINE_ABI_MINOR,
                    (int)TF_PRIM_COUNT_);
    else
        ck_line_add(ctx, CK_SEC_ABI, CK_PASS,
                    "the engine states ABI %d.%u, newer than this host's %d.%d: what that minor "
                    "adds is not asked of it, and the host refuses to run primitive %d (%s)",
                    TF_ENGINE_ABI_MAJOR, minor, TF_ENGINE_ABI_MAJOR, TF_ENGINE_ABI_MINOR,
                    (int)TF_PRIM_COUNT_, tf_status_name(st));
}

/* supports() must answer 0 for primitives, sub-ops and dtypes it cannot know. */
static void unknowns(ck_ctx *ctx)
{
    _Static_assert(TF_DTYPE_COUNT == 7, "the first unknown dtype's text names its number");
    static const struct {
        uint32_t prim, op, n;
        tf_dtype d[3];
        const char *what;
    } asks[] = {
        {TF_PRIM_COUNT_, 0, 1, {TF_F32}, NULL}, /* NULL: "an unknown primitive (<prim>)" */
        {1000, 0, 2, {TF_F32, TF_F32}, NULL},
        {TF_PRIM_UNARY, TF_UNARY_COUNT_, 2, {TF_F32, TF_F32}, "an unknown unary op"},
        {TF_PRIM_BINARY, TF_BINARY_COUNT_, 3, {TF_F32, TF_F32, TF_F32}, "an unknown binary op"},
        {TF_PRIM_COMPARE, TF_COMPARE_COUNT_, 3, {TF_F32, TF_F32, TF_BOOL}, "an unknown compare op"},
        {TF_PRIM_REDUCE, TF_REDUCE_COUNT_, 2, {TF_F32, TF_F32}, "an unknown reduce op"},
        {TF_PRIM_COPY,
         0,
         2,
         {(tf_dtype)TF_DTYPE_COUNT, (tf_dtype)TF_DTYPE_COUNT},
         "an unknown dtype (7)"},
        {TF_PRIM_FILL, 0, 1, {(tf_dtype)77}, "an unknown dtype (77)"},
    };
    uint32_t minor = tf_plugin_abi_minor(ctx->plugin);
    if (minor > TF_ENGINE_ABI_MINOR) {
        newer_minor(ctx, minor);
        return;
    }
    int bad = 0;
    for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++)
        if (tf_engine_supports(ctx->eut, (tf_prim)asks[i].prim, asks[i].op, asks[i].d, asks[i].n)) {
            if (asks[i].what)
                ck_line_add(ctx, CK_SEC_ABI, CK_FAIL, "supports() claims %s; it must answer 0",
                            asks[i].what);
            else
                ck_line_add(ctx, CK_SEC_ABI, CK_FAIL,
                            "supports() claims an unknown primitive (%u); it must answer 0",
                            asks[i].prim);
            bad = 1;
        }
    if (!bad)
        ck_line_add(ctx, CK_SEC_ABI, CK_PASS,
                    "supports() answers 0 for unknown primitives, "
                    "sub-ops and dtypes");
}

/* ---- data-dependent errors ---- */

static tf_status upload(tf_engine *e, tf_dtype dt, int64_t n, const void *data, tf_tensor **out)
{
    tf_tensor *h = NULL;
    tf_status st = tf_tensor_from_host(dt, 1, &n, data, (size_t)n, &h);
    if (!st)
        st = tf_engine_upload(e, h, out);
    tf_tensor_release(h);
    return st;
}

/* Executes and waits; an asynchronous engine may report the error at synchronize or download. */
static tf_status exec_sync(tf_engine *e, tf_prim prim, const void *params, size_t n_in,
                           tf_tensor *const *in, tf_tensor *out)
{
    tf_status st = tf_engine_execute(e, prim, params, n_in, in, 1, &out);
    if (!st)
        st = tf_engine_synchronize(e);
    tf_tensor *h = NULL;
    if (!st)
        st = tf_engine_download(e, out, &h);
    tf_tensor_release(h);
    return st;
}

typedef struct bad_call {
    const char *what;
    tf_prim prim;
    uint32_t op;
    const void *params;
    uint32_t n_in;  /* 1 or 2 */
    tf_dtype dt[3]; /* inputs' dtypes (n_in), then the output's */
    int64_t n;      /* elements of each operand */
    const void *in0, *in1;
    tf_status expect;
} bad_call;

static void data_error(ck_ctx *ctx, const bad_call *b)
{
    if (!tf_engine_supports(ctx->eut, b->prim, b->op, b->dt, b->n_in + 1)) {
        ck_line_add(ctx, CK_SEC_ABI, CK_UNSUP, "%s: not claimed", b->what);
        return;
    }
    ck_doing("abi: %s", b->what);
    tf_tensor *in[2] = {0}, *out = NULL;
    tf_status st = upload(ctx->eut, b->dt[0], b->n, b->in0, &in[0]);
    if (!st && b->n_in == 2)
        st = upload(ctx->eut, b->dt[1], b->n, b->in1, &in[1]);
    if (!st)
        st = tf_tensor_empty(ctx->eut, b->dt[b->n_in], 1, &b->n, &out);
    if (st) {
        ck_line_add(ctx, CK_SEC_ABI, CK_FAIL, "%s: setting up failed: %s: %s", b->what,
                    tf_status_name(st), ck_error_text());
    } else {
        tf_error_clear();
        st = exec_sync(ctx->eut, b->prim, b->params, b->n_in, in, out);
        if (st == b->expect && !st)
            ck_line_add(ctx, CK_SEC_ABI, CK_PASS, "%s: accepted, as it must be", b->what);
        else if (st != b->expect)
            ck_line_add(ctx, CK_SEC_ABI, CK_FAIL, "%s: expected %s, got %s%s%s", b->what,
                        tf_status_name(b->expect), tf_status_name(st), st ? ": " : "",
                        st ? ck_error_text() : "");
        else if (!tf_error_cause()[0])
            ck_line_add(ctx, CK_SEC_ABI, CK_FAIL,
                        "%s: %s but the engine reported no message "
                        "through host->report_error",
                        b->what, tf_status_name(st));
        else
            ck_line_add(ctx, CK_SEC_ABI, CK_PASS, "%s: %s (\"%s\")", b->what, tf_status_name(st),
                        tf_error_cause());
    }
    tf_tensor_release(in[0]);
    tf_tensor_release(in[1]);
    tf_tensor_release(out);
    /* the instance must keep working after the error */
    int64_t n = 4;
    double one[4] = {1, 2, 3, 4}, back[4] = {0};
    tf_tensor *t = NULL, *h = NULL;
    st = upload(ctx->eut, TF_F64, n, one, &t);
    if (!st)
        st = tf_engine_download(ctx->eut, t, &h);
    if (!st)
        st = tf_tensor_copy_to_host(h, TF_F64, back, 4);
    if (st || memcmp(one, back, sizeof one) != 0)
        ck_line_add(ctx, CK_SEC_ABI, CK_FAIL,
                    "after %s the instance no longer round-trips data "
                    "(%s)",
                    b->what, tf_status_name(st));
    tf_tensor_release(t);
    tf_tensor_release(h);
}

/*
 * Call i of the data-dependent errors (and of their neighbours that must not
 * fail), into *b; 0 past the last. The operands live in static storage.
 */
static int data_call(int i, bad_call *b)
{
    static const int32_t x5[5] = {10, 20, 30, 40, 50}, idx_bad[5] = {0, 1, 5, 2, 3};
    static const int32_t num[5] = {7, -7, 3, 9, 1}, den[5] = {2, 3, 0, 1, -1};
    static const double frac[5] = {1, 2, 0.5, 4, 5}, huge[5] = {1, 2, 1e300, 4, 5};
    static const double big_int[5] = {1, 2, 3e9, 4, 5}, nan5[5] = {1, 2, NAN, 4, 5};
    static const double two[5] = {1, 0, 2, 1, 0};
    /* what f64 -> f32 may do: round, underflow to zero, keep infinities */
    static const double fine[5] = {0.1, 1e-50, INFINITY, -INFINITY, 3e38};
    static const int64_t idx64_neg[5] = {0, -1, 1, 2, 3}, wide[5] = {1, 2, 1LL << 40, 4, 5};
    static const int64_t inexact[5] = {1, 2, (1LL << 53) + 1, 4, 5};
    static const int64_t exact[5] = {1, -(1LL << 53), 1LL << 60, INT64_MIN, INT64_MAX - 1023};
    static const int32_t inexact32[5] = {1, 2, (1 << 24) + 1, 4, 5};
    static const tf_gather_params gp = {sizeof gp, 0, TF_GATHER_INDEX_SELECT, 0};
    static const tf_binary_params div = {sizeof div, TF_BINARY_DIV},
                                  rem = {sizeof rem, TF_BINARY_REM};
    static const tf_convert_params chk = {sizeof chk, 1};
    /* one call per two lines reads better than one field per line */
    // clang-format off
    static const bad_call calls[] = {
        {"gather i32[5] with index 5 (extent 5)", TF_PRIM_GATHER, 0, &gp, 2,
         {TF_I32, TF_I32, TF_I32}, 5, x5, idx_bad, TF_ERR_OUT_OF_RANGE},
        {"gather i32[5] with index -1 (i64 index)", TF_PRIM_GATHER, 0, &gp, 2,
         {TF_I32, TF_I64, TF_I32}, 5, x5, idx64_neg, TF_ERR_OUT_OF_RANGE},
        {"i32 division by zero", TF_PRIM_BINARY, TF_BINARY_DIV, &div, 2,
         {TF_I32, TF_I32, TF_I32}, 5, num, den, TF_ERR_VALIDATION},
        {"i32 remainder by zero", TF_PRIM_BINARY, TF_BINARY_REM, &rem, 2,
         {TF_I32, TF_I32, TF_I32}, 5, num, den, TF_ERR_VALIDATION},
        {"checked convert f64 -> i32 of 0.5", TF_PRIM_CONVERT, 0, &chk, 1,
         {TF_F64, TF_I32}, 5, frac, NULL, TF_ERR_OUT_OF_RANGE},
        {"checked convert f64 -> i32 of 3e9", TF_PRIM_CONVERT, 0, &chk, 1,
         {TF_F64, TF_I32}, 5, big_int, NULL, TF_ERR_OUT_OF_RANGE},
        {"checked convert f64 -> i64 of NaN", TF_PRIM_CONVERT, 0, &chk, 1,
         {TF_F64, TF_I64}, 5, nan5, NULL, TF_ERR_OUT_OF_RANGE},
        {"checked convert f64 -> f32 of 1e300 (overflow)", TF_PRIM_CONVERT, 0, &chk, 1,
         {TF_F64, TF_F32}, 5, huge, NULL, TF_ERR_OUT_OF_RANGE},
        {"checked convert f64 -> f32 of 0.1, 1e-50, inf, -inf, 3e38 (rounding, underflow)",
         TF_PRIM_CONVERT, 0, &chk, 1, {TF_F64, TF_F32}, 5, fine, NULL, TF_OK},
        {"checked convert i64 -> i32 of 2^40", TF_PRIM_CONVERT, 0, &chk, 1,
         {TF_I64, TF_I32}, 5, wide, NULL, TF_ERR_OUT_OF_RANGE},
        {"checked convert i64 -> f64 of 2^53 + 1", TF_PRIM_CONVERT, 0, &chk, 1,
         {TF_I64, TF_F64}, 5, inexact, NULL, TF_ERR_OUT_OF_RANGE},
        {"checked convert i64 -> f64 of 2^60, -2^63, 2^63 - 1024 (exact)", TF_PRIM_CONVERT, 0,
         &chk, 1, {TF_I64, TF_F64}, 5, exact, NULL, TF_OK},
        {"checked convert i32 -> f32 of 2^24 + 1", TF_PRIM_CONVERT, 0, &chk, 1,
         {TF_I32, TF_F32}, 5, inexact32, NULL, TF_ERR_OUT_OF_RANGE},
        {"checked convert f64 -> bool of 2", TF_PRIM_CONVERT, 0, &chk, 1,
         {TF_F64, TF_BOOL}, 5, two, NULL, TF_ERR_OUT_OF_RANGE},
    };
    // clang-format on
    if (i < 0 || i >= (int)(sizeof calls / sizeof calls[0]))
        return 0;
    *b = calls[i];
    return 1;
}

/* Data-dependent call i (a job of isolate.c). */
void ck_abi_data_error_one(ck_ctx *ctx, int i)
{
    bad_call b;
    if (data_call(i, &b))
        data_error(ctx, &b);
}

/*
 * The descriptor's name is the engine's name for configuration files,
 * `tenferro info` and extension modules' kernel tables; the loader finds an
 * engine by name as tenferro-engine-<name>.so. The two must agree.
 */
static void file_name(ck_ctx *ctx)
{
    const char *file = ctx->meta.file, *name = ctx->meta.name; /* the kit's own process */
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    char from_file[256];
    if (!tf_cli_engine_file_name(file, from_file, sizeof from_file))
        ck_line_add(ctx, CK_SEC_ABI, CK_FAIL,
                    "the file is named '%s', not tenferro-engine-%s.so: the loader finds an "
                    "engine by name only as tenferro-engine-<name>.so, with the descriptor's name",
                    base, name);
    else if (strcmp(from_file, name) != 0)
        ck_line_add(ctx, CK_SEC_ABI, CK_FAIL,
                    "the descriptor's name '%s' differs from the file's, '%s' (%s): "
                    "configuration files, tenferro info and extension modules' kernel tables "
                    "know the engine by the descriptor's name, the loader finds it by the "
                    "file's; rename one",
                    name, from_file, base);
    else
        ck_line_add(ctx, CK_SEC_ABI, CK_PASS, "the descriptor's name '%s' is the file's (%s)", name,
                    base);
}

/* Appends ", <what> for <dtype>" to list (cap bytes) when the engine claims it. */
static void note_claim(ck_ctx *ctx, tf_prim prim, uint32_t op, tf_dtype d, const tf_dtype *sig,
                       size_t n, char *list, size_t cap)
{
    if (!tf_engine_supports(ctx->eut, prim, op, sig, n))
        return;
    size_t used = strlen(list);
    const char *opname = tf_prim_op_name(prim, op);
    snprintf(list + used, cap - used, "%s%s%s%s for %s", used ? ", " : "", tf_prim_name(prim),
             opname[0] ? " " : "", opname, tf_dtype_name(d));
}

/*
 * supports() must not claim what the ABI leaves undefined (LOGICAL_NOT of a
 * float, AND of a float, SUM of bool, ...): the host refuses such a call
 * before asking, so a claim there says the engine answers for what it does
 * not do.
 */
static void undefined_claims(ck_ctx *ctx)
{
    char list[1024] = "";
    for (int d = 0; d < TF_DTYPE_COUNT; d++) {
        tf_dtype dt = (tf_dtype)d, sig[3] = {dt, dt, dt};
        for (uint32_t op = 0; op < TF_UNARY_COUNT_; op++)
            if (!ck_unary_defined(op, dt))
                note_claim(ctx, TF_PRIM_UNARY, op, dt, sig, 2, list, sizeof list);
        for (uint32_t op = 0; op < TF_BINARY_COUNT_; op++)
            if (!ck_binary_defined(op, dt))
                note_claim(ctx, TF_PRIM_BINARY, op, dt, sig, 3, list, sizeof list);
    }
    tf_dtype b[3] = {TF_BOOL, TF_BOOL, TF_BOOL};
    note_claim(ctx, TF_PRIM_REDUCE, TF_REDUCE_SUM, TF_BOOL, b, 2, list, sizeof list);
    note_claim(ctx, TF_PRIM_REDUCE, TF_REDUCE_PROD, TF_BOOL, b, 2, list, sizeof list);
    note_claim(ctx, TF_PRIM_IOTA, 0, TF_BOOL, b, 1, list, sizeof list);
    note_claim(ctx, TF_PRIM_DOT_GENERAL, 0, TF_BOOL, b, 3, list, sizeof list);
    if (list[0])
        ck_line_add(ctx, CK_SEC_ABI, CK_FAIL,
                    "supports() claims what engine_abi.h leaves undefined: %s (the host never "
                    "sends these; supports() must answer for exactly what execute does)",
                    list);
    else
        ck_line_add(ctx, CK_SEC_ABI, CK_PASS,
                    "supports() claims nothing engine_abi.h leaves undefined");
}

/* The descriptor and supports() of unknowns (a job of isolate.c). */
void ck_abi_descriptor_one(ck_ctx *ctx, int i)
{
    (void)i;
    ck_doing("abi: descriptor and supports() of unknowns");
    descriptor(ctx);
    unknowns(ctx);
    undefined_claims(ctx);
}

void ck_run_abi(ck_ctx *ctx)
{
    ck_iso_group(ctx);
    ck_iso_check(ctx, CK_SEC_ABI, ck_abi_descriptor_one, 0,
                 "abi: descriptor and supports() of unknowns");
    file_name(ctx);
    if (ctx->refused || ctx->wrongly_refused)
        ck_line_add(ctx, CK_SEC_ABI, ctx->wrongly_refused ? CK_FAIL : CK_PASS,
                    "unclaimed combinations executed: %d refused with TF_ERR_UNSUPPORTED and "
                    "output memory untouched (the core refuses once supports() answers 0, so "
                    "the engine's execute never sees them); %d not refused properly",
                    ctx->refused, ctx->wrongly_refused);
    bad_call b;
    for (int i = 0; data_call(i, &b); i++) {
        char what[160];
        snprintf(what, sizeof what, "abi: %s", b.what);
        ck_iso_check(ctx, CK_SEC_ABI, ck_abi_data_error_one, i, what);
    }
    char first[512];
    int n = ck_logged_errors(first, sizeof first);
    if (n)
        ck_line_add(ctx, CK_SEC_ABI, CK_FAIL,
                    "%d error message(s) logged through host->log "
                    "during the checks; the first: %s",
                    n, first);
    else
        ck_line_add(ctx, CK_SEC_ABI, CK_PASS, "no error logged through host->log");
}
