// sgshim.cpp: C entry points for SimGrid calls that are C++ only or report errors as C++ exceptions.
#include "sim/sgshim.h"

#include <cstdint>
#include <cstdio>
#include <exception>
#include <simgrid/engine.h>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <vector>
#include <simgrid/s4u/Mailbox.hpp>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/kernel/resource/Action.hpp>
#include <simgrid/s4u/Link.hpp>
#include <unordered_map>
#include <utility>

extern "C" int sgx_load_platform(const char *path, char *err, size_t err_len)
{
    try {
        simgrid_load_platform(path);
        /* Seal now, not at simgrid_run: Dijkstra zones (the linear-size
         * layouts of network=cluster above 64 nodes and network=ideal above
         * 128 GPUs) build their route graph only when sealed, and the engine
         * asks for route latencies while it sets up, before the run. */
        simgrid::s4u::Engine::get_instance()->seal_platform();
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

/* A route "exists" when it crosses at least one link: SimGrid returns an
 * empty route for a pair its zones do not connect, and only the first
 * transfer over it aborts (network_cm02: "no connecting path"). */
static int has_route(const simgrid::s4u::Host *from, const simgrid::s4u::Host *to)
{
    std::vector<simgrid::s4u::Link *> links;
    double latency_s = 0;
    from->route_to(to, links, &latency_s);
    return !links.empty();
}

extern "C" int sgx_check_routes(const char *const *hosts, int n, const char *const *cpu_of, int *bad_a, int *bad_b,
                                char *err, size_t err_len)
{
    int ci = -1, cj = -1;   /* the pair being checked, for SimGrid's exceptions */
    try {
        std::vector<simgrid::s4u::Host *> h(static_cast<size_t>(n > 0 ? n : 0));
        for (int i = 0; i < n; i++) {
            h[static_cast<size_t>(i)] = simgrid::s4u::Host::by_name_or_null(hosts[i]);
            if (h[static_cast<size_t>(i)] == nullptr) {
                *bad_a = *bad_b = i;
                std::snprintf(err, err_len, "no host '%s'", hosts[i]);
                return -1;
            }
        }
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                ci = i;
                cj = j;
                const simgrid::s4u::Host *a = h[static_cast<size_t>(i)], *b = h[static_cast<size_t>(j)];
                if (a != b && !has_route(a, b)) {
                    *bad_a = i;
                    *bad_b = j;
                    std::snprintf(err, err_len, "no route from '%s' to '%s'", hosts[i], hosts[j]);
                    return -1;
                }
            }
            const simgrid::s4u::Host *cpu = cpu_of && cpu_of[i] ? simgrid::s4u::Host::by_name_or_null(cpu_of[i]) : nullptr;
            if (cpu != nullptr && (!has_route(h[static_cast<size_t>(i)], cpu) || !has_route(cpu, h[static_cast<size_t>(i)]))) {
                *bad_a = *bad_b = i;
                std::snprintf(err, err_len, "no route between '%s' and its host memory '%s'", hosts[i], cpu_of[i]);
                return -1;
            }
        }
        return 0;
    } catch (const std::exception &e) {
        *bad_a = ci;
        *bad_b = cj;
        if (ci >= 0)
            std::snprintf(err, err_len, "no route from '%s' to '%s': %s", hosts[ci], hosts[cj], e.what());
        else
            std::snprintf(err, err_len, "%s", e.what());
        return -1;
    }
}

/* ---- the engine without actors (sgshim.h) -------------------------------- */

namespace {
struct PendingTransfer {
    simgrid::s4u::CommPtr comm;
    sgx_done_fn done;
    void *arg;
    double start_s;
};
/* Transfers in flight, by their kernel activity (what the network model's
 * state-change signal names). */
std::unordered_map<const void *, PendingTransfer> *in_flight;
/* Ended transfers, kept until the engine has posted their kernel activity:
 * the timer that reports one runs at its finish date, possibly before the
 * engine's end-of-step handling of the actions that ended at that date, so a
 * transfer is released only once the clock has moved past its date. */
std::vector<std::pair<double, simgrid::s4u::CommPtr>> *ended;

void release_ended(double now_s)
{
    size_t keep = 0;
    for (auto &e : *ended)
        if (e.first >= now_s)
            (*ended)[keep++] = std::move(e);
    ended->resize(keep);
}

void on_transfer_state(simgrid::kernel::resource::NetworkAction &action, simgrid::kernel::resource::Action::State)
{
    /* NetworkAction's definition is SimGrid-internal; it derives from Action
     * alone (single inheritance), whose public interface is all we use. */
    auto &act = reinterpret_cast<simgrid::kernel::resource::Action &>(action);
    if (act.get_state() != simgrid::kernel::resource::Action::State::FINISHED || in_flight == nullptr)
        return;
    auto it = in_flight->find(act.get_activity());
    if (it == in_flight->end())
        return;   /* not ours (an actor's transfer) */
    PendingTransfer t = std::move(it->second);
    in_flight->erase(it);
    double now_s = simgrid::s4u::Engine::get_clock();
    release_ended(now_s);
    /* Report it from a timer: nothing may start inside the model's update. */
    simgrid::kernel::timer::Timer::set(now_s, [t, now_s]() mutable {
        t.comm->complete(simgrid::s4u::Activity::State::FINISHED);   /* its s4u state: it then dies cleanly */
        ended->emplace_back(now_s, t.comm);
        t.done(t.arg, t.start_s, now_s);
    });
}
} // namespace

extern "C" void sgx_events_init(void)
{
    in_flight = new std::unordered_map<const void *, PendingTransfer>();
    ended = new std::vector<std::pair<double, simgrid::s4u::CommPtr>>();
    simgrid::s4u::Link::on_communication_state_change_cb(on_transfer_state);
}

extern "C" void sgx_at(double date_s, sgx_fn fn, void *arg)
{
    simgrid::kernel::timer::Timer::set(date_s, [fn, arg]() { fn(arg); });
}

extern "C" void sgx_transfer(sg_host_t from, sg_host_t to, double bytes, sgx_done_fn done, void *arg)
{
    simgrid::s4u::CommPtr c = simgrid::s4u::Comm::sendto_init(from, to);
    c->set_payload_size(static_cast<uint64_t>(bytes));
    c->start();
    in_flight->emplace(c->get_impl(), PendingTransfer{c, done, arg, simgrid::s4u::Engine::get_clock()});
}

extern "C" void sgx_events_free(void)
{
    delete in_flight;
    delete ended;
    in_flight = nullptr;
    ended = nullptr;
}
