/*
 * tenferro/tenferro.h - everything an application includes: an overview of
 * the library, and a complete program.
 *
 * tenferro is a C11 eager tensor runtime with automatic differentiation
 * (reverse and forward mode, to any order). The library itself has no
 * kernels: the arithmetic is done by engine plugins (a CPU engine, a Vulkan
 * engine, ...), loaded at run time, and further ops come from extension
 * modules (linear algebra, einsum, ...), also loaded at run time. Plugin
 * authors include only engine_abi.h (engines) or extension_abi.h (extension
 * modules); they never link libtenferro.
 *
 * ---- The headers ------------------------------------------------------
 *
 *   status.h     status codes and the per-thread last error
 *   dtype.h      element types, TF_MAX_RANK
 *   tensor.h     tf_tensor: immutable strided views over shared storage
 *   engine.h     the plugin search path, tf_plugin, tf_engine, transfers
 *   config.h     choosing the engine from a configuration file
 *   runtime.h    tf_runtime, tf_session, tf_eager, scopes, derivatives
 *   ops.h        the ops, issued through a session
 *   extension.h  extension modules and calling their ops by name
 *   system.h     the process-wide allocator hook and log callback
 *   version.h    library version, at compile time and at run time
 *   engine_abi.h the engine plugin ABI (included here for tf_prim, the
 *                params structs and tf_engine_options)
 *
 * ---- The objects and how they relate -----------------------------------
 *
 *   tf_plugin            an engine plugin (a shared object), loaded once per
 *                        process and never unloaded (engine.h).
 *   tf_engine            one instance of a plugin on one device, with its
 *                        options (threads, device). It owns device memory
 *                        and is used by one thread at a time.
 *   tf_tensor            dtype, shape, strides and offset over refcounted
 *                        storage, which is host memory or an engine's
 *                        memory. Immutable. Column-major (tensor.h).
 *   tf_runtime           the eager runtime: the grad slots of its
 *                        variables, its caches, the extension modules
 *                        installed in it. It holds no engine. Thread-safe.
 *   tf_ad_context        the AD-transform cache; runtimes may share one.
 *   tf_session           a runtime paired with an engine, used by one thread
 *                        at a time.
 *                        Every op is issued through a session
 *                        (tf_session_add(s, x, y, &z)) and computed on its
 *                        engine.
 *   tf_eager             an eager tensor: a tf_tensor value of one runtime,
 *                        with its place on the tape (the op that made it and
 *                        its inputs) and, for a variable, a grad slot.
 *   tf_scope             a no-grad or trace-capture scope on one thread.
 *   tf_extension_module  a loaded extension module, owned by the process;
 *                        installed into runtimes (extension.h).
 *   tf_config            a parsed configuration file (config.h).
 *
 * The tape is the graph itself: an op whose input is tracked (a variable,
 * or the result of recorded ops on one) records a node in its result that
 * points at its inputs. Derivatives walk back from an output through those
 * nodes: tf_eager_backward adds into the grad slots of the variables,
 * tf_runtime_grad / _vjp / _jvp return new eager tensors. Every derivative
 * rule is written with the same session ops, so derivatives are
 * differentiable again and run on whatever engine the caller passes.
 *
 * ---- Threads -----------------------------------------------------------
 *
 * Every function may be called from any thread unless its comment says
 * otherwise. Tensors and eager tensors are immutable values: they may be
 * read, shared and released on any thread. A runtime may be used by any
 * number of threads at once. An engine, and a session (which uses one), is
 * used by one thread at a time. No-grad and trace-capture scopes apply only
 * to the thread that began them. tf_allocator_set must not run concurrently
 * with anything, and nothing may change the environment while the library
 * reads it (config.h, the plugin search path).
 *
 * ---- Errors ------------------------------------------------------------
 *
 * Every function that can fail returns a tf_status: TF_OK (0), or a code
 * of status.h. Results come back through trailing out-parameters, written
 * only on success (a comment names any exception, such as the report of
 * tf_config_open_engine). A failed call changes nothing the caller can see:
 * no tensor, tape node or grad slot is made or modified. The exceptions are
 * deferred work (runtime.h, "Deferred elementwise chains"): an engine
 * failure in a batch of deferred ops is reported by whichever call made the
 * batch run, and the batch's results are lost (reading one later fails with
 * TF_ERR_BACKEND). The detail of the most recent failure - a message naming
 * the op, the argument and the values; the argument's name alone; the
 * underlying cause, e.g. an engine's own report - stays in the calling
 * thread's last-error slot (tf_error_message, tf_error_argument,
 * tf_error_cause) until the next failure on that thread. The library never
 * aborts on bad input and never prints (unless a log callback is set,
 * system.h). A NULL object passed to an accessor that returns no status is
 * the exception: its comment says "must not be NULL".
 *
 * ---- Ownership ---------------------------------------------------------
 *
 *   - A pointer argument is borrowed for the call: the library keeps
 *     nothing of it after returning, unless the comment says "retained"
 *     (it then takes its own reference, and the caller keeps its own).
 *   - An object returned through an out-parameter is one new reference (or
 *     a new handle) transferred to the caller, who releases it once.
 *   - A pointer returned as the function's value (an accessor's string,
 *     tf_eager_value's tensor) is borrowed from its owner, for as long as
 *     the comment says, and is never released by the caller.
 *   - Memory given to the library stays the caller's (tf_tensor_from_host
 *     copies it) unless the comment says it is borrowed
 *     (tf_tensor_wrap_host).
 *
 * ---- One lifecycle vocabulary ------------------------------------------
 *
 *   Refcounted objects (tf_runtime, tf_ad_context, tf_tensor, tf_eager):
 *     _create and the other constructors give one reference, _retain adds
 *     one, _release drops one; the last one frees the object.
 *   Exclusively owned handles (tf_engine, tf_config): _create, _open or
 *     _load makes one, _destroy ends it. (An engine's tensors and sessions keep
 *     the instance alive after tf_engine_destroy.)
 *   Scopes (tf_session; the no-grad and trace-capture tf_scope): _begin
 *     (tf_session_begin, tf_scope_begin_no_grad,
 *     tf_scope_begin_capture_trace) starts one on the calling thread, _end
 *     ends it; nested scopes end in
 *     reverse order.
 *   Process-owned objects (tf_plugin, tf_extension_module): _load (or
 *     _from_descriptor) returns one; it is never freed.
 *   Plain data the library allocates for the caller (search paths, scan
 *     results, reports): _free releases it.
 *
 * Every _release, _destroy, _end and _free accepts NULL as a no-op.
 * Constructors are named for what they do (_create, _open, _load,
 * _begin_no_grad, _from_host); the destructor's verb says how the object
 * is owned. tf_config_free, tf_runtime_no_grad and tf_runtime_capture_trace
 * are the older names of tf_config_destroy, tf_scope_begin_no_grad and
 * tf_scope_begin_capture_trace, kept so that older callers build.
 *
 * ---- Where to read more ------------------------------------------------
 *
 * The guides, in the source tree's docs/ and installed as
 * <prefix>/share/doc/tenferro/docs/ (next to sdk/, the plugin templates):
 *
 *   docs/README.md           the index of the guides
 *   docs/runtime.md          the eager runtime, the tape, deferred chains,
 *                            the caches, numerical conventions
 *   docs/apps.md             choosing engines by configuration
 *   docs/extensions.md       extension modules and by-name calls
 *   docs/engine-abi.md       the engine plugin ABI
 *   docs/plugin-authors.md   writing engines and extension modules
 *
 * ---- A complete program ------------------------------------------------
 *
 * The program between the two markers below computes the gradient of
 * loss = sum(w * w * x) with respect to a variable w, twice (with
 * tf_eager_backward into w's grad slot, and with tf_runtime_grad as a new
 * eager tensor), checks every status, and cleans up. The build extracts
 * it from this header, compiles it against the public headers and runs it
 * (one of tenferro's tests), so it works as written. Build it
 * with: cc prog.c $(pkg-config --cflags --libs tenferro)
 */
#ifndef TENFERRO_TENFERRO_H
#define TENFERRO_TENFERRO_H

#if 0 /* the example program: documentation, not part of the header */
/* ---- tenferro.h example program: begin ---- */
#include <stdio.h>

#include <tenferro/tenferro.h>

/* On failure: print the status and the thread's detailed message, then clean up. */
#define CHECK(call)                                                                          \
    do {                                                                                     \
        tf_status st_ = (call);                                                              \
        if (st_ != TF_OK) {                                                                  \
            fprintf(stderr, "%s: %s: %s\n", #call, tf_status_name(st_), tf_error_message()); \
            goto cleanup;                                                                    \
        }                                                                                    \
    } while (0)

/* Prints g[0..n) and says whether it is 2 w x, the gradient of sum(w * w * x). */
static int is_two_w_x(const char *what, const double *g, size_t n, const double *w,
                      const double *x)
{
    int ok = n == 3;
    printf("%s:", what);
    for (size_t i = 0; i < n; i++) {
        double err = g[i] - 2.0 * w[i] * x[i];
        ok = ok && err > -1e-12 && err < 1e-12;
        printf(" %g", g[i]);
    }
    printf(ok ? "\n" : " (expected 2 w x)\n");
    return ok;
}

int main(void)
{
    int rc = 1;
    tf_runtime *rt = NULL;
    tf_engine *cpu = NULL;
    tf_session *s = NULL;
    tf_tensor *host = NULL, *slot = NULL;
    tf_eager *w = NULL, *x = NULL, *ww = NULL, *y = NULL, *loss = NULL, *dw = NULL;
    const int64_t shape[] = {3};
    const double w0[] = {1.0, 2.0, 3.0}, x0[] = {4.0, 5.0, 6.0};
    const void *data;
    size_t n;

    /* The runtime holds grad slots and caches; it has no engine of its own. */
    CHECK(tf_runtime_create(&rt));
    /* The CPU engine plugin, from the plugin search path (engine.h), 1 thread. */
    CHECK(tf_engine_open("cpu", 1, &cpu));

    /* A variable w (it gets a grad slot) and a constant x, from host data. */
    CHECK(tf_tensor_from_host(TF_F64, 1, shape, w0, 3, &host)); /* copies w0 */
    CHECK(tf_runtime_variable_from(rt, host, &w));               /* retains host */
    tf_tensor_release(host);
    host = NULL;
    CHECK(tf_tensor_from_host(TF_F64, 1, shape, x0, 3, &host));
    CHECK(tf_runtime_constant_from(rt, host, &x));
    tf_tensor_release(host);
    host = NULL;

    /* Ops go through a session: the runtime paired with the engine. Each result
       is a new reference; w is tracked, so each op is recorded on the tape. */
    CHECK(tf_session_begin(rt, cpu, &s));
    CHECK(tf_session_mul(s, w, w, &ww));
    CHECK(tf_session_mul(s, ww, x, &y));
    CHECK(tf_session_reduce_sum(s, y, NULL, 0, &loss)); /* NULL axes: all of them */

    /* Reverse mode adds d loss / d w into w's grad slot... */
    CHECK(tf_eager_backward(loss, cpu));
    CHECK(tf_eager_grad(w, &slot)); /* a new reference (NULL if the slot were empty) */
    /* ...and the functional form returns it as a new eager tensor, slots untouched. */
    CHECK(tf_runtime_grad(rt, cpu, loss, w, &dw));

    /* The CPU engine computes in host memory, so its tensors read as host slices
       (a device engine's would be copied out first with tf_engine_download). */
    CHECK(tf_tensor_data(slot, TF_F64, &data, &n));
    if (!is_two_w_x("backward", data, n, w0, x0))
        goto cleanup;
    CHECK(tf_tensor_data(tf_eager_value(dw), TF_F64, &data, &n));
    if (!is_two_w_x("grad", data, n, w0, x0))
        goto cleanup;
    rc = 0;

cleanup: /* every release, destroy and end accepts NULL */
    tf_eager_release(dw);
    tf_tensor_release(slot);
    tf_eager_release(loss);
    tf_eager_release(y);
    tf_eager_release(ww);
    tf_eager_release(x);
    tf_eager_release(w);
    tf_tensor_release(host);
    tf_session_end(s);
    tf_engine_destroy(cpu);
    tf_runtime_release(rt);
    return rc;
}
/* ---- tenferro.h example program: end ---- */
#endif

#include "config.h"
#include "dtype.h"
#include "engine.h"
#include "engine_abi.h"
#include "extension.h"
#include "ops.h"
#include "runtime.h"
#include "status.h"
#include "system.h"
#include "tensor.h"
#include "version.h"

#endif /* TENFERRO_TENFERRO_H */
