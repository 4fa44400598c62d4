# SPDX-License-Identifier: Apache-2.0
# libmf: the one library app teams install and link (docs/agent.md, "Building for your
# device"). In the tree the SDK stays a set of small static components, so the dependency
# graph check and the unit tests see exactly what each module links; libmf is the same
# objects once more as libmf.so.<major> and libmf.a. Only the public API (MF_EXTERN, from
# sdk/include/mf/common.h) is visible in the shared library: everything else is built with
# hidden visibility, so an app cannot come to depend on an internal symbol.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The device side of the SDK, in link order (a static link of libmf.a needs no order at all).
set(MF_LIBMF_COMPONENTS
    mf_agent mf_telemetry mf_offload mf_http mf_manifest_verify mf_manifest_common
    mf_diff_apply mf_diff_common mf_digest mf_port_posix mf_core)

set(MF_LIBMF_OBJECTS "")
foreach(c IN LISTS MF_LIBMF_COMPONENTS)
    set_target_properties(${c} PROPERTIES C_VISIBILITY_PRESET hidden)
    list(APPEND MF_LIBMF_OBJECTS $<TARGET_OBJECTS:${c}>)
endforeach()

# Its third-party libraries, as the installed package names them (modelferryConfig.cmake and
# modelferry.pc say the same): libcurl, zstd and cJSON by pkg-config, mbedTLS by file name
# because Debian's mbedTLS 2.28 ships no .pc file.
set(MF_LIBMF_DEPS mf::curl mf::zstd mf::cjson mf::mbedtls m)

add_library(mf_libmf_shared SHARED ${MF_LIBMF_OBJECTS})
add_library(mf_libmf_static STATIC ${MF_LIBMF_OBJECTS})
set_target_properties(mf_libmf_shared PROPERTIES
    OUTPUT_NAME mf EXPORT_NAME mf
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
set_target_properties(mf_libmf_static PROPERTIES OUTPUT_NAME mf EXPORT_NAME mf_static)
# An unresolved symbol in the shared library is a missing component: fail the link, not the app.
target_link_options(mf_libmf_shared PRIVATE -Wl,--no-undefined)
foreach(t mf_libmf_shared mf_libmf_static)
    target_include_directories(${t} INTERFACE
        $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/sdk/include>
        $<BUILD_INTERFACE:${MF_GENERATED_INCLUDE}>
        $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
    # BUILD_INTERFACE: the installed package finds these itself (modelferryConfig.cmake).
    target_link_libraries(${t} PRIVATE $<BUILD_INTERFACE:${MF_LIBMF_DEPS}>)
    mf_device_side(${t})
endforeach()
# In the tree an app links the shared library under its installed name, so what builds here
# (examples/embed) uses the public API only and builds the same against an installed prefix.
add_library(modelferry::mf ALIAS mf_libmf_shared)
add_library(modelferry::mf_static ALIAS mf_libmf_static)

install(TARGETS mf_libmf_shared mf_libmf_static EXPORT modelferryTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# sdk/include holds the public headers and nothing else (STYLE rule 1).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/sdk/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.h")
# mf/version.h is made from sdk/include/mf/version.h.in with project(VERSION) (sdk/CMakeLists.txt).
install(FILES ${MF_GENERATED_INCLUDE}/mf/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/mf)

set(MF_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/modelferry)
install(EXPORT modelferryTargets NAMESPACE modelferry:: DESTINATION ${MF_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/modelferryConfig.cmake.in
    ${CMAKE_CURRENT_BINARY_DIR}/modelferryConfig.cmake INSTALL_DESTINATION ${MF_CMAKE_DIR})
# 0.x: a minor release may break the API, so only the same minor is compatible.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/modelferryConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/modelferryConfig.cmake
    ${CMAKE_CURRENT_BINARY_DIR}/modelferryConfigVersion.cmake DESTINATION ${MF_CMAKE_DIR})

# modelferry.pc finds its prefix from where it lies, so `cmake --install --prefix` anywhere
# gives a working file.
file(RELATIVE_PATH MF_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" MF_PC_TO_PREFIX "${MF_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/modelferry.pc.in
    ${CMAKE_CURRENT_BINARY_DIR}/modelferry.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/modelferry.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The programs: the Linux agent on every build, the server side where it is built.
foreach(p mf-agent mf-server mfctl mf-delta)
    if(TARGET ${p})
        install(TARGETS ${p} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
    endif()
endforeach()
