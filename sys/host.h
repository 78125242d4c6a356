#pragma once
/// The machine this process runs on: its host name and its CPU model, for error messages,
/// placement and the recorded stack; its address and a free port, for the rendezvous of a
/// gang's programs (MASTER_ADDR, MASTER_PORT).

#include <string>

namespace ranktune::sys {

/// This process's host name (cached).
const std::string& host_name();

/// The CPU model from /proc/cpuinfo, "" if unknown.
std::string cpu_model();

/// An IPv4 address other hosts can reach this one at: the first address of a non-loopback
/// interface that is up, else one that the host name resolves to, else "127.0.0.1".
std::string host_address();

/// A TCP port that is free on this host now (the kernel's pick for a bind to port 0), or 0
/// when none can be had. Free *now*: a program binds it soon after, as torchrun does.
int free_tcp_port();

}  // namespace ranktune::sys
