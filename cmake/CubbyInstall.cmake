# What `cmake --install` lays out besides the targets (their rules are in core/, cli/, harness/):
#   <libdir>/cmake/cubby/  cubbyConfig.cmake, its version file, cubbyTargets.cmake (cubby::cubby),
#                          and with the harness cubbyGTestTargets.cmake and CubbyGTest.cmake
#   <libdir>/pkgconfig/    cubby.pc
#   share/doc/cubby/       LICENSE
# Every installed file locates the prefix relative to itself (the CMake package through
# PACKAGE_PREFIX_DIR, cubby.pc through ${pcfiledir}, executables through $ORIGIN), so a prefix can
# be moved or copied (a wheel copies <prefix>/lib and <prefix>/bin) and still works.
# tests/install/ checks each of them (tests/CMakeLists.txt registers the tests).

# CUBBY_INSTALL_RPATH: the run path of installed executables, the library folder relative to the
# executable's own (`$ORIGIN/../lib`), for executables that link libcubby.so. Set as INSTALL_RPATH
# on each installed executable.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(CUBBY_INSTALL_RPATH "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH _cubby_bin_to_lib "${CMAKE_INSTALL_FULL_BINDIR}" "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(CUBBY_INSTALL_RPATH "$ORIGIN/${_cubby_bin_to_lib}")
endif()

set(_cubby_cmake_dir "${CMAKE_INSTALL_LIBDIR}/cmake/cubby")

# find_package(cubby).
include(CMakePackageConfigHelpers)
install(EXPORT cubbyTargets NAMESPACE cubby:: DESTINATION "${_cubby_cmake_dir}")
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/cubbyConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/cubbyConfig.cmake" INSTALL_DESTINATION "${_cubby_cmake_dir}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/cubbyConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/cubbyConfig.cmake" "${PROJECT_BINARY_DIR}/cubbyConfigVersion.cmake"
        DESTINATION "${_cubby_cmake_dir}")

# pkg-config: cubby.pc. The prefix is found from the file's own folder (${pcfiledir}); the CUDA
# toolkit's include folders are this build's (the C++ headers include cuda.h; the C API needs
# none). -std=c++20 is not in Cflags (they apply to C too): cubby.pc says so and carries it as the
# variable cxx_std.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(CUBBY_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(CUBBY_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH _cubby_pc_to_prefix "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
  string(REGEX REPLACE "/$" "" _cubby_pc_to_prefix "${_cubby_pc_to_prefix}")
  set(CUBBY_PC_PREFIX "\${pcfiledir}/${_cubby_pc_to_prefix}")
  set(CUBBY_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(CUBBY_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(CUBBY_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
list(TRANSFORM CUDAToolkit_INCLUDE_DIRS PREPEND "-I" OUTPUT_VARIABLE _cubby_pc_cuda_flags)
list(JOIN _cubby_pc_cuda_flags " " CUBBY_PC_CUDA_CFLAGS)
configure_file("${CMAKE_CURRENT_LIST_DIR}/cubby.pc.in" "${PROJECT_BINARY_DIR}/cubby.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/cubby.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")

# The license (Apache-2.0), where Debian keeps a package's documents.
install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" DESTINATION "${CMAKE_INSTALL_DATAROOTDIR}/doc/cubby")
