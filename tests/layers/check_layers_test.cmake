# tests/layers/check_layers_test.cmake — the layer checks against small made-up trees (ctest:
# include_boundaries_checker). Each case writes a tiny src/ tree under WORK, breaks one rule and
# asserts that the check fails and names the violation; the untouched tree must pass.
# Run: cmake -DCHECKER=cmake/check_layers.cmake -DLAYERS_MODULE=cmake/mineru_layers.cmake
#            -DWORK=<scratch dir> [-DGENERATOR=Ninja] -P tests/layers/check_layers_test.cmake
cmake_minimum_required(VERSION 3.20)
foreach(v CHECKER LAYERS_MODULE WORK)
  if(NOT ${v})
    message(FATAL_ERROR "give -D${v}=...")
  endif()
endforeach()

set(failures 0)
macro(case_failed name msg)
  message(NOTICE "FAIL ${name}: ${msg}")
  math(EXPR failures "${failures} + 1")
endmacro()

# A tree that keeps every rule: base <- kernels <- model <- pipe, where pipe's model-free library
# mineru_pipe_post may use base only. External folders (hwy/, nlohmann/) are not layers.
function(write_good_tree root)
  file(REMOVE_RECURSE ${root})
  file(WRITE ${root}/src/base/CMakeLists.txt "# base: may use no other layer.\nmineru_layer_uses(base)\n")
  file(WRITE ${root}/src/base/b.h "#pragma once\n#include <vector>\n\n#include \"nlohmann/json.hpp\"\n")
  file(WRITE ${root}/src/kernels/CMakeLists.txt "# kernels: may use base.\nmineru_layer_uses(kernels base)\n")
  file(WRITE ${root}/src/kernels/k.h "#pragma once\n#include \"base/b.h\"\n#include \"hwy/highway.h\"\n")
  file(WRITE ${root}/src/kernels/cpu/x.h "#pragma once\n#include \"kernels/k.h\"\n")
  file(WRITE ${root}/src/model/CMakeLists.txt "mineru_layer_uses(model\n  base kernels)  # may use\n")
  file(WRITE ${root}/src/model/m.h "#pragma once\n#include <base/b.h>\n")
  file(WRITE ${root}/src/model/m.cc "#include \"model/m.h\"\n\n#include \"kernels/cpu/x.h\"\n")
  file(WRITE ${root}/src/pipe/CMakeLists.txt
       "mineru_layer_uses(pipe base model)\nmineru_library_uses(mineru_pipe_post base)\n"
       "add_library(mineru_pipe_post STATIC post.cc)\nadd_library(mineru_pipe STATIC driver.cc)\n")
  file(WRITE ${root}/src/pipe/post.h "#pragma once\n#include \"pipe/common.h\"\n")
  file(WRITE ${root}/src/pipe/post.cc "#include \"pipe/post.h\"\n#include \"base/b.h\"\n")
  file(WRITE ${root}/src/pipe/common.h "#pragma once\n#include \"base/b.h\"\n")
  file(WRITE ${root}/src/pipe/driver.h "#pragma once\n#include \"model/m.h\"\n")
  file(WRITE ${root}/src/pipe/driver.cc "#include \"pipe/driver.h\"\n#include \"pipe/post.h\"\n")
endfunction()

function(run_checker root out_rc out_text)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSRC=${root}/src -DSTAMP=${root}/stamp -P ${CHECKER}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${out_rc} ${rc} PARENT_SCOPE)
  set(${out_text} "${out}${err}" PARENT_SCOPE)
endfunction()

# expect_pass(name): the good tree (as modified by the caller) passes and writes the stamp.
function(expect_pass name root)
  run_checker(${root} rc text)
  if(NOT rc EQUAL 0 OR NOT EXISTS ${root}/stamp)
    case_failed(${name} "expected to pass, got rc=${rc}:\n${text}")
    set(failures ${failures} PARENT_SCOPE)
  endif()
endfunction()

# expect_fail(name root regex): the check fails, writes no stamp, and its output matches regex.
function(expect_fail name root regex)
  run_checker(${root} rc text)
  if(rc EQUAL 0)
    case_failed(${name} "expected a failure, the check passed:\n${text}")
  elseif(EXISTS ${root}/stamp)
    case_failed(${name} "failed but wrote the stamp")
  elseif(NOT text MATCHES "${regex}")
    case_failed(${name} "failed without naming the violation (wanted /${regex}/):\n${text}")
  endif()
  set(failures ${failures} PARENT_SCOPE)
endfunction()

set(T ${WORK}/tree)

write_good_tree(${T})
expect_pass(good_tree ${T})

write_good_tree(${T})
file(APPEND ${T}/src/base/b.h "#include \"model/m.h\"\n")
expect_fail(upward_include ${T} "error: src/base/b.h:5: includes model/m.h, but base may use only: nothing")

write_good_tree(${T})
file(APPEND ${T}/src/kernels/cpu/x.h "#include <model/m.h>\n")
expect_fail(angle_include_in_subfolder ${T} "src/kernels/cpu/x.h:3: includes model/m.h, but kernels may use only: base")

write_good_tree(${T})
file(APPEND ${T}/src/model/m.cc "  #  include \"pipe/post.h\"  // sideways\n")
expect_fail(include_in_cc ${T} "src/model/m.cc:4: includes pipe/post.h, but model may use only: base, kernels")

write_good_tree(${T})
file(APPEND ${T}/src/model/m.cc "#include \"../pipe/post.h\"\n")
expect_fail(relative_include ${T} "src/model/m.cc:4: #include \"../pipe/post.h\" climbs out")

write_good_tree(${T})
file(WRITE ${T}/src/extra/e.h "#pragma once\n")
expect_fail(folder_without_cmakelists ${T} "src/extra: no CMakeLists.txt")

write_good_tree(${T})
file(WRITE ${T}/src/extra/CMakeLists.txt "# mineru_layer_uses(extra base)\nadd_library(x STATIC e.cc)\n")
expect_fail(folder_without_declaration ${T} "src/extra/CMakeLists.txt: 0 mineru_layer_uses")

write_good_tree(${T})
file(WRITE ${T}/src/kernels/CMakeLists.txt "mineru_layer_uses(kernel base)\n")
expect_fail(declaration_of_another_folder ${T} "must name its own folder, kernels")

write_good_tree(${T})
file(WRITE ${T}/src/model/CMakeLists.txt "mineru_layer_uses(model base kernels tensor)\n")
expect_fail(unknown_layer ${T} "names tensor, which is not a folder of src/")

write_good_tree(${T})
file(WRITE ${T}/src/base/CMakeLists.txt "mineru_layer_uses(base model)\n")
expect_fail(cycle ${T} "a cycle among the mineru_layer_uses declarations of: base, kernels, model \\(dependencies")

# pipe may use model, but not its model-free library, even through a header-only header.
write_good_tree(${T})
file(APPEND ${T}/src/pipe/common.h "#include \"model/m.h\"\n")
expect_fail(restricted_library_header_only ${T}
            "src/pipe/common.h:3: includes model/m.h, but mineru_pipe_post may use only: base")

write_good_tree(${T})
file(APPEND ${T}/src/pipe/post.cc "#include \"pipe/driver.h\"\n")
expect_fail(restricted_library_sibling ${T}
            "src/pipe/post.cc:3: includes pipe/driver.h, whose code \\(pipe/driver.cc\\) is not part of mineru_pipe_post")

# The configure-time link check (mineru_check_layer_links): a fake project of INTERFACE libraries.
if(GENERATOR)
  set(P ${WORK}/links)
  function(write_link_project model_uses post_links)
    file(REMOVE_RECURSE ${P})
    file(WRITE ${P}/CMakeLists.txt
         "cmake_minimum_required(VERSION 3.20)\nproject(fake NONE)\ninclude(${LAYERS_MODULE})\n"
         "add_subdirectory(src/base)\nadd_subdirectory(src/model)\nmineru_check_layer_links()\n")
    file(WRITE ${P}/src/base/CMakeLists.txt "mineru_layer_uses(base)\nadd_library(mineru_base INTERFACE)\n")
    file(WRITE ${P}/src/model/CMakeLists.txt
         "mineru_layer_uses(model ${model_uses})\nmineru_library_uses(mineru_model_post base)\n"
         "add_library(mineru_model INTERFACE)\ntarget_link_libraries(mineru_model INTERFACE mineru_base)\n"
         "add_library(mineru_model_post INTERFACE)\n"
         "target_link_libraries(mineru_model_post INTERFACE mineru_base ${post_links})\n")
  endfunction()
  function(configure name want_ok regex)
    execute_process(COMMAND ${CMAKE_COMMAND} -G ${GENERATOR} -S ${P} -B ${P}/build
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(want_ok AND NOT rc EQUAL 0)
      case_failed(${name} "expected the configure step to pass:\n${out}${err}")
    elseif(NOT want_ok AND rc EQUAL 0)
      case_failed(${name} "expected the configure step to fail:\n${out}${err}")
    elseif(NOT want_ok AND NOT "${out}${err}" MATCHES "${regex}")
      case_failed(${name} "failed without naming the link (wanted /${regex}/):\n${out}${err}")
    endif()
    set(failures ${failures} PARENT_SCOPE)
  endfunction()
  write_link_project("base" "")
  configure(links_good TRUE "")
  write_link_project("" "")
  configure(link_to_undeclared_layer FALSE "mineru_model \\(src/model\\) links mineru_base \\(src/base\\)")
  write_link_project("base" "mineru_model")
  configure(restricted_library_links_sibling FALSE "mineru_model_post \\(src/model\\) links mineru_model \\(src/model\\)")
endif()

# Version folders (mineru_version_folders): pipe/write/a and pipe/write/b are two versions of one
# axis, pipe/doc is shared, pipe/versions.cc the registry.
function(write_version_tree root)
  write_good_tree(${root})
  file(APPEND ${root}/src/pipe/CMakeLists.txt
       "mineru_version_folders(pipe REGISTRY versions.cc SHARED doc AXES write)\n")
  file(WRITE ${root}/src/pipe/doc/model.h "#pragma once\n#include \"base/b.h\"\n")
  file(WRITE ${root}/src/pipe/write/writer.h "#pragma once\n#include \"pipe/doc/model.h\"\n")
  file(WRITE ${root}/src/pipe/write/a/a.h "#pragma once\n#include \"pipe/write/writer.h\"\n")
  file(WRITE ${root}/src/pipe/write/a/a.cc "#include \"pipe/write/a/a.h\"\n#include \"pipe/doc/model.h\"\n")
  file(WRITE ${root}/src/pipe/write/b/b.h "#pragma once\n#include \"pipe/write/writer.h\"\n")
  file(WRITE ${root}/src/pipe/versions.cc "#include \"pipe/write/a/a.h\"\n#include \"pipe/write/b/b.h\"\n")
endfunction()

write_version_tree(${T})
expect_pass(version_folders_good ${T})

write_version_tree(${T})
file(APPEND ${T}/src/pipe/write/b/b.h "#include \"pipe/write/a/a.h\"\n")
expect_fail(version_includes_another_version ${T}
            "src/pipe/write/b/b.h:3: includes pipe/write/a/a.h: a version folder may not include another version's folder")

write_version_tree(${T})
file(APPEND ${T}/src/pipe/driver.cc "#include \"pipe/write/a/a.h\"\n")
expect_fail(driver_names_a_version ${T} "src/pipe/driver.cc:3: includes pipe/write/a/a.h: only src/pipe/versions.cc may name a version folder")

write_version_tree(${T})
file(APPEND ${T}/src/pipe/doc/model.h "#include \"pipe/write/writer.h\"\n")
expect_fail(shared_folder_reaches_up ${T} "src/pipe/doc/model.h:3: includes pipe/write/writer.h: a shared folder may include only the shared folders")

write_version_tree(${T})
file(APPEND ${T}/src/pipe/write/a/a.cc "#include \"pipe/driver.h\"\n")
expect_fail(version_reaches_the_driver ${T} "src/pipe/write/a/a.cc:3: includes pipe/driver.h: a version folder may include only")

if(failures GREATER 0)
  message(FATAL_ERROR "${failures} case(s) of the layer checks failed")
endif()
message(STATUS "layer checks: every case behaves")
