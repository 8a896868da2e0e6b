/*
 * tenferro/runtime.h - the eager runtime: runtimes, sessions, scopes, eager
 * tensors, the tape, and automatic differentiation (reverse and forward
 * mode, to any order).
 *
 * This header is the specification of these calls; tenferro.h gives the
 * overview and a complete program, docs/runtime.md the background. The API
 * is the C form of the seed specification, the `EagerRuntime` API of the
 * Rust crate tenferro-ad: "seed: EagerRuntime::grad" names the method a
 * function corresponds to, for readers who know the seed.
 *
 * ---- Objects -----------------------------------------------------------
 *
 *   tf_runtime     Refcounted and thread-safe. Holds the grad slots of its
 *                  variables, the prepared-derivative cache, the extension
 *                  modules installed in it (with their caches and the
 *                  registry epoch) and a reference to its AD context. It
 *                  holds no engine. Every eager tensor, session and open
 *                  scope of a runtime holds a reference to it, so the
 *                  application may release its own at any time.
 *   tf_ad_context  Refcounted. The AD-transform cache (what derivative
 *                  rules derive from an op's attributes), shareable by
 *                  runtimes.
 *   tf_session     A runtime paired with an engine, used by one thread at
 *                  a time. Every op of ops.h is issued through one and
 *                  computed on its engine. Not refcounted: begun and ended.
 *   tf_eager       Refcounted, immutable. A value (a tf_tensor) of one
 *                  runtime, the op that produced it with references to its
 *                  inputs when that op was recorded, and for a variable a
 *                  grad slot.
 *   tf_scope       A no-grad or trace-capture scope of the calling thread,
 *                  a struct the caller owns (usually on its stack).
 *
 * ---- The tape ----------------------------------------------------------
 *
 * A variable is tracked. An op issued through a session records a node in
 * its result - the op, its attributes and references to its inputs - when
 * recording is on for the calling thread (no no-grad scope open on the
 * runtime) and one of its inputs is tracked; the result is then tracked too.
 * Results of ops on untracked inputs are untracked and unrecorded, unless a
 * trace-capture scope is open. Releasing the last reference to a result
 * frees the part of the graph only it kept alive. Derivatives walk back from
 * an output through the recorded nodes; every rule is written with session
 * ops, so with recording on a derivative is recorded in turn and can be
 * differentiated again.
 *
 * ---- Conventions of this header ----------------------------------------
 *
 * Ownership: pointer arguments are borrowed for the call unless a comment
 * says "retained"; a tf_eager* or tf_tensor* written through an
 * out-parameter is one new reference transferred to the caller (release it
 * with tf_eager_release / tf_tensor_release).
 *
 * Errors: "Errors:" lists every status a call returns, with the name that
 * tf_error_argument() gives in quotes where one is reported (these are the
 * names the library reports, which are not always the C parameter's: the
 * runtime is "runtime", an eager tensor of tf_eager_* is "tensor"). Every
 * function returning a tf_status writes its out-parameters only on success
 * and, unless its comment says otherwise, changes nothing on failure.
 * "Engine errors" are the statuses an engine plugin returns from a
 * computation (TF_ERR_BACKEND, TF_ERR_OUT_OF_MEMORY, TF_ERR_UNSUPPORTED,
 * TF_ERR_DEVICE_LOST, TF_ERR_VALIDATION for e.g. an integer division by
 * zero, TF_ERR_OUT_OF_RANGE ...), with the plugin's report as
 * tf_error_cause(), and the core's checks of a primitive call (engine.h,
 * tf_engine_execute), among them TF_ERR_PLACEMENT for a value the engine
 * cannot read.
 *
 * Threads: a runtime may be used from any number of threads at once; ops
 * on independent graphs never contend for a lock. A session is used by one
 * thread at a time, as its engine is; so is the `engine` argument of the
 * derivative calls for the duration of the call. Eager tensors are
 * immutable and may be read, shared and released on any thread; concurrent
 * backward calls that accumulate into one variable's grad slot lose
 * nothing. No-grad and trace-capture scopes are per thread and nest.
 */
#ifndef TENFERRO_RUNTIME_H
#define TENFERRO_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tf_runtime tf_runtime;
typedef struct tf_ad_context tf_ad_context;
typedef struct tf_session tf_session;
typedef struct tf_eager tf_eager;
typedef struct tf_extension_module tf_extension_module;

/* Opaque identifier of a runtime (seed: ContextId). Never 0, never reused
   within a process. */
typedef uint64_t tf_context_id;

/* Registry epoch (seed: RuntimeEpoch): 0 for a new runtime, one more for
   every extension-module install it publishes. */
typedef uint64_t tf_epoch;

/* Retention limits of a cache (seed: AdTransformCacheLimits). */
typedef struct tf_cache_limits {
    size_t max_entries; /* > 0 */
    size_t max_bytes;   /* 0: no byte limit */
} tf_cache_limits;

/* Counters of one cache, since the cache was made. */
typedef struct tf_cache_stats {
    size_t entries;        /* entries held now */
    size_t retained_bytes; /* their size, bookkeeping included */
    uint64_t hits;
    uint64_t misses;
    uint64_t evictions; /* entries dropped to keep within the limits */
    uint64_t clears;    /* clear calls */
} tf_cache_stats;

/* The caches of one runtime (seed: EagerRuntimeCacheStats). */
typedef struct tf_runtime_stats {
    tf_cache_stats ad_transforms;        /* the AD context's, shared by its runtimes */
    tf_cache_stats prepared_derivatives; /* the runtime's own */
    tf_cache_stats extensions;           /* sum of the runtime's per-module caches */
} tf_runtime_stats;

/*
 * A scope guard (no-grad or trace capture), filled by tf_scope_begin_no_grad or
 * tf_scope_begin_capture_trace and ended with tf_scope_end. The caller owns the
 * struct and keeps it until it is ended; the fields are the library's (the
 * runtime it holds a reference to, NULL once ended; the kind; the nesting
 * depth it opened).
 */
typedef struct tf_scope {
    tf_runtime *runtime;
    uint32_t kind;
    uint32_t depth;
} tf_scope;

/* ===================================================================== */
/* AD context                                                             */
/* ===================================================================== */

/*
 * Creates an AD context with an empty AD-transform cache (default limits:
 * 1024 entries, no byte limit). *out holds the only reference; release it
 * with tf_ad_context_release. Any thread.
 * Errors: TF_ERR_VALIDATION ("out": NULL), TF_ERR_OUT_OF_MEMORY,
 * TF_ERR_RUNTIME_STATE (the cache's lock cannot be made).
 * seed: AdContext::builder().build()
 */
tf_status tf_ad_context_create(tf_ad_context **out);

/* Adds a reference to `ad`. NULL is a no-op. Any thread. */
void tf_ad_context_retain(tf_ad_context *ad);

/* Drops a reference; the last one frees the context and its cache (every
   runtime using it holds one). NULL is a no-op. Any thread. */
void tf_ad_context_release(tf_ad_context *ad);

/* ===================================================================== */
/* Runtime                                                                */
/* ===================================================================== */

/*
 * Creates a runtime with an AD context of its own and the default cache
 * limits (AD transforms: 1024 entries; prepared derivatives: 256 entries;
 * each extension module's cache: 256 entries; no byte limits). *out holds
 * the only reference (tf_runtime_ref_count 1); release it with
 * tf_runtime_release.
 * Its sessions begin in the deferral mode the environment variable
 * TENFERRO_DEFER names (off, auto, always; unset or empty: auto), read by
 * this call (see tf_defer_mode).
 * Threads: any thread; the environment must not change during the call.
 * Errors: TF_ERR_VALIDATION ("out": NULL), TF_ERR_CONFIG (TENFERRO_DEFER
 * has another value), TF_ERR_OUT_OF_MEMORY, TF_ERR_RUNTIME_STATE (a lock
 * or cache cannot be made; the cause is kept in the message).
 * seed: EagerRuntime::new
 */
tf_status tf_runtime_create(tf_runtime **out);

/*
 * As tf_runtime_create, with the AD context `ad` (retained: the runtime
 * holds a reference until it is freed) instead of a new one, so that
 * runtimes share its AD-transform cache.
 * Errors: TF_ERR_VALIDATION ("ad" or "out": NULL), and those of
 * tf_runtime_create; `ad` is not retained on error.
 * seed: EagerRuntime::with_ad_context
 */
tf_status tf_runtime_create_with_ad_context(tf_ad_context *ad, tf_runtime **out);

/* Adds a reference to `rt`. NULL is a no-op. Any thread. */
void tf_runtime_retain(tf_runtime *rt);

/*
 * Drops a reference. The runtime is freed with the last one - its own
 * caches, installed modules and its reference to the AD context - which is
 * never while an eager tensor, session or open scope of it exists (each
 * holds a reference). NULL is a no-op. Any thread.
 */
void tf_runtime_release(tf_runtime *rt);

/* The current number of references to rt (seed: Arc::strong_count),
   counting those of its eager tensors, sessions and scopes; for
   diagnostics only, as other threads may change it. rt must not be NULL.
   Any thread. */
size_t tf_runtime_ref_count(const tf_runtime *rt);

/* rt's identifier, distinct for every runtime made in this process.
   rt must not be NULL. Any thread. seed: EagerRuntime::id */
tf_context_id tf_runtime_id(const tf_runtime *rt);

/* rt's current registry epoch (see tf_epoch). rt must not be NULL. Any
   thread. */
tf_epoch tf_runtime_epoch(const tf_runtime *rt);

/*
 * Begins a no-grad scope on the calling thread: until tf_scope_end(scope),
 * ops issued on this thread through sessions of `rt` record nothing (their
 * results are untracked), and so do the functional derivatives
 * (tf_runtime_grad, _vjp, _jvp) of rt computed on this thread. Other
 * threads and other runtimes are unaffected. Scopes nest (with each other
 * and with trace-capture scopes) and must end in the reverse order, on the
 * thread that began them. At most 16 runtimes may have scopes open on one
 * thread at a time; the depth per runtime is unbounded.
 * Ownership: *scope is filled in and holds a reference to `rt` until
 * tf_scope_end, so the caller may release its own reference first.
 * Threads: any thread; the scope belongs to that thread.
 * Errors: TF_ERR_VALIDATION ("runtime" or "scope": NULL),
 * TF_ERR_RUNTIME_STATE (scopes already open on 16 other runtimes on this
 * thread); *scope is then unchanged and no scope is open.
 * seed: EagerRuntime::no_grad
 */
tf_status tf_scope_begin_no_grad(tf_runtime *rt, tf_scope *scope);

/*
 * Begins a trace-capture scope on the calling thread: until
 * tf_scope_end(scope), ops issued on this thread through sessions of `rt`
 * whose inputs are all untracked are recorded too (their results stay
 * untracked), so the functional forms (tf_runtime_grad, _vjp, _jvp) can
 * differentiate with respect to any tensor of the captured trace, constants
 * and intermediates included. tf_eager_backward still only accumulates into
 * variables. Inside a no-grad scope nothing is recorded either way.
 * Nesting, ownership, threads and errors as tf_scope_begin_no_grad.
 * seed: EagerRuntime::capture_trace (EagerTraceCaptureGuard)
 */
tf_status tf_scope_begin_capture_trace(tf_runtime *rt, tf_scope *scope);

/* The names tf_scope_begin_no_grad and tf_scope_begin_capture_trace had
   before the lifecycle vocabulary (tenferro.h); kept so that older callers
   build. */
tf_status tf_runtime_no_grad(tf_runtime *rt, tf_scope *scope);
tf_status tf_runtime_capture_trace(tf_runtime *rt, tf_scope *scope);

/*
 * Ends a scope begun by tf_scope_begin_no_grad or tf_scope_begin_capture_trace and
 * drops its reference to the runtime (which frees the runtime if it was the
 * last). NULL, a scope already ended, or a zero-initialised scope (so that
 * `tf_scope sc = {0};` may be ended on every path) is a no-op; any other
 * struct must come from a successful begin. Call it on the thread
 * that began the scope: ended on another thread, the reference is dropped
 * but the scope stays in effect on the thread that began it.
 */
void tf_scope_end(tf_scope *scope);

/*
 * Installs the extension module `module` in rt's registry, replacing the
 * module of the same id if one is installed, and sets *epoch to the epoch
 * at which its ops are visible. Installing the instance already installed
 * is a read-only no-op that sets *epoch to the current epoch without taking
 * the install lock. Any other install is transactional: the module's
 * declared error kinds are checked, then its install hook fills a candidate
 * registry whose ops and AD rules are validated, and which is published
 * whole (the epoch then grows by one) or discarded.
 * Ownership: `module` is owned by the process (extension.h), `rt` is
 * borrowed; the registry keeps a pointer to the module.
 * Threads: any thread; installs into one runtime are serialised by one
 * lock, while ops and by-name calls go on without it.
 * Errors: TF_ERR_VALIDATION ("runtime", "module" or "epoch": NULL;
 * "error_kinds": the module's declared error kinds are malformed),
 * TF_ERR_RUNTIME_STATE (an op the hook added is invalid - a duplicate
 * name, a malformed op - naming "module", with the first problem as the
 * cause; or the hook itself failed, with the module's report as the
 * cause), TF_ERR_OUT_OF_MEMORY.
 * On error the registry and its epoch are unchanged.
 * seed: EagerRuntime::install_extension_module
 */
tf_status tf_runtime_install_extension_module(tf_runtime *rt, tf_extension_module *module,
                                              tf_epoch *epoch);

/*
 * Empties every cache of rt: its prepared-derivative cache, its extension
 * modules' caches, and the AD-transform cache of its AD context (shared by
 * every runtime of that context). Each cache counts one clear. Later
 * derivatives and calls rebuild what they need; results do not change.
 * Any thread. Errors: TF_ERR_VALIDATION ("runtime": NULL).
 * seed: EagerRuntime::clear_caches
 */
tf_status tf_runtime_clear_caches(tf_runtime *rt);

/* Empties rt's prepared-derivative cache only. Any thread.
   Errors: TF_ERR_VALIDATION ("runtime": NULL).
   seed: EagerRuntime::clear_prepared_derivative_cache */
tf_status tf_runtime_clear_prepared_derivative_cache(tf_runtime *rt);

/* Empties the AD-transform cache of rt's AD context (shared by every runtime
   of that context). Any thread. Errors: TF_ERR_VALIDATION ("runtime": NULL).
   seed: EagerRuntime::clear_ad_transform_caches */
tf_status tf_runtime_clear_ad_transform_caches(tf_runtime *rt);

/* Copies the counters of rt's caches into *out (see tf_runtime_stats); each
   cache is read atomically, the three one after the other. Any thread.
   Errors: TF_ERR_VALIDATION ("runtime" or "out": NULL).
   seed: EagerRuntime::cache_stats */
tf_status tf_runtime_cache_stats(tf_runtime *rt, tf_runtime_stats *out);

/* Copies the limits of the AD-transform cache of rt's AD context into *out.
   Any thread. Errors: TF_ERR_VALIDATION ("runtime" or "out": NULL).
   seed: EagerRuntime::ad_transform_cache_limits */
tf_status tf_runtime_ad_transform_cache_limits(tf_runtime *rt, tf_cache_limits *out);

/*
 * Sets the limits of the AD-transform cache of rt's AD context (copied from
 * *limits; they apply to every runtime of that context). Limits lower than
 * the cache's contents evict its least recently used entries at once.
 * Any thread. Errors: TF_ERR_VALIDATION ("runtime": NULL; "limits": NULL,
 * or max_entries 0); the limits are then unchanged.
 * seed: EagerRuntime::set_ad_transform_cache_limits
 */
tf_status tf_runtime_set_ad_transform_cache_limits(tf_runtime *rt, const tf_cache_limits *limits);

/* Copies the limits of rt's prepared-derivative cache into *out. Any thread.
   Errors: TF_ERR_VALIDATION ("runtime" or "out": NULL).
   seed: EagerRuntime::prepared_derivative_cache_limits */
tf_status tf_runtime_prepared_derivative_cache_limits(tf_runtime *rt, tf_cache_limits *out);

/* Sets the limits of rt's prepared-derivative cache, as
   tf_runtime_set_ad_transform_cache_limits does for its cache; the same
   errors. seed: EagerRuntime::set_prepared_derivative_cache_limits */
tf_status tf_runtime_set_prepared_derivative_cache_limits(tf_runtime *rt,
                                                          const tf_cache_limits *limits);

/* ===================================================================== */
/* Sessions                                                               */
/* ===================================================================== */

/* The callback of tf_runtime_with_session; its status is returned unchanged. */
typedef tf_status (*tf_session_fn)(tf_session *session, void *user);

/*
 * Runs fn(session, user) on the calling thread with a session pairing `rt`
 * with `engine`, and ends the session when fn returns: the session pointer
 * is valid only during fn. The session itself lives on the call's stack:
 * nothing is allocated for it and nothing is locked. It begins in rt's
 * deferral mode, and its end runs whatever deferred work is open.
 * Ownership: rt, engine and user are borrowed for the call (they must stay
 * valid while fn runs); eager tensors fn makes belong to rt and outlive the
 * session.
 * Threads: the engine must be used by this thread alone during the call.
 * Returns: TF_ERR_VALIDATION ("fn", "runtime" or "engine": NULL; fn is then
 * not called); otherwise fn's status when it failed (the deferred work is
 * still run, and its results are lost if that fails too), or else the
 * status of the deferred work run at the end (engine errors, see
 * "Deferred elementwise chains").
 * seed: EagerRuntime::with_eager_session
 */
tf_status tf_runtime_with_session(tf_runtime *rt, tf_engine *engine, tf_session_fn fn,
                                  void *user);

/*
 * Begins a session pairing `rt` with `engine`, for C callers who prefer a
 * begin/end pair to tf_runtime_with_session. The session begins in rt's
 * deferral mode (see tf_session_set_defer).
 * Ownership: *out is a new session, owned by the caller until
 * tf_session_end. It holds a reference to `rt` and to `engine` until then,
 * so either may be released (tf_runtime_release, tf_engine_destroy) before
 * the session ends.
 * Threads: the session is used by one thread at a time - normally the one
 * that began it - as its engine is.
 * Errors: TF_ERR_VALIDATION ("runtime", "engine" or "out": NULL),
 * TF_ERR_OUT_OF_MEMORY.
 */
tf_status tf_session_begin(tf_runtime *rt, tf_engine *engine, tf_session **out);

/*
 * Ends a session: runs its open deferred work, drops its references to the
 * runtime and the engine (which may free them) and frees it. Eager tensors
 * made through it stay valid: they belong to the runtime. A failure of the
 * deferred work cannot be returned here: the results of that work are lost
 * (reading one fails with TF_ERR_BACKEND); to see such a failure, call
 * tf_engine_synchronize or tf_session_set_defer(session, TF_DEFER_OFF)
 * first. NULL is a no-op. On the thread that uses the session.
 */
void tf_session_end(tf_session *session);

/* The session's runtime, borrowed: valid while the session lasts (retain it
   to keep it longer). session must not be NULL. */
tf_runtime *tf_session_runtime(const tf_session *session);

/* The session's engine, borrowed: valid while the session lasts. session
   must not be NULL. */
tf_engine *tf_session_engine(const tf_session *session);

/*
 * Deferred elementwise chains (docs/runtime.md, "Deferred elementwise
 * chains"). A session's unary and binary float ops of one shape and dtype,
 * issued back to back, are collected into a batch and run as one fused
 * engine call when a result is first read (by any op, a transfer,
 * tf_tensor_data, ...), at tf_engine_synchronize, when the session's mode
 * turns deferral off, or at the session's end; results released before
 * then are never computed. A reduction of one of those results waits with
 * them and runs right after (so only its input needs writing). The op
 * itself still checks its arguments and allocates its result when issued,
 * so those errors are the op's. Values and gradients are the same bits as
 * with deferral off. An engine failure surfaces at whichever call ran the
 * batch, and the batch's results read later fail with TF_ERR_BACKEND.
 * Only engines that run TF_PRIM_FUSED defer anything, and only memory of
 * the session's engine joins a batch (the application's wrapped host
 * memory never does). Derivatives (backward, vjp, jvp) defer their own
 * elementwise work in the runtime's mode (TENFERRO_DEFER) and run it before
 * they return: an engine failure there fails the derivative, with nothing
 * published.
 */
typedef enum tf_defer_mode {
    TF_DEFER_OFF = 0,    /* every op runs when issued */
    TF_DEFER_AUTO = 1,   /* the default: on engines that ask for it
                            (TF_ENGINE_CAP_DEFER_CHAINS, e.g. the CPU engine), ops
                            whose result is at least TF_DEFER_HOST_MIN_BYTES if
                            the engine computes in host memory (smaller arrays stay
                            in cache, where fusing gains nothing measurable), every
                            op if not; on other engines none */
    TF_DEFER_ALWAYS = 2  /* every op that can be */
} tf_defer_mode;

#define TF_DEFER_HOST_MIN_BYTES (256u * 1024u)

/*
 * Sets the deferral mode of this session's later ops. Turning deferral off
 * (TF_DEFER_OFF) first runs the work already deferred and returns that
 * run's status; other changes run nothing.
 * Threads: the session's thread.
 * Errors: TF_ERR_VALIDATION ("session": NULL; "mode": not a tf_defer_mode;
 * nothing changed), the engine errors of the deferred work run when
 * turning deferral off - the mode is then off all the same, and that
 * work's results are lost (reading one fails with TF_ERR_BACKEND).
 */
tf_status tf_session_set_defer(tf_session *session, tf_defer_mode mode);

/* What deferral did in one session (counts since it began). */
typedef struct tf_defer_stats {
    uint64_t ops_deferred;    /* ops collected into a batch */
    uint64_t batches_run;     /* batches run (including those whose results were all dropped) */
    uint64_t engine_calls;    /* engine calls those batches made */
    uint64_t results_written; /* results computed into memory */
    uint64_t results_dropped; /* results released before anything read them: never computed */
} tf_defer_stats;

/* Copies this session's deferral counters into *out (all zero before its
   first deferred op). Threads: the session's thread.
   Errors: TF_ERR_VALIDATION ("session" or "out": NULL). */
tf_status tf_session_defer_stats(tf_session *session, tf_defer_stats *out);

/* ===================================================================== */
/* Variables, constants and derivatives                                   */
/* ===================================================================== */

/*
 * Empties the grad slot of every live variable of rt (releasing the
 * gradient tensors), without unregistering the variables. Any thread: each
 * slot is emptied atomically with respect to a concurrent backward, which
 * may publish into it again right after.
 * Errors: TF_ERR_VALIDATION ("runtime": NULL).
 * seed: EagerRuntime::clear_grads
 */
tf_status tf_runtime_clear_grads(tf_runtime *rt);

/*
 * Imports `tensor` as an untracked constant of rt: *out is a new eager
 * tensor whose value is `tensor` itself (no copy). The tensor may be in any
 * memory; ops reading it through a session whose engine cannot read it
 * fail with TF_ERR_PLACEMENT.
 * Ownership: `tensor` is retained by the new eager tensor (the caller keeps
 * its own reference), which also holds a reference to rt; *out is a new
 * reference.
 * Any thread.
 * Errors: TF_ERR_VALIDATION ("runtime", "tensor" or "out": NULL),
 * TF_ERR_OUT_OF_MEMORY.
 * seed: EagerRuntime::constant_from
 */
tf_status tf_runtime_constant_from(tf_runtime *rt, tf_tensor *tensor, tf_eager **out);

/*
 * Imports `tensor` as a trainable variable of rt: a tracked leaf with an
 * empty grad slot, registered in rt until the eager tensor is freed (so
 * tf_runtime_clear_grads reaches it). Each call makes a new variable, even
 * of the same tensor. Ownership as tf_runtime_constant_from. Any thread.
 * Errors: TF_ERR_VALIDATION ("runtime", "tensor" or "out": NULL),
 * TF_ERR_DTYPE_MISMATCH ("tensor": not f32 or f64), TF_ERR_OUT_OF_MEMORY,
 * TF_ERR_RUNTIME_STATE (the slot's lock cannot be made).
 * seed: EagerRuntime::variable_from
 */
tf_status tf_runtime_variable_from(tf_runtime *rt, tf_tensor *tensor, tf_eager **out);

/*
 * Copies the host-accessible tensor `host` (host memory, or memory of an
 * engine that computes in host memory; any strides) into a new dense
 * tensor of the session's engine and imports that as an untracked constant
 * of the session's runtime. `host` is borrowed for the call (copied);
 * *out is a new reference. A value still pending in a deferred batch is
 * computed first.
 * Threads: the session's thread.
 * Errors: TF_ERR_VALIDATION ("session", "tensor" or "out": NULL),
 * TF_ERR_PLACEMENT ("src": `host` is in an engine's device memory; download
 * it first), TF_ERR_OUT_OF_MEMORY, engine errors (the allocation, the
 * upload, or the deferred work that computes `host`).
 * seed: EagerSession::constant_from_host
 */
tf_status tf_session_constant_from_host(tf_session *s, const tf_tensor *host, tf_eager **out);

/*
 * The gradient of the one-element `output` with respect to `wrt`, computed
 * on `engine`, returned as a new eager tensor of rt: dense, with wrt's
 * dtype and shape. No grad slot is touched.
 * wrt may be any tensor reached from output through recorded ops: a
 * variable, a tracked intermediate, an untracked tensor used directly by a
 * recorded op, anything of a captured trace, or output itself (the
 * gradient is then one). A wrt reached only through ops of zero derivative
 * (sign, compare, a float-int-float round trip) gets a zero gradient.
 * The rules run as session ops on the calling thread, so unless a no-grad
 * scope is open on rt the result is recorded and tracked when it depends on
 * tracked values: the gradient can be differentiated again.
 * Ownership: output and wrt are borrowed; *out is a new reference.
 * Threads: any thread, with `engine` used by it alone during the call.
 * Errors:
 *   TF_ERR_VALIDATION       "runtime", "engine", "out", "output" or "wrt":
 *                           NULL;
 *   TF_ERR_CONTEXT_MISMATCH "output" or "wrt": a tensor of another runtime
 *                           than rt;
 *   TF_ERR_NON_SCALAR_GRAD  "output": not exactly one element (use
 *                           tf_runtime_vjp);
 *   TF_ERR_VALIDATION       "wrt": wrt is inactive, i.e. not reached from
 *                           output through recorded ops (the _optional
 *                           form returns NULL instead);
 *   TF_ERR_UNSUPPORTED_AD_RULE  an op on the way has no reverse rule (the
 *                           message names it);
 *   the errors of an extension op's AD rule (extension.h), and engine
 *   errors.
 * Nothing changes on error: the deferred work of the derivative runs
 * before it returns.
 * seed: EagerRuntime::grad
 */
tf_status tf_runtime_grad(tf_runtime *rt, tf_engine *engine, tf_eager *output, tf_eager *wrt,
                          tf_eager **out);

/*
 * As tf_runtime_grad, except that an inactive wrt sets *out = NULL and
 * returns TF_OK. Every other error is tf_runtime_grad's.
 * seed: EagerRuntime::grad_optional
 */
tf_status tf_runtime_grad_optional(tf_runtime *rt, tf_engine *engine, tf_eager *output,
                                   tf_eager *wrt, tf_eager **out);

/*
 * The vector-Jacobian product: the cotangent of `wrt` when `output` has
 * the cotangent `cotangent`, returned as a new eager tensor like the
 * result of tf_runtime_grad (wrt's dtype and shape, dense, tracked when it
 * depends on tracked values). output may have any shape. Ownership,
 * threads and the choice of wrt as tf_runtime_grad; `cotangent` is
 * borrowed.
 * Errors: those of tf_runtime_grad except TF_ERR_NON_SCALAR_GRAD, and
 *   TF_ERR_VALIDATION       "cotangent": NULL, or a dtype or shape other
 *                           than output's;
 *   TF_ERR_CONTEXT_MISMATCH "cotangent": of another runtime than rt.
 * seed: EagerRuntime::vjp
 */
tf_status tf_runtime_vjp(tf_runtime *rt, tf_engine *engine, tf_eager *output, tf_eager *wrt,
                         tf_eager *cotangent, tf_eager **out);

/* As tf_runtime_vjp, except that an inactive wrt sets *out = NULL and
   returns TF_OK. seed: EagerRuntime::vjp_optional */
tf_status tf_runtime_vjp_optional(tf_runtime *rt, tf_engine *engine, tf_eager *output,
                                  tf_eager *wrt, tf_eager *cotangent, tf_eager **out);

/*
 * The Jacobian-vector product (forward mode): the derivative of `output`
 * when `wrt` moves along `tangent`, returned as a new eager tensor with
 * output's dtype and shape (dense, tracked when it depends on tracked
 * values). An output that depends on wrt only through
 * ops of zero derivative gets zeros. Ownership, threads and the choice of
 * wrt as tf_runtime_grad; `tangent` is borrowed.
 * Errors: those of tf_runtime_grad except TF_ERR_NON_SCALAR_GRAD, with
 * TF_ERR_UNSUPPORTED_AD_RULE for an op without a forward rule, and
 *   TF_ERR_VALIDATION       "tangent": NULL, or a dtype or shape other than
 *                           wrt's;
 *   TF_ERR_CONTEXT_MISMATCH "tangent": of another runtime than rt.
 * seed: EagerRuntime::jvp
 */
tf_status tf_runtime_jvp(tf_runtime *rt, tf_engine *engine, tf_eager *output, tf_eager *wrt,
                         tf_eager *tangent, tf_eager **out);

/* As tf_runtime_jvp, except that an inactive wrt (output does not depend on
   it) sets *out = NULL and returns TF_OK. seed: EagerRuntime::jvp_optional */
tf_status tf_runtime_jvp_optional(tf_runtime *rt, tf_engine *engine, tf_eager *output,
                                  tf_eager *wrt, tf_eager *tangent, tf_eager **out);

/* ===================================================================== */
/* Eager tensors                                                          */
/* ===================================================================== */

/* The same as tf_runtime_constant_from(rt, tensor, out), with the same
   ownership and errors ("tensor", "runtime", "out").
   seed: EagerTensor::from_tensor_in */
tf_status tf_eager_from_tensor(tf_tensor *tensor, tf_runtime *rt, tf_eager **out);

/* The same as tf_runtime_variable_from(rt, tensor, out), with the same
   ownership and errors. seed: EagerTensor::requires_grad_in */
tf_status tf_eager_requires_grad(tf_tensor *tensor, tf_runtime *rt, tf_eager **out);

/* Adds a reference to x. NULL is a no-op. Any thread. */
void tf_eager_retain(tf_eager *x);

/*
 * Drops a reference. The last one frees x: its reference to its value, to
 * its runtime and, when it was recorded, to its inputs - freeing in turn
 * the part of the tape only x kept alive (without recursion, however long
 * the chain). A variable's grad slot goes with it. A result still pending
 * in a deferred batch that nothing else holds is then never computed. NULL
 * is a no-op. Any thread.
 */
void tf_eager_release(tf_eager *x);

/*
 * x's value, borrowed for as long as x lives (retain it to keep it longer);
 * NULL for a NULL x. Never copies or transfers: a value in device memory
 * stays there. A value still pending in a deferred batch is computed when
 * something reads it (tf_tensor_data, a transfer, an op), and that read
 * reports the batch's failure. Any thread.
 * seed: EagerTensor::value
 */
tf_tensor *tf_eager_value(const tf_eager *x);

/*
 * The accumulated gradient of the variable x: *out gets a new reference to
 * the tensor in its grad slot, or NULL when the slot is empty or x is not
 * a variable. The tensor was computed by the engine backward ran on and is
 * normally in its memory (tf_tensor_placement says; a device engine's
 * tensor is read with tf_engine_download).
 * A gradient is never modified once published: the next backward publishes
 * a new tensor, so the one read stays as it was. Any thread.
 * Errors: TF_ERR_VALIDATION ("tensor" or "out": NULL).
 * seed: EagerTensor::grad
 */
tf_status tf_eager_grad(tf_eager *x, tf_tensor **out);

/* Empties the grad slot of the variable x (TF_OK and nothing done when x is
   not a variable). Any thread. Errors: TF_ERR_VALIDATION ("tensor": NULL). */
tf_status tf_eager_clear_grad(tf_eager *x);

/* Non-zero when x is tracked: a variable, or the result of an op recorded
   with a tracked input. 0 for NULL. Any thread.
   seed: EagerTensor::tracks_grad */
int tf_eager_tracks_grad(const tf_eager *x);

/* The identifier of x's runtime. x must not be NULL. Any thread.
   seed: EagerTensor::context_id */
tf_context_id tf_eager_context_id(const tf_eager *x);

/* Non-zero when a and b are both non-NULL and of the same runtime. Any
   thread. seed: EagerTensor::same_context */
int tf_eager_same_context(const tf_eager *a, const tf_eager *b);

/*
 * A new eager tensor of x's runtime over x's value (shared, no copy):
 * untracked, unrecorded, without a grad slot. x is borrowed; *out is a new
 * reference. Any thread.
 * Errors: TF_ERR_VALIDATION ("tensor" or "out": NULL), TF_ERR_OUT_OF_MEMORY.
 * seed: EagerTensor::detach
 */
tf_status tf_eager_detach(tf_eager *x, tf_eager **out);

/*
 * Detaches x into the runtime `rt` (any runtime, x's own included): copies
 * x's value into a new dense host tensor and imports that as an untracked
 * constant of rt. x's value must be host-accessible (host memory or an
 * engine computing in host memory); a value pending in a deferred batch is
 * computed first. x is borrowed; *out is a new reference, holding one to
 * rt. Any thread.
 * Errors: TF_ERR_VALIDATION ("tensor", "runtime" or "out": NULL),
 * TF_ERR_PLACEMENT ("tensor": the value is in an engine's device memory;
 * download it with tf_engine_download and import the copy),
 * TF_ERR_OUT_OF_MEMORY, and the failure of the deferred work that computes
 * the value.
 */
tf_status tf_eager_detach_into(tf_eager *x, tf_runtime *rt, tf_eager **out);

/*
 * Reverse mode into the grad slots: seeds the one-element x with one and
 * adds d x / d v into the grad slot of every live variable v that x depends
 * on through recorded ops on tracked tensors, computing on `engine`. A
 * variable reached only through ops of zero derivative gets zero added.
 * Gradients accumulate across calls until cleared (tf_eager_clear_grad,
 * tf_runtime_clear_grads). An untracked x depends on no variable: TF_OK,
 * nothing changes. Backward's own ops are never recorded (the slots hold
 * untracked values); for higher derivatives use tf_runtime_grad.
 * All or nothing: every new gradient is computed first, then all slots are
 * updated together; on error no slot changes.
 * Ownership: x and engine are borrowed.
 * Threads: any thread, with `engine` used by it alone during the call.
 * Concurrent backward calls into shared variables are safe and lose
 * nothing (the slots involved are locked in a fixed order).
 * Errors: TF_ERR_VALIDATION ("tensor" or "engine": NULL),
 * TF_ERR_NON_SCALAR_GRAD ("tensor": x has not exactly one element; use
 * tf_eager_backward_with_seed), TF_ERR_UNSUPPORTED_AD_RULE (an op on the
 * way has no reverse rule), the errors of an extension op's AD rule, and
 * engine errors.
 * seed: EagerTensor::backward
 */
tf_status tf_eager_backward(tf_eager *x, tf_engine *engine);

/*
 * As tf_eager_backward, with the explicit cotangent `seed` of x (x may have
 * any shape): adds (d x / d v)^T seed into each variable's slot. `seed` is
 * borrowed and must have x's dtype and shape and be of x's runtime.
 * Errors: TF_ERR_VALIDATION ("tensor" or "engine": NULL; "seed": NULL),
 * TF_ERR_CONTEXT_MISMATCH ("seed": of another runtime),
 * TF_ERR_DTYPE_MISMATCH ("seed": another dtype), TF_ERR_SHAPE_MISMATCH
 * ("seed": another shape), and the errors of tf_eager_backward after its
 * argument checks. Nothing is accumulated on error.
 */
tf_status tf_eager_backward_with_seed(tf_eager *x, tf_eager *seed, tf_engine *engine);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_RUNTIME_H */
