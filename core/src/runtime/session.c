/*
 * session.c - sessions: a runtime paired with a caller-held engine, and the
 * constants made through one.
 */
#include <string.h>

#include "runtime_internal.h"

TF_API tf_status tf_session_begin(tf_runtime *rt, tf_engine *engine, tf_session **out)
{
    if (!rt || !engine || !out)
        return tf__error(TF_ERR_VALIDATION, "session_begin",
                         !rt ? "runtime" : !engine ? "engine" : "out",
                         "session_begin: NULL argument");
    tf_session *s = tf__alloc(sizeof *s);
    if (!s)
        return tf__error(TF_ERR_OUT_OF_MEMORY, "session_begin", NULL, "out of memory");
    /* both outlive the session whatever the caller releases first */
    tf_runtime_retain(rt);
    tf__engine_retain(engine);
    *s = tf__session_make(rt, engine, rt->defer);
    *out = s;
    return TF_OK;
}

TF_API void tf_session_end(tf_session *s)
{
    if (!s)
        return;
    (void)tf__lazy_end(&s->lazy); /* a failure marks the batch's results lost */
    tf__engine_release(s->engine);
    tf_runtime_release(s->rt);
    tf__free(s);
}

TF_API tf_runtime *tf_session_runtime(const tf_session *s) { return s->rt; }
TF_API tf_engine *tf_session_engine(const tf_session *s) { return s->engine; }

TF_API tf_status tf_runtime_with_session(tf_runtime *rt, tf_engine *engine, tf_session_fn fn,
                                         void *user)
{
    if (!fn)
        return tf__error(TF_ERR_VALIDATION, "with_session", "fn", "with_session: fn is NULL");
    /* the session lives on the stack: nothing to allocate, nothing to lock */
    if (!rt || !engine)
        return tf__error(TF_ERR_VALIDATION, "with_session", rt ? "engine" : "runtime",
                         "with_session: NULL argument");
    tf_session s = tf__session_make(rt, engine, rt->defer);
    tf_status st = fn(&s, user);
    tf_status end = tf__lazy_end(&s.lazy);
    return st ? st : end;
}

TF_API tf_status tf_session_constant_from_host(tf_session *s, const tf_tensor *host,
                                               tf_eager **out)
{
    if (!s || !host || !out)
        return tf__error(TF_ERR_VALIDATION, "constant_from_host",
                         !s ? "session" : !host ? "tensor" : "out",
                         "constant_from_host: NULL argument");
    tf_tensor *dev;
    tf_status st = tf_engine_upload(s->engine, host, &dev);
    if (st)
        return st;
    tf_eager *x = tf__eager_new(s->rt, dev, false);
    tf_tensor_release(dev);
    if (!x)
        return TF_ERR_OUT_OF_MEMORY;
    *out = x;
    return TF_OK;
}

TF_API tf_status tf_session_full(tf_session *s, tf_dtype dtype, size_t rank,
                                 const int64_t *shape, double value, tf_eager **out)
{
    if (!s || !out)
        return tf__error(TF_ERR_VALIDATION, "full", s ? "out" : "session", "full: NULL argument");
    tf_tensor *t;
    tf_status st = tf_tensor_empty(s->engine, dtype, rank, shape, &t);
    if (st)
        return st;
    tf_fill_params p = {.struct_size = sizeof p, .value = tf__scalar_of(dtype, value)};
    if ((st = tf_engine_execute(s->engine, TF_PRIM_FILL, &p, 0, NULL, 1, &t))) {
        tf_tensor_release(t);
        return st;
    }
    tf_eager *x = tf__eager_new(s->rt, t, false);
    tf_tensor_release(t);
    if (!x)
        return TF_ERR_OUT_OF_MEMORY;
    *out = x;
    return TF_OK;
}

TF_API tf_status tf_session_scalar(tf_session *s, tf_dtype dtype, double value, tf_eager **out)
{
    return tf_session_full(s, dtype, 0, NULL, value, out);
}

TF_API tf_status tf_session_set_defer(tf_session *s, tf_defer_mode mode)
{
    if (!s)
        return tf__error(TF_ERR_VALIDATION, "session_set_defer", "session",
                         "session_set_defer: session is NULL");
    if ((unsigned)mode > TF_DEFER_ALWAYS)
        return tf__error(TF_ERR_VALIDATION, "session_set_defer", "mode",
                         "session_set_defer: unknown mode %d (expected TF_DEFER_OFF, "
                         "TF_DEFER_AUTO or TF_DEFER_ALWAYS)",
                         (int)mode);
    return tf__lazy_set_mode(&s->lazy, (uint8_t)mode);
}

TF_API tf_status tf_session_defer_stats(tf_session *s, tf_defer_stats *out)
{
    if (!s || !out)
        return tf__error(TF_ERR_VALIDATION, "session_defer_stats", s ? "out" : "session",
                         "session_defer_stats: NULL argument");
    tf__lazy_stats(&s->lazy, out);
    return TF_OK;
}
