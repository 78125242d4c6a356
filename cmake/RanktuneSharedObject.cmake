# ranktune_shared_object(OUT PATTERN LIBRARIES...): the path a process should dlopen for the
# first of LIBRARIES (what a find module gave, such as HDF5_C_LIBRARIES) whose file name
# matches the regular expression PATTERN, a linker name such as .../libopenblas.so: its SONAME
# (libopenblas.so.0) in the folder of that name, else in the folder of the file it resolves
# to (.../hdf5/serial/libhdf5.so is /usr/lib/x86_64-linux-gnu/libhdf5_serial.so.103.3.0), else
# that file. The SONAME pins the ABI the code was compiled against, as a link would, and
# keeps Debian's alternatives (OpenBLAS) working; the folder is the one the build saw, as a
# RUNPATH would. Used for the libraries that most processes never call (io/hdf5_api.h).
function(ranktune_shared_object out pattern)
  set(library "")
  foreach(candidate IN LISTS ARGN)
    get_filename_component(name "${candidate}" NAME)
    if(NOT library AND name MATCHES "${pattern}")
      set(library "${candidate}")
    endif()
  endforeach()
  if(NOT library OR NOT EXISTS "${library}")
    message(FATAL_ERROR "ranktune_shared_object: no existing library matching ${pattern} among ${ARGN}")
  endif()
  file(REAL_PATH "${library}" real)
  find_program(RANKTUNE_OBJDUMP NAMES objdump REQUIRED)
  execute_process(COMMAND "${RANKTUNE_OBJDUMP}" -p "${real}" OUTPUT_VARIABLE dump RESULT_VARIABLE rc ERROR_QUIET)
  if(NOT rc EQUAL 0 OR NOT dump MATCHES "SONAME +([^ \n]+)")
    message(FATAL_ERROR "ranktune_shared_object: cannot read the SONAME of ${real}")
  endif()
  set(soname "${CMAKE_MATCH_1}")
  get_filename_component(found_dir "${library}" DIRECTORY)
  get_filename_component(real_dir "${real}" DIRECTORY)
  if(EXISTS "${found_dir}/${soname}")
    set(${out} "${found_dir}/${soname}" PARENT_SCOPE)
  elseif(EXISTS "${real_dir}/${soname}")
    set(${out} "${real_dir}/${soname}" PARENT_SCOPE)
  else()
    set(${out} "${real}" PARENT_SCOPE)  # no SONAME link beside it: the file itself
  endif()
endfunction()
