// This machine's host name, CPU model, address and a free port (sys/host.h).
#include "sys/host.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include "sys/fd.h"

namespace ranktune::sys {

const std::string& host_name() {
  static const std::string name = [] {
    char buf[256] = {};
    gethostname(buf, sizeof buf - 1);
    return std::string(buf);
  }();
  return name;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return {};
}

namespace {

bool loopback(const in_addr& a) { return (ntohl(a.s_addr) >> 24) == 127; }

std::string text(const in_addr& a) {
  char buf[INET_ADDRSTRLEN] = {};
  return inet_ntop(AF_INET, &a, buf, sizeof buf) ? std::string(buf) : std::string();
}

}  // namespace

std::string host_address() {
  // An interface first: a host name often resolves to 127.0.1.1 (Debian's /etc/hosts), and
  // the hosts of a cluster in network namespaces have no name service at all.
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    std::string found;
    for (const ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
      if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
      if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
      const auto& a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr;
      if (!loopback(a)) found = text(a);
    }
    freeifaddrs(list);
    if (!found.empty()) return found;
  }
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* res = nullptr;
  std::string found;
  if (getaddrinfo(host_name().c_str(), nullptr, &hints, &res) == 0) {
    for (const addrinfo* r = res; r != nullptr && found.empty(); r = r->ai_next) {
      const auto& a = reinterpret_cast<const sockaddr_in*>(r->ai_addr)->sin_addr;
      if (!loopback(a)) found = text(a);
    }
    freeaddrinfo(res);
  }
  return found.empty() ? "127.0.0.1" : found;
}

int free_tcp_port() {
  const UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = 0;
  if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) return 0;
  socklen_t n = sizeof a;
  if (::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &n) != 0) return 0;
  return ntohs(a.sin_port);
}

}  // namespace ranktune::sys
