#!/usr/bin/env bash
# ThreadSanitizer stage of CI: a gcc TSan build (build-tsan) of the PDF, engine, scheduler and server
# tests (and the CLI they start), run with halt_on_error. SIMD kernels for AVX2 and the portable
# fallback only (MINERU_SIMD_TARGETS=avx2), which the data-race checks do not depend on.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DMINERU_TSAN=ON -DMINERU_SIMD_TARGETS=avx2 -DMINERU_WERROR=ON -DMINERU_CUDA=OFF
cmake --build build-tsan -j"$(nproc)" --target pdf_test pdf_render_child_test pdf_render_helper scheduler_test engine_test engine_fault_test server_test \
  server_fault_test fault_test mineru-cpp
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp" ctest --test-dir build-tsan --output-on-failure -j"$(nproc)" \
  --timeout 1200 \
  -R '^(PdfTest|PdfRenderChildTest|Compositions/EngineGoldenTest|EngineTest|EngineCandidateTest|EngineFaultTest|Where/EngineStepFaultTest|SchedulerTest|ServerTest|Fixtures/GoldenServerTest|ServerFaultTest|FaultTest)\.'
