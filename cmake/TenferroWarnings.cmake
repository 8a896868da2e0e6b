# The warning set of STYLE.md, applied to every target of the project.
function(tf_target_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes
    -Wno-unused-parameter)
endfunction()
