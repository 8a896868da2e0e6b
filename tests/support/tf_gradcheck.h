/*
 * tf_gradcheck.h - finite-difference checks of reverse and forward mode.
 *
 * gc_check evaluates a function of f64 tensors, built from session ops, and
 * compares
 *   - its VJP (tf_runtime_vjp with a random cotangent w) with <w, J e_k>,
 *   - its JVP (tf_runtime_jvp with a random tangent v) with J v,
 * where J e_k comes from central differences of the function itself. A
 * function that calls tf_runtime_grad inside is checked the same way, which
 * is how second derivatives are tested.
 *
 * Inputs and outputs are f64 or c128. A c128 value is the real vector of
 * its parts (re, im interleaved) and <w, y> = Re sum(conj(w) y): the VJP is
 * checked in PyTorch's convention (docs/complex.md), where the gradient of a
 * real loss of z = x + iy is dL/dx + i dL/dy, and the JVP is the real-linear
 * derivative along a complex tangent.
 */
#ifndef TF_GRADCHECK_H
#define TF_GRADCHECK_H

#include <tenferro/ops.h>

/* Builds the output from the inputs through session s. */
typedef tf_status (*gc_fn)(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                           tf_eager **out);

typedef struct gc_options {
    double tol;       /* max error relative to max(|reference|, 1); default 1e-6 */
    double step;      /* finite-difference step; default 1e-6 */
    unsigned seed;    /* for w and v; default 1 */
    int skip_forward; /* only check reverse mode */
    int skip_reverse; /* only check forward mode */
} gc_options;

/*
 * Checks fn at `inputs` (host f64 tensors of any strides; they become
 * variables of a fresh runtime) on `engine`. Fails the current cmocka test
 * with a message naming `what`, the input, the element and both values.
 */
void gc_check(const char *what, tf_engine *engine, gc_fn fn, void *user, tf_tensor *const *inputs,
              size_t n, const gc_options *options);

/* A host f64 tensor of `shape` with values uniform in [lo, hi) from `*state`. */
tf_tensor *gc_random(size_t rank, const int64_t *shape, double lo, double hi, unsigned *state);

/* As gc_random, of dtype dt (TF_F64, or TF_C128: both parts uniform in [lo, hi)). */
tf_tensor *gc_random_dt(tf_dtype dt, size_t rank, const int64_t *shape, double lo, double hi,
                        unsigned *state);

/* How gc_random_view lays an input out in memory. */
typedef enum gc_view {
    GC_PLAIN,      /* a contiguous tensor */
    GC_TRANSPOSED, /* the last two axes swapped from a base of the swapped shape (rank >= 2) */
    GC_REVERSED,   /* every axis flipped */
    GC_SLICED      /* every second element along axis 0 of a base twice as long (rank >= 1) */
} gc_view;

/* The shape (rank at most 4) and layout of one input of a gradient check. */
typedef struct gc_spec {
    size_t rank;
    int64_t shape[4];
    int view; /* a gc_view */
} gc_spec;

/*
 * A host f64 tensor of sp's shape with values uniform in [lo, hi) from
 * `*state`, laid out as sp->view says; a view of more than one element is
 * asserted not to be contiguous. The caller releases it.
 */
tf_tensor *gc_random_view(const gc_spec *sp, double lo, double hi, unsigned *state);

/* What gc_second_order differentiates: a function and its user data. */
typedef struct gc_order2 {
    gc_fn inner;
    void *user;
} gc_order2;

/*
 * A gc_fn whose user data is a gc_order2: the gradient of
 * sum(sin(inner(xs))) (of Re sin for a complex inner) with respect to xs[0], taken inside the checked
 * function (under trace capture, so that it also works on the untracked
 * constants of the finite-difference side). Checking it differentiates the
 * inner op's rules.
 */
tf_status gc_second_order(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out);

#endif /* TF_GRADCHECK_H */
