# cmake --install: the SDK an application or a plugin author builds against.
#
#   <prefix>/include/tenferro/*.h               the public headers
#   <libdir>/libtenferro.so.<major>             the library (SONAME libtenferro.so.<major>)
#   <libdir>/libtenferro-train.so.<major>       optimizers, checkpoints, data parallel
#                                               (tenferro::train; docs/training.md)
#   <libdir>/tenferro/plugins/                  the bundled engines and extension modules
#   <bindir>/tenferro                           the command (finds the library through
#                                               RUNPATH $ORIGIN/../<libdir>)
#   <libdir>/cmake/tenferro/                    find_package(tenferro): tenferro::tenferro
#                                               (apps), tenferro::abi (plugin authors), the
#                                               plugin helper functions, tenferro_PLUGIN_DIR
#   <libdir>/pkgconfig/tenferro.pc              apps
#   <libdir>/pkgconfig/tenferro-train.pc        apps that train (links tenferro too)
#   <libdir>/pkgconfig/tenferro-plugin.pc       plugin authors (headers only, plugindir)
#   <datarootdir>/doc/tenferro/                 README.md, docs/*.md, sdk/ (its README and
#                                               the engine and extension templates), links
#                                               rewritten for the installed tree
#                                               (TenferroInstallDocs.cmake)
#
# Nothing installed holds an absolute path: the library finds its plugins
# relative to itself, the CMake package and the .pc files locate the prefix
# from where they lie, so the installed tree can be moved as a whole.
include(CMakePackageConfigHelpers)

set(TF_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tenferro)

set_target_properties(tenferro_abi PROPERTIES EXPORT_NAME abi)
set_target_properties(tenferro_train PROPERTIES EXPORT_NAME train)
install(TARGETS tenferro tenferro_abi tenferro_train EXPORT tenferroTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/core/include/tenferro
  ${PROJECT_SOURCE_DIR}/train/include/tenferro
  ${PROJECT_SOURCE_DIR}/plugins/extensions/einsum/include/tenferro
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")

# Every bundled plugin: the targets that land in the build tree's plugin folder.
set(tf_bundled_plugins "")
foreach(t tenferro-engine-cpu tenferro-engine-vulkan tenferro-ext-linalg tenferro-ext-einsum)
  if(TARGET ${t})
    list(APPEND tf_bundled_plugins ${t})
  endif()
endforeach()
# They keep the non-system library folders they were linked with (OpenBLAS's).
set_target_properties(${tf_bundled_plugins} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS ${tf_bundled_plugins} LIBRARY DESTINATION ${TF_PLUGIN_INSTALL_SUBDIR})

file(RELATIVE_PATH tf_bin_to_lib /x/${CMAKE_INSTALL_BINDIR} /x/${CMAKE_INSTALL_LIBDIR})
set_target_properties(tenferro_cli PROPERTIES INSTALL_RPATH "$ORIGIN/${tf_bin_to_lib}")
install(TARGETS tenferro_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(EXPORT tenferroTargets NAMESPACE tenferro:: DESTINATION ${TF_CMAKE_INSTALL_DIR})

# The ABI majors, read from the headers (they are the entry symbols' _v<major>).
foreach(abi ENGINE:engine_abi.h EXTENSION:extension_abi.h)
  string(REPLACE ":" ";" abi "${abi}")
  list(GET abi 0 kind)
  list(GET abi 1 header)
  file(STRINGS ${PROJECT_SOURCE_DIR}/core/include/tenferro/${header} line
       REGEX "^#define TF_${kind}_ABI_MAJOR +[0-9]+")
  string(REGEX REPLACE "^#define TF_${kind}_ABI_MAJOR +([0-9]+).*" "\\1" TF_${kind}_ABI_MAJOR "${line}")
  if(NOT TF_${kind}_ABI_MAJOR MATCHES "^[0-9]+$")
    message(FATAL_ERROR "cannot read TF_${kind}_ABI_MAJOR from ${header}")
  endif()
endforeach()

# tenferroConfig.cmake computes every path from its own folder (PACKAGE_INIT),
# and brings the plugin helper the bundled plugins are built with.
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tenferroConfig.cmake.in
  ${CMAKE_BINARY_DIR}/tenferroConfig.cmake
  INSTALL_DESTINATION ${TF_CMAKE_INSTALL_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR TF_PLUGIN_INSTALL_SUBDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/tenferroConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/tenferroConfig.cmake
  ${CMAKE_BINARY_DIR}/tenferroConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/TenferroPluginHelpers.cmake DESTINATION ${TF_CMAKE_INSTALL_DIR})

# pkg-config files locate the prefix from their own folder (${pcfiledir}).
file(RELATIVE_PATH tf_pc_to_prefix /x/${CMAKE_INSTALL_LIBDIR}/pkgconfig /x)
string(REGEX REPLACE "/$" "" tf_pc_to_prefix "${tf_pc_to_prefix}")
set(tf_pc_head "prefix=\${pcfiledir}/${tf_pc_to_prefix}\n"
               "libdir=\${prefix}/${CMAKE_INSTALL_LIBDIR}\n"
               "includedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}\n"
               "plugindir=\${prefix}/${TF_PLUGIN_INSTALL_SUBDIR}\n\n")
string(JOIN "" tf_pc_head ${tf_pc_head})
file(WRITE ${CMAKE_BINARY_DIR}/tenferro.pc "${tf_pc_head}"
  "Name: tenferro\n"
  "Description: ${PROJECT_DESCRIPTION}\n"
  "Version: ${PROJECT_VERSION}\n"
  "Libs: -L\${libdir} -ltenferro\n"
  "Cflags: -I\${includedir}\n")
file(WRITE ${CMAKE_BINARY_DIR}/tenferro-plugin.pc "${tf_pc_head}"
  "Name: tenferro-plugin\n"
  "Description: headers for tenferro engine plugins and extension modules (link nothing)\n"
  "Version: ${PROJECT_VERSION}\n"
  "Cflags: -I\${includedir}\n")
file(WRITE ${CMAKE_BINARY_DIR}/tenferro-train.pc "${tf_pc_head}"
  "Name: tenferro-train\n"
  "Description: optimizers, safetensors checkpoints and data-parallel training for tenferro\n"
  "Version: ${PROJECT_VERSION}\n"
  "Requires: tenferro = ${PROJECT_VERSION}\n"
  "Libs: -L\${libdir} -ltenferro-train\n"
  "Cflags: -I\${includedir}\n")
install(FILES ${CMAKE_BINARY_DIR}/tenferro.pc ${CMAKE_BINARY_DIR}/tenferro-plugin.pc
  ${CMAKE_BINARY_DIR}/tenferro-train.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The documentation and the SDK's templates, as the installed tree needs them: written
# into the build tree by TenferroInstallDocs.cmake at build time, installed as they are.
set(tf_doc_out ${CMAKE_BINARY_DIR}/doc-install)
file(GLOB_RECURSE tf_doc_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/README.md
     ${PROJECT_SOURCE_DIR}/docs/*.md ${PROJECT_SOURCE_DIR}/docs/*.png ${PROJECT_SOURCE_DIR}/sdk/*)
file(RELATIVE_PATH tf_doc_to_prefix /x/${CMAKE_INSTALL_DATAROOTDIR}/doc/tenferro /x)
string(REGEX REPLACE "/$" "" tf_doc_to_prefix "${tf_doc_to_prefix}")
add_custom_command(OUTPUT ${tf_doc_out}/README.md
  COMMAND ${CMAKE_COMMAND} -DTF_SRC=${PROJECT_SOURCE_DIR} -DTF_OUT=${tf_doc_out}
          -DTF_DOC_TO_PREFIX=${tf_doc_to_prefix} -DTF_INCLUDEDIR=${CMAKE_INSTALL_INCLUDEDIR}
          -P ${PROJECT_SOURCE_DIR}/cmake/TenferroInstallDocs.cmake
  DEPENDS ${tf_doc_sources} ${PROJECT_SOURCE_DIR}/cmake/TenferroInstallDocs.cmake
  COMMENT "the documentation for the installed tree" VERBATIM)
add_custom_target(tenferro_docs ALL DEPENDS ${tf_doc_out}/README.md)
install(DIRECTORY ${tf_doc_out}/ DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/tenferro)
