# SPDX-License-Identifier: Apache-2.0
# Warning sets of STYLE.md rule 42, applied per target.

set(MF_C_WARNINGS
    -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith
    -Wwrite-strings -Wundef -Wformat=2 -Wswitch-enum -Wvla)

# mf_target_warnings(<target> [CONVERSION])
#   CONVERSION adds -Wconversion (diff/ and manifests/).
function(mf_target_warnings target)
    cmake_parse_arguments(ARG "CONVERSION" "" "" ${ARGN})
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C>:${MF_C_WARNINGS}>)
    if(ARG_CONVERSION)
        target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C>:-Wconversion>)
    endif()
    if(MF_WERROR)
        target_compile_options(${target} PRIVATE -Werror)
    endif()
endfunction()

# mf_device_side(<target> [STACK <bytes>])
#   Marks a target as device-side: it is checked by mf_enforce_dependency_graph() and built
#   with a stack-usage ceiling (no VLAs, no large locals; STYLE rule 22). The ceiling is
#   skipped under sanitizers, whose instrumentation inflates frames.
function(mf_device_side target)
    cmake_parse_arguments(ARG "" "STACK" "" ${ARGN})
    if(NOT ARG_STACK)
        set(ARG_STACK 512)
    endif()
    set_property(GLOBAL APPEND PROPERTY MF_DEVICE_TARGETS ${target})
    set_target_properties(${target} PROPERTIES MF_SIDE device)
    if(NOT MF_SANITIZE)
        target_compile_options(${target} PRIVATE -Wvla -Wstack-usage=${ARG_STACK})
    endif()
endfunction()

# mf_server_side(<target>): may use OpenSSL, SQLite, libpq, libmicrohttpd; never linked
# by a device-side target.
function(mf_server_side target)
    set_target_properties(${target} PROPERTIES MF_SIDE server)
endfunction()
