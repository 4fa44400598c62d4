# SPDX-License-Identifier: Apache-2.0
# Enforces DESIGN.md section 2: a device-side target (mf_device_side) must never reach
# OpenSSL, SQLite, libpq, libmicrohttpd or any server-side target, directly or through
# another target it links; and no server-side target, nor any library of sdk/, diff/,
# manifests/, device/, server/ or models/, may reach a target defined under examples/ (the
# example programs are leaves: what they share with the server lives in models/). A
# violation stops configuration with a FATAL_ERROR. Folder cycles of the #include graph are
# checked at test time by scripts/depcheck (ctest depcheck_tree).

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

# Every target defined in `dir` and the directories below it, into `out_var`.
function(_mf_all_targets dir out_var)
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    foreach(sub IN LISTS subdirs)
        _mf_all_targets(${sub} sub_targets)
        list(APPEND targets ${sub_targets})
    endforeach()
    set(${out_var} ${targets} PARENT_SCOPE)
endfunction()

# The folder `target` is defined in, relative to the source tree, into `out_var`.
function(_mf_target_dir target out_var)
    get_target_property(src ${target} SOURCE_DIR)
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${src})
    set(${out_var} "${rel}" PARENT_SCOPE)
endfunction()

# Fails when a server-side target or a product library reaches a target of examples/.
function(_mf_enforce_no_examples)
    _mf_all_targets(${PROJECT_SOURCE_DIR} all)
    foreach(t IN LISTS all)
        get_target_property(side ${t} MF_SIDE)
        _mf_target_dir(${t} t_dir)
        if(NOT side STREQUAL "server" AND
           NOT t_dir MATCHES "^(sdk|diff|manifests|device|server|models)(/|$)")
            continue()
        endif()
        _mf_link_closure(${t} closure)
        foreach(dep IN LISTS closure)
            if(dep STREQUAL t OR NOT TARGET ${dep})
                continue()
            endif()
            get_target_property(imported ${dep} IMPORTED)
            if(imported)
                continue()
            endif()
            _mf_target_dir(${dep} dep_dir)
            if(dep_dir MATCHES "^examples(/|$)")
                message(FATAL_ERROR
                    "target '${t}' (${t_dir}) links '${dep}' from ${dep_dir}: the server and "
                    "the libraries never link examples/; move what they share into models/ "
                    "(see docs/architecture.md)")
            endif()
        endforeach()
    endforeach()
endfunction()

function(mf_enforce_dependency_graph)
    _mf_enforce_no_examples()
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
