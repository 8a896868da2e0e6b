/*
 * scope.c - per-thread no-grad and trace-capture scopes.
 *
 * Each thread keeps a small table of the runtimes it has scopes open on.
 * A thread with no scope open pays one thread-local load per op.
 *
 * A scope begun through the public calls holds a reference to its runtime
 * until tf_scope_end, so ending it after the caller released the runtime
 * is safe. The internal suspension (tf__suspend_begin/end) runs inside a
 * call that already holds the runtime and takes no reference.
 */
#include "runtime_internal.h"

#define MAX_SCOPED_RUNTIMES 16

enum {
    SCOPE_NO_GRAD = 1,
    SCOPE_CAPTURE = 2
};

typedef struct scope_entry {
    tf_context_id id;
    uint32_t no_grad;
    uint32_t capture;
} scope_entry;

static _Thread_local scope_entry t_entries[MAX_SCOPED_RUNTIMES];
static _Thread_local uint32_t t_count;

static scope_entry *find(tf_context_id id)
{
    for (uint32_t i = 0; i < t_count; i++)
        if (t_entries[i].id == id)
            return &t_entries[i];
    return NULL;
}

static scope_entry *find_or_add(tf_context_id id)
{
    scope_entry *e = find(id);
    if (e || t_count == MAX_SCOPED_RUNTIMES)
        return e;
    e = &t_entries[t_count++];
    *e = (scope_entry){id, 0, 0};
    return e;
}

static void drop_if_idle(scope_entry *e)
{
    if (e->no_grad || e->capture)
        return;
    *e = t_entries[--t_count];
}

bool tf__recording(const tf_runtime *rt)
{
    if (t_count == 0)
        return true;
    const scope_entry *e = find(rt->id);
    return !e || e->no_grad == 0;
}

bool tf__capturing(const tf_runtime *rt)
{
    if (t_count == 0)
        return false;
    const scope_entry *e = find(rt->id);
    return e && e->capture > 0 && e->no_grad == 0;
}

/* Opens one level of `kind` on rt for this thread; false when the table is full. */
static bool enter(tf_runtime *rt, uint32_t kind, uint32_t *depth_out)
{
    scope_entry *e = find_or_add(rt->id);
    if (!e)
        return false;
    uint32_t *depth = kind == SCOPE_NO_GRAD ? &e->no_grad : &e->capture;
    *depth_out = ++*depth;
    return true;
}

static void leave(tf_context_id id, uint32_t kind)
{
    scope_entry *e = find(id);
    if (!e)
        return;
    uint32_t *depth = kind == SCOPE_NO_GRAD ? &e->no_grad : &e->capture;
    if (*depth)
        --*depth;
    drop_if_idle(e);
}

static tf_status begin(tf_runtime *rt, tf_scope *scope, uint32_t kind, const char *op)
{
    if (!rt || !scope)
        return tf__error(TF_ERR_VALIDATION, op, rt ? "scope" : "runtime", "%s: NULL argument", op);
    uint32_t depth;
    if (!enter(rt, kind, &depth))
        return tf__error(TF_ERR_RUNTIME_STATE, op, NULL,
                         "%s: scopes are open on more than %d runtimes on this thread", op,
                         MAX_SCOPED_RUNTIMES);
    tf_runtime_retain(rt); /* released by tf_scope_end */
    *scope = (tf_scope){rt, kind, depth};
    return TF_OK;
}

TF_API tf_status tf_scope_begin_no_grad(tf_runtime *rt, tf_scope *scope)
{
    return begin(rt, scope, SCOPE_NO_GRAD, "no_grad");
}

TF_API tf_status tf_scope_begin_capture_trace(tf_runtime *rt, tf_scope *scope)
{
    return begin(rt, scope, SCOPE_CAPTURE, "capture_trace");
}

TF_API tf_status tf_runtime_no_grad(tf_runtime *rt, tf_scope *scope)
{
    return tf_scope_begin_no_grad(rt, scope);
}

TF_API tf_status tf_runtime_capture_trace(tf_runtime *rt, tf_scope *scope)
{
    return tf_scope_begin_capture_trace(rt, scope);
}

TF_API void tf_scope_end(tf_scope *scope)
{
    if (!scope || !scope->runtime)
        return;
    tf_runtime *rt = scope->runtime;
    scope->runtime = NULL; /* a second end is a no-op */
    leave(rt->id, scope->kind);
    tf_runtime_release(rt);
}

uint32_t tf__suspend_begin(tf_runtime *rt)
{
    uint32_t depth;
    return enter(rt, SCOPE_NO_GRAD, &depth) ? 1u : 0u;
}

void tf__suspend_end(tf_runtime *rt, uint32_t token)
{
    if (token)
        leave(rt->id, SCOPE_NO_GRAD);
}
