#!/bin/sh
# Every shared object of Cohort that another process loads (python, a program built elsewhere)
# must use that process's shared libstdc++ and carry no copy of its own. libstdc++ linked statically
# into libcohort.so exports std:: symbols that other libraries (Gloo) then bind to inside python,
# which has loaded no libstdc++ before Cohort: two libstdc++ mixed on one stream crashed every
# 2-rank init on the first GPU machine, whose /opt/gcc links libstdc++ statically by default.
#   shared_libstdcxx.sh LIBRARY...
status=0
for lib in "$@"; do
  if ! readelf -d "$lib" | grep -q 'NEEDED.*\[libstdc++\.so\.6\]'; then
    echo "FAIL: $lib does not need the shared libstdc++.so.6 (linked statically: -static-libstdc++,"
    echo "      or a compiler that does it by default; configure with the distribution's g++)"
    status=1
  elif nm -D --defined-only "$lib" | grep -q ' _ZNSo9_M_insertIlEERSoT_$'; then
    # std::ostream::_M_insert<long> is defined in libstdc++.so only.
    echo "FAIL: $lib exports libstdc++'s own std::ostream::_M_insert<long>: a private libstdc++"
    status=1
  else
    echo "ok: $lib uses the shared libstdc++"
  fi
done
exit $status
