# SPDX-License-Identifier: Apache-2.0
# Shared body of the Debian multiarch toolchain files (aarch64-linux-gnu.cmake, ...): the
# including file sets MF_CROSS_TRIPLET and MF_CROSS_PROCESSOR first.
#   compilers   Debian's gcc-<triplet> (C only: modelferry has no C++ source);
#   libraries   the multiarch -dev packages, e.g. libcurl4-openssl-dev:arm64, installed under
#               /usr/lib/<triplet> and /usr/include (headers shared with the host);
#   pkg-config  only the target's .pc files: without PKG_CONFIG_LIBDIR pkg-config answers with
#               the host's x86_64 libcurl/zstd/cJSON and the link fails (or worse, succeeds
#               against the wrong headers' configuration).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${MF_CROSS_PROCESSOR})
set(CMAKE_C_COMPILER ${MF_CROSS_TRIPLET}-gcc)
# A C++ cross compiler is optional: the header test's C++ half is built only when one exists.
find_program(MF_CROSS_CXX ${MF_CROSS_TRIPLET}-g++)
if(MF_CROSS_CXX)
    set(CMAKE_CXX_COMPILER ${MF_CROSS_CXX})
else()
    set(MF_NO_CXX ON) # else check_language(CXX) would take the host's c++
endif()

# Look for libraries and headers of the target only; programs (pkg-config, sh) of the host.
set(CMAKE_LIBRARY_ARCHITECTURE ${MF_CROSS_TRIPLET})
set(CMAKE_FIND_ROOT_PATH /usr/${MF_CROSS_TRIPLET})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Debian multiarch puts target libraries in /usr/lib/<triplet>, outside the find root.
list(APPEND CMAKE_FIND_ROOT_PATH /)
set(CMAKE_LIBRARY_PATH /usr/lib/${MF_CROSS_TRIPLET})

# Environment, so that every pkg-config run (configure and try_compile) sees the target's
# files and nothing of the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${MF_CROSS_TRIPLET}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

# ctest runs the unit tests under qemu-user with the target's loader and libraries: the
# multiarch ones (libc6:<arch>, in /lib/<triplet>, which the :<arch> -dev packages depend
# on), so `-L /`. `-L /usr/<triplet>` would take the loader of the cross toolchain's own
# glibc build (libc6-<arch>-cross) while its search path still finds the multiarch libc:
# two builds of glibc in one process, which crashes (armhf) or hangs (aarch64) in the first
# pthread_create.
find_program(MF_CROSS_QEMU qemu-${MF_CROSS_QEMU_ARCH})
if(MF_CROSS_QEMU)
    set(CMAKE_CROSSCOMPILING_EMULATOR ${MF_CROSS_QEMU} -L /)
endif()
