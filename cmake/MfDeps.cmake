# SPDX-License-Identifier: Apache-2.0
# Third-party libraries, each behind one imported target named mf::<lib>, so the
# dependency-graph check matches on stable names. scripts/install-deps installs them all.
find_package(PkgConfig REQUIRED)

function(mf_pkg name module)
    pkg_check_modules(${name} REQUIRED IMPORTED_TARGET GLOBAL ${module})
    add_library(mf::${name} ALIAS PkgConfig::${name})
endfunction()

# Device side may use these.
mf_pkg(curl libcurl)
mf_pkg(zstd libzstd)
mf_pkg(cjson libcjson)
# The delta encoder's only (diff/create, tools side).
if(MF_BUILD_TOOLS)
    mf_pkg(divsufsort libdivsufsort)
    find_package(BZip2 REQUIRED)
    add_library(mf::bz2 ALIAS BZip2::BZip2)
endif()

# mbedTLS 2.28 on Debian 12 ships no pkg-config file.
find_path(MBEDTLS_INCLUDE_DIR mbedtls/sha256.h REQUIRED)
find_library(MBEDCRYPTO_LIBRARY mbedcrypto REQUIRED)
find_library(MBEDX509_LIBRARY mbedx509 REQUIRED)
find_library(MBEDTLS_LIBRARY mbedtls REQUIRED)
add_library(mf_mbedtls INTERFACE)
target_include_directories(mf_mbedtls SYSTEM INTERFACE ${MBEDTLS_INCLUDE_DIR})
target_link_libraries(mf_mbedtls INTERFACE ${MBEDTLS_LIBRARY} ${MBEDX509_LIBRARY}
                      ${MBEDCRYPTO_LIBRARY})
add_library(mf::mbedtls ALIAS mf_mbedtls)

# Server side only (forbidden on the device: cmake/MfDepGraph.cmake).
if(MF_BUILD_SERVER OR MF_SELFTEST_FORBIDDEN_LINK)
    find_package(OpenSSL REQUIRED)
    add_library(mf_openssl INTERFACE)
    target_link_libraries(mf_openssl INTERFACE OpenSSL::SSL OpenSSL::Crypto)
    add_library(mf::openssl ALIAS mf_openssl)
    mf_pkg(sqlite sqlite3)
    mf_pkg(pq libpq)
    mf_pkg(microhttpd libmicrohttpd)
endif()

if(MF_BUILD_TESTS)
    mf_pkg(cmocka cmocka)
endif()
