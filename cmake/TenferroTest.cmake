# tf_add_test(NAME <name> SOURCES <files...> [LIBRARIES <libs...>] [TIMEOUT s] [LABELS l...])
#
# One cmocka test program linked against libtenferro, registered with ctest.
# Each test program runs in its own process with a timeout.
function(tf_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBRARIES;LABELS;DEPENDS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE tenferro ${CMOCKA_LINK} ${T_LIBRARIES})
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/tests/support ${CMOCKA_INCLUDE})
  tf_target_warnings(${T_NAME})
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT})
  if(T_LABELS)
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}")
  endif()
  if(TF_SANITIZE STREQUAL "thread")
    set_tests_properties(${T_NAME} PROPERTIES
      ENVIRONMENT "TSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/tsan.supp")
  endif()
  if(T_DEPENDS)
    add_dependencies(${T_NAME} ${T_DEPENDS})
  endif()
endfunction()

# tf_add_mpi_runs(TARGET <test program> RANKS <n...> [TIMEOUT s] [ENVIRONMENT v=x...])
#
# Registers runs of an MPI test program under mpirun, one test <target>_np<n> per
# rank count (label "mpi"), and gives the same environment to the test named
# <target> when tf_add_test made one (the program alone: one rank). The runs go as
# root in CI (--allow-run-as-root), on however many cores there are
# (--oversubscribe), with the dist module's time limit short enough that a hang
# fails the test rather than ctest's timeout. Under
# AddressSanitizer, Open MPI's own allocations kept until exit are suppressed
# (tests/extensions/mpi_lsan.supp, with full stacks so that the suppressions see
# them), so a leak of tenferro's still fails.
function(tf_add_mpi_runs)
  cmake_parse_arguments(M "" "TARGET;TIMEOUT" "RANKS;ENVIRONMENT" ${ARGN})
  if(NOT M_TIMEOUT)
    set(M_TIMEOUT 300)
  endif()
  set(env "TENFERRO_DIST_TIMEOUT=60" ${M_ENVIRONMENT})
  if(TF_SANITIZE STREQUAL "address")
    list(APPEND env "ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0"
         "OMPI_MCA_mca_base_component_disable_dlclose=1"
         "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/extensions/mpi_lsan.supp")
  endif()
  if(TEST ${M_TARGET})
    set_tests_properties(${M_TARGET} PROPERTIES ENVIRONMENT "${env}")
  endif()
  foreach(np ${M_RANKS})
    add_test(NAME ${M_TARGET}_np${np}
      COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe ${MPIEXEC_NUMPROC_FLAG}
              ${np} $<TARGET_FILE:${M_TARGET}>)
    set_tests_properties(${M_TARGET}_np${np} PROPERTIES TIMEOUT ${M_TIMEOUT} LABELS mpi
      ENVIRONMENT "${env}")
  endforeach()
endfunction()
