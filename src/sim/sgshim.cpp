// sgshim.cpp: C entry points for SimGrid calls that report errors as C++ exceptions.
#include "sim/sgshim.h"

#include <cstdio>
#include <exception>
#include <simgrid/engine.h>

extern "C" int sgx_load_platform(const char *path, char *err, size_t err_len)
{
    try {
        simgrid_load_platform(path);
        return 0;
    } catch (const std::exception &e) {
        std::snprintf(err, err_len, "%s", e.what());
        return -1;
    }
}
