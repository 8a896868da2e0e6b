/*
 * dp.c - data-parallel training (dp.h) on the ops of the tenferro.dist
 * module, called by name like any application would.
 *
 * Averaging (dp_average.c): the gradients are walked in order, one dtype at
 * a time, and packed into buckets of about bucket_bytes: each bucket is the
 * gradients copied once, scaled by 1/p, into one host buffer (dp_pack.c),
 * summed over the ranks by one all_reduce, and cut back into views of the
 * parameters' shapes (no copy). Every
 * collective runs under no-grad in a session of the helper's engine.
 */
#include <string.h>

#include "dp_internal.h"

/* A session of the helper under no-grad, and its end. */
typedef struct scope {
    tf_session *s;
    tf_scope guard;
    int guarded;
} scope;

static tf_status scope_begin(tf_dp *dp, scope *sc, const char *fn)
{
    memset(sc, 0, sizeof *sc);
    tf_status st = tf_session_begin(dp->rt, dp->engine, &sc->s);
    if (!st && !(st = tf_scope_begin_no_grad(dp->rt, &sc->guard)))
        sc->guarded = 1;
    return st ? tt_fail_core(st, "%s: session", fn) : TF_OK;
}

static void scope_end(scope *sc)
{
    if (sc->guarded)
        tf_scope_end(&sc->guard);
    tf_session_end(sc->s);
}

/* out = op(x, i) for a dist op taking a tensor and an i64. */
static tf_status call1(tf_session *s, const char *op, tf_eager *x, int64_t i, tf_eager **out,
                       const char *fn)
{
    tf_call_arg args[2] = {TF_ARG_TENSOR(x), TF_ARG_I64(i)};
    tf_status st = tf_session_call(s, op, args, 2, out, 1);
    return st ? tt_fail_core(st, "%s: %s", fn, op) : TF_OK;
}

TF_TRAIN_API tf_status tf_dp_create(tf_runtime *rt, tf_engine *engine, tf_dp **out)
{
    if (!rt || !engine || !out)
        return tt_fail(TF_ERR_VALIDATION, !rt ? "rt" : !engine ? "engine" : "out",
                       "dp_create: NULL argument");
    tf_extension_module *m = NULL;
    tf_epoch epoch;
    tf_status st = tf_extension_load("dist", &m);
    if (!st)
        st = tf_runtime_install_extension_module(rt, m, &epoch);
    if (st)
        return tt_fail_core(st, "dp_create: the tenferro.dist module");
    tf_dp *dp = tt_calloc(1, sizeof *dp);
    if (!dp)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "dp_create: out of memory");
    dp->rt = rt;
    dp->engine = engine;
    dp->bucket_bytes = TF_DP_DEFAULT_BUCKET_BYTES;
    scope sc;
    tf_eager *world = NULL;
    int64_t ws[2] = {0, 0};
    st = scope_begin(dp, &sc, "dp_create");
    if (!st && (st = tf_session_call(sc.s, "tenferro.dist.world", NULL, 0, &world, 1)))
        st = tt_fail_core(st, "dp_create: tenferro.dist.world");
    if (!st && (st = tf_tensor_copy_to_host(tf_eager_value(world), TF_I64, ws, 2)))
        st = tt_fail_core(st, "dp_create: reading the world");
    tf_eager_release(world);
    scope_end(&sc);
    if (st) {
        tt_free(dp);
        return st;
    }
    dp->rank = (int)ws[0];
    dp->size = (int)ws[1];
    tf_runtime_retain(rt);
    *out = dp;
    return TF_OK;
}

TF_TRAIN_API void tf_dp_destroy(tf_dp *dp)
{
    if (!dp)
        return;
    tf_runtime_release(dp->rt);
    tt_pack_release(dp->pack);
    tt_free(dp);
}

TF_TRAIN_API int tf_dp_rank(const tf_dp *dp)
{
    return dp->rank;
}

TF_TRAIN_API int tf_dp_size(const tf_dp *dp)
{
    return dp->size;
}

TF_TRAIN_API size_t tf_dp_last_buckets(const tf_dp *dp)
{
    return dp->last_buckets;
}

TF_TRAIN_API tf_status tf_dp_set_bucket_bytes(tf_dp *dp, size_t bytes)
{
    if (!dp || bytes == 0)
        return tt_fail(TF_ERR_VALIDATION, !dp ? "dp" : "bytes",
                       "dp_set_bucket_bytes: a bucket holds at least one byte");
    dp->bucket_bytes = bytes;
    return TF_OK;
}

TF_TRAIN_API tf_status tf_dp_all_reduce_scalar(tf_dp *dp, double value, int mean, double *out)
{
    if (!dp || !out)
        return tt_fail(TF_ERR_VALIDATION, !dp ? "dp" : "out", "dp_all_reduce_scalar: NULL");
    scope sc;
    tf_eager *x = NULL, *y = NULL;
    tf_status st = scope_begin(dp, &sc, "dp_all_reduce_scalar");
    if (!st && (st = tf_session_scalar(sc.s, TF_F64, value, &x)))
        st = tt_fail_core(st, "dp_all_reduce_scalar");
    if (!st)
        st = call1(sc.s, TT_DIST_ALL_REDUCE, x, mean ? 1 : 0, &y, "dp_all_reduce_scalar");
    double v = 0;
    if (!st && (st = tf_tensor_copy_to_host(tf_eager_value(y), TF_F64, &v, 1)))
        st = tt_fail_core(st, "dp_all_reduce_scalar");
    tf_eager_release(x);
    tf_eager_release(y);
    scope_end(&sc);
    if (!st)
        *out = v;
    return st;
}

/* ---- broadcasting the parameters ---- */

TF_TRAIN_API tf_status tf_dp_broadcast_params(tf_dp *dp, tf_optim *opt)
{
    if (!dp || !opt)
        return tt_fail(TF_ERR_VALIDATION, !dp ? "dp" : "opt", "dp_broadcast_params: NULL");
    size_t n = opt->n_params;
    tf_eager **got = tt_calloc(n ? n : 1, sizeof *got);
    if (!got)
        return tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "dp_broadcast_params: out of memory");
    scope sc;
    tf_status st = scope_begin(dp, &sc, "dp_broadcast_params");
    for (size_t i = 0; i < n && !st; i++)
        st = call1(sc.s, TT_DIST_BROADCAST, opt->params[i].var, 0, &got[i], "dp_broadcast_params");
    if (!st && (st = tf_engine_synchronize(dp->engine)))
        st = tt_fail_core(st, "dp_broadcast_params");
    scope_end(&sc);
    tf_eager **var = tt_calloc(n ? n : 1, sizeof *var);
    if (!st && !var)
        st = tt_fail(TF_ERR_OUT_OF_MEMORY, NULL, "dp_broadcast_params: out of memory");
    for (size_t i = 0; i < n && !st; i++)
        if ((st = tf_runtime_variable_from(opt->rt, tf_eager_value(got[i]), &var[i])))
            st = tt_fail_core(st, "dp_broadcast_params: parameter %zu", i);
    for (size_t i = 0; i < n; i++) {
        if (!st) { /* all made: publish */
            tf_eager_release(opt->params[i].var);
            opt->params[i].var = var[i];
        } else {
            tf_eager_release(var ? var[i] : NULL);
        }
        tf_eager_release(got[i]);
    }
    tt_free(var);
    tt_free(got);
    return st;
}
