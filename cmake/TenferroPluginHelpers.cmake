# TenferroPluginHelpers.cmake - building tenferro engine plugins and extension
# modules. One file, used twice: the bundled plugins of this repository build
# with it (through the thin wrappers of TenferroPlugin.cmake), and it is
# installed with the CMake package, so find_package(tenferro) gives a third
# party exactly the same functions.
#
#   tenferro_add_engine_plugin(NAME <name> SOURCES <files...>
#                              [LIBRARIES <libs...>] [INCLUDES <dirs...>]
#                              [OUTPUT_DIR <dir>] [ALLOW_UNDEFINED])
#     Target and file tenferro-engine-<name>.so (entry tf_engine_plugin_v1).
#
#   tenferro_add_extension_module(<same arguments>)
#     Target and file tenferro-ext-<name>.so (entry tf_extension_module_v1).
#
#   tenferro_install_plugins(TARGETS <targets...> [DESTINATION <dir>])
#     Installs plugins into DESTINATION (default: <libdir>/tenferro/plugins of
#     the project's own install prefix, which the library searches when both
#     share a prefix; otherwise name the folder in the [plugins] path of the
#     configuration file or in TENFERRO_PLUGIN_PATH).
#
# What the add functions guarantee (the rules of docs/plugin-authors.md):
# - a MODULE library (never linked against, only dlopen()ed), named with the
#   tenferro prefix and no "lib": the loader finds plugins by file name;
# - hidden visibility: only the entry symbol, marked TF_ENGINE_EXPORT or
#   TF_EXTENSION_EXPORT in the source, is exported; symbols of static
#   libraries linked in stay local too (--exclude-libs);
# - the public headers through tenferro::abi, and no libtenferro: everything
#   a plugin needs from the host arrives in tf_host_api;
# - -Wl,--no-undefined, so a missing symbol fails the link now instead of the
#   load later. ALLOW_UNDEFINED turns that off, for sanitizer builds whose
#   runtimes live in the executable.
# LIBRARIES are linked privately (e.g. a BLAS); INCLUDES are private include
# folders; OUTPUT_DIR is where the built file lands (default: CMake's).

include_guard(GLOBAL)
include(GNUInstallDirs)

# The one implementation behind both add functions; `prefix` is the file-name
# prefix ("tenferro-engine-" or "tenferro-ext-").
function(tenferro__add_plugin_module prefix)
  cmake_parse_arguments(P "ALLOW_UNDEFINED" "NAME;OUTPUT_DIR" "SOURCES;LIBRARIES;INCLUDES" ${ARGN})
  if(NOT P_NAME OR NOT P_NAME MATCHES "^[A-Za-z0-9_-]+$")
    message(FATAL_ERROR "tenferro: NAME must be one or more of [A-Za-z0-9_-] (got '${P_NAME}')")
  endif()
  if(NOT P_SOURCES)
    message(FATAL_ERROR "tenferro: ${prefix}${P_NAME} has no SOURCES")
  endif()
  if(P_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tenferro: unknown arguments: ${P_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET tenferro::abi)
    message(FATAL_ERROR "tenferro: tenferro::abi is not defined; call find_package(tenferro) first")
  endif()
  set(target ${prefix}${P_NAME})
  add_library(${target} MODULE ${P_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    SUFFIX ".so"
    OUTPUT_NAME ${target}
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(P_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIR})
  endif()
  target_include_directories(${target} PRIVATE ${P_INCLUDES})
  # Headers only: tenferro::abi carries no library to link.
  target_link_libraries(${target} PRIVATE tenferro::abi ${P_LIBRARIES})
  target_link_options(${target} PRIVATE -Wl,--exclude-libs,ALL)
  if(NOT P_ALLOW_UNDEFINED)
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
endfunction()

function(tenferro_add_engine_plugin)
  tenferro__add_plugin_module(tenferro-engine- ${ARGN})
endfunction()

function(tenferro_add_extension_module)
  tenferro__add_plugin_module(tenferro-ext- ${ARGN})
endfunction()

function(tenferro_install_plugins)
  cmake_parse_arguments(P "" "DESTINATION" "TARGETS" ${ARGN})
  if(NOT P_DESTINATION)
    set(P_DESTINATION ${CMAKE_INSTALL_LIBDIR}/tenferro/plugins)
  endif()
  install(TARGETS ${P_TARGETS} LIBRARY DESTINATION ${P_DESTINATION})
endfunction()
