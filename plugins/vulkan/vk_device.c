/*
 * vk_device.c - the Vulkan instance, the validation layer's messenger, and
 * the physical devices: enumeration, their tf_device_info, and the choice of
 * one from the engine options.
 *
 * The validation layer (VK_LAYER_KHRONOS_validation) is enabled when the
 * environment variable TENFERRO_VULKAN_VALIDATION is "1" and the layer is
 * installed. Every warning or error it emits is counted and logged through
 * host->log as "vulkan: validation: <message>" at TF_LOG_ERROR, so tests can
 * capture the log and fail on any such line.
 *
 * Devices are listed GPU-type first, then CPU-type (software) ones, so that
 * index 0 is a real GPU whenever one exists. CPU-type devices (lavapipe) are
 * chosen only when the option device_type=cpu or device_type=any is given,
 * or when no other device exists. The other extra options (subgroup_reduce,
 * shader_float64, memory_limit, fused_pipelines, debug_fail) are read here
 * too; README.md describes them.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

static const char *validation_layer = "VK_LAYER_KHRONOS_validation";

static int layer_present(const tf_host_api *host)
{
    uint32_t n = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0)
        return 0;
    VkLayerProperties *props = host->alloc(host->ctx, n * sizeof *props, 0);
    if (props == NULL)
        return 0;
    int found = 0;
    if (vkEnumerateInstanceLayerProperties(&n, props) == VK_SUCCESS) {
        for (uint32_t i = 0; i < n && !found; i++)
            found = strcmp(props[i].layerName, validation_layer) == 0;
    }
    host->free(host->ctx, props);
    return found;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                 void *user)
{
    (void)types;
    vk_plugin *pl = user;
    if (severity & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) {
        atomic_fetch_add(&pl->validation_messages, 1u);
        tf__vk_log(pl->host, TF_LOG_ERROR, "vulkan: validation: %s",
                   data != NULL && data->pMessage != NULL ? data->pMessage : "(no message)");
    }
    return VK_FALSE;
}

static void create_messenger(vk_plugin *pl)
{
    PFN_vkCreateDebugUtilsMessengerEXT create = (PFN_vkCreateDebugUtilsMessengerEXT)(void (*)(
        void))vkGetInstanceProcAddr(pl->instance, "vkCreateDebugUtilsMessengerEXT");
    pl->destroy_messenger = (PFN_vkDestroyDebugUtilsMessengerEXT)(void (*)(
        void))vkGetInstanceProcAddr(pl->instance, "vkDestroyDebugUtilsMessengerEXT");
    if (create == NULL || pl->destroy_messenger == NULL)
        return;
    VkDebugUtilsMessengerCreateInfoEXT ci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_message,
        .pUserData = pl,
    };
    if (create(pl->instance, &ci, NULL, &pl->messenger) != VK_SUCCESS)
        pl->messenger = VK_NULL_HANDLE;
}

static tf_device_type device_type(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return TF_DEVICE_INTEGRATED_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return TF_DEVICE_DISCRETE_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return TF_DEVICE_VIRTUAL_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return TF_DEVICE_CPU;
    default: return TF_DEVICE_OTHER;
    }
}

static uint32_t compute_family(const vk_plugin *pl, VkPhysicalDevice pd)
{
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, NULL);
    if (n == 0)
        return UINT32_MAX;
    VkQueueFamilyProperties *q = pl->host->alloc(pl->host->ctx, n * sizeof *q, 0);
    if (q == NULL)
        return UINT32_MAX;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, q);
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        if (!(q[i].queueFlags & VK_QUEUE_COMPUTE_BIT))
            continue;
        /* Prefer a compute family without graphics (a dedicated compute queue). */
        if (best == UINT32_MAX || !(q[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))
            best = i;
    }
    pl->host->free(pl->host->ctx, q);
    return best;
}

static void describe(vk_physical *d, VkPhysicalDevice pd, const vk_plugin *pl)
{
    d->handle = pd;
    vkGetPhysicalDeviceProperties(pd, &d->props);
    VkPhysicalDeviceVulkan12Features f12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    if (d->props.apiVersion >= VK_API_VERSION_1_2)
        f2.pNext = &f12;
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    d->f64 = f2.features.shaderFloat64 == VK_TRUE;
    d->i64 = f2.features.shaderInt64 == VK_TRUE;
    d->bool8 =
        d->props.apiVersion >= VK_API_VERSION_1_2 && f12.storageBuffer8BitAccess && f12.shaderInt8;
    d->queue_family = compute_family(pl, pd);
    VkPhysicalDeviceSubgroupProperties sg = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &sg};
    vkGetPhysicalDeviceProperties2(pd, &p2);
    VkSubgroupFeatureFlags need = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
    d->subgroups = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                   (sg.supportedOperations & need) == need && sg.subgroupSize >= 1 &&
                   sg.subgroupSize <= VK_WG;

    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    uint64_t local = 0;
    for (uint32_t h = 0; h < mp.memoryHeapCount; h++) {
        if (mp.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
            local += mp.memoryHeaps[h].size;
    }

    tf_device_info *info = &d->info;
    memset(info, 0, sizeof *info);
    info->struct_size = (uint32_t)sizeof *info;
    info->type = device_type(d->props.deviceType);
    info->flags = (d->f64 ? TF_DEVICE_FLAG_F64 : 0u) |
                  (info->type == TF_DEVICE_CPU ? TF_DEVICE_FLAG_SOFTWARE : 0u);
    info->memory_bytes = local;
    snprintf(info->name, sizeof info->name, "%.127s", d->props.deviceName);
    uint32_t api = d->props.apiVersion;
    snprintf(info->driver, sizeof info->driver, "Vulkan %u.%u.%u, driver 0x%x",
             VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api), VK_API_VERSION_PATCH(api),
             d->props.driverVersion);
}

static tf_status enumerate(vk_plugin *pl)
{
    const tf_host_api *host = pl->host;
    uint32_t n = 0;
    VkResult r = vkEnumeratePhysicalDevices(pl->instance, &n, NULL);
    if (r != VK_SUCCESS)
        return tf__vk_fail_vk(host, "init: vkEnumeratePhysicalDevices", r);
    if (n == 0)
        return TF_OK;
    VkPhysicalDevice *pds = host->alloc(host->ctx, n * sizeof *pds, 0);
    pl->devices = host->alloc(host->ctx, n * sizeof *pl->devices, 0);
    if (pds == NULL || pl->devices == NULL) {
        host->free(host->ctx, pds);
        return tf__vk_fail(host, TF_ERR_OUT_OF_MEMORY, "vulkan: init: out of memory");
    }
    r = vkEnumeratePhysicalDevices(pl->instance, &n, pds);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        host->free(host->ctx, pds);
        return tf__vk_fail_vk(host, "init: vkEnumeratePhysicalDevices", r);
    }
    /* GPU-type devices first, then CPU-type ones, each in the driver's order. */
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < n; i++) {
            VkPhysicalDeviceProperties p;
            vkGetPhysicalDeviceProperties(pds[i], &p);
            int cpu = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
            if (cpu == (pass == 1))
                describe(&pl->devices[pl->n_devices++], pds[i], pl);
        }
    }
    host->free(host->ctx, pds);
    return TF_OK;
}

tf_status tf__vk_instance_create(vk_plugin *pl)
{
    const tf_host_api *host = pl->host;
    const char *env = getenv("TENFERRO_VULKAN_VALIDATION");
    int want = env != NULL && strcmp(env, "1") == 0;
    pl->validation = want && layer_present(host);
    if (want && !pl->validation)
        tf__vk_log(host, TF_LOG_WARN,
                   "vulkan: TENFERRO_VULKAN_VALIDATION=1 but %s is not installed",
                   validation_layer);
    const char *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "tenferro",
        .pEngineName = "tenferro-engine-vulkan",
        .apiVersion = VK_API_VERSION_1_2,
    };
    VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
        .enabledLayerCount = pl->validation ? 1u : 0u,
        .ppEnabledLayerNames = &validation_layer,
        .enabledExtensionCount = pl->validation ? 1u : 0u,
        .ppEnabledExtensionNames = &ext,
    };
    VkResult r = vkCreateInstance(&ci, NULL, &pl->instance);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER || r == VK_ERROR_INITIALIZATION_FAILED ||
        r == VK_ERROR_LAYER_NOT_PRESENT || r == VK_ERROR_EXTENSION_NOT_PRESENT) {
        /* No usable driver: the plugin still loads, with no devices; create says why. */
        pl->instance = VK_NULL_HANDLE;
        snprintf(pl->no_driver, sizeof pl->no_driver, "vkCreateInstance failed with %s (%d)",
                 tf__vk_result_name(r), (int)r);
        tf__vk_log(host, TF_LOG_WARN, "vulkan: no Vulkan driver: %s", pl->no_driver);
        return TF_OK;
    }
    if (r != VK_SUCCESS) {
        pl->instance = VK_NULL_HANDLE;
        return tf__vk_fail_vk(host, "init: vkCreateInstance", r);
    }
    if (pl->validation)
        create_messenger(pl);
    tf_status st = enumerate(pl);
    if (st != TF_OK)
        tf__vk_instance_destroy(pl);
    return st;
}

void tf__vk_instance_destroy(vk_plugin *pl)
{
    pl->host->free(pl->host->ctx, pl->devices);
    pl->devices = NULL;
    pl->n_devices = 0;
    if (pl->messenger != VK_NULL_HANDLE)
        pl->destroy_messenger(pl->instance, pl->messenger, NULL);
    pl->messenger = VK_NULL_HANDLE;
    if (pl->instance != VK_NULL_HANDLE)
        vkDestroyInstance(pl->instance, NULL);
    pl->instance = VK_NULL_HANDLE;
}

/* device_type option: which types may be chosen. */
typedef enum {
    ALLOW_GPU,
    ALLOW_CPU,
    ALLOW_ANY
} allow_kind;

/* Digits with an optional binary suffix (k, m, g: KiB, MiB, GiB); 0 when malformed. */
static uint64_t parse_bytes(const char *v)
{
    uint64_t n = 0;
    const char *p = v;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (n > (UINT64_MAX - 9) / 10)
            return 0;
        n = n * 10 + (uint64_t)(*p - '0');
    }
    if (p == v)
        return 0;
    unsigned shift = 0;
    switch (*p) {
    case '\0': break;
    case 'k':
    case 'K': shift = 10; break;
    case 'm':
    case 'M': shift = 20; break;
    case 'g':
    case 'G': shift = 30; break;
    default: return 0;
    }
    if (*p != '\0' && p[1] != '\0')
        return 0;
    if (n > (UINT64_MAX >> shift))
        return 0;
    return n << shift;
}

/* "<fault>@<N>": which call fails, N counted from 1. */
static int parse_fault(const char *v, vk_fault *fault, uint64_t *at)
{
    static const struct {
        const char *name;
        vk_fault fault;
    } kinds[] = {{"device_lost@", VK_FAULT_DEVICE_LOST},
                 {"wait_lost@", VK_FAULT_WAIT_LOST},
                 {"submit_oom@", VK_FAULT_SUBMIT_OOM},
                 {"alloc_oom@", VK_FAULT_ALLOC_OOM}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t len = strlen(kinds[i].name);
        if (strncmp(v, kinds[i].name, len) != 0)
            continue;
        const char *n = v + len;
        if (*n < '0' || *n > '9' || n[strspn(n, "0123456789")] != '\0')
            return 0;
        *at = parse_bytes(n);
        *fault = kinds[i].fault;
        return *at > 0;
    }
    return 0;
}

static tf_status read_option(vk_plugin *pl, const char *k, const char *v, allow_kind *allow,
                             vk_options *opts)
{
    const tf_host_api *host = pl->host;
    if (strcmp(k, "subgroup_reduce") == 0) {
        if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
            return tf__vk_fail(host, TF_ERR_VALIDATION,
                               "vulkan: create: option subgroup_reduce = \"%s\" (expected on or "
                               "off)",
                               v);
        opts->subgroup_reduce = strcmp(v, "on") == 0;
    } else if (strcmp(k, "shader_float64") == 0) {
        if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
            return tf__vk_fail(host, TF_ERR_VALIDATION,
                               "vulkan: create: option shader_float64 = \"%s\" (expected on or "
                               "off)",
                               v);
        opts->float64 = strcmp(v, "on") == 0;
    } else if (strcmp(k, "memory_limit") == 0) {
        opts->memory_limit = parse_bytes(v);
        if (opts->memory_limit == 0)
            return tf__vk_fail(host, TF_ERR_VALIDATION,
                               "vulkan: create: option memory_limit = \"%s\" (expected a "
                               "positive number of bytes, optionally with k, m or g for KiB, "
                               "MiB or GiB)",
                               v);
    } else if (strcmp(k, "debug_fail") == 0) {
        if (!parse_fault(v, &opts->fault, &opts->fault_at))
            return tf__vk_fail(host, TF_ERR_VALIDATION,
                               "vulkan: create: option debug_fail = \"%s\" (expected "
                               "device_lost@N, wait_lost@N, submit_oom@N or alloc_oom@N with "
                               "N >= 1)",
                               v);
    } else if (strcmp(k, "fused_pipelines") == 0) {
        uint64_t n = v[strspn(v, "0123456789")] == '\0' ? parse_bytes(v) : 0;
        if (n == 0 || n > 65536)
            return tf__vk_fail(host, TF_ERR_VALIDATION,
                               "vulkan: create: option fused_pipelines = \"%s\" (expected 1 to "
                               "65536)",
                               v);
        opts->fused_pipelines = (uint32_t)n;
    } else if (strcmp(k, "device_type") == 0) {
        if (strcmp(v, "gpu") == 0)
            *allow = ALLOW_GPU;
        else if (strcmp(v, "cpu") == 0)
            *allow = ALLOW_CPU;
        else if (strcmp(v, "any") == 0)
            *allow = ALLOW_ANY;
        else
            return tf__vk_fail(host, TF_ERR_VALIDATION,
                               "vulkan: create: option device_type = \"%s\" (expected gpu, cpu "
                               "or any)",
                               v);
    } else {
        return tf__vk_fail(host, TF_ERR_VALIDATION,
                           "vulkan: create: unknown option \"%s\" (the Vulkan engine takes "
                           "device_type = gpu | cpu | any, subgroup_reduce = on | off, "
                           "shader_float64 = on | off, memory_limit = <bytes>, fused_pipelines = <N> and debug_fail = "
                           "<fault>@<N>)",
                           k);
    }
    return TF_OK;
}

static tf_status read_extra(vk_plugin *pl, const tf_engine_options *o, allow_kind *allow,
                            vk_options *opts)
{
    int has_gpu = pl->n_devices > 0 && pl->devices[0].info.type != TF_DEVICE_CPU;
    *allow = has_gpu ? ALLOW_GPU : ALLOW_ANY;
    memset(opts, 0, sizeof *opts);
    opts->subgroup_reduce = 1;
    opts->float64 = 1;
    opts->fused_pipelines = VK_FUSED_PIPELINES;
    if (o == NULL || !TF_ABI_HAS_FIELD(o, tf_engine_options, extra_values))
        return TF_OK;
    for (uint32_t i = 0; i < o->n_extra; i++) {
        const char *k = o->extra_keys != NULL ? o->extra_keys[i] : NULL;
        const char *v = o->extra_values != NULL ? o->extra_values[i] : NULL;
        tf_status st =
            read_option(pl, k != NULL ? k : "(null)", v != NULL ? v : "(null)", allow, opts);
        if (st != TF_OK)
            return st;
    }
    return TF_OK;
}

static int allowed(const vk_physical *d, allow_kind allow)
{
    int cpu = d->info.type == TF_DEVICE_CPU;
    return allow == ALLOW_ANY || (allow == ALLOW_CPU) == cpu;
}

tf_status tf__vk_device_choose(vk_plugin *pl, const tf_engine_options *o, uint32_t *index,
                               vk_options *opts)
{
    const tf_host_api *host = pl->host;
    if (pl->n_devices == 0)
        return tf__vk_fail(host, TF_ERR_BACKEND,
                           "vulkan: create: no Vulkan device found%s%s (install a driver, e.g. "
                           "mesa-vulkan-drivers for the lavapipe CPU device)",
                           pl->no_driver[0] ? ": " : "", pl->no_driver);
    allow_kind allow;
    tf_status st = read_extra(pl, o, &allow, opts);
    if (st != TF_OK)
        return st;
    const char *name = NULL;
    uint32_t want = 0;
    if (o != NULL && TF_ABI_HAS_FIELD(o, tf_engine_options, device_index))
        want = o->device_index;
    if (o != NULL && TF_ABI_HAS_FIELD(o, tf_engine_options, device_name))
        name = o->device_name;
    /* device_index counts the allowed devices only; a name picks the first allowed match. */
    uint32_t seen = 0;
    for (uint32_t i = 0; i < pl->n_devices; i++) {
        const vk_physical *d = &pl->devices[i];
        if (!allowed(d, allow) || d->queue_family == UINT32_MAX)
            continue;
        if (name != NULL ? strstr(d->info.name, name) != NULL : seen == want) {
            *index = i;
            return TF_OK;
        }
        seen++;
    }
    static const char *const kinds[] = {"GPU-type", "CPU-type", "any"};
    if (name != NULL)
        return tf__vk_fail(host, TF_ERR_VALIDATION,
                           "vulkan: create: option device_name = \"%s\" matches no %s device "
                           "(%u devices; CPU-type ones need device_type=cpu or any)",
                           name, kinds[allow], pl->n_devices);
    return tf__vk_fail(host, TF_ERR_VALIDATION,
                       "vulkan: create: option device_index = %u out of range (%u %s devices "
                       "with a compute queue)",
                       want, seen, kinds[allow]);
}
