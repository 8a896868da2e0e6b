/*
 * test_vulkan_nodevice.c - the Vulkan engine on a machine without any Vulkan
 * driver (the loader is pointed at a driver list that does not exist): the
 * plugin still loads, lists no device, and engine creation fails with a
 * clear error. A process of its own, since the plugin reads the drivers once.
 */
#define _POSIX_C_SOURCE 200809L

#include "tf_test.h"

static void test_no_device(void **state)
{
    (void)state;
    tf_plugin *p = NULL;
    TF_ASSERT_OK(tf_plugin_load("vulkan", &p));
    assert_int_equal(tf_plugin_device_count(p), 0);
    tf_engine *e = NULL;
    tf_status st = tf_engine_open("vulkan", 0, &e);
    assert_int_equal(st, TF_ERR_BACKEND);
    assert_null(e);
    assert_non_null(strstr(tf_error_cause(), "no Vulkan device"));
}

int main(void)
{
    /* Both spellings of the loader's driver list (older and newer loaders). */
    setenv("VK_ICD_FILENAMES", "/nonexistent/tenferro-no-driver.json", 1);
    setenv("VK_DRIVER_FILES", "/nonexistent/tenferro-no-driver.json", 1);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_no_device)};
    return cmocka_run_group_tests_name("vulkan without a driver", tests, NULL, NULL);
}
