// tests/util/sanitizers.h — which sanitizer this test binary was built with (gcc defines
// __SANITIZE_*__, clang answers __has_feature). For the few checks a sanitizer makes
// meaningless: memory limits (ASan/TSan reserve terabytes of shadow address space) and RSS
// budgets (TSan's shadow memory grows with the heap).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define MINERU_TEST_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define MINERU_TEST_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define MINERU_TEST_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define MINERU_TEST_TSAN 1
#endif
#endif
#if defined(MINERU_TEST_ASAN) || defined(MINERU_TEST_TSAN)
#define MINERU_TEST_SANITIZED 1
#endif

// How much longer than a plain build a wait bound allows in a sanitizer build (ASan/TSan run a
// document job 5-15x slower, more on a loaded 2-core machine). For deadlines only, never sleeps.
#ifdef MINERU_TEST_SANITIZED
constexpr int kSanitizerWaitFactor = 5;
#else
constexpr int kSanitizerWaitFactor = 1;
#endif
