// sgshim.cpp: C entry points for SimGrid calls that are C++ only or report errors as C++ exceptions.
#include "sim/sgshim.h"

#include <cstdint>
#include <cstdio>
#include <exception>
#include <simgrid/engine.h>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Mailbox.hpp>

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

extern "C" sg_comm_t sgx_sendto_async(sg_host_t from, sg_host_t to, double bytes)
{
    simgrid::s4u::CommPtr c = simgrid::s4u::Comm::sendto_async(from, to, static_cast<uint64_t>(bytes));
    c->add_ref();   // the C handle owns one reference, as sg_mailbox_put_async's does
    return c.get();
}

extern "C" void *sgx_mailbox_get_timed(sg_mailbox_t mailbox, double *start_s, double *finish_s)
{
    void *data = nullptr;
    simgrid::s4u::CommPtr comm = mailbox->get_async(&data);
    comm->wait();
    *start_s = comm->get_start_time();
    *finish_s = comm->get_finish_time();
    return data;
}
