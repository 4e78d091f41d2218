# TUNECTL_SANITIZE: sanitizers for every target of the build (compile and link), e.g.
#   cmake -DTUNECTL_SANITIZE=address,undefined ...   (scripts/test-sanitize)
# A comma-separated list of address, undefined, thread; thread cannot be combined with address.
set(TUNECTL_SANITIZE "" CACHE STRING
  "Sanitizers for all targets: empty (none), address, undefined, thread, address,undefined")
set_property(CACHE TUNECTL_SANITIZE PROPERTY STRINGS
  "" address undefined thread "address,undefined" "thread,undefined")

if(NOT TUNECTL_SANITIZE STREQUAL "")
  set(_tunectl_allowed address undefined thread)
  string(REPLACE "," ";" _tunectl_sanitizers "${TUNECTL_SANITIZE}")
  set(_tunectl_seen "")
  set(_tunectl_values "empty (none), address, undefined, thread, address,undefined")
  foreach(s IN LISTS _tunectl_sanitizers)
    if(NOT s IN_LIST _tunectl_allowed)
      message(FATAL_ERROR "TUNECTL_SANITIZE='${TUNECTL_SANITIZE}': '${s}' is not a sanitizer this "
        "build supports. Allowed values: ${_tunectl_values} (thread,undefined works too).")
    elseif(s IN_LIST _tunectl_seen)
      message(FATAL_ERROR "TUNECTL_SANITIZE='${TUNECTL_SANITIZE}': '${s}' is named twice. "
        "Allowed values: ${_tunectl_values} (thread,undefined works too).")
    endif()
    list(APPEND _tunectl_seen "${s}")
  endforeach()
  if("address" IN_LIST _tunectl_seen AND "thread" IN_LIST _tunectl_seen)
    message(FATAL_ERROR "TUNECTL_SANITIZE='${TUNECTL_SANITIZE}': address and thread cannot be "
      "combined. Allowed values: ${_tunectl_values} (thread,undefined works too).")
  endif()
  list(JOIN _tunectl_seen "," _tunectl_list)
  # Directory-wide (not via tunectl_warnings) so that every target is instrumented, the generated
  # proto library and the benchmarks included; must come before the first target is defined.
  add_compile_options(-fsanitize=${_tunectl_list} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${_tunectl_list})
  if("thread" IN_LIST _tunectl_seen AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC warns (-Wtsan) that TSan does not model the fences in Boost.Asio's headers; that is the
    # library's code, not a finding, and it must not fail a -Werror build.
    add_compile_options(-Wno-tsan)
  endif()
  message(STATUS "tunectl: sanitizers ${_tunectl_list}")
endif()

# TUNECTL_FUZZ: the libFuzzer targets in fuzz/ (scripts/fuzz builds them into build-fuzz with
# clang). Every target of such a build is compiled with libFuzzer's coverage and ASan+UBSan, UB
# aborting (so the fuzzer counts it as a crash); only the fuzz targets link libFuzzer's main.
option(TUNECTL_FUZZ "Build the libFuzzer targets in fuzz/ (clang only)" OFF)
if(TUNECTL_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TUNECTL_FUZZ=ON needs clang (libFuzzer), got ${CMAKE_CXX_COMPILER_ID}: "
      "configure with CXX=clang++ (scripts/fuzz does).")
  endif()
  if(NOT TUNECTL_SANITIZE STREQUAL "")
    message(FATAL_ERROR "TUNECTL_FUZZ=ON chooses its own sanitizers (address,undefined); leave "
      "TUNECTL_SANITIZE empty, got '${TUNECTL_SANITIZE}'.")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined
    -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
  message(STATUS "tunectl: fuzz build (libFuzzer coverage, address,undefined)")
endif()
