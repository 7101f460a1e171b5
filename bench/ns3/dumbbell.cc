// rtcc ns-3 comparison benchmark: the reference dumbbell scenarios.
//
// Builds, in ns-3 3.37, the same scenarios as rtcc's scenarios/bench/*.toml
// (see bench/ns3/README.md for the exact list of settings and why each
// ns-3 default is overridden), runs them and prints ONE JSON line with the
// same keys as `rtcc-bench`:
//
//   {"simulator":"ns-3","scenario":...,"seed":...,"sim_seconds":...,
//    "wall_seconds":...,"events":...,"delivered_packets":...,
//    "peak_rss_kb":...,"flows":[{"name":...,"goodput_kbps":...}],
//    "links":[{"name":"bottleneck","queue_delay_ms":{...},"drops":...}]}
//
// Usage: dumbbell --scenario=dumbbell|dumbbell-8|heavy [--seed=N]
//                 [--duration=SECONDS]   (override, for quick tests only)

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <sys/resource.h>

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

/// One scenario's parameters (values from the benchmark brief; the rtcc
/// TOML files in scenarios/bench/ carry the same numbers).
struct ScenarioSpec
{
    std::string name;
    double durationS;
    std::string bottleneckRate;
    std::string bottleneckDelay;
    std::string bottleneckQueue; // drop-tail limit on R1's bottleneck device
    uint32_t tcpFlows;
    double tcpStartS;
    bool udpFlow;
};

bool
LookupScenario(const std::string& name, ScenarioSpec& out)
{
    if (name == "dumbbell")
    {
        out = {name, 300.0, "3Mbps", "100ms", "112500B", 1, 1.0, true};
        return true;
    }
    if (name == "dumbbell-8")
    {
        out = {name, 300.0, "3Mbps", "100ms", "112500B", 8, 1.0, true};
        return true;
    }
    if (name == "heavy")
    {
        out = {name, 60.0, "1Gbps", "10ms", "2500000B", 100, 1.0, false};
        return true;
    }
    return false;
}

// Access links of every host (brief: 100 Mbps, 1 ms).
const char* const kAccessRate = "100Mbps";
const char* const kAccessDelay = "1ms";
// Access-device queues must never drop: 10 MB is far above any flow's window.
const char* const kAccessQueue = "10000000B";
// UDP constant bit rate source (brief: 1200-byte payloads at 2.5 Mbps).
const char* const kUdpRate = "2.5Mbps";
const uint32_t kUdpPayload = 1200;
// TCP maximum segment size (brief: 1448-byte segments).
const uint32_t kMss = 1448;
// Socket buffers large enough that no flow is window-limited (brief: 16 MB).
const uint32_t kSockBuf = 16u * 1024u * 1024u;
// Port base of the sink applications.
const uint16_t kPortBase = 9000;

/// Waiting time of packets in the bottleneck device's TxQueue.
///
/// The queue is FIFO and PointToPointNetDevice dequeues a packet when its
/// transmission starts, so the i-th Dequeue matches the i-th successful
/// Enqueue; the difference is the waiting time (enqueue -> start of its own
/// transmission; its own serialisation time is NOT included, and a packet
/// that finds the device idle waits 0). Packets dropped before enqueue never
/// fire Enqueue; packets still queued at the end are not counted.
///
/// Samples go into a histogram of 1 us bins (floor) so memory stays small even
/// for millions of packets; the mean is exact (sum in ns), the percentiles are
/// nearest-rank with the floor of the bin, i.e. at most 1 us low.
class QueueDelayRecorder
{
  public:
    void OnEnqueue(Ptr<const Packet> p)
    {
        if (p->GetSize() > m_maxFrame)
        {
            m_maxFrame = p->GetSize();
        }
        m_enqueued.push_back(Simulator::Now().GetNanoSeconds());
    }

    void OnDequeue(Ptr<const Packet>)
    {
        if (m_enqueued.empty())
        {
            // Would mean the FIFO pairing is broken; count it so it shows.
            ++m_unpaired;
            return;
        }
        int64_t waitNs = Simulator::Now().GetNanoSeconds() - m_enqueued.front();
        m_enqueued.pop_front();
        m_sumNs += static_cast<double>(waitNs);
        ++m_count;
        size_t bin = static_cast<size_t>(waitNs / 1000);
        if (bin >= m_hist.size())
        {
            m_hist.resize(bin + 1 + bin / 2, 0);
        }
        ++m_hist[bin];
    }

    uint64_t Count() const
    {
        return m_count;
    }

    /// Largest frame seen (IP packet + 2-byte PPP header), a check that the
    /// TCP/IP headers are 40 B (1448 + 40 + 2 = 1490).
    uint32_t MaxFrameBytes() const
    {
        return m_maxFrame;
    }

    uint64_t Unpaired() const
    {
        return m_unpaired;
    }

    double MeanMs() const
    {
        return m_count == 0 ? 0.0 : m_sumNs / static_cast<double>(m_count) / 1e6;
    }

    /// Nearest-rank percentile: the smallest sample with at least p*n
    /// samples <= it (rank ceil(p*n), 1-based).
    double PercentileMs(double p) const
    {
        if (m_count == 0)
        {
            return 0.0;
        }
        uint64_t rank = static_cast<uint64_t>(std::ceil(p * static_cast<double>(m_count)));
        if (rank < 1)
        {
            rank = 1;
        }
        uint64_t seen = 0;
        for (size_t bin = 0; bin < m_hist.size(); ++bin)
        {
            seen += m_hist[bin];
            if (seen >= rank)
            {
                return static_cast<double>(bin) / 1000.0;
            }
        }
        return static_cast<double>(m_hist.size() - 1) / 1000.0;
    }

  private:
    std::deque<int64_t> m_enqueued;
    std::vector<uint64_t> m_hist = std::vector<uint64_t>(1024, 0);
    double m_sumNs = 0.0;
    uint64_t m_count = 0;
    uint64_t m_unpaired = 0;
    uint32_t m_maxFrame = 0;
};

uint64_t g_tcDrops = 0;

void
OnTcDrop(Ptr<const Packet>)
{
    ++g_tcDrops;
}

struct FlowRecord
{
    std::string name;
    bool isTcp;
    double startS;
    Ptr<PacketSink> sink;
};

/// Removes any queue disc ns-3 may have installed on these devices, so that
/// packets go straight into the device's DropTailQueue (brief: no queue disc).
void
RemoveQueueDiscs(const NetDeviceContainer& devices)
{
    TrafficControlHelper tch;
    for (uint32_t i = 0; i < devices.GetN(); ++i)
    {
        Ptr<NetDevice> dev = devices.Get(i);
        Ptr<TrafficControlLayer> tc = dev->GetNode()->GetObject<TrafficControlLayer>();
        if (tc && tc->GetRootQueueDiscOnDevice(dev))
        {
            tch.Uninstall(dev);
        }
    }
}

bool
HasQueueDisc(const NetDeviceContainer& devices)
{
    for (uint32_t i = 0; i < devices.GetN(); ++i)
    {
        Ptr<NetDevice> dev = devices.Get(i);
        Ptr<TrafficControlLayer> tc = dev->GetNode()->GetObject<TrafficControlLayer>();
        if (tc && tc->GetRootQueueDiscOnDevice(dev))
        {
            return true;
        }
    }
    return false;
}

} // namespace

int
main(int argc, char* argv[])
{
    std::string scenario = "dumbbell";
    uint32_t seed = 1;
    double durationOverride = 0.0;

    CommandLine cmd(__FILE__);
    cmd.AddValue("scenario", "dumbbell | dumbbell-8 | heavy", scenario);
    cmd.AddValue("seed", "run number for RngSeedManager", seed);
    cmd.AddValue("duration", "override the scenario duration in seconds (tests only)",
                 durationOverride);
    cmd.Parse(argc, argv);

    ScenarioSpec spec;
    if (!LookupScenario(scenario, spec))
    {
        std::fprintf(stderr,
                     "dumbbell: unknown --scenario=%s (expected dumbbell, dumbbell-8 or heavy)\n",
                     scenario.c_str());
        return 2;
    }
    if (durationOverride > 0.0)
    {
        spec.durationS = durationOverride;
    }

    // Seed: fixed seed, run number = --seed (ns-3's recommended way to get
    // independent replications). Nothing in these scenarios is random, so
    // the seed only matters if a random element is added later.
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    // ---- TCP: override the ns-3 3.37 defaults that differ from rtcc's model.
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TcpClassicRecovery::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(kMss));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(kSockBuf));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(kSockBuf));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(200)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::LimitedTransmit", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(1.0)));

    // ---- Topology: host pairs around R1 -- bottleneck -- R2.
    const uint32_t nFlows = spec.tcpFlows + (spec.udpFlow ? 1 : 0);
    NodeContainer senders;
    senders.Create(nFlows);
    NodeContainer receivers;
    receivers.Create(nFlows);
    NodeContainer routers;
    routers.Create(2);
    Ptr<Node> r1 = routers.Get(0);
    Ptr<Node> r2 = routers.Get(1);

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue(kAccessRate));
    access.SetChannelAttribute("Delay", StringValue(kAccessDelay));
    access.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue(kAccessQueue));
    // Without this, the device queue stops the traffic-control layer when it
    // cannot take one more MTU and the TC layer drops silently; disabling it
    // makes the DropTailQueue itself the only (exact, byte-based) drop point.
    access.DisableFlowControl();

    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", StringValue(spec.bottleneckRate));
    bottleneck.SetChannelAttribute("Delay", StringValue(spec.bottleneckDelay));
    // Both ends get the same limit; only R1 -> R2 carries data, the reverse
    // direction carries ACKs only and never fills.
    bottleneck.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize",
                        StringValue(spec.bottleneckQueue));
    bottleneck.DisableFlowControl();

    InternetStackHelper stack;
    stack.InstallAll();

    Ipv4AddressHelper addr;
    NetDeviceContainer allDevices;

    NetDeviceContainer coreDevs = bottleneck.Install(r1, r2);
    addr.SetBase("10.0.0.0", "255.255.255.252");
    addr.Assign(coreDevs);
    allDevices.Add(coreDevs);

    std::vector<Ipv4Address> receiverAddr(nFlows);
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        // 10.1.x.y/30 for sender i <-> R1, 10.2.x.y/30 for R2 <-> receiver i.
        char base[32];
        NetDeviceContainer left = access.Install(senders.Get(i), r1);
        std::snprintf(base, sizeof(base), "10.1.%u.%u", i / 64, (i % 64) * 4);
        addr.SetBase(base, "255.255.255.252");
        addr.Assign(left);
        allDevices.Add(left);

        NetDeviceContainer right = access.Install(r2, receivers.Get(i));
        std::snprintf(base, sizeof(base), "10.2.%u.%u", i / 64, (i % 64) * 4);
        addr.SetBase(base, "255.255.255.252");
        Ipv4InterfaceContainer ifs = addr.Assign(right);
        receiverAddr[i] = ifs.GetAddress(1);
        allDevices.Add(right);
    }

    RemoveQueueDiscs(allDevices);
    if (HasQueueDisc(allDevices))
    {
        std::fprintf(stderr, "dumbbell: a queue disc is still installed\n");
        return 1;
    }

    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    // ---- Bottleneck instrumentation (R1's device towards R2).
    Ptr<PointToPointNetDevice> bnDev = DynamicCast<PointToPointNetDevice>(coreDevs.Get(0));
    Ptr<Queue<Packet>> bnQueue = bnDev->GetQueue();
    QueueDelayRecorder delays;
    bnQueue->TraceConnectWithoutContext(
        "Enqueue",
        MakeCallback(&QueueDelayRecorder::OnEnqueue, &delays));
    bnQueue->TraceConnectWithoutContext(
        "Dequeue",
        MakeCallback(&QueueDelayRecorder::OnDequeue, &delays));
    // Guard: with flow control disabled the TC layer never drops; if it ever
    // did, those drops would be missing from the queue's counter.
    r1->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext("Drop",
                                                                     MakeCallback(&OnTcDrop));

    // ---- Applications.
    std::vector<FlowRecord> flows;
    uint32_t host = 0;
    if (spec.udpFlow)
    {
        uint16_t port = kPortBase + host;
        PacketSinkHelper sinkHelper("ns3::UdpSocketFactory",
                                    InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer sinkApp = sinkHelper.Install(receivers.Get(host));
        sinkApp.Start(Seconds(0.0));

        OnOffHelper src("ns3::UdpSocketFactory", InetSocketAddress(receiverAddr[host], port));
        // Always on: the on period outlasts the run, the off period is 0.
        char onTime[64];
        std::snprintf(onTime, sizeof(onTime), "ns3::ConstantRandomVariable[Constant=%.1f]",
                      spec.durationS + 1000.0);
        src.SetAttribute("OnTime", StringValue(onTime));
        src.SetAttribute("OffTime", StringValue("ns3::ConstantRandomVariable[Constant=0]"));
        src.SetAttribute("DataRate", DataRateValue(DataRate(kUdpRate)));
        src.SetAttribute("PacketSize", UintegerValue(kUdpPayload));
        ApplicationContainer srcApp = src.Install(senders.Get(host));
        srcApp.Start(Seconds(0.0));

        flows.push_back({"udp", false, 0.0, DynamicCast<PacketSink>(sinkApp.Get(0))});
        ++host;
    }
    for (uint32_t k = 1; k <= spec.tcpFlows; ++k, ++host)
    {
        uint16_t port = kPortBase + host;
        PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                    InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer sinkApp = sinkHelper.Install(receivers.Get(host));
        sinkApp.Start(Seconds(0.0));

        BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(receiverAddr[host], port));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        src.SetAttribute("SendSize", UintegerValue(kMss));
        ApplicationContainer srcApp = src.Install(senders.Get(host));
        srcApp.Start(Seconds(spec.tcpStartS));

        flows.push_back({"tcp" + std::to_string(k),
                         true,
                         spec.tcpStartS,
                         DynamicCast<PacketSink>(sinkApp.Get(0))});
    }

    // ---- Run.
    Simulator::Stop(Seconds(spec.durationS));
    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    auto t1 = std::chrono::steady_clock::now();
    double wall = std::chrono::duration<double>(t1 - t0).count();
    uint64_t events = Simulator::GetEventCount();

    // ---- Collect.
    // delivered_packets: data packets delivered to the receiving applications:
    // UDP datagrams received by the UDP sink, plus for each TCP flow the
    // in-order payload bytes delivered to its sink divided by the MSS (bulk
    // senders only send full segments, so this is the number of distinct
    // data segments delivered; retransmitted duplicates are not counted).
    uint64_t delivered = 0;
    std::string flowsJson;
    for (const FlowRecord& f : flows)
    {
        uint64_t rx = f.sink->GetTotalRx();
        delivered += f.isTcp ? rx / kMss : rx / kUdpPayload;
        double span = spec.durationS - f.startS;
        double goodputKbps = span > 0.0 ? static_cast<double>(rx) * 8.0 / span / 1000.0 : 0.0;
        char buf[256];
        std::snprintf(buf, sizeof(buf),
                      "%s{\"name\":\"%s\",\"goodput_kbps\":%.3f,\"rx_bytes\":%" PRIu64 "}",
                      flowsJson.empty() ? "" : ",", f.name.c_str(), goodputKbps, rx);
        flowsJson += buf;
    }

    if (delays.Unpaired() != 0)
    {
        std::fprintf(stderr, "dumbbell: %" PRIu64 " dequeues without an enqueue\n",
                     delays.Unpaired());
        return 1;
    }

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);

    std::printf("{\"simulator\":\"ns-3\",\"scenario\":\"%s\",\"seed\":%u,"
                "\"sim_seconds\":%.3f,\"wall_seconds\":%.6f,\"events\":%" PRIu64 ","
                "\"delivered_packets\":%" PRIu64 ",\"peak_rss_kb\":%ld,"
                "\"flows\":[%s],"
                "\"links\":[{\"name\":\"bottleneck\","
                "\"queue_delay_ms\":{\"mean\":%.4f,\"p50\":%.4f,\"p95\":%.4f},"
                "\"drops\":%u,\"tc_drops\":%" PRIu64 ",\"dequeued_packets\":%" PRIu64 ",\"max_frame_bytes\":%u}]}\n",
                spec.name.c_str(), seed, spec.durationS, wall, events, delivered,
                ru.ru_maxrss, flowsJson.c_str(), delays.MeanMs(), delays.PercentileMs(0.50),
                delays.PercentileMs(0.95), bnQueue->GetTotalDroppedPackets(), g_tcDrops,
                delays.Count(), delays.MaxFrameBytes());
    std::fflush(stdout);

    Simulator::Destroy();
    return 0;
}
