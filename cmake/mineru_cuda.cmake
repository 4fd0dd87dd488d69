# cmake/mineru_cuda.cmake — the optional CUDA backend (src/kernels/cuda/, issue 34).
#
# MINERU_CUDA (cache, ON | OFF | AUTO; default AUTO):
#   AUTO  enabled when check_language(CUDA) finds nvcc (on PATH, or CUDACXX, or
#         /usr/local/cuda/bin/nvcc); off without it, in cross builds and MINERU_CORE_ONLY builds
#         (the aarch64 stage), and in the sanitizer, TSan and fuzz builds (their -fsanitize flags
#         are for the host compilers; CI's scripts pass -DMINERU_CUDA=OFF there anyway).
#   ON    enabled; configure fails when nvcc is not found.
#   OFF   nvcc is never looked at.
# When enabled:
#   - the CUDA language: C++17, CMAKE_CUDA_ARCHITECTURES (cache, default "80;90": SASS and PTX
#     for sm_80 A100 and sm_90 H100/H200; a later GPU gets the PTX, JIT-compiled by its driver);
#   - find_package(CUDAToolkit): mineru_kernels_cuda links CUDA::cudart_static (the runtime: a
#     binary needs the NVIDIA driver, libcuda.so.1, loaded at run time) and CUDA::cublasLt
#     dynamically (libcublasLt.so.13, ~0.5 GB: taken from the target machine's CUDA 13 runtime
#     through the loader's path, never copied beside the binary);
#   - MINERU_HAVE_CUDA is TRUE for the CMake files, and mineru_kernels_cuda carries the compile
#     definition MINERU_HAVE_CUDA=1 to every target that links it;
#   - host warnings (-Wall -Wextra, -Werror with MINERU_WERROR) reach nvcc's host compiler through
#     -Xcompiler, and nvcc's own warnings are errors with MINERU_WERROR; the top-level
#     add_compile_options are limited to C and C++ (nvcc does not take gcc's flags directly).

set(MINERU_CUDA AUTO CACHE STRING "Build the CUDA backend: ON | OFF | AUTO (when nvcc is found)")
set_property(CACHE MINERU_CUDA PROPERTY STRINGS ON OFF AUTO)
string(TOUPPER "${MINERU_CUDA}" _mineru_cuda_mode)
if(NOT _mineru_cuda_mode MATCHES "^(ON|OFF|AUTO)$")
  message(FATAL_ERROR "MINERU_CUDA=${MINERU_CUDA}: give ON, OFF or AUTO")
endif()

set(MINERU_HAVE_CUDA FALSE)
set(_mineru_cuda_why "")
if(_mineru_cuda_mode STREQUAL "AUTO")
  if(CMAKE_CROSSCOMPILING OR MINERU_CORE_ONLY)
    set(_mineru_cuda_why "cross or core-only build")
  elseif(MINERU_SANITIZE OR MINERU_TSAN OR MINERU_FUZZ)
    set(_mineru_cuda_why "sanitizer or fuzz build")
  endif()
endif()

if(NOT _mineru_cuda_mode STREQUAL "OFF" AND NOT _mineru_cuda_why)
  # The toolkit's default place, for machines where it is installed but not on PATH.
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    find_program(_mineru_nvcc_on_path nvcc)
    if(NOT _mineru_nvcc_on_path)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(MINERU_HAVE_CUDA TRUE)
  elseif(_mineru_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "MINERU_CUDA=ON but no working CUDA compiler (nvcc) was found: install the CUDA "
                        "toolkit (/usr/local/cuda), put nvcc on PATH or set CUDACXX, or configure with "
                        "-DMINERU_CUDA=OFF (or AUTO)")
  else()
    set(_mineru_cuda_why "no nvcc found")
  endif()
endif()

if(NOT MINERU_HAVE_CUDA)
  if(_mineru_cuda_why)
    message(STATUS "CUDA backend: off (MINERU_CUDA=${MINERU_CUDA}: ${_mineru_cuda_why})")
  else()
    message(STATUS "CUDA backend: off (MINERU_CUDA=${MINERU_CUDA})")
  endif()
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING
      "CUDA architectures to compile for (80: A100, 90: H100/H200; 'native' on a GPU machine)")
endif()
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_EXTENSIONS OFF)
if(CCACHE_PROGRAM)
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)

add_compile_options("$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>")
if(MINERU_WERROR)
  add_compile_options("$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Werror>"
                      "$<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings>")
endif()
message(STATUS "CUDA backend: on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures "
               "${CMAKE_CUDA_ARCHITECTURES}, toolkit ${CUDAToolkit_LIBRARY_DIR})")
