# SPDX-License-Identifier: Apache-2.0
# 64-bit Arm Linux devices (Debian: gcc-aarch64-linux-gnu and the :arm64 -dev packages; see
# docs/agent.md, "Building for your device"). Use:
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
#         -DMF_BUILD_SERVER=OFF
set(MF_CROSS_TRIPLET aarch64-linux-gnu)
set(MF_CROSS_PROCESSOR aarch64)
set(MF_CROSS_QEMU_ARCH aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/mf-debian-cross.cmake)
