// ProgressYield (mpi/progress_yield.h): it finds Open MPI's switch, sets it for a scope and
// puts back what was there, nested or not. No MPI_Init is needed: the switch is a flag of
// Open MPI's progress engine, which the ranks' polling loops set around their loops.

#include <mpi.h>

#include <gtest/gtest.h>

#include "mpi/progress_yield.h"

namespace ranktune::mpi {
namespace {

TEST(ProgressYield, FindsOpenMpisSwitch) {
  // Debian's Open MPI is what ranktune links; a build against another MPI skips the
  // setting and says so here. A call into MPI (allowed before MPI_Init) links this test
  // with libmpi, as the ranks are, which loads Open MPI's progress engine.
  int initialized = 1;
  ASSERT_EQ(MPI_Initialized(&initialized), MPI_SUCCESS);
  EXPECT_FALSE(initialized);
  EXPECT_TRUE(ProgressYield::available());
}

TEST(ProgressYield, EachScopePutsBackWhatItFound) {
  if (!ProgressYield::available()) GTEST_SKIP() << "not Open MPI";
  const ProgressYield outer(true);
  {
    const ProgressYield inner(false);
    EXPECT_TRUE(inner.before());
    {
      const ProgressYield look(true);
      EXPECT_FALSE(look.before()) << "inner's false was not set";
    }
    const ProgressYield look(false);
    EXPECT_FALSE(look.before()) << "the innermost scope did not put inner's false back";
  }
  const ProgressYield look(true);
  EXPECT_TRUE(look.before()) << "inner did not put outer's true back";
}

}  // namespace
}  // namespace ranktune::mpi
