# muir's libraries layer: the build checks, after the libraries, that the
# graph of what each links has no cycle and that each links what it uses
# (its archive's symbols, its sources' muir headers):
# scripts/check_layers.py, target muir-check-layers (in `all`).
#
# The libraries are every static or shared library target named Muir* or
# muir_* of the source tree, found by walking its directories, so that a new
# library is checked without being listed here.

function(muir_collect_libraries dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  set(found)
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    if(t MATCHES "^(Muir|muir_)" AND
       (type STREQUAL "STATIC_LIBRARY" OR type STREQUAL "SHARED_LIBRARY"))
      list(APPEND found ${t})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    muir_collect_libraries("${sub}" sub_found)
    list(APPEND found ${sub_found})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

function(muir_add_layer_check)
  muir_collect_libraries("${PROJECT_SOURCE_DIR}" libraries)
  set(lines "# library\tarchive\tsource dir\tmuir libraries it links\tsources\n")
  set(archives)
  foreach(t ${libraries})
    get_target_property(links ${t} LINK_LIBRARIES)
    set(deps)
    foreach(l ${links})
      if(TARGET ${l} AND l IN_LIST libraries)
        list(APPEND deps ${l})
      endif()
    endforeach()
    list(JOIN deps " " deps)
    get_target_property(dir ${t} SOURCE_DIR)
    # Its sources (add_mlir_library keeps them on obj.<name>), as paths.
    set(source_target ${t})
    if(TARGET obj.${t})
      set(source_target obj.${t})
    endif()
    get_target_property(sources ${source_target} SOURCES)
    set(paths)
    foreach(s ${sources})
      if(s MATCHES "\\.(cpp|c|h)$")
        cmake_path(ABSOLUTE_PATH s BASE_DIRECTORY "${dir}")
        list(APPEND paths "${s}")
      endif()
    endforeach()
    list(JOIN paths " " paths)
    string(APPEND lines
           "${t}\t$<TARGET_FILE:${t}>\t${dir}\t${deps}\t${paths}\n")
    list(APPEND archives $<TARGET_FILE:${t}>)
  endforeach()
  set(layers "${PROJECT_BINARY_DIR}/layers.txt")
  file(GENERATE OUTPUT "${layers}" CONTENT "${lines}")
  set(stamp "${PROJECT_BINARY_DIR}/layers.stamp")
  add_custom_command(
    OUTPUT "${stamp}"
    COMMAND "${Python3_EXECUTABLE}" "${PROJECT_SOURCE_DIR}/scripts/check_layers.py"
            "${layers}" --source-root "${PROJECT_SOURCE_DIR}"
            --nm "${LLVM_TOOLS_BINARY_DIR}/llvm-nm" --stamp "${stamp}"
    DEPENDS "${PROJECT_SOURCE_DIR}/scripts/check_layers.py" "${layers}"
            ${libraries}
    COMMENT "Checking that muir's libraries layer (scripts/check_layers.py)"
    VERBATIM)
  add_custom_target(muir-check-layers ALL DEPENDS "${stamp}")
endfunction()
