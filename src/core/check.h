// HONE_CHECK: assertions for bugs. A failed check prints the condition and the
// location and aborts. User input must never be able to trigger one; invalid input
// is an Error value (core/error.h).
#pragma once

#include <cstdio>
#include <cstdlib>

#define HONE_CHECK(cond)                                                        \
  do {                                                                          \
    if (!(cond)) {                                                              \
      std::fprintf(stderr, "%s:%d: HONE_CHECK failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                      \
      std::abort();                                                             \
    }                                                                           \
  } while (0)
