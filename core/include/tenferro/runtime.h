/*
 * tenferro/runtime.h - the eager runtime: eager tensors, sessions, the tape,
 * and automatic differentiation (reverse and forward mode, higher order).
 *
 * This is the C form of the seed specification, the `EagerRuntime` API of
 * the Rust crate tenferro-ad. Each function's comment names the seed method
 * it implements ("seed: EagerRuntime::grad").
 *
 * Objects:
 *   tf_runtime     EagerRuntime: refcounted, thread-safe. Holds the grad
 *                  slots of its variables, the registry snapshot of installed
 *                  extension modules and the caches. It stores no engine.
 *   tf_ad_context  AdContext: extension AD rules and the AD-transform cache,
 *                  shareable between runtimes.
 *   tf_session     EagerSession: a runtime paired with a caller-held engine
 *                  for a scope; every op is issued through one.
 *   tf_eager       EagerTensor: a value (tf_tensor), its place on the tape,
 *                  and for variables a grad slot.
 *
 * Ownership: functions that return a tf_eager* or tf_tensor* through an
 * out-parameter transfer one reference to the caller (release it with
 * tf_eager_release / tf_tensor_release). Arguments are borrowed for the call.
 *
 * Threads: a runtime may be used from any number of threads at once; ops on
 * independent graphs never contend for a lock. A tf_session belongs to the
 * thread that began it (like the engine it uses). Eager tensors are
 * immutable values and may be shared between threads; concurrent backward
 * calls accumulating into one variable's grad slot lose nothing. No-grad and
 * trace-capture scopes are per thread and nest.
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

/* Opaque identifier of a runtime (seed: ContextId). Never 0, never reused. */
typedef uint64_t tf_context_id;

/* Registry epoch (seed: RuntimeEpoch): bumps on every published change. */
typedef uint64_t tf_epoch;

/* Retention limits of a cache (seed: AdTransformCacheLimits). */
typedef struct tf_cache_limits {
    size_t max_entries; /* > 0 */
    size_t max_bytes;   /* 0: no byte limit */
} tf_cache_limits;

/* Counters of one cache. */
typedef struct tf_cache_stats {
    size_t entries;
    size_t retained_bytes;
    uint64_t hits;
    uint64_t misses;
    uint64_t evictions;
    uint64_t clears;
} tf_cache_stats;

/* seed: EagerRuntimeCacheStats */
typedef struct tf_runtime_stats {
    tf_cache_stats ad_transforms;
    tf_cache_stats prepared_derivatives;
    tf_cache_stats extensions;
} tf_runtime_stats;

/* A scope guard (no-grad or trace capture), ended with tf_scope_end. */
typedef struct tf_scope {
    tf_runtime *runtime;
    uint32_t kind;
    uint32_t depth;
} tf_scope;

/* ===================================================================== */
/* AD context                                                             */
/* ===================================================================== */

/* seed: AdContext::builder().build(). One reference to *out. */
tf_status tf_ad_context_create(tf_ad_context **out);
void tf_ad_context_retain(tf_ad_context *ad);
void tf_ad_context_release(tf_ad_context *ad); /* NULL is a no-op */

/* ===================================================================== */
/* Runtime                                                                */
/* ===================================================================== */

/*
 * seed: EagerRuntime::new. A runtime with its own AD context and default
 * cache limits. *out holds the only reference (refcount 1).
 * Its sessions begin in the deferral mode TENFERRO_DEFER names (off, auto,
 * always; unset or empty: auto; see tf_defer_mode).
 * Errors: TF_ERR_OUT_OF_MEMORY; TF_ERR_RUNTIME_STATE when the runtime
 * cannot be configured (cause preserved); TF_ERR_CONFIG for another
 * TENFERRO_DEFER value (*out unchanged).
 */
tf_status tf_runtime_create(tf_runtime **out);

/*
 * seed: EagerRuntime::with_ad_context. A runtime that uses the extension AD
 * rules and the AD-transform cache of `ad` (retained).
 */
tf_status tf_runtime_create_with_ad_context(tf_ad_context *ad, tf_runtime **out);

void tf_runtime_retain(tf_runtime *rt);
void tf_runtime_release(tf_runtime *rt); /* NULL is a no-op */
/* Current number of references (seed: Arc::strong_count), for diagnostics. */
size_t tf_runtime_ref_count(const tf_runtime *rt);

/* seed: EagerRuntime::id. Distinct for every runtime ever created. */
tf_context_id tf_runtime_id(const tf_runtime *rt);

/* The current registry epoch. */
tf_epoch tf_runtime_epoch(const tf_runtime *rt);

/*
 * seed: EagerRuntime::no_grad. Disables recording of ops issued through
 * sessions of `rt` on the calling thread until tf_scope_end(scope). Scopes
 * nest and must end in reverse order on the thread that began them. The
 * scope holds a reference to `rt` until tf_scope_end, so the caller may
 * release its own reference first. Errors: TF_ERR_VALIDATION (NULL),
 * TF_ERR_RUNTIME_STATE (scopes open on more than 16 runtimes on this
 * thread); *scope is then unchanged.
 */
tf_status tf_runtime_no_grad(tf_runtime *rt, tf_scope *scope);

/*
 * seed: EagerRuntime::capture_trace (EagerTraceCaptureGuard). Keeps
 * recording active for untracked intermediates on the calling thread until
 * tf_scope_end: ops whose inputs are all untracked are recorded too, so the
 * functional forms (grad/vjp/jvp) can differentiate with respect to any
 * tensor of the captured trace. Results stay untracked for backward().
 * Inside a no-grad scope nothing is recorded either way. Like a no-grad
 * scope it holds a reference to `rt` until tf_scope_end; the same errors.
 */
tf_status tf_runtime_capture_trace(tf_runtime *rt, tf_scope *scope);

/* Ends a scope begun by tf_runtime_no_grad or tf_runtime_capture_trace and
   drops its reference to the runtime (which may free it). NULL, or a scope
   already ended, is a no-op. */
void tf_scope_end(tf_scope *scope);

/*
 * seed: EagerRuntime::install_extension_module. Installs or replaces one
 * extension module in this runtime's registry and returns the epoch. The
 * exact module instance already installed is a read-only no-op that
 * returns the current epoch without taking the install lock; any other
 * install is transactional (the module's ops and AD rules are validated on
 * a candidate snapshot that is published whole or discarded), serialised
 * by one lock. Errors: TF_ERR_VALIDATION (NULL module),
 * TF_ERR_RUNTIME_STATE when the module transaction is invalid (cause says
 * why); the registry and its epoch are then unchanged. Extension modules are
 * made by the extension loader (extension_abi.h).
 */
tf_status tf_runtime_install_extension_module(tf_runtime *rt, tf_extension_module *module,
                                              tf_epoch *epoch);

/* seed: EagerRuntime::clear_caches. Empties every cache of the runtime. */
tf_status tf_runtime_clear_caches(tf_runtime *rt);

/* seed: EagerRuntime::clear_prepared_derivative_cache */
tf_status tf_runtime_clear_prepared_derivative_cache(tf_runtime *rt);

/* seed: EagerRuntime::clear_ad_transform_caches */
tf_status tf_runtime_clear_ad_transform_caches(tf_runtime *rt);

/* seed: EagerRuntime::cache_stats */
tf_status tf_runtime_cache_stats(tf_runtime *rt, tf_runtime_stats *out);

/* seed: EagerRuntime::ad_transform_cache_limits */
tf_status tf_runtime_ad_transform_cache_limits(tf_runtime *rt, tf_cache_limits *out);

/*
 * seed: EagerRuntime::set_ad_transform_cache_limits. Shrinking evicts at
 * once. Errors: TF_ERR_VALIDATION (max_entries 0, argument "limits").
 */
tf_status tf_runtime_set_ad_transform_cache_limits(tf_runtime *rt, const tf_cache_limits *limits);

/* seed: EagerRuntime::prepared_derivative_cache_limits */
tf_status tf_runtime_prepared_derivative_cache_limits(tf_runtime *rt, tf_cache_limits *out);

/* seed: EagerRuntime::set_prepared_derivative_cache_limits (as above). */
tf_status tf_runtime_set_prepared_derivative_cache_limits(tf_runtime *rt,
                                                          const tf_cache_limits *limits);

/* The callback of tf_runtime_with_session; its status is returned unchanged. */
typedef tf_status (*tf_session_fn)(tf_session *session, void *user);

/*
 * seed: EagerRuntime::with_eager_session. Runs fn with a session pairing
 * `rt` with the borrowed `engine`; nothing is locked. Returns fn's status,
 * or, when fn succeeded, the failure of the deferred ops the session's end
 * ran (see tf_session_set_defer).
 */
tf_status tf_runtime_with_session(tf_runtime *rt, tf_engine *engine, tf_session_fn fn,
                                  void *user);

/*
 * The same as a begin/end pair for C callers: *out is valid until
 * tf_session_end, on this thread. The session holds a reference to `rt`
 * and to `engine` until tf_session_end, so either may be released
 * (tf_runtime_release, tf_engine_destroy) before the session ends.
 * Errors: TF_ERR_VALIDATION (NULL), TF_ERR_OUT_OF_MEMORY.
 */
tf_status tf_session_begin(tf_runtime *rt, tf_engine *engine, tf_session **out);
void tf_session_end(tf_session *session); /* NULL is a no-op */
tf_runtime *tf_session_runtime(const tf_session *session); /* borrowed */
tf_engine *tf_session_engine(const tf_session *session);   /* borrowed */

/*
 * Deferred elementwise chains (docs/runtime.md, "Deferred elementwise
 * chains"). A session's unary and binary float ops of one shape and dtype,
 * issued back to back, are collected and run as one fused engine call when
 * a result is first read (by any op, transfer, tf_tensor_data, ...), at
 * tf_engine_synchronize or at session end; results released before that are
 * never computed. A reduction of one of those results waits with them and
 * runs right after (so only its input needs writing). Values and gradients
 * are the same bits as with deferral
 * off. An engine failure then surfaces at the read that ran the batch, and
 * its results read later fail with TF_ERR_BACKEND. Only engines that run
 * TF_PRIM_FUSED defer anything. Derivatives (backward, vjp, jvp) defer
 * their own elementwise work in the runtime's mode (TENFERRO_DEFER) and run
 * it before they return: an engine failure there fails the derivative, with
 * nothing published.
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
 * Sets this session's mode (running what is open first when it turns
 * deferral off) and returns that run's status. Errors: TF_ERR_VALIDATION
 * (NULL, unknown mode: nothing changed).
 */
tf_status tf_session_set_defer(tf_session *session, tf_defer_mode mode);

/* What deferral did in one session (counts since it began). */
typedef struct tf_defer_stats {
    uint64_t ops_deferred;    /* ops collected into a batch */
    uint64_t batches_run;     /* batches computed (or found to hold nothing held) */
    uint64_t engine_calls;    /* engine calls those batches made */
    uint64_t results_written; /* results computed into memory */
    uint64_t results_dropped; /* results released before anything read them: never computed */
} tf_defer_stats;

/* Errors: TF_ERR_VALIDATION (NULL). */
tf_status tf_session_defer_stats(tf_session *session, tf_defer_stats *out);

/*
 * seed: EagerRuntime::clear_grads. Resets every live grad slot of this
 * runtime to empty without unregistering the variables.
 */
tf_status tf_runtime_clear_grads(tf_runtime *rt);

/*
 * seed: EagerRuntime::constant_from. Imports `tensor` (retained, no
 * transfer) as an untracked constant.
 */
tf_status tf_runtime_constant_from(tf_runtime *rt, tf_tensor *tensor, tf_eager **out);

/*
 * seed: EagerRuntime::variable_from. Imports `tensor` (retained) as a
 * trainable variable with a grad slot registered in this runtime. Only
 * f32/f64 tensors can be variables (TF_ERR_DTYPE_MISMATCH otherwise).
 */
tf_status tf_runtime_variable_from(tf_runtime *rt, tf_tensor *tensor, tf_eager **out);

/*
 * seed: EagerSession::constant_from_host. Uploads a host tensor through the
 * session's engine and imports the result as an untracked constant.
 */
tf_status tf_session_constant_from_host(tf_session *s, const tf_tensor *host, tf_eager **out);

/*
 * seed: EagerRuntime::grad. Gradient of the scalar `output` with respect to
 * `wrt`, computed on `engine`, returned as a new eager tensor; grad slots are
 * not touched. The result is itself tracked when the derivative depends on
 * tracked values (so grad of grad works). Errors:
 * TF_ERR_NON_SCALAR_GRAD (output has more than one element),
 * TF_ERR_CONTEXT_MISMATCH (a tensor of another runtime),
 * TF_ERR_UNSUPPORTED_AD_RULE, TF_ERR_VALIDATION with argument "wrt" when
 * output does not depend on wrt through recorded ops (use grad_optional),
 * engine errors.
 */
tf_status tf_runtime_grad(tf_runtime *rt, tf_engine *engine, tf_eager *output, tf_eager *wrt,
                          tf_eager **out);

/* seed: EagerRuntime::grad_optional. *out = NULL (and TF_OK) when wrt is inactive. */
tf_status tf_runtime_grad_optional(tf_runtime *rt, tf_engine *engine, tf_eager *output,
                                   tf_eager *wrt, tf_eager **out);

/*
 * seed: EagerRuntime::vjp. Cotangent of `wrt` for the cotangent of `output`.
 * Errors as grad (no scalar requirement), plus TF_ERR_VALIDATION (argument
 * "cotangent") when the cotangent's dtype or shape differs from output's.
 */
tf_status tf_runtime_vjp(tf_runtime *rt, tf_engine *engine, tf_eager *output, tf_eager *wrt,
                         tf_eager *cotangent, tf_eager **out);

/* seed: EagerRuntime::vjp_optional. *out = NULL when wrt is inactive. */
tf_status tf_runtime_vjp_optional(tf_runtime *rt, tf_engine *engine, tf_eager *output,
                                  tf_eager *wrt, tf_eager *cotangent, tf_eager **out);

/*
 * seed: EagerRuntime::jvp. Forward-mode derivative of `output` when `wrt`
 * moves along `tangent`. Errors as vjp, with TF_ERR_VALIDATION (argument
 * "tangent") when the tangent's dtype or shape differs from wrt's.
 */
tf_status tf_runtime_jvp(tf_runtime *rt, tf_engine *engine, tf_eager *output, tf_eager *wrt,
                         tf_eager *tangent, tf_eager **out);

/* seed: EagerRuntime::jvp_optional. *out = NULL when output does not depend on wrt. */
tf_status tf_runtime_jvp_optional(tf_runtime *rt, tf_engine *engine, tf_eager *output,
                                  tf_eager *wrt, tf_eager *tangent, tf_eager **out);

/* ===================================================================== */
/* Eager tensors                                                          */
/* ===================================================================== */

/* seed: EagerTensor::from_tensor_in. An untracked eager tensor over `tensor` (retained). */
tf_status tf_eager_from_tensor(tf_tensor *tensor, tf_runtime *rt, tf_eager **out);

/* seed: EagerTensor::requires_grad_in. A tracked leaf (variable) over `tensor`. */
tf_status tf_eager_requires_grad(tf_tensor *tensor, tf_runtime *rt, tf_eager **out);

void tf_eager_retain(tf_eager *x);
void tf_eager_release(tf_eager *x); /* NULL is a no-op */

/*
 * seed: EagerTensor::value. The concrete value, borrowed for as long as x
 * lives. Never transfers data: a value in device memory stays there.
 */
tf_tensor *tf_eager_value(const tf_eager *x);

/*
 * seed: EagerTensor::grad. The accumulated gradient of a variable: *out gets
 * a new reference, or NULL when the slot is empty (or x has no slot).
 */
tf_status tf_eager_grad(tf_eager *x, tf_tensor **out);

/* Empties this variable's grad slot (no-op for tensors without one). */
tf_status tf_eager_clear_grad(tf_eager *x);

/* seed: EagerTensor::tracks_grad. Non-zero for variables and results that depend on them. */
int tf_eager_tracks_grad(const tf_eager *x);

/* seed: EagerTensor::context_id / same_context */
tf_context_id tf_eager_context_id(const tf_eager *x);
int tf_eager_same_context(const tf_eager *a, const tf_eager *b);

/* seed: EagerTensor::detach. Same storage, no gradient, same runtime. */
tf_status tf_eager_detach(tf_eager *x, tf_eager **out);

/* Detach into another runtime: a copy of the value as an untracked constant of `rt`. */
tf_status tf_eager_detach_into(tf_eager *x, tf_runtime *rt, tf_eager **out);

/*
 * seed: EagerTensor::backward. x must have exactly one element
 * (TF_ERR_NON_SCALAR_GRAD otherwise); seeds it with one and accumulates
 * d x / d leaf into the grad slot of every live variable x depends on,
 * computing on `engine`. Gradients accumulate across calls until cleared.
 */
tf_status tf_eager_backward(tf_eager *x, tf_engine *engine);

/*
 * Backward with an explicit seed of x's shape and dtype, from x's runtime.
 * Errors: TF_ERR_DTYPE_MISMATCH / TF_ERR_SHAPE_MISMATCH (argument "seed"),
 * TF_ERR_CONTEXT_MISMATCH. Nothing is accumulated on error.
 */
tf_status tf_eager_backward_with_seed(tf_eager *x, tf_eager *seed, tf_engine *engine);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_RUNTIME_H */
