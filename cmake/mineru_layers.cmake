# cmake/mineru_layers.cmake — what each layer (src/<layer>/) may use, declared where it is built.
#
# Every src/<layer>/CMakeLists.txt declares, in one line, the layers it may use:
#   mineru_layer_uses(<layer> [<layer> ...])
# and a library that may use less than its layer (pipeline's model-free half) declares that too:
#   mineru_library_uses(<target> [<layer> ...])
# Two things enforce the declarations:
#   - cmake/check_layers.cmake reads these lines and fails on an #include "<dir>/..." (or <dir/...>)
#     of a layer not declared, on an undeclared layer and on a cycle. It runs in every build (the
#     check_layers target, part of ALL) and as the ctest test include_boundaries.
#   - mineru_check_layer_links(), called once all layers are added, fails the configure step when a
#     library of src/<layer>/ links a library of a layer it does not declare.
# Both read the same lines, so the CMakeLists is the one place a dependency is allowed.

# Declares the layers src/<layer>/ may use (besides its own headers). Call once, in that folder.
function(mineru_layer_uses layer)
  get_filename_component(here ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  if(NOT here STREQUAL layer)
    message(FATAL_ERROR "mineru_layer_uses(${layer} ...) called in src/${here}: declare a layer in its own folder")
  endif()
  set_property(GLOBAL PROPERTY MINERU_LAYER_USES_${layer} "${ARGN}")
  set_property(GLOBAL PROPERTY MINERU_LAYER_DIR_${layer} ${CMAKE_CURRENT_SOURCE_DIR})
  get_property(layers GLOBAL PROPERTY MINERU_LAYERS)
  if(NOT layer IN_LIST layers)
    set_property(GLOBAL APPEND PROPERTY MINERU_LAYERS ${layer})
  endif()
endfunction()

# Declares that <target> (a library of this folder) may use only the given layers: not even the
# other libraries of its own folder. Its sources and the headers they reach are checked by
# cmake/check_layers.cmake.
function(mineru_library_uses target)
  set_property(GLOBAL PROPERTY MINERU_LIBRARY_USES_${target} "${ARGN}")
  set_property(GLOBAL APPEND PROPERTY MINERU_RESTRICTED_LIBRARIES ${target})
endfunction()

# Declares the version folders of a layer (read by cmake/check_layers.cmake, which enforces them):
#   mineru_version_folders(<layer> REGISTRY <file> SHARED <folder>... AXES <axis>...)
# src/<layer>/<axis>/<version>/ is one version of one axis (pipeline: extract/vlu_1_2/,
# write/mineru_3_4/); versions never include each other; only the REGISTRY file names them.
function(mineru_version_folders layer)
  get_filename_component(here ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  if(NOT here STREQUAL layer)
    message(FATAL_ERROR "mineru_version_folders(${layer} ...) called in src/${here}")
  endif()
endfunction()

# The layer a target was defined in (the src/<layer>/ folder), or "" for anything else.
function(_mineru_layer_of target out)
  set(${out} "" PARENT_SCOPE)
  if(NOT TARGET ${target})
    return()
  endif()
  get_target_property(imported ${target} IMPORTED)
  get_target_property(aliased ${target} ALIASED_TARGET)
  if(imported OR aliased)
    return()
  endif()
  get_target_property(dir ${target} SOURCE_DIR)
  get_property(layers GLOBAL PROPERTY MINERU_LAYERS)
  foreach(layer ${layers})
    get_property(ldir GLOBAL PROPERTY MINERU_LAYER_DIR_${layer})
    if(dir STREQUAL ldir)
      set(${out} ${layer} PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

# Fails the configure step when a library of a declared layer links one of a layer it may not use.
function(mineru_check_layer_links)
  get_property(layers GLOBAL PROPERTY MINERU_LAYERS)
  get_property(restricted GLOBAL PROPERTY MINERU_RESTRICTED_LIBRARIES)
  set(errors "")
  foreach(layer ${layers})
    get_property(dir GLOBAL PROPERTY MINERU_LAYER_DIR_${layer})
    get_property(uses GLOBAL PROPERTY MINERU_LAYER_USES_${layer})
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t ${targets})
      set(allowed ${uses} ${layer})
      if(t IN_LIST restricted)
        get_property(allowed GLOBAL PROPERTY MINERU_LIBRARY_USES_${t})
      endif()
      get_target_property(type ${t} TYPE)
      set(libs "")
      if(NOT type STREQUAL "INTERFACE_LIBRARY")
        get_target_property(libs ${t} LINK_LIBRARIES)
      endif()
      get_target_property(ilibs ${t} INTERFACE_LINK_LIBRARIES)
      foreach(lib ${libs} ${ilibs})
        if(lib MATCHES "NOTFOUND$" OR lib MATCHES "^\\$<")
          continue()
        endif()
        _mineru_layer_of(${lib} dep)
        if(dep AND NOT dep IN_LIST allowed)
          string(APPEND errors "\n  ${t} (src/${layer}) links ${lib} (src/${dep}); it may use: ${allowed}")
        endif()
      endforeach()
    endforeach()
  endforeach()
  if(errors)
    message(FATAL_ERROR "a library links a layer its mineru_layer_uses line does not allow:${errors}")
  endif()
endfunction()
