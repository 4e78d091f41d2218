// FUZZ_CHECK: a property a fuzz target asserts on what it got back. A broken one prints the
// property and aborts, which libFuzzer reports as a crash with the input that broke it.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, what)                                                                 \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond, \
                   what);                                                                      \
      std::abort();                                                                            \
    }                                                                                          \
  } while (0)
