/*
 * tf_gen.h - random straight-line programs for the differential AD checker
 * (tests/runtime/test_ad_diff.c), over the whole op surface of
 * shared/FEATURES.md: elementwise ops with broadcasting, reductions,
 * contractions, layout and indexing ops, composites, and the linalg
 * extension's ops.
 *
 * Programs are grown op by op on their concrete values (each op is run on the
 * CPU engine in f64 as it is added, and kept only if the library accepts it
 * and its operands keep the margins that make the program smooth there: no
 * element near a kink, a branch or a tie, no ill-conditioned matrix), as the
 * oracle's generator does (shared/oracle/OPS.md, sections 4 and 7.9). They
 * share values on purpose: values used three times or more, the same value
 * as both operands, residual paths y = x o g(x), cancelling paths
 * t1 = f(x); t2 = t1 + x; y = t1 - t2, rank-0 values, broadcasting, and
 * leaves laid out as strided views. Every input reaches the output through
 * differentiable ops.
 *
 * Complex programs (options->with_complex) keep the oracle's complex margins
 * (OPS.md 7.9: Re z <= 5 for exp, |z| > 0.1 and |arg z| < pi - 0.3 for log,
 * sqrt, pow and angle, the strips of sin, cos and tanh, |y| > 0.2 for div);
 * their values, weights, tangents and HVP direction are c128 where the value
 * is, and p->has_complex is set.
 *
 * Deterministic: the same seed and options give the same program.
 */
#ifndef TF_GEN_H
#define TF_GEN_H

#include "tf_prog.h"

typedef struct tfg_options {
    uint32_t min_ops, max_ops; /* ops before the output is completed (e.g. 4 .. 16) */
    bool linalg;               /* use tenferro.linalg's ops (needs cfg->linalg) */
    bool big;                  /* leaves of >= 32768 elements, so that the CPU engine's
                                  sessions defer (no linalg, no contractions of them) */
    bool with_complex;         /* c128 leaves: x0 and about half of the other leaves
                                  (the rest f64), grown with the ops that accept
                                  complex, conj/real/imag/abs/angle/complex between
                                  the dtypes, and NumPy promotion of mixed operands
                                  (docs/complex.md; not with linalg or big) */
} tfg_options;

/*
 * Generates program `index` of `seed` into p (tfp_program_init'ed by it),
 * validating each op on cpu (an f64 engine; linalg installed when
 * options->linalg). Returns false only when the library fails in a way
 * generation cannot avoid (then p is empty and err says why).
 */
bool tfg_program(uint64_t seed, uint64_t index, const tfg_options *options, tf_engine *cpu,
                 tf_extension_module *linalg, tfp_program *p, char *err, size_t err_size);

/* Whether a program contains an op whose derivative finite differences
   cannot see (cast_round: piecewise constant at the f32 grid). */
bool tfg_fd_safe(const tfp_program *p);

/* A reproducible stream of doubles in [0, 1) (splitmix64). */
typedef struct tfg_rng {
    uint64_t s;
} tfg_rng;
uint64_t tfg_next(tfg_rng *r);
double tfg_unif(tfg_rng *r, double lo, double hi);
/* A uniform integer in [0, n). */
uint32_t tfg_pick(tfg_rng *r, uint32_t n);

#endif /* TF_GEN_H */
