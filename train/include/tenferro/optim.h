/*
 * tenferro/optim.h - optimizers on the public API: SGD (momentum, Nesterov,
 * weight decay), Adam and AdamW, with parameter groups that each carry their
 * own hyperparameters (a learning rate per group, for instance).
 *
 * The definitions are PyTorch's (torch.optim.SGD, Adam, AdamW with their
 * defaults: no amsgrad, not maximising). For a parameter p with gradient g
 * at its t-th step (t counts the steps that found a gradient for p):
 *
 *   SGD     g <- g + wd p                                  (wd != 0)
 *           b <- g at t = 1, else momentum b + (1 - dampening) g   (momentum != 0)
 *           g <- g + momentum b (Nesterov) or b                    (momentum != 0)
 *           p <- p - lr g
 *   Adam    g <- g + wd p                                  (wd != 0: L2)
 *   AdamW   p <- p (1 - lr wd)                             (decoupled decay)
 *   both    m <- m + (1 - beta1) (g - m)
 *           v <- v + (1 - beta2) (g g - v)
 *           p <- p - (lr / (1 - beta1^t)) m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
 *
 * m and v start at zero. The last line is evaluated as
 * p - m / (sqrt(v) a + c) with a = (1 - beta1^t) / (lr sqrt(1 - beta2^t)) and
 * c = eps (1 - beta1^t) / lr, the same quantity in fewer constants (see
 * "Fused steps"); it differs from PyTorch's by rounding only.
 *
 * Parameters are variables (tf_runtime_variable_from), and eager tensors are
 * immutable: a step makes new variables with the new values (and empty grad
 * slots, so no zero_grad is needed). The optimizer therefore owns its
 * parameters: it retains the variables it is given, and after a step the
 * current ones are tf_optim_param(opt, i). Hold on to those, not to the
 * originals. The state (momentum buffers, first and second moments, step
 * counts) is readable per parameter for inspection and checkpoints.
 *
 * Fused steps. A step runs each parameter's update as session elementwise
 * ops in a session that defers them (tf_session_set_defer TF_DEFER_ALWAYS,
 * docs/runtime.md "Deferred elementwise chains") under a no-grad scope, so
 * on engines that run TF_PRIM_FUSED a parameter's update is a few FUSED
 * calls that read each tensor once and write only the new parameter and
 * state, not one call per op. A FUSED program takes at most 5 inputs, scalar
 * constants included, and a batch at most 8 steps, so: SGD is one call per
 * parameter (two with momentum and weight decay or dampening together),
 * Adam without weight decay two, Adam or AdamW with weight decay three.
 * tf_optim_last_stats reports what the last step did. The values are the
 * same bits as with deferral off (each step of a program rounds as its op).
 *
 * Threads: an optimizer is used by one thread at a time; its parameters are
 * ordinary eager tensors that other threads may read.
 *
 * Errors: as train.h says, a failed call leaves the optimizer as it was and
 * tf_train_error_message() says why: TF_ERR_VALIDATION (NULL, a bad
 * hyperparameter or index: argument named), TF_ERR_DTYPE_MISMATCH and
 * TF_ERR_SHAPE_MISMATCH (a gradient or value that does not fit its
 * parameter), TF_ERR_CONTEXT_MISMATCH (a variable of another runtime),
 * TF_ERR_OUT_OF_MEMORY, and the engine's errors.
 */
#ifndef TENFERRO_OPTIM_H
#define TENFERRO_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include <tenferro/runtime.h>
#include <tenferro/train.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tf_optim tf_optim;

typedef enum tf_optim_kind {
    TF_OPTIM_SGD = 0,
    TF_OPTIM_ADAM = 1,
    TF_OPTIM_ADAMW = 2
} tf_optim_kind;

/* The hyperparameters of one parameter group. Fields a kind does not use
   are ignored (momentum for Adam, betas for SGD). */
typedef struct tf_optim_options {
    uint32_t struct_size;  /* sizeof(tf_optim_options) */
    uint32_t nesterov;     /* SGD: non-zero for Nesterov momentum */
    double lr;             /* >= 0 */
    double momentum;       /* SGD: >= 0 */
    double dampening;      /* SGD: in [0, 1] */
    double weight_decay;   /* >= 0; L2 for SGD and Adam, decoupled for AdamW */
    double beta1, beta2;   /* Adam, AdamW: in [0, 1) */
    double eps;            /* Adam, AdamW: >= 0 */
} tf_optim_options;

/*
 * PyTorch's defaults for `kind`: SGD lr 1e-3 and no momentum, dampening,
 * weight decay or Nesterov; Adam lr 1e-3, betas 0.9 and 0.999, eps 1e-8, no
 * weight decay; AdamW the same with weight decay 1e-2. Never fails (an
 * unknown kind gets SGD's). Any thread.
 */
TF_TRAIN_API void tf_optim_options_default(tf_optim_kind kind, tf_optim_options *out);

/*
 * A new optimizer of `kind` for variables of `rt` (retained), with no
 * parameter groups yet. Errors: TF_ERR_VALIDATION (NULL, unknown kind),
 * TF_ERR_OUT_OF_MEMORY.
 */
TF_TRAIN_API tf_status tf_optim_create(tf_runtime *rt, tf_optim_kind kind, tf_optim **out);

/* Releases the optimizer, its parameters and state. NULL is a no-op. */
TF_TRAIN_API void tf_optim_destroy(tf_optim *opt);

TF_TRAIN_API tf_optim_kind tf_optim_get_kind(const tf_optim *opt);

/*
 * Adds a parameter group: n >= 1 variables (each retained; f32 or f64;
 * tracked leaves of opt's runtime; none already in the optimizer) with the
 * hyperparameters *options (copied). Parameters are numbered in the order
 * they are added, across groups. Errors: TF_ERR_VALIDATION (argument
 * "options": a value out of range or Nesterov without momentum or with
 * dampening, as PyTorch refuses; "params": NULL, not a variable, a repeat),
 * TF_ERR_DTYPE_MISMATCH, TF_ERR_CONTEXT_MISMATCH; nothing is added then.
 */
TF_TRAIN_API tf_status tf_optim_add_group(tf_optim *opt, const tf_optim_options *options,
                                          tf_eager *const *params, size_t n);

TF_TRAIN_API size_t tf_optim_group_count(const tf_optim *opt);
TF_TRAIN_API size_t tf_optim_param_count(const tf_optim *opt);

/* The group of parameter `index` (SIZE_MAX for an index out of range). */
TF_TRAIN_API size_t tf_optim_param_group(const tf_optim *opt, size_t index);

/* Copies group `group`'s hyperparameters. Errors: TF_ERR_VALIDATION (argument "group"). */
TF_TRAIN_API tf_status tf_optim_group_options(const tf_optim *opt, size_t group,
                                              tf_optim_options *out);

/*
 * Replaces group `group`'s hyperparameters by *options (copied), checked as
 * tf_optim_add_group checks them. Errors: TF_ERR_VALIDATION (argument
 * "group", "options"); nothing changes then.
 */
TF_TRAIN_API tf_status tf_optim_set_group_options(tf_optim *opt, size_t group,
                                                  const tf_optim_options *options);

/* Sets group `group`'s learning rate (a schedule's job). Errors:
   TF_ERR_VALIDATION (argument "group", or "lr" < 0 or not finite). */
TF_TRAIN_API tf_status tf_optim_set_lr(tf_optim *opt, size_t group, double lr);

/*
 * The current variable of parameter `index` (borrowed: valid until the next
 * step, tf_optim_set_param or destroy; retain it to keep it longer), or NULL
 * for an index out of range.
 */
TF_TRAIN_API tf_eager *tf_optim_param(const tf_optim *opt, size_t index);

/*
 * One step: every parameter whose grad slot holds a gradient is updated
 * (those without one are left alone, as PyTorch does), computing on
 * `engine`. All or nothing: on any failure no parameter and no state
 * changes. Errors as the file comment says; TF_ERR_VALIDATION (argument
 * "engine") for NULL.
 */
TF_TRAIN_API tf_status tf_optim_step(tf_optim *opt, tf_engine *engine);

/*
 * The same with the gradients given: grads[i] (borrowed; NULL: none) for
 * parameter i, n == tf_optim_param_count(opt). This is how averaged
 * gradients (dp.h) reach the optimizer without a grad slot. Errors also
 * TF_ERR_VALIDATION (argument "grads": wrong count), TF_ERR_DTYPE_MISMATCH
 * / TF_ERR_SHAPE_MISMATCH (argument "grads") for a gradient that differs
 * from its parameter; nothing changes then.
 */
TF_TRAIN_API tf_status tf_optim_step_with_grads(tf_optim *opt, tf_engine *engine,
                                                tf_tensor *const *grads, size_t n);

/* How many steps the optimizer took (successful tf_optim_step calls). */
TF_TRAIN_API uint64_t tf_optim_step_count(const tf_optim *opt);

/*
 * The deferral mode of the step's session (tf_session_set_defer). The
 * default, TF_DEFER_ALWAYS, fuses each update as "Fused steps" says;
 * TF_DEFER_OFF runs every op of an update as its own engine call, the plain
 * path the fused one is checked against (same bits on the CPU engine).
 * Errors: TF_ERR_VALIDATION (argument "mode").
 */
TF_TRAIN_API tf_status tf_optim_set_defer(tf_optim *opt, tf_defer_mode mode);

/* What deferral did in the last successful step (zeros before the first). */
TF_TRAIN_API void tf_optim_last_stats(const tf_optim *opt, tf_defer_stats *out);

/* ---- state ---- */

/*
 * The names of the state tensors a kind keeps per parameter, in a fixed
 * order: SGD {"momentum_buffer"} (with momentum only), Adam and AdamW
 * {"exp_avg", "exp_avg_sq"} (PyTorch's names). Returns how many; *names
 * (may be NULL) gets a static array. Any thread.
 */
TF_TRAIN_API size_t tf_optim_state_names(tf_optim_kind kind, const char *const **names);

/* Parameter `index`'s step count t (0 before its first update; 0 if out of range). */
TF_TRAIN_API uint64_t tf_optim_param_steps(const tf_optim *opt, size_t index);

/*
 * State tensor `name` of parameter `index`: *out gets a new reference, or
 * NULL while the state does not exist yet (before the parameter's first
 * update, or a momentum buffer without momentum). Errors: TF_ERR_VALIDATION
 * (argument "index"; "name": not one of tf_optim_state_names).
 */
TF_TRAIN_API tf_status tf_optim_state(const tf_optim *opt, size_t index, const char *name,
                                      tf_tensor **out);

/*
 * Replaces parameter `index` by a new variable over `value` (retained),
 * e.g. a value loaded from a checkpoint or broadcast from another rank; its
 * state is kept. Errors: TF_ERR_VALIDATION (argument "index", "value"),
 * TF_ERR_DTYPE_MISMATCH / TF_ERR_SHAPE_MISMATCH (argument "value").
 */
TF_TRAIN_API tf_status tf_optim_set_param(tf_optim *opt, size_t index, tf_tensor *value);

/*
 * Sets parameter `index`'s state: its step count and one tensor per state
 * name (tf_optim_state_names order; each retained; all NULL for no state,
 * which requires steps == 0 for Adam). All or nothing. Errors:
 * TF_ERR_VALIDATION (argument "index"; "state": some tensors NULL and others
 * not, or Adam state with steps == 0), TF_ERR_DTYPE_MISMATCH /
 * TF_ERR_SHAPE_MISMATCH (argument "state") for a tensor that differs from
 * the parameter.
 */
TF_TRAIN_API tf_status tf_optim_set_state(tf_optim *opt, size_t index, uint64_t steps,
                                          tf_tensor *const *state, size_t n_state);

/* Sets the optimizer's step count (tf_optim_step_count), for a resumed run. */
TF_TRAIN_API void tf_optim_set_step_count(tf_optim *opt, uint64_t count);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_OPTIM_H */
