/*
 * linalg_internal.h - shared declarations of the tenferro.linalg module:
 * its kernels (linalg_kernels.c, linalg_kernels_svd.c), AD rules (linalg_rules.c, and
 * linalg_rules_spectral.c for eigh, svd, pinv and norm, both written with the
 * builder of linalg_lb.h) and the module descriptor (linalg_module.c).
 *
 * Conventions: matrices live on the last two axes (row i on axis rank-2,
 * column j on axis rank-1, as tril/diagonal in ops.h); every leading axis is
 * a batch axis, so A of shape [b1, ..., n, n] is a batch of b1*... matrices
 * and the outputs keep those leading axes. f32, f64, c64 and c128 (the
 * kernels' shared code is linalg_kern.h).
 */
#ifndef TF_LINALG_INTERNAL_H
#define TF_LINALG_INTERNAL_H

#include <tenferro/extension_abi.h>

#define LINALG_ID "tenferro.linalg"

/* norm's `ord` for the two orders that are not numbers: the character codes
   'F' (Frobenius) and 'N' (nuclear), passed as f64 (70.0 and 78.0). */
#define LINALG_ORD_FRO ((double)'F')
#define LINALG_ORD_NUC ((double)'N')

/* Kernels (typed C signatures, called through libffi by the host). */
tf_status linalg_cholesky_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, const tf_operand *l);
tf_status linalg_solve_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, const tf_operand *b,
                           const tf_operand *x);
tf_status linalg_triangular_solve_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a,
                                      const tf_operand *b, int64_t lower, const tf_operand *x);
tf_status linalg_inv_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, const tf_operand *y);
tf_status linalg_det_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, const tf_operand *d);
tf_status linalg_slogdet_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a,
                             const tf_operand *sign, const tf_operand *logabsdet);
tf_status linalg_qr_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, const tf_operand *q,
                        const tf_operand *r);
tf_status linalg_eigh_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, double eps,
                          const tf_operand *w, const tf_operand *v);
tf_status linalg_lstsq_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, const tf_operand *b,
                           const tf_operand *x);
tf_status linalg_svd_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, double eps,
                         const tf_operand *u, const tf_operand *s, const tf_operand *v);
tf_status linalg_pinv_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, double rcond,
                          const tf_operand *p);
tf_status linalg_norm_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, double ord,
                          const tf_operand *out);
tf_status linalg_norm_grad_cpu(const tf_ext_kernel_ctx *k, const tf_operand *a, double ord,
                               const tf_operand *g);

/* AD rules. */
tf_status linalg_cholesky_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                              const int *need, tf_ext_tensor **cin);
tf_status linalg_cholesky_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                              tf_ext_tensor *const *tan, tf_ext_tensor **tout);
tf_status linalg_solve_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                           const int *need, tf_ext_tensor **cin);
tf_status linalg_solve_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                           tf_ext_tensor *const *tan, tf_ext_tensor **tout);
tf_status linalg_trisolve_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                              const int *need, tf_ext_tensor **cin);
tf_status linalg_trisolve_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                              tf_ext_tensor *const *tan, tf_ext_tensor **tout);
tf_status linalg_inv_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                         const int *need, tf_ext_tensor **cin);
tf_status linalg_inv_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                         tf_ext_tensor *const *tan, tf_ext_tensor **tout);
tf_status linalg_det_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                         const int *need, tf_ext_tensor **cin);
tf_status linalg_det_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                         tf_ext_tensor *const *tan, tf_ext_tensor **tout);
tf_status linalg_slogdet_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                             const int *need, tf_ext_tensor **cin);
tf_status linalg_slogdet_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                             tf_ext_tensor *const *tan, tf_ext_tensor **tout);
tf_status linalg_qr_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                        const int *need, tf_ext_tensor **cin);
tf_status linalg_qr_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                        tf_ext_tensor *const *tan, tf_ext_tensor **tout);
tf_status linalg_eigh_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                          const int *need, tf_ext_tensor **cin);
tf_status linalg_eigh_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                          tf_ext_tensor *const *tan, tf_ext_tensor **tout);
tf_status linalg_lstsq_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                           const int *need, tf_ext_tensor **cin);
tf_status linalg_lstsq_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                           tf_ext_tensor *const *tan, tf_ext_tensor **tout);
tf_status linalg_svd_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                         const int *need, tf_ext_tensor **cin);
tf_status linalg_svd_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                         tf_ext_tensor *const *tan, tf_ext_tensor **tout);
tf_status linalg_pinv_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                          const int *need, tf_ext_tensor **cin);
tf_status linalg_pinv_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                          tf_ext_tensor *const *tan, tf_ext_tensor **tout);
tf_status linalg_norm_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *cot,
                          const int *need, tf_ext_tensor **cin);
tf_status linalg_norm_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                          tf_ext_tensor *const *tan, tf_ext_tensor **tout);
tf_status linalg_norm_grad_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                               tf_ext_tensor *cot, const int *need, tf_ext_tensor **cin);
tf_status linalg_norm_grad_jvp(const tf_ext_rule_ctx *c, const tf_ext_call *call,
                               tf_ext_tensor *const *tan, tf_ext_tensor **tout);

#endif /* TF_LINALG_INTERNAL_H */
