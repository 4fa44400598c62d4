# SPDX-License-Identifier: Apache-2.0
# Enforces DESIGN.md section 2: a device-side target (mf_device_side) must never reach
# OpenSSL, SQLite, libpq, libmicrohttpd or any server-side target, directly or through
# another target it links. A violation stops configuration with a FATAL_ERROR.

set(MF_FORBIDDEN_ON_DEVICE
    mf::openssl mf_openssl OpenSSL::SSL OpenSSL::Crypto ssl crypto
    mf::sqlite PkgConfig::sqlite SQLite::SQLite3 sqlite3
    mf::pq PkgConfig::pq PostgreSQL::PostgreSQL pq
    mf::microhttpd PkgConfig::microhttpd microhttpd)

# Collects every library name reachable from `target` into the variable `out_var`.
function(_mf_link_closure target out_var)
    set(seen "")
    set(queue ${target})
    while(queue)
        list(POP_FRONT queue cur)
        if(cur IN_LIST seen)
            continue()
        endif()
        list(APPEND seen ${cur})
        if(NOT TARGET ${cur})
            continue()
        endif()
        get_target_property(aliased ${cur} ALIASED_TARGET)
        if(aliased)
            list(APPEND queue ${aliased})
            continue()
        endif()
        get_target_property(type ${cur} TYPE)
        set(libs "")
        if(NOT type STREQUAL "INTERFACE_LIBRARY")
            get_target_property(direct ${cur} LINK_LIBRARIES)
            if(direct)
                list(APPEND libs ${direct})
            endif()
        endif()
        get_target_property(iface ${cur} INTERFACE_LINK_LIBRARIES)
        if(iface)
            list(APPEND libs ${iface})
        endif()
        foreach(lib IN LISTS libs)
            # Strip generator expressions such as $<LINK_ONLY:x>.
            string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" lib "${lib}")
            list(APPEND queue ${lib})
        endforeach()
    endwhile()
    set(${out_var} ${seen} PARENT_SCOPE)
endfunction()

function(mf_enforce_dependency_graph)
    get_property(device_targets GLOBAL PROPERTY MF_DEVICE_TARGETS)
    foreach(t IN LISTS device_targets)
        _mf_link_closure(${t} closure)
        foreach(dep IN LISTS closure)
            if(dep STREQUAL t)
                continue()
            endif()
            set(bad "")
            get_filename_component(base "${dep}" NAME_WE)
            string(REGEX REPLACE "^lib" "" base "${base}")
            if(dep IN_LIST MF_FORBIDDEN_ON_DEVICE OR base IN_LIST MF_FORBIDDEN_ON_DEVICE)
                set(bad "a server-only library")
            elseif(TARGET ${dep})
                get_target_property(side ${dep} MF_SIDE)
                if(side STREQUAL "server")
                    set(bad "a server-side target")
                endif()
            endif()
            if(bad)
                message(FATAL_ERROR
                    "device-side target '${t}' links forbidden dependency '${dep}' (${bad}); "
                    "see docs/architecture.md")
            endif()
        endforeach()
    endforeach()
endfunction()
