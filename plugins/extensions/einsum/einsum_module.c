/*
 * einsum_module.c - the tenferro.einsum extension module: the composite op
 * einsum(subscripts, optimize, memory_limit, operands...), its plan cache in
 * the runtime's extension cache, the planner interface and the descriptor.
 *
 * A call: check the options and dtypes; look the plan up under (subscripts,
 * optimize, memory_limit, dtypes, shapes); on a miss parse, bind shapes,
 * find the path (every intermediate within TF_MAX_RANK axes and the memory
 * limit), build the plan and store it; then run it (einsum_exec.c). The
 * op's derivatives are those of the DOT_GENERALs, views and sums it runs,
 * which are pairwise einsums again, so every order of derivative works and
 * reuses the forward intermediates the tape holds.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "einsum_internal.h"

/* ---- the op ---- */

static tf_status report(const tf_ext_rule_ctx *ctx, const ein_err *e)
{
    return ctx->report_argument(ctx, e->status, e->arg, e->message);
}

static tf_status check_call(const tf_ext_rule_ctx *ctx, const tf_ext_call *call, ein_err *e)
{
    int64_t opt = call->scalars[0].i;
    double mem = call->scalars[1].f;
    if (opt < TF_EINSUM_AUTO || opt > TF_EINSUM_SEARCH)
        return ein_fail(e, TF_ERR_VALIDATION, EIN_ARG_OPTIMIZE, -1, -1,
                        "optimize %lld is not a tf_einsum_optimize (0 auto, 1 optimal, 2 dp, "
                        "3 greedy, 4 search)",
                        (long long)opt);
    if (!(mem >= 0) || isinf(mem))
        return ein_fail(e, TF_ERR_VALIDATION, EIN_ARG_MEMORY, -1, -1,
                        "memory_limit must be a finite number of elements >= 0 (0: none), got %g",
                        mem);
    const tf_ext_ops *o = ctx->ops;
    for (uint32_t i = 0; i < call->n_tensors; i++) {
        uint32_t d = o->dtype(call->tensors[i]), d0 = o->dtype(call->tensors[0]);
        if (d != TF_F32 && d != TF_F64 && d != TF_I32 && d != TF_I64)
            return ein_fail(e, TF_ERR_DTYPE_MISMATCH, EIN_ARG_OPERANDS, -1, i,
                            "operand %u has dtype %s; einsum takes f32, f64, i32 or i64", i,
                            tf_dtype_name((tf_dtype)d));
        if (d != d0)
            return ein_fail(e, TF_ERR_DTYPE_MISMATCH, EIN_ARG_OPERANDS, -1, i,
                            "operand %u has dtype %s and operand 0 dtype %s; einsum needs one "
                            "dtype",
                            i, tf_dtype_name((tf_dtype)d), tf_dtype_name((tf_dtype)d0));
    }
    return TF_OK;
}

/* The cache key: options, dtypes, shapes, then the subscripts' bytes. */
static void *make_key(const ein_mem *m, const tf_ext_rule_ctx *ctx, const tf_ext_call *call,
                      size_t *size)
{
    const tf_ext_ops *o = ctx->ops;
    const char *s = call->strings[0];
    size_t len = strlen(s), n = call->n_tensors, words = 4 + n * (2 + TF_MAX_RANK);
    int64_t *k = ein_calloc(m, words * sizeof(int64_t) + len, 1);
    if (!k)
        return NULL;
    k[0] = 0x65696e73756d6b31ll; /* "einsumk1" */
    k[1] = call->scalars[0].i;
    memcpy(&k[2], &call->scalars[1].f, sizeof(double));
    k[3] = (int64_t)n;
    for (size_t i = 0; i < n; i++) {
        int64_t *e = k + 4 + i * (2 + TF_MAX_RANK);
        e[0] = o->dtype(call->tensors[i]);
        e[1] = o->rank(call->tensors[i]);
        for (uint32_t a = 0; a < e[1] && a < TF_MAX_RANK; a++)
            e[2 + a] = o->extent(call->tensors[i], a);
    }
    memcpy(k + words, s, len);
    *size = words * sizeof(int64_t) + len;
    return k;
}

typedef struct copy_out {
    ein_plan *plan;
    size_t size;
    bool got;
} copy_out;

static void copy_plan(const void *value, size_t size, void *user)
{
    copy_out *c = user;
    uint32_t magic = 0;
    if (size >= sizeof magic)
        memcpy(&magic, value, sizeof magic);
    if (size == c->size && magic == EIN_PLAN_MAGIC) {
        memcpy(c->plan, value, size);
        c->got = true;
    }
}

static size_t plan_bytes(uint32_t n)
{
    return sizeof(ein_plan) + n * sizeof(ein_prep) + (n - 1) * sizeof(ein_step);
}

/* Makes the plan of a call: parse, bind shapes, find the path, lay it out. */
static tf_status make_plan(const tf_ext_rule_ctx *ctx, const ein_mem *m, const tf_ext_call *call,
                           ein_plan **out, ein_err *e)
{
    uint32_t n = call->n_tensors;
    uint32_t *rk = ein_calloc(m, n, sizeof *rk);
    int64_t *shape = ein_calloc(m, (size_t)n * TF_MAX_RANK, sizeof *shape);
    const int64_t **shapes = ein_calloc(m, n, sizeof *shapes);
    tf_status st = TF_OK;
    if (!rk || !shape || !shapes)
        st = ein_fail(e, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    for (uint32_t i = 0; !st && i < n; i++) {
        rk[i] = ctx->ops->rank(call->tensors[i]);
        shapes[i] = shape + (size_t)i * TF_MAX_RANK;
        for (uint32_t a = 0; a < rk[i]; a++)
            shape[(size_t)i * TF_MAX_RANK + a] = ctx->ops->extent(call->tensors[i], a);
    }
    ein_problem p;
    if (!st && !(st = ein_problem_init(m, call->strings[0], n, rk, shapes, &p, e))) {
        ein_limits lim = {call->scalars[1].f, TF_MAX_RANK, 0, 0};
        ein_path path = {0, NULL, 0, 0, 0};
        st = ein_find_path(m, &p.net, (uint32_t)call->scalars[0].i, &lim, &path, e);
        if (!st)
            st = ein_plan_build(m, &p, &path, out, e);
        ein_free(m, path.steps);
        ein_problem_free(m, &p);
    }
    ein_free(m, rk);
    ein_free(m, shape);
    ein_free(m, shapes);
    return st;
}

/* The plan of a call, from the cache or made now (and stored); free with ein_free. */
static tf_status get_plan(const tf_ext_rule_ctx *ctx, const ein_mem *m, const tf_ext_call *call,
                          ein_plan **out, ein_err *e)
{
    size_t key_size = 0, bytes = plan_bytes(call->n_tensors);
    void *key = make_key(m, ctx, call, &key_size);
    copy_out c = {ein_calloc(m, 1, bytes), bytes, false};
    if (!key || !c.plan) {
        ein_free(m, key);
        ein_free(m, c.plan);
        return ein_fail(e, TF_ERR_OUT_OF_MEMORY, EIN_ARG_SUBSCRIPTS, -1, -1, "out of memory");
    }
    tf_status st = TF_OK;
    if (!ctx->cache_get(ctx, key, key_size, copy_plan, &c)) {
        ein_free(m, c.plan);
        c.plan = NULL;
        st = make_plan(ctx, m, call, &c.plan, e);
        if (!st && (st = ctx->cache_put(ctx, key, key_size, c.plan, c.plan->size)))
            e->status = 0; /* recorded by the host */
    }
    ein_free(m, key);
    if (st) {
        ein_free(m, c.plan);
        return st;
    }
    *out = c.plan;
    return TF_OK;
}

static tf_status einsum_compose(const tf_ext_rule_ctx *ctx, const tf_ext_call *call,
                                tf_ext_tensor **outputs)
{
    ein_err e;
    memset(&e, 0, sizeof e);
    if (!TF_ABI_HAS_FIELD(ctx, tf_ext_rule_ctx, cache_put) ||
        !TF_ABI_HAS_FIELD(ctx->ops, tf_ext_ops, dot_general)) {
        ctx->host->report_error(ctx->host->ctx, TF_ERR_UNSUPPORTED,
                                "tenferro.einsum.einsum needs extension ABI 1.2");
        return TF_ERR_UNSUPPORTED;
    }
    if (call->n_tensors == 0) {
        ein_fail(&e, TF_ERR_VALIDATION, EIN_ARG_OPERANDS, -1, -1,
                 "einsum needs at least one operand");
        return report(ctx, &e);
    }
    tf_status st = check_call(ctx, call, &e);
    if (st)
        return report(ctx, &e);
    ein_mem m = ein_mem_host(ctx->host);
    ein_plan *plan = NULL;
    if ((st = get_plan(ctx, &m, call, &plan, &e)))
        return e.status ? report(ctx, &e) : st; /* an ops-table failure is already recorded */
    st = ein_execute(ctx, plan, call->tensors, &outputs[0]);
    ein_free(&m, plan);
    return st;
}

/* ---- the planner interface ---- */

static void copy_error(const ein_err *e, tf_einsum_error *out)
{
    if (!out || out->struct_size < sizeof *out)
        return;
    out->position = e->position;
    out->operand = e->operand;
    snprintf(out->message, sizeof out->message, "%s", e->message);
}

static tf_status check_planner_args(const char *subscripts, size_t n, const uint32_t *ranks,
                                    const int64_t *const *shapes, tf_einsum_path **out, ein_err *e)
{
    if (!subscripts || !out || (n && (!ranks || !shapes)))
        return ein_fail(e, TF_ERR_VALIDATION, EIN_ARG_SUBSCRIPTS, -1, -1, "einsum path: NULL %s",
                        !subscripts ? "subscripts"
                        : !out      ? "out"
                                    : "ranks/shapes");
    if (n > TF_EXT_MAX_LIST)
        return ein_fail(e, TF_ERR_VALIDATION, EIN_ARG_OPERANDS, -1, -1,
                        "einsum path: %zu operands, at most %d", n, TF_EXT_MAX_LIST);
    for (size_t i = 0; i < n; i++) {
        if (ranks[i] > TF_MAX_RANK || (ranks[i] && !shapes[i]))
            return ein_fail(e, TF_ERR_VALIDATION, EIN_ARG_OPERANDS, -1, (int64_t)i,
                            "einsum path: operand %zu: rank %u (at most %d) or NULL shape", i,
                            ranks[i], TF_MAX_RANK);
        for (uint32_t a = 0; a < ranks[i]; a++)
            if (shapes[i][a] < 0)
                return ein_fail(e, TF_ERR_VALIDATION, EIN_ARG_OPERANDS, -1, (int64_t)i,
                                "einsum path: operand %zu has a negative extent", i);
    }
    return TF_OK;
}

static tf_status planner_path(const char *subscripts, size_t n, const uint32_t *ranks,
                              const int64_t *const *shapes, const tf_einsum_options *opt,
                              tf_einsum_path **out, tf_einsum_error *error)
{
    const ein_mem *m = ein_mem_libc();
    ein_err e;
    memset(&e, 0, sizeof e);
    e.position = e.operand = -1;
    tf_status st = check_planner_args(subscripts, n, ranks, shapes, out, &e);
    tf_einsum_options o = {sizeof o, TF_EINSUM_AUTO, 0, 0, 0, 0, 0};
    if (!st && opt)
        memcpy(&o, opt, opt->struct_size < sizeof o ? opt->struct_size : sizeof o);
    if (!st && (!(o.memory_limit >= 0) || isinf(o.memory_limit) || !(o.search_seconds >= 0)))
        st = ein_fail(&e, TF_ERR_VALIDATION, EIN_ARG_MEMORY, -1, -1,
                      "einsum path: memory_limit and search_seconds must be finite and >= 0");
    ein_problem p;
    bool have_problem = false;
    if (!st) {
        st = ein_problem_init(m, subscripts, (uint32_t)n, ranks, shapes, &p, &e);
        have_problem = st == TF_OK;
    }
    ein_path path = {0, NULL, 0, 0, 0};
    ein_limits lim = {o.memory_limit, o.max_rank, o.search_seconds, o.seed};
    if (!st)
        st = ein_find_path(m, &p.net, o.optimize, &lim, &path, &e);
    if (!st)
        st = ein_describe(m, &p, &path, out, &e);
    ein_free(m, path.steps);
    if (have_problem)
        ein_problem_free(m, &p);
    if (st)
        copy_error(&e, error);
    return st;
}

static void planner_path_free(tf_einsum_path *path)
{
    ein_free(ein_mem_libc(), path);
}

static tf_status planner_format(const tf_einsum_path *path, int json, char **text)
{
    if (!path || !text)
        return TF_ERR_VALIDATION;
    return ein_format(ein_mem_libc(), path, json, text);
}

static void planner_text_free(char *text)
{
    ein_free(ein_mem_libc(), text);
}

static const tf_einsum_planner k_planner = {
    sizeof(tf_einsum_planner), 0, planner_path, planner_path_free, planner_format,
    planner_text_free,
};

static const void *get_interface(const char *name)
{
    return name && strcmp(name, TF_EINSUM_PLANNER_V1) == 0 ? &k_planner : NULL;
}

/* ---- the descriptor ---- */

static const uint32_t k_kinds[] = {TF_EXT_ARG_STRING, TF_EXT_ARG_I64, TF_EXT_ARG_F64,
                                   TF_EXT_ARG_TENSORS};
static const char *const k_names[] = {"subscripts", "optimize", "memory_limit", "operands"};

static const tf_ext_op k_einsum = {
    .struct_size = sizeof(tf_ext_op),
    .n_args = 4,
    .n_outputs = 1,
    .name = "einsum",
    .arg_kinds = k_kinds,
    .arg_names = k_names,
    .doc = "NumPy's einsum over DOT_GENERAL steps along an optimised contraction path",
    .compose = einsum_compose,
};

static tf_status install(const tf_host_api *host, const tf_ext_registrar *reg)
{
    (void)host;
    return reg->add_op(reg->candidate, &k_einsum);
}

static const tf_extension_module_desc k_desc = {
    .struct_size = sizeof(tf_extension_module_desc),
    .abi_major = TF_EXTENSION_ABI_MAJOR,
    .abi_minor = TF_EXTENSION_ABI_MINOR,
    .id = TF_EINSUM_MODULE_ID,
    .version = "1.0.0",
    .description = "NumPy einsum with optimised contraction paths (optimal, dp, greedy, search), "
                   "cached plans, any engine, derivatives of any order",
    .install = install,
    .get_interface = get_interface,
};

TF_EXTENSION_EXPORT const tf_extension_module_desc *
tf_extension_module_v1(const tf_host_api *host, uint32_t abi_major, uint32_t abi_minor);

TF_EXTENSION_EXPORT const tf_extension_module_desc *
tf_extension_module_v1(const tf_host_api *host, uint32_t abi_major, uint32_t abi_minor)
{
    (void)abi_minor;
    /* composites need a host of minor 2 or later; an older one refuses the
       op at install (it has no kernel), which says so */
    return abi_major == TF_EXTENSION_ABI_MAJOR && host ? &k_desc : NULL;
}
