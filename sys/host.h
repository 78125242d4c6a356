#pragma once
/// The machine this process runs on: its host name and its CPU model, for error messages,
/// placement and the recorded stack.

#include <string>

namespace ranktune::sys {

/// This process's host name (cached).
const std::string& host_name();

/// The CPU model from /proc/cpuinfo, "" if unknown.
std::string cpu_model();

}  // namespace ranktune::sys
