/* SimGrid 3.32 behind a C API (net_flow_sg.h says what and why). The only C++ in icsim: the
 * S4U API is C++, and the netzone whose routes icsim chooses must subclass SimGrid's
 * NetZoneImpl.
 *
 * How icsim's engine and SimGrid's keep one clock: SimGrid's Engine::run_until(t) would run every
 * completion up to t, but icsim must see each completion at its instant (its handlers start new
 * transfers then). The completion callback therefore files the finished communication in the set
 * of "vetoed" activities SimGrid's engine watches: a non-empty set ends the run at the end of
 * the current instant, the mechanism SimGrid offers schedulers that drive it from outside
 * (examples/cpp/dag-scheduling). The set is cleared on return. */
#include "net/net_flow_sg.h"

#include <simgrid/kernel/resource/Action.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#include <simgrid/version.h>

#include <sys/resource.h>

#include <algorithm>
#include <cmath>

#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

/* Two of SimGrid 3.32's internals are relied on below (see "Why executions, not Comms"): the
 * version is pinned so that a different SimGrid fails to build rather than misbehave. */
static_assert(SIMGRID_VERSION_MAJOR == 3 && SIMGRID_VERSION_MINOR == 32,
              "net_flow_sg.cpp is written against SimGrid 3.32's kernel (Debian bookworm)");

/* SimGrid's execution context: its header is not installed, its two static functions are
 * exported (libsimgrid.so.3.32: Context::self, Context::set_current). Only they are declared;
 * the class is never instantiated here. */
namespace simgrid::kernel::context
{
class Context
{
  public:
    static Context *self();
    static void set_current(Context *self);
};
} // namespace simgrid::kernel::context

namespace sg4 = simgrid::s4u;
namespace sgk = simgrid::kernel;

struct ics_sg_comm {
    sg4::ExecPtr exec;
    void *user;
    double priority; /* as started: what resuming restores */
};

namespace
{

/* Every route is the one icsim handed over for the communication being started. */
class IcsimZone : public sgk::routing::NetZoneImpl
{
  public:
    explicit IcsimZone(const std::string &name) : NetZoneImpl(name)
    {
    }
    std::vector<sgk::resource::StandardLinkImpl *> next;

  protected:
    void get_local_route(const sgk::routing::NetPoint *, const sgk::routing::NetPoint *,
                         sgk::routing::Route *into, double *) override
    {
        into->link_list_.insert(into->link_list_.end(), next.begin(), next.end());
    }
};

struct State {
    sg4::Engine *engine = nullptr;
    IcsimZone *zone = nullptr;
    sg4::Host *a = nullptr, *b = nullptr;
    std::vector<sg4::Link *> links;
    /* links[i]->get_impl(), kept: a start hands SimGrid a route of thousands of links (a
     * stream's group on 16,384 GPUs: 4,529 on average, up to 5,452), and reading each
     * s4u::Link (its own allocation) again for its implementation was 3.5% of such a run. */
    std::vector<sgk::resource::StandardLinkImpl *> impls;
    std::vector<double> rate; /* each link's bandwidth as last set: unchanged ones are skipped */
    bool sealed = false;      /* SimGrid has run: no more links */
    std::thread::id thread;
    std::set<sg4::Activity *> vetoed;
    std::vector<ics_sg_comm *> finished;
    std::unordered_map<const sgk::activity::ActivityImpl *, ics_sg_comm *> running;
};

State *state()
{
    static State s; /* SimGrid's engine is per process: so is this */
    return &s;
}

/* A network action changed state: one that finished is a transfer done. NetworkAction derives
 * from Action alone (src/kernel/resource/NetworkModel.hpp), so its reference is an Action's. */
void on_action_state(sgk::resource::NetworkAction &na, sgk::resource::Action::State)
{
    auto &action = reinterpret_cast<sgk::resource::Action &>(na);
    if (action.get_state() != sgk::resource::Action::State::FINISHED)
        return; /* started, suspended, or cancelled (FAILED): ics_sg_cancel forgot it */
    State *s = state();
    auto it = s->running.find(action.get_activity());
    if (it == s->running.end())
        return;
    ics_sg_comm *h = it->second;
    s->running.erase(it);
    s->finished.push_back(h);
    s->vetoed.insert(h->exec.get()); /* ends this run after this instant */
}

/* Why executions, not Comms. A host-to-host s4u::Comm (Comm::sendto_init) is a detached
 * CommImpl, and SimGrid 3.32 files every detached comm in maestro's std::list of activities and
 * takes it out at completion with list::remove, a walk of the whole list (CommImpl::detach,
 * CommImpl::finish). All n comms of a large collective step are in flight together: n^2 / 2
 * pointer chases, 93% of a 1024-GPU sweep's time. A parallel execution over two hosts with no
 * flops and one byte amount becomes, in the default host model, exactly the same network action
 * (HostCLM03Model::execute_parallel calls NetworkModel::communicate(a, b, bytes, -1), as
 * CommImpl::start does). Created outside any actor's context, an ExecImpl joins no actor's list
 * (ExecImpl::ExecImpl), so nothing walks a list; the price is that the engine reports its end to
 * no s4u callback (it does so for maestro's activities only): the end is taken from the network
 * action's state change instead (on_action_state). */
sg4::ExecPtr transfer_init(State *s, double bytes)
{
    auto *outer = sgk::context::Context::self();
    sgk::context::Context::set_current(nullptr);
    sg4::ExecPtr e = sg4::Exec::init();
    sgk::context::Context::set_current(outer);
    e->set_hosts({s->a, s->b});
    e->set_flops_amounts({0.0, 0.0});
    e->set_bytes_amounts({0.0, bytes, 0.0, 0.0});
    return e;
}

/* SimGrid's LMM walks the constraints a change touches recursively
 * (lmm::System::update_modified_cnst_set_rec, 96 B a level), as deep as a connected set of
 * links: a 16,384-GPU fabric overflowed the usual 8 MiB stack. The stack of the thread running
 * SimGrid (the main one: it grows on demand up to the soft limit) may grow to 1 GiB, or the
 * hard limit: memory is only used as deep as the walk goes. */
void stack_room()
{
    struct rlimit rl;
    const rlim_t want = (rlim_t)1 << 30;
    if (getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? want : std::min(want, rl.rlim_max);
    (void)setrlimit(RLIMIT_STACK, &rl);
}

void engine_init(State *s)
{
    stack_room();
    /* CM02: max-min sharing with route latency; latency 0 here (icsim adds its fixed part) and
     * none of TCP's corrections (window bound, RTT weights, cross-traffic, bandwidth factor).
     * Both zeros matter to the priorities of ics_sg_start: CM02 keeps a route's latency and its
     * weight-S in the network action's own sharing penalty and sets it on the LMM variable once
     * the latency has passed, which would overwrite a priority set before.
     * optim Full, not the default Lazy: Lazy's selective update marks, at every change, each
     * constraint coupled to the changed one (lmm::System::update_modified_cnst_set_rec), and its
     * recursion walks a communication's route again from each link before it marks the
     * communication visited (quadratic in the route); a collective's communications are one
     * coupled system, so the marking costs more than solving it all.
     * Full solves every active constraint each time and marks nothing: the same max-min shares
     * (outputs unchanged to the byte), a 512 KiB tree all-reduce on 16,384 GPUs 50 -> 18 s, a
     * 1 GiB all-to-all on 256 GPUs of a 2:1 fat-tree 110 -> 60 s; the 1024-GPU sweep, many
     * small uncoupled systems, 1.13x slower (docs/network.md, "Costs"). */
    static const char *const argv_c[] = {
        "icsim",
        "--log=root.thres:critical",
        "--cfg=network/model:CM02",
        "--cfg=network/TCP-gamma:0",
        "--cfg=network/crosstraffic:0",
        "--cfg=network/weight-S:0",
        "--cfg=network/bandwidth-factor:1",
        "--cfg=network/latency-factor:1",
        "--cfg=network/optim:Full",
        "--cfg=surf/precision:1e-13", /* seconds: icsim counts picoseconds */
        nullptr};
    std::vector<char *> argv;
    for (const char *const *p = argv_c; *p; p++)
        argv.push_back(const_cast<char *>(*p));
    argv.push_back(nullptr);
    int argc = (int)argv.size() - 1;
    s->engine = new sg4::Engine(&argc, argv.data());
    s->zone = new IcsimZone("icsim"); /* the first zone is the root */
    s->a = s->zone->create_host("a", {1e9});
    s->b = s->zone->create_host("b", {1e9});
    s->engine->track_vetoed_activities(&s->vetoed);
    sg4::Link::on_communication_state_change_cb(on_action_state);
    s->thread = std::this_thread::get_id();
}

} // namespace

extern "C" bool ics_sg_acquire(int nlinks, GError **err)
{
    State *s = state();
    if (!s->engine)
        engine_init(s);
    if (std::this_thread::get_id() != s->thread) {
        g_set_error(err, g_quark_from_static_string("ics-sg"), 1,
                    "the flow engine (SimGrid) runs in one thread per process; "
                    "this network was created in another");
        return false;
    }
    if ((size_t)nlinks <= s->links.size())
        return true;
    if (s->sealed) {
        g_set_error(err, g_quark_from_static_string("ics-sg"), 2,
                    "the flow engine (SimGrid) has one platform per process, sealed at %zu "
                    "links by the first topology it ran; this topology needs %d: run it in a "
                    "process of its own (or the largest topology first)",
                    s->links.size(), nlinks);
        return false;
    }
    while (s->links.size() < (size_t)nlinks) {
        std::string name = "r" + std::to_string(s->links.size());
        s->links.push_back(s->zone->create_link(name, {1e9}));
        s->impls.push_back(s->links.back()->get_impl());
        s->rate.push_back(1e9);
    }
    return true;
}

/* Every network rates the whole pool when it is created and when an inner one it outlived is
 * freed, but networks of one topology rate each link the same: a replay's memoized collectives
 * each make one, and SimGrid's set_bandwidth (which updates the link's LMM constraint) was half
 * of a Llama 3 405B step on 16,384 GPUs on the flow engine. A link whose rate is already this
 * one is left alone. */
extern "C" void ics_sg_link_rate(int link, double bytes_per_s)
{
    State *s = state();
    if (s->rate.at((size_t)link) == bytes_per_s)
        return;
    s->rate[(size_t)link] = bytes_per_s;
    s->links[(size_t)link]->set_bandwidth(bytes_per_s);
}

extern "C" double ics_sg_clock(void)
{
    return sg4::Engine::get_clock();
}

/* Why priorities are rounded. SimGrid's max-min solve (MaxMin::do_solve) saturates, round after
 * round, every constraint at the lowest remaining / usage level at once, found by comparing the
 * levels for equality, and scans all the constraints left at each round. A link's usage is the
 * sum of its communications' weights over their penalties (1 / priority), and terms come off it
 * as communications are fixed. With a priority like 0.8 the terms are inexact, so a link's usage
 * depends on the history of its additions and subtractions (n x t, less t twice, is not
 * (n - 2) x t in floating point): links that carry the same worth of communications differ in
 * the last bit, no two saturate together, and a solve takes a round per link. A 512 KiB tree
 * all-reduce on 4,096 GPUs went from 2.0 to 34 s when relayed sends got priorities (0.9 for
 * every communication: 32 s; 0.5: 2.1 s). A priority of 20 significant bits whose penalty
 * SimGrid inverts exactly makes every term a multiple of one power of two, far from the limits
 * of a double: usages are then exact whatever the order, and equal links tie on them again.
 * (Remaining capacities still lose bits: each fixed communication takes weight x value off,
 * and values are min_usage / penalty, inexact; with all priorities 1 that was so too.)
 * A priority moves by less than 2^-16 of itself (at most 7 steps of 2^-20 of its significand
 * to one that inverts exactly, for weights up to 8); those below 2^-16 are raised to it
 * (SimGrid counts usage under maxmin/precision, 1e-5, as none). */
#define PRIORITY_BITS 20
#define PRIORITY_MIN  (1.0 / 65536)

/* Whether SimGrid's usage term of priority p, weight / (1 / p), is exactly weight x p for every
 * weight up to max_weight (a link's weight in a communication is its appearances in the route;
 * even weights follow from odd ones, a doubling being exact). Not to be compiled with
 * -ffast-math or -freciprocal-math, which would fold it to true. */
static bool inverts_exactly(double p, int max_weight)
{
    for (int w = 1; w <= max_weight; w += 2)
        if ((double)w / (1.0 / p) != (double)w * p)
            return false;
    return true;
}

extern "C" double ics_sg_priority(double share, int max_weight)
{
    if (std::isnan(share) || share >= 1.0)
        return 1.0;
    share = std::max(share, PRIORITY_MIN);
    int e;
    double x = std::ldexp(std::frexp(share, &e), PRIORITY_BITS); /* in [2^19, 2^20) */
    double k = std::nearbyint(x);
    int toward = x < k ? -1 : 1; /* the nearer neighbour first: k, then k -/+ 1, ... */
    for (int step = 0; step < 64; step++) {
        int off = (step + 1) / 2 * (step % 2 ? toward : -toward);
        double p = std::ldexp(k + off, e - PRIORITY_BITS);
        if (p >= 1.0)
            return 1.0;
        if (inverts_exactly(p, std::max(1, max_weight)))
            return p;
    }
    /* a power of two always inverts exactly; reached only for weights far above a route's */
    return std::ldexp(1.0, e - 1);
}

/* The most times one link appears in links[0..n): its weight in SimGrid's communication. A
 * sorted copy: the pairwise count was a ninth of a small 16,384-GPU all-reduce. */
static int most_appearances(const int *links, int n)
{
    std::vector<int> sorted(links, links + n);
    std::sort(sorted.begin(), sorted.end());
    int most = 1;
    for (size_t i = 0, j; i < sorted.size(); i = j) {
        for (j = i + 1; j < sorted.size() && sorted[j] == sorted[i]; j++)
            ;
        most = std::max(most, (int)(j - i));
    }
    return most;
}

extern "C" ics_sg_comm *ics_sg_start(const int *links, int n, double bytes, double priority,
                                     void *user)
{
    State *s = state();
    if (priority < 1.0) /* (1 needs no rounding, nor the count) */
        priority = ics_sg_priority(priority, most_appearances(links, n));
    s->zone->next.clear();
    for (int i = 0; i < n; i++)
        s->zone->next.push_back(s->impls.at((size_t)links[i]));
    /* Whole bytes, as the Comm this replaces carried (its payload size was an integer). */
    auto *h = new ics_sg_comm{transfer_init(s, (double)(uint64_t)bytes), user, priority};
    h->exec->start(); /* routes now, through IcsimZone::get_local_route */
    /* A parallel execution's action is created with penalty 1 (ExecImpl::start does not pass
     * set_priority on for it): the penalty goes to its LMM variable once it exists. */
    if (priority != 1.0)
        h->exec->update_priority(priority);
    s->running[h->exec->get_impl()] = h;
    return h;
}

extern "C" void ics_sg_cancel(ics_sg_comm *c)
{
    state()->running.erase(c->exec->get_impl());
    c->exec->cancel();
    delete c;
}

/* Suspending is a penalty of 0 (a priority of infinity), which takes the communication's LMM
 * variable out of the sharing, and resuming its priority back. Not s4u's Activity::suspend and
 * resume: in SimGrid 3.32 resume() leaves the activity's suspended_ flag set, so the next
 * suspend() returns at once and the communication kept running beside the second network
 * nested in this one (a replay's second memoized collective: /net/flow/nested). */
extern "C" void ics_sg_suspend(ics_sg_comm *c)
{
    c->exec->update_priority(INFINITY);
}

extern "C" void ics_sg_resume(ics_sg_comm *c)
{
    c->exec->update_priority(c->priority);
}

extern "C" int ics_sg_run_until(double until, void (*done)(void *ctx, void *user), void *ctx)
{
    State *s = state();
    s->sealed = true;
    until = std::max(until, sg4::Engine::get_clock());
    s->engine->run_until(until);
    s->vetoed.clear();
    std::vector<ics_sg_comm *> list;
    list.swap(s->finished);
    for (ics_sg_comm *h : list) {
        void *user = h->user;
        delete h;
        done(ctx, user);
    }
    return (int)list.size();
}
