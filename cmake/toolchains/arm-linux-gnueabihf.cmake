# SPDX-License-Identifier: Apache-2.0
# 32-bit Arm Linux devices, hard float (Debian: gcc-arm-linux-gnueabihf and the :armhf -dev
# packages; see docs/agent.md, "Building for your device"). Use:
#   cmake -S . -B build-armhf -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/arm-linux-gnueabihf.cmake \
#         -DMF_BUILD_SERVER=OFF
set(MF_CROSS_TRIPLET arm-linux-gnueabihf)
set(MF_CROSS_PROCESSOR armv7l)
set(MF_CROSS_QEMU_ARCH arm)
include(${CMAKE_CURRENT_LIST_DIR}/mf-debian-cross.cmake)
