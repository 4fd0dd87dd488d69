// base/check.h — invariant checks for programmer errors (never for outside data: use Status).
#pragma once

#include <cstdio>
#include <cstdlib>

#define MINERU_CHECK(cond)                                                          \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

#ifdef NDEBUG
#define MINERU_DCHECK(cond) \
  do {                      \
  } while (0)
#else
#define MINERU_DCHECK(cond) MINERU_CHECK(cond)
#endif
