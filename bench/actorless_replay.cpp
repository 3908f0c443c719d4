// actorless_replay.cpp: the design probe of issue 17's engine without actors.
//
// The same 1F1B replay as bench/bare_replay.c (same platform, same lists,
// same CM02 settings) without any actor: an op is a SimGrid kernel timer at
// now + flops / host speed (a GPU runs one op at a time, so its execution
// would take exactly that), a transfer is a Comm::sendto_init activity over
// the platform's route (so the network model and its contention are
// SimGrid's), and a transfer's completion (Link::on_communication_state_change)
// schedules the receiving rank's next op through a timer at the current
// date, so nothing starts inside the network model's update.
//
// Usage: bench/actorless_replay P M [OP_S] [BYTES]
// Prints the same columns as bare_replay: p m makespan_s wall_s events
// events_per_s peak_rss_MiB.  The makespan must equal bare_replay's.
#include <simgrid/engine.h>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/kernel/resource/Action.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <xbt/config.h>
#include <xbt/log.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sys/resource.h>
#include <unordered_map>
#include <vector>

extern "C" {
#include "model/config.h"
#include "model/experiment.h"
#include "model/platform.h"
}

namespace sg4 = simgrid::s4u;

constexpr double DEFAULT_OP_S = 1e-3;
constexpr double DEFAULT_BYTES = 32.0 * 1024 * 1024;
constexpr double BYTES_PER_KIB = 1024.0;

struct Rank {
    sg4::Host *host;
    std::vector<int> ops;   // mb for F, -(mb + 1) for B
    size_t next = 0;
    bool busy = false;
    std::vector<char> act_in, grad_in;   // [M] arrived
};

struct Transfer {
    sg4::CommPtr comm;
    int dst, mb, grad;
};

static int P, M;
static double op_s, msg_bytes;
static long events;
static std::vector<Rank> ranks;
static std::unordered_map<const void *, Transfer> in_flight;   // keyed by the kernel activity
// Finished transfers, kept until the engine has posted their kernel activity
// (timers at a date may run before the engine's end-of-step handling of the
// actions that ended at that date): released once the clock has moved on.
static std::vector<std::pair<double, sg4::CommPtr>> graveyard;

static void try_start(int r);

static void op_done(int r)
{
    Rank &rk = ranks[r];
    int code = rk.ops[rk.next++];
    rk.busy = false;
    int grad = code < 0, mb = grad ? -code - 1 : code;
    int dst = grad ? r - 1 : r + 1;
    if (dst >= 0 && dst < P) {
        sg4::CommPtr c = sg4::Comm::sendto_init(rk.host, ranks[dst].host);
        c->set_payload_size(static_cast<uint64_t>(msg_bytes));
        c->start();
        in_flight.emplace(c->get_impl(), Transfer{c, dst, mb, grad});
        events++;
    }
    try_start(r);
}

static void try_start(int r)
{
    Rank &rk = ranks[r];
    if (rk.busy || rk.next >= rk.ops.size())
        return;
    int code = rk.ops[rk.next];
    int grad = code < 0, mb = grad ? -code - 1 : code;
    if (!grad && r > 0 && !rk.act_in[mb])
        return;
    if (grad && r < P - 1 && !rk.grad_in[mb])
        return;
    rk.busy = true;
    double dur = (grad ? 2.0 : 1.0) * op_s * rk.host->get_speed() / rk.host->get_speed();
    events++;
    simgrid::kernel::timer::Timer::set(sg4::Engine::get_clock() + dur, [r] { op_done(r); });
}

static void on_comm(simgrid::kernel::resource::NetworkAction &action,
                    simgrid::kernel::resource::Action::State /*previous*/)
{
    // NetworkAction's definition is not public; it derives from Action alone.
    auto &act = reinterpret_cast<simgrid::kernel::resource::Action &>(action);
    if (act.get_state() != simgrid::kernel::resource::Action::State::FINISHED)
        return;
    auto it = in_flight.find(act.get_activity());
    if (it == in_flight.end())
        return;
    Transfer t = it->second;
    in_flight.erase(it);
    double now = sg4::Engine::get_clock();
    size_t keep = 0;
    for (auto &g : graveyard)
        if (g.first >= now)
            graveyard[keep++] = g;
    graveyard.resize(keep);
    // Not from inside the network model's update: a timer now.
    simgrid::kernel::timer::Timer::set(sg4::Engine::get_clock(), [t]() mutable {
        t.comm->complete(sg4::Activity::State::FINISHED);   // its s4u state, so that it dies cleanly
        graveyard.emplace_back(sg4::Engine::get_clock(), t.comm);
        Rank &d = ranks[t.dst];
        (t.grad ? d.grad_in : d.act_in)[t.mb] = 1;
        try_start(t.dst);
    });
}

static int make_platform(int nodes, platform_desc *plat)
{
    config c;
    config_init(&c);
    experiment e;
    pg_status st = {};
    char set[64];
    snprintf(set, sizeof set, "cluster.nodes=%d", nodes);
    if (config_apply_set(&c, "network=cluster", &st) || config_apply_set(&c, set, &st) ||
        experiment_from_config(&c, &e, &st) || platform_make_cluster(&e, plat, &st)) {
        fprintf(stderr, "actorless_replay: %s\n", st.msg);
        return 1;
    }
    config_free(&c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s P M [OP_S] [BYTES]\n", argv[0]);
        return 2;
    }
    P = atoi(argv[1]);
    M = atoi(argv[2]);
    op_s = argc > 3 ? atof(argv[3]) : DEFAULT_OP_S;
    msg_bytes = argc > 4 ? atof(argv[4]) : DEFAULT_BYTES;
    platform_desc plat;
    if (P < 1 || M < 1 || make_platform((P + 7) / 8, &plat))
        return 2;
    xbt_log_control_set("root.thres:critical");
    int one = 1;
    char *sg_argv[] = {argv[0], nullptr};
    simgrid_init(&one, sg_argv);
    sg_cfg_set_string("network/model", "CM02");
    sg_cfg_set_boolean("network/crosstraffic", "no");
    sg_cfg_set_double("network/TCP-gamma", 0.0);
    simgrid_load_platform(plat.xml_path);
    sg4::Engine::get_instance()->seal_platform();
    sg4::Link::on_communication_state_change_cb(on_comm);
    ranks.resize(static_cast<size_t>(P));
    for (int r = 0; r < P; r++) {
        Rank &rk = ranks[static_cast<size_t>(r)];
        rk.host = sg4::Host::by_name(plat.gpu[r].host);
        rk.act_in.assign(static_cast<size_t>(M), 0);
        rk.grad_in.assign(static_cast<size_t>(M), 0);
        int warm = P - 1 - r < M ? P - 1 - r : M, f = 0, b = 0;
        for (; f < warm; f++)
            rk.ops.push_back(f);
        while (f < M) {
            rk.ops.push_back(f++);
            rk.ops.push_back(-(b++) - 1);
        }
        while (b < M)
            rk.ops.push_back(-(b++) - 1);
    }
    simgrid::kernel::timer::Timer::set(0.0, [] {
        for (int r = 0; r < P; r++)
            try_start(r);
    });
    auto t0 = std::chrono::steady_clock::now();
    simgrid_run();
    double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    size_t done = 0;
    for (auto &rk : ranks)
        done += rk.next;
    printf("%d %d %.9g %.3f %ld %.0f %.1f%s\n", P, M, simgrid_get_clock(), wall_s, events, events / wall_s,
           static_cast<double>(ru.ru_maxrss) / BYTES_PER_KIB,
           done == static_cast<size_t>(2 * P * M) ? "" : " INCOMPLETE");
    platform_free(&plat);
    return 0;
}
