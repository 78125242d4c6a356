// The rendezvous of a gang's programs (mpi/rendezvous.h): each member's torchrun variables,
// from the members' host names and the leader's address and free port.
#include "mpi/rendezvous.h"

#include <algorithm>
#include <vector>

#include "mpi/gang.h"
#include "sys/host.h"

namespace ranktune::mpi {

train::DistributedEnv place_member(std::span<const std::string> hosts, int rank, const std::string& leader_address,
                                   int master_port) {
  train::DistributedEnv d;
  const auto me = static_cast<std::size_t>(rank);
  d.rank = rank;
  d.world_size = static_cast<int>(hosts.size());
  d.local_rank = static_cast<int>(std::count(hosts.begin(), hosts.begin() + static_cast<std::ptrdiff_t>(me), hosts[me]));
  d.local_world_size = static_cast<int>(std::count(hosts.begin(), hosts.end(), hosts[me]));
  std::vector<std::string> nodes;  // in the order they first appear: the leader's host is node 0
  for (const auto& h : hosts)
    if (std::find(nodes.begin(), nodes.end(), h) == nodes.end()) nodes.push_back(h);
  d.node_rank = static_cast<int>(std::find(nodes.begin(), nodes.end(), hosts[me]) - nodes.begin());
  d.num_nodes = static_cast<int>(nodes.size());
  // One host: the loopback needs no route and no firewall opening.
  d.master_addr = nodes.size() == 1 ? "127.0.0.1" : leader_address;
  d.master_port = master_port;
  return d;
}

train::DistributedEnv rendezvous(Gang* gang, const std::string& host) {
  if (gang == nullptr) {
    const std::string only[] = {host};
    return place_member(only, 0, "127.0.0.1", sys::free_tcp_port());
  }
  // Each member sends its host; the leader also its address and port ("host\naddress\nport").
  std::string mine = host;
  if (gang->leader()) mine += "\n" + sys::host_address() + "\n" + std::to_string(sys::free_tcp_port());
  const std::vector<std::string> all = gang->all_gather(mine);
  std::vector<std::string> hosts;
  for (const auto& a : all) hosts.push_back(a.substr(0, a.find('\n')));
  const std::string& lead = all.front();
  const auto a = lead.find('\n'), b = lead.find('\n', a == std::string::npos ? a : a + 1);
  const std::string address = a == std::string::npos ? "127.0.0.1" : lead.substr(a + 1, b - a - 1);
  int port = 0;
  if (b != std::string::npos) {
    try {
      port = std::stoi(lead.substr(b + 1));
    } catch (const std::exception&) {  // the leader found no port: the program is told none
    }
  }
  return place_member(hosts, gang->rank(), address, port);
}

}  // namespace ranktune::mpi
