# Cross-compiling for 64-bit ARM Linux with Debian's multiarch toolchain (g++-aarch64-linux-gnu)
# and the :arm64 -dev packages installed beside the native ones (scripts/arm64.sh installs both).
# No sysroot: Debian keeps the arm64 libraries in /usr/lib/aarch64-linux-gnu and shares the
# architecture-independent headers in /usr/include.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Libraries and packages only from the arm64 directories; programs (pkg-config) from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# pkg-config must read the arm64 .pc files, never the amd64 ones.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
# Tests run under qemu-user (gtest_discover_tests runs each binary at build time to list it).
# No -L /usr/aarch64-linux-gnu: the :arm64 -dev packages pull in the multiarch libc6:arm64
# (/lib/ld-linux-aarch64.so.1), and mixing the cross toolchain's loader with that libc.so.6
# (which is what -L gives: the loader from the prefix, libraries found through ld.so.cache)
# hangs in the first pthread_create.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
