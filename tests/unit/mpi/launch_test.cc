// The self-launch's mpirun command (mpi/launch.h): ob1 on one host unless the user or the
// site chose a pml, and nothing forced where the ranks may span hosts.
#include "mpi/launch.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using ranktune::mpi::LaunchSite;
using ranktune::mpi::launch_site;
using ranktune::mpi::mpirun_command;

namespace {

bool has_mca(const std::vector<std::string>& argv, const std::string& name, const std::string& value) {
  for (std::size_t i = 0; i + 2 < argv.size(); ++i)
    if (argv[i] == "--mca" && argv[i + 1] == name && argv[i + 2] == value) return true;
  return false;
}
bool has_pml_ob1(const std::vector<std::string>& argv) { return has_mca(argv, "pml", "ob1"); }
bool has_btl_shm(const std::vector<std::string>& argv) { return has_mca(argv, "btl", "self,vader"); }

// Runs each test with a clean launch environment and an empty HOME of its own.
class Launch : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVars) {
      if (const char* old = std::getenv(v)) saved_.emplace_back(v, old);
      ::unsetenv(v);
    }
    std::string t = (fs::temp_directory_path() / "launch_home_XXXXXX").string();
    ASSERT_NE(::mkdtemp(t.data()), nullptr);
    home_ = t;
    ::setenv("HOME", home_.c_str(), 1);
  }
  void TearDown() override {
    for (const char* v : kVars) ::unsetenv(v);
    for (const auto& [k, v] : saved_) ::setenv(k.c_str(), v.c_str(), 1);
    fs::remove_all(home_);
  }
  static constexpr const char* kVars[] = {"HOME", "OMPI_MCA_pml", "OMPI_MCA_btl", "SLURM_JOB_NUM_NODES", "SLURM_NNODES",
                                          "PBS_NODEFILE", "OMPI_MCA_orte_default_hostfile",
                                          "OMPI_MCA_rmaps_base_hostfile"};
  std::vector<std::pair<std::string, std::string>> saved_;
  fs::path home_;
};

TEST_F(Launch, OneHostGetsOb1) {
  const auto argv = mpirun_command(3, {"run", "x.toml"}, LaunchSite{});
  EXPECT_TRUE(has_pml_ob1(argv));
  EXPECT_TRUE(has_btl_shm(argv));
  EXPECT_EQ(argv[0], "mpirun");
  EXPECT_EQ(argv[2], "4");
  EXPECT_EQ(argv[argv.size() - 2], "run");
}

TEST_F(Launch, SeveralHostsOrAChosenPmlAreLeftAlone) {
  const auto spread = mpirun_command(3, {"run"}, LaunchSite{.one_host = false});
  EXPECT_FALSE(has_pml_ob1(spread));
  EXPECT_FALSE(has_btl_shm(spread)) << "TCP is how ranks on other hosts are reached";
  const auto pml = mpirun_command(3, {"run"}, LaunchSite{.pml_chosen = true});
  EXPECT_FALSE(has_pml_ob1(pml));
  EXPECT_TRUE(has_btl_shm(pml));
  const auto btl = mpirun_command(3, {"run"}, LaunchSite{.btl_chosen = true});
  EXPECT_TRUE(has_pml_ob1(btl));
  EXPECT_FALSE(has_btl_shm(btl));
}

TEST_F(Launch, TheSiteIsReadFromTheEnvironment) {
  // Debian's /etc/openmpi file says "pml = ^ucx" and "btl = ^uct,openib,ofi", which pick
  // nothing.
  LaunchSite s = launch_site();
  if (s.pml_chosen || s.btl_chosen) GTEST_SKIP() << "this host's Open MPI config picks a pml or btl";
  EXPECT_TRUE(s.one_host);

  ::setenv("SLURM_JOB_NUM_NODES", "1", 1);
  EXPECT_TRUE(launch_site().one_host) << "a one-node job is one host";
  ::setenv("SLURM_JOB_NUM_NODES", "3", 1);
  EXPECT_FALSE(launch_site().one_host) << "an sbatch shell's mpirun spreads over the job's nodes";
  ::unsetenv("SLURM_JOB_NUM_NODES");
  ::setenv("PBS_NODEFILE", "/var/spool/pbs/aux/1", 1);
  EXPECT_FALSE(launch_site().one_host);
  ::unsetenv("PBS_NODEFILE");
  ::setenv("OMPI_MCA_orte_default_hostfile", "/etc/hosts.mpi", 1);
  EXPECT_FALSE(launch_site().one_host);
  ::unsetenv("OMPI_MCA_orte_default_hostfile");

  ::setenv("OMPI_MCA_pml", "ucx", 1);
  EXPECT_TRUE(launch_site().pml_chosen);
  ::setenv("OMPI_MCA_pml", "^ucx,ob1", 1);
  EXPECT_TRUE(launch_site().pml_chosen) << "ob1 excluded: not ours to force";
  ::setenv("OMPI_MCA_pml", "^cm", 1);
  EXPECT_FALSE(launch_site().pml_chosen) << "an exclusion that spares ob1 picks nothing";
  ::unsetenv("OMPI_MCA_pml");
  ::setenv("OMPI_MCA_btl", "^tcp,openib", 1);
  EXPECT_FALSE(launch_site().btl_chosen);
  ::setenv("OMPI_MCA_btl", "^vader", 1);
  EXPECT_TRUE(launch_site().btl_chosen) << "vader excluded: not ours to force";
  ::setenv("OMPI_MCA_btl", "self,tcp", 1);
  EXPECT_TRUE(launch_site().btl_chosen);
  ::unsetenv("OMPI_MCA_btl");

  fs::create_directories(home_ / ".openmpi");
  std::ofstream(home_ / ".openmpi/mca-params.conf") << "# mine\npml_ucx_verbose = 1\n";
  EXPECT_FALSE(launch_site().pml_chosen) << "another parameter that starts with pml is not the pml";
  std::ofstream(home_ / ".openmpi/mca-params.conf") << "# mine\npml = ^ucx\n";
  EXPECT_FALSE(launch_site().pml_chosen);
  std::ofstream(home_ / ".openmpi/mca-params.conf") << "# mine\n  pml = ucx\n";
  EXPECT_TRUE(launch_site().pml_chosen) << "the user's MCA file chooses the pml";
  std::ofstream(home_ / ".openmpi/mca-params.conf") << "pml = ucx\npml = ^ucx\n";
  EXPECT_FALSE(launch_site().pml_chosen) << "the file's last line counts, as in Open MPI";
  ::setenv("OMPI_MCA_pml", "^ucx", 1);
  std::ofstream(home_ / ".openmpi/mca-params.conf") << "pml = ucx\n";
  EXPECT_FALSE(launch_site().pml_chosen) << "the environment overrides the files";
}

}  // namespace
