/*
 * engine_internal.h - the engine boundary (core/src/engine): engine
 * instances, the checked path across the plugin ABI (every primitive call
 * validated here once), transfers, the supports() memo and the engine lock.
 * Uses base, loader and tensor.
 */
#ifndef TF_ENGINE_INTERNAL_H
#define TF_ENGINE_INTERNAL_H

#include "loader_internal.h"
#include "tensor_internal.h"

/* ---- engine.c ---- */

/* Slots of an engine's memo of supports() answers (a power of two). */
#define TF_SUPPORTS_MEMO 64

struct tf_engine {
    atomic_size_t refs; /* the application's reference plus one per storage */
    tf_plugin *plugin;
    const tf_engine_plugin *desc;
    tf_engine_state *state;
    uint32_t caps;
    /*
     * supports() answers already given (engine_abi.h makes them constant):
     * each slot 0 or (key << 2 | 2 | answer), written and read relaxed; a
     * lost race only costs another supports() call. See engine.c.
     */
    _Atomic uint64_t supports_memo[TF_SUPPORTS_MEMO];
    /*
     * Deferred chains (the lazy layer's): open batches of this engine, and
     * the lock that serialises running them with the owner's calls into the
     * engine while any is open (a value may be read, and so its batch run,
     * from another thread). The lock is the engine boundary's (engine.c);
     * the list and its count are the lazy layer's.
     */
    pthread_mutex_t defer_lock;
    atomic_uint n_open;
    struct tf_batch *open_batches;
};

void tf__engine_retain(tf_engine *engine);
void tf__engine_release(tf_engine *engine);
/* Whether the engine takes FUSED immediates (built against ABI 1.5 or later). */
bool tf__engine_immediates(const tf_engine *engine);
/* ---- engine_minor.c: what an engine's minor knows (also tf__engine_immediates) ---- */
/* ABI 1.6: whether the engine may be asked about and sent a FUSED reduced output. */
bool tf__engine_reduced_output(const tf_engine *engine);
/* A supports() question the engine's minor cannot understand: answered no unasked. */
bool tf__engine_question_unknown(const tf_engine *engine, tf_prim prim, uint32_t op,
                                 const uint32_t *dt, size_t n);
/* Why, as a parenthesis for an error message ("" when the minor knows the question). */
const char *tf__engine_unknown_why(const tf_engine *engine, tf_prim prim, uint32_t op,
                                   const uint32_t *dt, size_t n);
/* FUSED params as the engine's minor defines them (a call with fields it does not know is
   refused); *params is pointed at *old when the struct had to be cut. */
tf_status tf__engine_fused_for(const tf_engine *engine, const tf_fused_params *p,
                               tf_fused_params *old, const void **params);
/* Whether the engine declared TF_ENGINE_CAP_IN_PLACE. */
bool tf__engine_in_place(const tf_engine *engine);
/*
 * tf_engine_execute of a TF_PRIM_BINARY whose output is inputs[0] itself, for
 * an engine with TF_ENGINE_CAP_IN_PLACE (TF_ERR_UNSUPPORTED otherwise). The
 * caller must own inputs[0]'s memory alone: on failure it may be partly
 * written.
 */
tf_status tf__engine_execute_in_place(tf_engine *engine, tf_prim prim, const void *params,
                                      size_t n_inputs, tf_tensor *const *inputs);
/*
 * Whether the engine runs TF_PRIM_FUSED programs of n_inputs inputs and
 * n_outputs outputs, all of dtype (its supports() answer for op n_outputs - 1,
 * memoised; false for several outputs on an engine built against ABI < 1.3).
 * Each step must still be supported as a UNARY/BINARY call, which
 * tf__engine_execute_fused checks.
 */
bool tf__engine_fuses(tf_engine *engine, tf_dtype dtype, size_t n_inputs, size_t n_outputs);
/*
 * ABI 1.6: whether e takes FUSED calls of dtype with n_inputs inputs,
 * n_outputs elementwise outputs and one reduced output of op (engine_abi.h,
 * tf_fused_params.reduce). False for engines of older minors.
 */
bool tf__engine_fuses_reduce(tf_engine *engine, tf_dtype dtype, size_t n_inputs,
                             size_t n_outputs, tf_reduce_op op);
/* Whether the engine runs prim/op with n operands all of dtype dt (memoised). */
bool tf__engine_supports_uniform(tf_engine *engine, tf_prim prim, uint32_t op, size_t n,
                                 tf_dtype dt);
/*
 * tf_engine_execute of a TF_PRIM_FUSED into outputs[0 .. n_outputs) (params
 * says which step each receives; n_outputs > 1 needs params of ABI 1.3). With
 * alias >= 0 (one output only), outputs[0] is the very view inputs[alias] (the
 * engine must have TF_ENGINE_CAP_IN_PLACE, and the caller must own that memory
 * alone: on failure it may be partly written); with alias < 0 no output shares
 * memory with an input or another output.
 */
tf_status tf__engine_execute_fused(tf_engine *engine, const tf_fused_params *params,
                                   size_t n_inputs, tf_tensor *const *inputs, size_t n_outputs,
                                   tf_tensor *const *outputs, int alias);

/* ---- prim_check.c ---- */

/*
 * Checks a primitive call against the description in engine_abi.h: counts,
 * params, dtypes, ranks, extents and axes. Records the error and returns it.
 */
tf_status tf__prim_check(tf_prim prim, const void *params, size_t n_inputs,
                         tf_tensor *const *inputs, size_t n_outputs, tf_tensor *const *outputs);
/* The sub-operation code of a call (0 for primitives without one). */
uint32_t tf__prim_op(tf_prim prim, const void *params);

/* Whether this host knows primitive prim and, for the primitives with
   sub-operations, its sub-op op (prim_names.c, from engine_abi.h's lists). */
bool tf__prim_known(tf_prim prim, uint32_t op);
/* Whether the primitive accepts strided outputs. */
bool tf__prim_strided_output(tf_prim prim);

/* ---- the engine lock (engine.c) ---- */

/*
 * Around a call into e's plugin: tf__engine_lock takes e's lock while e has
 * an open batch (n_open, kept by the lazy layer); tf__engine_lock_slow (for
 * code that changes batches) takes it whatever the count. Both skip it when
 * this thread holds it already and return whether they took it, for
 * tf__engine_unlock.
 */
bool tf__engine_lock_slow(tf_engine *e);
static inline bool tf__engine_lock(tf_engine *e)
{
    return atomic_load_explicit(&e->n_open, memory_order_acquire) != 0 &&
           tf__engine_lock_slow(e);
}
void tf__engine_unlock_slow(tf_engine *e);
static inline void tf__engine_unlock(tf_engine *e, bool taken)
{
    if (taken)
        tf__engine_unlock_slow(e);
}

#endif /* TF_ENGINE_INTERNAL_H */
