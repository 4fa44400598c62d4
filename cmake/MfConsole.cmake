# SPDX-License-Identifier: Apache-2.0
# The web console (ui/, docs/console.md): `npm ci` from the committed lock file, then the Vite
# build into <build>/share/modelferry/ui, where mf-server (build/bin) finds it beside itself
# (../share/modelferry/ui), and which `cmake --install` installs with the server. Included only
# when the server is built: a device-only build has no console and needs no node.
find_program(MF_NPM npm)
find_program(MF_NODE node)
if(NOT MF_NPM OR NOT MF_NODE)
    message(FATAL_ERROR "the server build includes the web console (ui/), which needs node and "
        "npm 20 (scripts/install-deps); configure with -DMF_BUILD_SERVER=OFF for a device-only build")
endif()
set(MF_UI_SRC ${PROJECT_SOURCE_DIR}/ui)
set(MF_UI_OUT ${CMAKE_BINARY_DIR}/share/modelferry/ui)
file(GLOB_RECURSE mf_ui_sources CONFIGURE_DEPENDS ${MF_UI_SRC}/src/*)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/ui-npm-ci.stamp
    COMMAND ${MF_NPM} ci --no-audit --no-fund --loglevel=error
    COMMAND ${CMAKE_COMMAND} -E touch ${CMAKE_BINARY_DIR}/ui-npm-ci.stamp
    DEPENDS ${MF_UI_SRC}/package.json ${MF_UI_SRC}/package-lock.json
    WORKING_DIRECTORY ${MF_UI_SRC}
    COMMENT "ui: npm ci (the console's toolchain, from ui/package-lock.json)")
add_custom_command(OUTPUT ${MF_UI_OUT}/index.html
    COMMAND ${CMAKE_COMMAND} -E env MF_UI_OUT=${MF_UI_OUT} ${MF_NPM} run --silent build
    DEPENDS ${CMAKE_BINARY_DIR}/ui-npm-ci.stamp ${mf_ui_sources} ${MF_UI_SRC}/index.html
            ${MF_UI_SRC}/vite.config.ts ${MF_UI_SRC}/tsconfig.json
    WORKING_DIRECTORY ${MF_UI_SRC}
    COMMENT "ui: type check and build the console into share/modelferry/ui")
add_custom_target(mf_ui ALL DEPENDS ${MF_UI_OUT}/index.html)
install(DIRECTORY ${MF_UI_OUT} DESTINATION ${CMAKE_INSTALL_DATADIR}/modelferry)
