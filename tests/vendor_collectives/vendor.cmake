# Included into a backend's build (-DCMAKE_PROJECT_INCLUDE=...) to stand in
# for a vendor's collective library: the target vendor_self_collectives
# implements accgen/collectives.h (self_collectives.cpp), and the backend
# names it with -DACCGEN_COLLECTIVES_TARGET=vendor_self_collectives.
add_library(vendor_self_collectives STATIC
  "${CMAKE_CURRENT_LIST_DIR}/self_collectives.cpp")
set_target_properties(vendor_self_collectives PROPERTIES
  POSITION_INDEPENDENT_CODE ON)
target_compile_features(vendor_self_collectives PRIVATE cxx_std_17)
# The interface headers (accgen/collectives.h, accgen/driver.h) and the
# driver it queues its copies with.
target_link_libraries(vendor_self_collectives PRIVATE accgen::emulator)
