/*
 * tf_prog.h - straight-line tensor programs, as the oracle's format describes
 * them (shared/oracle/OPS.md, formats 1 and 2), and a runner that issues them
 * through the public C API on any engine.
 *
 * Two test drivers share it: test_oracle replays the PyTorch-referenced
 * program files, and test_ad_diff (the differential AD checker) generates
 * random programs, runs each through several paths of the library (backward,
 * grad, vjp, jvp, deferral modes, thread counts, engines) and compares them;
 * a failing program is written back out in the same format.
 *
 * A program has leaves (trainable inputs x0, x1, ... and non-trainable
 * constants c0, c1, ...) and ops, each defining one fresh value t1, t2, ...;
 * value ids number the inputs first, then the constants, then the op results
 * in order. The output is one value (the last op's in generated programs);
 * the loss is sum(output * W) for the loss weights W.
 *
 * Ownership: a tfp_program owns everything it points to (tfp_program_free);
 * a tfp_run owns its runtime, session and eager tensors (tfp_run_end).
 * Nothing here is thread-safe; use one program and one run per thread.
 */
#ifndef TF_PROG_H
#define TF_PROG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tenferro/extension.h>
#include <tenferro/ops.h>

#include "tf_json.h"

#define TFP_MAX_ARGS 4
#define TFP_MAX_ATTRS 8
#define TFP_MAX_LEAVES 8

/* The element types of program data (the file's "dtype" strings). */
typedef enum tfp_dtype {
    TFP_F64 = 0,
    TFP_C128 = 1,
    TFP_BOOL = 2,
    TFP_I64 = 3
} tfp_dtype;

/* Host data in column-major order: count numbers (2 per element for c128). */
typedef struct tfp_data {
    tfp_dtype dtype;
    uint32_t rank;
    int64_t shape[TF_MAX_RANK];
    size_t count;
    double *data; /* owned; NULL when count is 0 */
} tfp_data;

typedef enum tfp_attr_kind {
    TFP_A_NULL = 0,
    TFP_A_NUM,    /* num */
    TFP_A_INTS,   /* n integers in ints */
    TFP_A_STR,    /* str */
    TFP_A_TENSOR  /* tensor (an index tensor of dtype i64) */
} tfp_attr_kind;

typedef struct tfp_attr {
    char key[24];
    tfp_attr_kind kind;
    double num;
    size_t n;
    int64_t *ints; /* owned */
    char str[24];
    tfp_data tensor;
} tfp_attr;

typedef struct tfp_op {
    char name[24];
    uint32_t n_args;
    uint32_t args[TFP_MAX_ARGS]; /* value ids */
    uint32_t n_attrs;
    tfp_attr attrs[TFP_MAX_ATTRS];
} tfp_op;

/* How a leaf's value is laid out in the library's memory (the checker's
   strided views; oracle files are always dense). */
typedef enum tfp_layout {
    TFP_DENSE = 0,
    TFP_TRANSPOSED, /* the last two axes swapped from a base of the swapped shape */
    TFP_REVERSED,   /* every axis flipped */
    TFP_STRIDED     /* every second element along axis 0 of a base twice as long */
} tfp_layout;

typedef struct tfp_leaf {
    tfp_data value;
    tfp_data tangent; /* inputs only; count 0: none */
    tfp_layout layout;
} tfp_leaf;

typedef struct tfp_program {
    int format; /* 1 or 2 */
    uint64_t seed, index, attempt;
    uint32_t n_inputs, n_consts, n_ops, cap_ops;
    tfp_leaf inputs[TFP_MAX_LEAVES];
    tfp_leaf consts[TFP_MAX_LEAVES];
    tfp_op *ops; /* owned, cap_ops entries */
    uint32_t output; /* a value id */
    tfp_data weights;
    uint32_t hvp_input; /* an input's value id */
    tfp_data hvp_v;
    bool has_complex; /* some leaf, weight or result is c128 */
    tf_json *dom; /* the file's DOM (owned) when read from one; its "expect" */
} tfp_program;

/* ---- programs ---- */

/* Value ids. */
static inline uint32_t tfp_n_values(const tfp_program *p)
{
    return p->n_inputs + p->n_consts + p->n_ops;
}
static inline uint32_t tfp_op_value(const tfp_program *p, uint32_t k)
{
    return p->n_inputs + p->n_consts + k;
}
/* "x0", "c1", "t3" for a value id (into buf). */
const char *tfp_value_name(const tfp_program *p, uint32_t id, char *buf, size_t size);

void tfp_data_free(tfp_data *d);
/* A deep copy; false on OOM. */
bool tfp_data_copy(tfp_data *dst, const tfp_data *src);
size_t tfp_data_numel(const tfp_data *d);

void tfp_program_init(tfp_program *p);
void tfp_program_free(tfp_program *p);
/* A deep copy without the DOM; false on OOM. */
bool tfp_program_copy(tfp_program *dst, const tfp_program *src);
/* Appends an op (copied, attrs deep-copied); false on OOM. */
bool tfp_program_push(tfp_program *p, const tfp_op *op);
/* Removes the last op. */
void tfp_program_pop(tfp_program *p);

/*
 * Editing (the generator and the shrinker): drop_op removes op k, its uses
 * reading `replacement` (an earlier value id) instead; drop_const removes an
 * unused constant. Value ids after the removed one move down.
 */
void tfp_program_drop_op(tfp_program *p, uint32_t k, uint32_t replacement);
void tfp_program_drop_const(tfp_program *p, uint32_t c);
/* Removes an unused input other than hvp_input. */
void tfp_program_drop_input(tfp_program *p, uint32_t i);
/* Whether an op or the output reads value id. */
bool tfp_value_used(const tfp_program *p, uint32_t id);

/* Attributes of ops being built or read. */
const tfp_attr *tfp_attr_get(const tfp_op *op, const char *key);
void tfp_op_init(tfp_op *op, const char *name, uint32_t n_args, const uint32_t *args);
void tfp_op_free(tfp_op *op);
/* Each returns false when the op has TFP_MAX_ATTRS attributes already (or on OOM). */
bool tfp_attr_num(tfp_op *op, const char *key, double v);
bool tfp_attr_null(tfp_op *op, const char *key);
bool tfp_attr_str(tfp_op *op, const char *key, const char *v);
bool tfp_attr_ints(tfp_op *op, const char *key, const int64_t *v, size_t n);
/* Takes over t's data. */
bool tfp_attr_tensor(tfp_op *op, const char *key, tfp_data *t);

/*
 * Reads a program file of format 1 or 2. On failure returns false with a
 * message (naming the file and what was wrong) in err. p keeps the DOM for
 * the driver's look at "expect".
 */
bool tfp_read_file(const char *path, tfp_program *p, char *err, size_t err_size);
/* A tensor object ({shape, dtype, data_col_major}; format 1 has no dtype)
   of a program's DOM, as data. */
bool tfp_data_from_json(const tf_json *obj, int format, tfp_data *out, char *err,
                        size_t err_size);
/* The same from a parsed DOM (taken over, also on failure). */
bool tfp_read_dom(tf_json *dom, tfp_program *p, char *err, size_t err_size);

/*
 * Writes p as a format 2 file. `extra`, if not NULL, is a JSON object text
 * written as the member "checker" (what failed, how to replay it).
 */
bool tfp_write_file(const tfp_program *p, const char *path, const char *extra);

/* ---- running a program ---- */

typedef struct tfp_config {
    tf_engine *engine;
    tf_dtype dtype;    /* TF_F64 or TF_F32: the precision of the replay */
    int defer;         /* -1: the runtime's default mode, else a tf_defer_mode */
    tf_extension_module *linalg; /* installed in the run's runtime when not NULL */
} tfp_config;

typedef struct tfp_run {
    const tfp_program *p;
    tfp_config cfg;
    tf_runtime *rt;
    tf_session *s;
    tf_eager **vals;   /* one per value id, owned; NULL until computed */
    uint32_t cap_vals; /* entries of vals (it grows with the program) */
    tf_eager *output, *loss; /* borrowed from vals / owned */
    tf_eager **kept;   /* other eager tensors to release */
    size_t n_kept, cap_kept;
    uint32_t n_done;   /* ops run so far */
    tf_status status;  /* of the first failure */
    char msg[1024];    /* what failed, with the library's message */
} tfp_run;

/*
 * Begins a run: a runtime and a session on cfg->engine, the inputs as
 * variables and the constants as untracked constants of cfg->dtype (laid out
 * as each leaf says). Returns false (message in r->msg) on failure; call
 * tfp_run_end in either case.
 */
bool tfp_run_begin(tfp_run *r, const tfp_program *p, const tfp_config *cfg);
/* Runs the next op (false on failure: r->msg says which op and why). */
bool tfp_run_op(tfp_run *r);
/* Runs the remaining ops and the loss. */
bool tfp_run_forward(tfp_run *r);
void tfp_run_end(tfp_run *r);

/* Whether the op name is one the runner knows (an extension op needs linalg). */
bool tfp_op_known(const char *name, bool *needs_linalg);

/* The value of an eager tensor as f64 host data (downloaded when needed). */
bool tfp_read(tfp_run *r, const tf_eager *e, tfp_data *out);
/* A value id's value. */
bool tfp_read_value(tfp_run *r, uint32_t id, tfp_data *out);

/* What a derivative is computed with. */
typedef enum tfp_grad_path {
    TFP_BACKWARD = 0, /* tf_eager_backward(loss) into the grad slots */
    TFP_GRAD,         /* tf_runtime_grad(loss, x) for each input */
    TFP_VJP,          /* tf_runtime_vjp(output, x, W) for each input */
    TFP_VJP_ONE,      /* tf_runtime_vjp(loss, x, 1) for each input */
    TFP_GRAD_NO_GRAD  /* tf_runtime_grad inside a no-grad scope (fused rules) */
} tfp_grad_path;

/* The gradient of the loss for every input (out[i] for input i, n_inputs). */
bool tfp_grads(tfp_run *r, tfp_grad_path path, tfp_data *out);
/* The JVP of the output along every input's tangent at once (zeros when the
   output does not depend on them); needs tangents on every input. */
bool tfp_jvp(tfp_run *r, tfp_data *out);
/* H v for hvp_input along hvp_v: reverse over reverse, or forward over reverse. */
bool tfp_hvp(tfp_run *r, bool forward, tfp_data *out);

/* OPS.md's normwise error: max |a - b| / max(max |b|, floor); INFINITY when
   the layouts differ. Complex data counts moduli. */
double tfp_err(const tfp_data *got, const tfp_data *ref, double floor);

#endif /* TF_PROG_H */
