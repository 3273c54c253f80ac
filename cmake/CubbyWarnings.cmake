# cubby_warnings(TARGET): the project's warning set; -Werror when CUBBY_WERROR is ON (CI).
function(cubby_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                         -Wno-sign-conversion -Wnon-virtual-dtor -Wold-style-cast)
  if(CUBBY_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
