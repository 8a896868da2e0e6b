# tf_add_extension_module(NAME <name> SOURCES <files...> [LIBRARIES <libs...>]
#                         [INCLUDES <dirs...>] [OUTPUT_DIR <dir>])
#
# Builds an extension module exactly as a third party would: a MODULE library
# named tenferro-ext-<name>.so that sees only the public headers, exports only
# its entry symbol tf_extension_module_v1, and never links libtenferro (the
# same rules and the same installed helper as engine plugins: see
# TenferroPlugin.cmake and TenferroPluginHelpers.cmake).
include(TenferroPlugin)

function(tf_add_extension_module)
  tf__add_plugin_module(ext ${ARGN})
endfunction()
