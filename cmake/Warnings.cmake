# Project-wide compile settings as INTERFACE targets: link `tunectl_warnings` to opt in.
add_library(tunectl_warnings INTERFACE)
target_compile_options(tunectl_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
  -Wnon-virtual-dtor -Wno-missing-field-initializers)
if(TUNECTL_WERROR)
  target_compile_options(tunectl_warnings INTERFACE -Werror)
endif()
