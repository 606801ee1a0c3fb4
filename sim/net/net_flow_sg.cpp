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

#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>

#include <sys/resource.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

namespace sg4 = simgrid::s4u;
namespace sgk = simgrid::kernel;

struct ics_sg_comm {
    sg4::CommPtr comm;
    void *user;
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
    bool sealed = false; /* SimGrid has run: no more links */
    std::thread::id thread;
    std::set<sg4::Activity *> vetoed;
    std::vector<ics_sg_comm *> finished;
};

State *state()
{
    static State s; /* SimGrid's engine is per process: so is this */
    return &s;
}

void on_completion(const sg4::Activity &a)
{
    if (a.get_state() != sg4::Activity::State::FINISHED)
        return; /* cancelled: ics_sg_cancel already forgot it */
    State *s = state();
    auto *h = a.get_data<ics_sg_comm>();
    if (!h)
        return;
    s->finished.push_back(h);
    s->vetoed.insert(const_cast<sg4::Activity *>(&a)); /* ends this run after this instant */
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
     * none of TCP's corrections (window bound, RTT weights, cross-traffic, bandwidth factor). */
    static const char *const argv_c[] = {
        "icsim",
        "--log=root.thres:critical",
        "--cfg=network/model:CM02",
        "--cfg=network/TCP-gamma:0",
        "--cfg=network/crosstraffic:0",
        "--cfg=network/weight-S:0",
        "--cfg=network/bandwidth-factor:1",
        "--cfg=network/latency-factor:1",
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
    sg4::Activity::on_completion_cb(on_completion);
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
    }
    return true;
}

extern "C" void ics_sg_link_rate(int link, double bytes_per_s)
{
    state()->links.at((size_t)link)->set_bandwidth(bytes_per_s);
}

extern "C" double ics_sg_clock(void)
{
    return sg4::Engine::get_clock();
}

extern "C" ics_sg_comm *ics_sg_start(const int *links, int n, double bytes, void *user)
{
    State *s = state();
    s->zone->next.clear();
    for (int i = 0; i < n; i++)
        s->zone->next.push_back(s->links.at((size_t)links[i])->get_impl());
    auto *h = new ics_sg_comm{sg4::Comm::sendto_init(s->a, s->b), user};
    h->comm->set_payload_size((uint64_t)bytes);
    h->comm->set_data(h);
    h->comm->start(); /* routes now, through IcsimZone::get_local_route */
    return h;
}

extern "C" void ics_sg_cancel(ics_sg_comm *c)
{
    c->comm->set_data(nullptr);
    c->comm->cancel();
    delete c;
}

extern "C" void ics_sg_suspend(ics_sg_comm *c)
{
    c->comm->suspend();
}

extern "C" void ics_sg_resume(ics_sg_comm *c)
{
    c->comm->resume();
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
        h->comm->set_data(nullptr);
        delete h;
        done(ctx, user);
    }
    return (int)list.size();
}
